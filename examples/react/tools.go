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

	"github.com/moora-go/moora/examples/internal/calc"
	"github.com/moora-go/moora/examples/react/decl"
)

// ToolAdapter is a tool of the toolkit (seed 002's ToolAdapter): its id,
// what it does, and how to run it. key is the idempotency key of the call
// (the job's key, with the toolkit's try number), the same after a
// restart; parameters are the plan step's.
type ToolAdapter interface {
	ID() string
	Description() string
	Execute(ctx context.Context, key string, parameters map[string]string) (string, error)
}

// The errors a tool returns to say why it failed, which the reflector
// chooses a strategy by (decl.ErrorKind). Any other error is a failure.
var (
	// ErrPermission: the call is not allowed (the security check).
	ErrPermission = errors.New("permission denied")
	// ErrInvalid: the parameters are wrong; calling again will not help.
	ErrInvalid = errors.New("invalid parameters")
)

// Toolkit runs tool calls: a security check before the call (Allow), the
// call with its timeout, retries of failures within that timeout, and the
// output filter after it (Filter).
type Toolkit struct {
	Tools []ToolAdapter
	// Retries is how many times a call that failed (not for lack of
	// permission, bad parameters or time) is tried again at once.
	Retries int
	// Allow is the check before a call; its error (wrapping
	// ErrPermission) refuses it. Nil allows every call of a known tool.
	Allow func(tool string, parameters map[string]string) error
	// Filter is the check after a call: it returns the output to report,
	// such as with secrets redacted. Nil reports it as it is.
	Filter func(tool, output string) string
	// Clock measures latency; nil is time.Now.
	Clock func() time.Time
}

// Tool returns the tool named id.
func (k *Toolkit) Tool(id string) (ToolAdapter, bool) {
	i := slices.IndexFunc(k.Tools, func(t ToolAdapter) bool { return t.ID() == id })
	if i < 0 {
		return nil, false
	}
	return k.Tools[i], true
}

// Run makes call and returns its observation; ctx ending (the job
// cancelled) ends the call, and Run then returns ctx's error.
func (k *Toolkit) Run(ctx context.Context, key string, call decl.ToolCall) (decl.Observation, error) {
	now := k.Clock
	if now == nil {
		now = time.Now
	}
	o := decl.Observation{CallID: call.CallID, Source: call.Tool, RelatedTaskID: call.TaskID, ErrorKind: decl.ErrorKindNone}
	begin := now()
	defer func() { o.LatencyMs = now().Sub(begin).Milliseconds() }()
	fail := func(kind decl.ErrorKind, err error) (decl.Observation, error) {
		o.ErrorKind, o.Error = kind, err.Error()
		o.LatencyMs = now().Sub(begin).Milliseconds()
		return o, nil
	}
	tool, ok := k.Tool(call.Tool)
	if !ok {
		return fail(decl.ErrorKindInvalid, fmt.Errorf("there is no tool %q", call.Tool))
	}
	if k.Allow != nil {
		if err := k.Allow(call.Tool, call.Parameters); err != nil {
			return fail(decl.ErrorKindPermission, err)
		}
	}
	timeout := time.Duration(max(call.TimeoutMs, 1)) * time.Millisecond
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out string
	var err error
	for try := 0; ; try++ {
		tryKey := key
		if try > 0 {
			tryKey += "#" + strconv.Itoa(try)
		}
		out, err = tool.Execute(callCtx, tryKey, call.Parameters)
		if ctx.Err() != nil {
			return decl.Observation{}, ctx.Err() // cancelled: nothing to report
		}
		if err == nil || try >= k.Retries || errors.Is(err, ErrPermission) || errors.Is(err, ErrInvalid) || callCtx.Err() != nil {
			break
		}
		o.Retries++
	}
	switch {
	case err == nil:
	case callCtx.Err() != nil:
		return fail(decl.ErrorKindTimeout, fmt.Errorf("%s timed out after %d ms", call.Tool, call.TimeoutMs))
	case errors.Is(err, ErrPermission):
		return fail(decl.ErrorKindPermission, err)
	case errors.Is(err, ErrInvalid):
		return fail(decl.ErrorKindInvalid, err)
	default:
		return fail(decl.ErrorKindFailure, err)
	}
	if k.Filter != nil {
		out = k.Filter(call.Tool, out)
	}
	o.Success, o.Payload = true, out
	o.LatencyMs = now().Sub(begin).Milliseconds()
	return o, nil
}

// tool is a ToolAdapter made of a function.
type tool struct {
	id, description string
	execute         func(ctx context.Context, key string, p map[string]string) (string, error)
}

func (t tool) ID() string          { return t.id }
func (t tool) Description() string { return t.description }
func (t tool) Execute(ctx context.Context, key string, p map[string]string) (string, error) {
	return t.execute(ctx, key, p)
}

// param returns parameter name, which must not be empty.
func param(p map[string]string, name string) (string, error) {
	v := strings.TrimSpace(p[name])
	if v == "" {
		return "", fmt.Errorf("%w: %q is missing", ErrInvalid, name)
	}
	return v, nil
}

// Tools are the toolkit of the offline demo, all local and real: a
// calculator, and tools that read the files of workspace: read_file,
// word_count, search_index (which fails now and then) and grep (its
// fallback), and wait.
func Tools(workspace fs.FS) []ToolAdapter {
	return []ToolAdapter{
		tool{"calculator", "Evaluates an arithmetic expression (numbers, + - * / and parentheses) exactly. Parameters: expression.",
			func(_ context.Context, _ string, p map[string]string) (string, error) {
				e, err := param(p, "expression")
				if err != nil {
					return "", err
				}
				v, err := calc.Calculate(e)
				if err != nil {
					return "", fmt.Errorf("%w: %w", ErrInvalid, err)
				}
				return v, nil
			}},
		tool{"read_file", "Reads a text file of the workspace. Parameters: path.",
			func(_ context.Context, _ string, p map[string]string) (string, error) {
				name, err := workspacePath(p)
				if err != nil {
					return "", err
				}
				b, err := fs.ReadFile(workspace, name)
				if err != nil {
					return "", fmt.Errorf("reading %s: %w", name, notFound(err))
				}
				return string(b), nil
			}},
		tool{"word_count", "Counts the words of a text file of the workspace. Parameters: path.",
			func(_ context.Context, _ string, p map[string]string) (string, error) {
				name, err := workspacePath(p)
				if err != nil {
					return "", err
				}
				b, err := fs.ReadFile(workspace, name)
				if err != nil {
					return "", fmt.Errorf("reading %s: %w", name, notFound(err))
				}
				return strconv.Itoa(len(strings.Fields(string(b)))), nil
			}},
		SearchIndex(workspace, nil),
		tool{"grep", "Finds the lines of the workspace's files that contain a term, by reading every file. Parameters: term.",
			func(ctx context.Context, _ string, p map[string]string) (string, error) {
				term, err := param(p, "term")
				if err != nil {
					return "", err
				}
				return search(ctx, workspace, term)
			}},
		tool{"wait", "Waits for a number of milliseconds, then says so. Parameters: ms.",
			func(ctx context.Context, _ string, p map[string]string) (string, error) {
				s, err := param(p, "ms")
				if err != nil {
					return "", err
				}
				ms, err := strconv.Atoi(s)
				if err != nil || ms < 0 || ms > 600_000 {
					return "", fmt.Errorf("%w: ms is not a number of milliseconds up to 600000: %q", ErrInvalid, s)
				}
				select {
				case <-time.After(time.Duration(ms) * time.Millisecond):
					return fmt.Sprintf("waited %d ms", ms), nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}},
	}
}

// SearchIndex is the fast search of the workspace, through an index that is
// rebuilt now and then: while it is, a search fails. Which calls find it
// rebuilding is decided by rebuilding, a function of the call's key, so that
// a call fails or succeeds the same way every time it is made (nil: the
// keys whose FNV-1a hash is even, about half of them). Its fallback is grep.
func SearchIndex(workspace fs.FS, rebuilding func(key string) bool) ToolAdapter {
	if rebuilding == nil {
		rebuilding = func(key string) bool {
			h := fnv.New32a()
			h.Write([]byte(key))
			return h.Sum32()%2 == 0
		}
	}
	return tool{"search_index", "Finds the lines of the workspace's files that contain a term, through the index. Parameters: term.",
		func(ctx context.Context, key string, p map[string]string) (string, error) {
			term, err := param(p, "term")
			if err != nil {
				return "", err
			}
			if rebuilding(key) {
				return "", errors.New("the search index is being rebuilt")
			}
			return search(ctx, workspace, term)
		}}
}

// workspacePath returns the path parameter as a path of the workspace;
// any other is refused.
func workspacePath(p map[string]string) (string, error) {
	name, err := param(p, "path")
	if err != nil {
		return "", err
	}
	if !fs.ValidPath(name) || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("%w: %s is outside the workspace", ErrPermission, name)
	}
	return name, nil
}

// notFound makes a missing file an invalid parameter: calling again will
// not make it appear.
func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return err
}

// search returns the lines of the files of workspace that contain term,
// as "file:line: text", at most 20 of them.
func search(ctx context.Context, workspace fs.FS, term string) (string, error) {
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
			if strings.Contains(strings.ToLower(lines.Text()), strings.ToLower(term)) {
				hits = append(hits, fmt.Sprintf("%s:%d: %s", name, n, strings.TrimSpace(lines.Text())))
			}
		}
		return lines.Err()
	})
	if err != nil {
		return "", err
	}
	if len(hits) == 0 {
		return "", nil
	}
	return strings.Join(hits, "\n"), nil
}

// The security checks of the demo: an allow-list of tools, and an output
// filter that redacts lines that look like secrets.
var (
	allowedTools = []string{"calculator", "read_file", "word_count", "search_index", "grep", "wait"}
	secretLine   = regexp.MustCompile(`(?im)^.*\b(password|passwd|secret|token|api[_-]?key)\b.*$`)
)

// Allow is the demo's check before a call: only the tools of the allow-list.
func Allow(tool string, _ map[string]string) error {
	if !slices.Contains(allowedTools, tool) {
		return fmt.Errorf("%w: %s is not on the allow-list", ErrPermission, tool)
	}
	return nil
}

// Filter is the demo's check after a call: lines that mention a password,
// secret, token or API key are replaced by [redacted].
func Filter(_ string, output string) string {
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
