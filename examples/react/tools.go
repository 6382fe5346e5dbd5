package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/examples/internal/calc"
	"github.com/moora-go/moora/examples/internal/otelenv"
)

// The arguments of the demo's tools. A plan's parameters are strings
// (decl.ToolCall.Parameters, a map of strings in the spec), and they are
// a tool's arguments as they are, a JSON object of strings: so every
// argument is a string, and one meant as a number says so by its pattern
// (wait's ms). Each must have a character other than a space.
type (
	expressionArgs struct {
		Expression string `json:"expression" jsonschema:"pattern=\\S" jsonschema_description:"The expression: numbers, + - * / and parentheses."`
	}
	pathArgs struct {
		Path string `json:"path" jsonschema:"pattern=\\S" jsonschema_description:"The file's path in the workspace, such as notes.txt."`
	}
	termArgs struct {
		Term string `json:"term" jsonschema:"pattern=\\S" jsonschema_description:"The text to look for, in any case."`
	}
	waitArgs struct {
		Ms string `json:"ms" jsonschema:"pattern=^[0-9]+$" jsonschema_description:"How long to wait: a whole number of milliseconds, up to 600000."`
	}
)

// maxWaitMs is the longest wait the wait tool makes.
const maxWaitMs = 600_000

// Tools are the tools of the offline demo, all local and real: a
// calculator, and tools that read the files of workspace: read_file,
// word_count, search_index (which fails now and then) and grep (its
// fallback), and wait. Each is a function over its typed arguments,
// whose JSON Schema the planner is shown; NewKit makes them a kit.
func Tools(workspace fs.FS) []toolkit.Tool {
	return []toolkit.Tool{
		toolkit.Func("calculator", "Evaluates an arithmetic expression (numbers, + - * / and parentheses) exactly.",
			func(_ context.Context, a expressionArgs) (string, error) {
				v, err := calc.Calculate(a.Expression)
				if err != nil {
					return "", fmt.Errorf("%w: %w", toolkit.ErrInvalid, err)
				}
				return v, nil
			}),
		toolkit.Func("read_file", "Reads a text file of the workspace.",
			func(_ context.Context, a pathArgs) (string, error) {
				return readFile(workspace, a.Path)
			}),
		toolkit.Func("word_count", "Counts the words of a text file of the workspace.",
			func(_ context.Context, a pathArgs) (string, error) {
				text, err := readFile(workspace, a.Path)
				if err != nil {
					return "", err
				}
				return strconv.Itoa(len(strings.Fields(text))), nil
			}),
		SearchIndex(workspace, nil),
		toolkit.Func("grep", "Finds the lines of the workspace's files that contain a term, by reading every file.",
			func(ctx context.Context, a termArgs) (string, error) {
				return search(ctx, workspace, a.Term)
			}),
		toolkit.Func("wait", "Waits for a number of milliseconds, then says so.",
			func(ctx context.Context, a waitArgs) (string, error) {
				ms, err := strconv.Atoi(a.Ms)
				if err != nil || ms > maxWaitMs {
					return "", fmt.Errorf("%w: ms is not a number of milliseconds up to %d: %q", toolkit.ErrInvalid, maxWaitMs, a.Ms)
				}
				t := time.NewTimer(time.Duration(ms) * time.Millisecond)
				defer t.Stop()
				select {
				case <-t.C:
					return fmt.Sprintf("waited %d ms", ms), nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}),
	}
}

// SearchIndex is the fast search of the workspace, through an index that is
// rebuilt now and then: while it is, a search fails. Which tries find it
// rebuilding is decided by rebuilding, a function of the try's key, so that
// a call fails or succeeds the same way every time it is made, after a
// restart too (nil: the keys whose FNV-1a hash has bit 16 clear, about
// half of them). A try's key is the call's idempotency key (toolkit.Key), with
// "#n" after it for the n-th retry (toolkit.Attempt n+1). Its fallback is
// grep.
//
// It has no circuit breaker: its failures are the demo's, decided call by
// call, and a breaker they opened would fail the calls their keys let
// through, differently after a restart.
func SearchIndex(workspace fs.FS, rebuilding func(key string) bool) toolkit.Tool {
	if rebuilding == nil {
		rebuilding = func(key string) bool {
			h := fnv.New32a()
			h.Write([]byte(key))
			// A high bit: FNV-1a's lowest depends only on the parity
			// of the key's bytes, so that a retry (…-c2 after …-c1)
			// always had the other one.
			return h.Sum32()>>16&1 == 0
		}
	}
	return toolkit.Func("search_index", "Finds the lines of the workspace's files that contain a term, through the index.",
		func(ctx context.Context, a termArgs) (string, error) {
			key := toolkit.Key(ctx)
			if n := toolkit.Attempt(ctx); n > 1 {
				key += "#" + strconv.Itoa(n-1)
			}
			if rebuilding(key) {
				return "", errors.New("the search index is being rebuilt")
			}
			return search(ctx, workspace, a.Term)
		}).With(toolkit.Policy{BreakerFailures: -1})
}

// readFile reads the file of the workspace at name; a name outside it is
// refused, and a file that is not there is an invalid argument: calling
// again will not make it appear.
func readFile(workspace fs.FS, name string) (string, error) {
	name = strings.TrimSpace(name)
	if !fs.ValidPath(name) || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("%w: %s is outside the workspace", toolkit.ErrPermission, name)
	}
	b, err := fs.ReadFile(workspace, name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: reading %s: %w", toolkit.ErrInvalid, name, err)
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", name, err)
	}
	return string(b), nil
}

// search returns the lines of the files of workspace that contain term,
// as "file:line: text", at most 20 of them.
func search(ctx context.Context, workspace fs.FS, term string) (string, error) {
	term = strings.ToLower(strings.TrimSpace(term))
	var hits []string
	err := fs.WalkDir(workspace, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || len(hits) >= 20 {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := workspace.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		lines := bufio.NewScanner(f)
		for n := 1; lines.Scan() && len(hits) < 20; n++ {
			if strings.Contains(strings.ToLower(lines.Text()), term) {
				hits = append(hits, fmt.Sprintf("%s:%d: %s", name, n, strings.TrimSpace(lines.Text())))
			}
		}
		return lines.Err()
	})
	if err != nil {
		return "", err
	}
	return strings.Join(hits, "\n"), nil
}

// NewKit makes tools the demo's kit, with its security checks: Allow
// before each call, Filter after it.
func NewKit(tools ...toolkit.Tool) (*toolkit.Kit, error) {
	return newKit(otelenv.Providers{}, tools...)
}

// newKit is NewKit whose calls p traces and measures (when its providers
// are set).
func newKit(p otelenv.Providers, tools ...toolkit.Tool) (*toolkit.Kit, error) {
	return toolkit.New(toolkit.Config{Allow: Allow, Filter: Filter, TracerProvider: p.Tracer, MeterProvider: p.Meter}, tools...)
}

// The security checks of the demo: an allow-list of tools, and an output
// filter that redacts lines that look like secrets.
var (
	allowedTools = []string{"calculator", "read_file", "word_count", "search_index", "grep", "wait"}
	secretLine   = regexp.MustCompile(`(?im)^.*\b(password|passwd|secret|token|api[_-]?key)\b.*$`)
)

// Allow is the demo's check before a call (toolkit.Config.Allow): only the
// tools of the allow-list.
func Allow(_ context.Context, c toolkit.Call) error {
	if !slices.Contains(allowedTools, c.Name) {
		return fmt.Errorf("%w: %s is not on the allow-list", toolkit.ErrPermission, c.Name)
	}
	return nil
}

// Filter is the demo's check after a call (toolkit.Config.Filter): lines
// that mention a password, secret, token or API key are replaced by
// [redacted].
func Filter(_ toolkit.Call, output string) string {
	return secretLine.ReplaceAllString(output, "[redacted]")
}

// Workspace writes the demo's files into dir, unless they are there: the
// files the tools read.
func Workspace(dir string) (fs.FS, error) {
	files := map[string]string{
		"notes.txt":  "Moore machines output a function of their state.\nThe agent plans, acts, observes and reflects.\nJobs are derived from state, so a restart resumes the work.\n",
		"todo.txt":   "write the report\nreview the plan\nrun the tests\n",
		"config.txt": "user = demo\npassword = hunter2\nregion = local\n",
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("making the workspace: %w", err)
	}
	for name, content := range files {
		p := path.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, fmt.Errorf("making the workspace: %w", err)
		}
	}
	return os.DirFS(dir), nil
}
