package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/moora-go/moora/modelgen"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the expected output in the test scripts")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"agentgen": func() { os.Exit(Main()) },
	})
}

// goEnv is the go command's configuration, which the scripts that build
// code use: the real module and build caches, the proxy settings. Scripts
// run with HOME=/no-home, where go would find neither.
var goEnv = sync.OnceValues(func() (map[string]string, error) {
	out, err := exec.Command("go", "env", "-json", "GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS",
		"GONOPROXY", "GONOSUMDB", "GOPRIVATE", "GOSUMDB", "GOINSECURE", "GOTOOLCHAIN").Output()
	if err != nil {
		return nil, err
	}
	env := make(map[string]string)
	return env, json.Unmarshal(out, &env)
})

// TestScripts runs the CLI scenarios in testdata/script/*.txtar with agentgen
// in-process. -update rewrites the files the scripts compare with. Scenarios
// that build Go code skip with -short; they get the go command's caches and
// proxy settings, and $TOOLKIT, the root of this repository.
func TestScripts(t *testing.T) {
	p := scriptParams(t)
	p.Dir = "testdata/script"
	p.UpdateScripts = *update
	testscript.Run(t, p)
}

// scriptParams are the parameters of every test script: the commands,
// and the environment that Setup gives it.
func scriptParams(t *testing.T) testscript.Params {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return testscript.Params{
		RequireExplicitExec: true,
		Cmds:                map[string]func(*testscript.TestScript, bool, []string){"exitcode": cmdExitCode, "buildable": cmdBuildable, "fill": cmdFill, "handwritten": cmdHandwritten},
		Setup: func(e *testscript.Env) error {
			e.Setenv("TOOLKIT", root)
			e.Setenv("GOWORK", "off")
			// A race-enabled agentgen waits a second before exiting, by
			// default, for late race reports; the scripts run it dozens of times.
			e.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
			if _, err := exec.LookPath("go"); err != nil {
				return nil // the scripts that need it skip: [!exec:go]
			}
			vars, err := goEnv()
			if err != nil {
				return err
			}
			for k, v := range vars {
				if v != "" {
					e.Setenv(k, v)
				}
			}
			return nil
		},
	}
}

// cmdExitCode is the script command
//
//	exitcode N program [args...]
//
// It runs program like exec and fails unless it exits with status N; the
// program's output is left for stdout and stderr to check, as exec leaves
// it. (! exec only asserts a non-zero status, which cannot tell agentgen's
// 1 from its 2.)
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("exitcode does not take !: give the status")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil || want < 0 {
		ts.Fatalf("exitcode: %q is not an exit status", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// cmdBuildable is the script command
//
//	buildable
//
// It makes the module in the current directory build against $TOOLKIT, as
// init makes a new agent's: its go.mod requires github.com/moora-go/moora
// with a replace directive to $TOOLKIT, and go mod tidy (offline) fills in
// the rest. agentgen check type-checks decl/ and impl/ with the go command,
// so a script's agent must build for check to pass. A script that uses it
// skips without the go command: [!exec:go] skip.
func cmdBuildable(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: buildable")
	}
	ts.Check(ts.Exec("go", "mod", "edit", "-require="+toolkitModule+"@v0.0.0-00010101000000-000000000000", "-replace="+toolkitModule+"="+ts.Getenv("TOOLKIT")))
	sum, err := os.ReadFile(filepath.Join(ts.Getenv("TOOLKIT"), "go.sum"))
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs("go.sum"), sum, 0o644))
	proxy := ts.Getenv("GOPROXY")
	ts.Setenv("GOPROXY", "off")
	defer ts.Setenv("GOPROXY", proxy)
	ts.Check(ts.Exec("go", "mod", "tidy", "-e"))
}

// TestSchemaCommand checks that agentgen schema prints the spec schema byte
// for byte.
func TestSchemaCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"schema"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.Bytes())
	}
	if !bytes.Equal(stdout.Bytes(), modelgen.Schema()) {
		t.Error("agentgen schema differs from modelgen.Schema()")
	}
}

// TestFindSpec checks the upward search for agent.yaml: the nearest one
// wins, a directory of that name does not count, and with none the error
// says where the search started.
func TestFindSpec(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b", "c")
	if err := os.MkdirAll(filepath.Join(deep, "agent.yaml"), 0o755); err != nil { // a directory, not a spec
		t.Fatal(err)
	}
	if _, err := findSpec(deep, "agent.yaml"); err == nil || !strings.Contains(err.Error(), "no agent.yaml in "+deep+" or any directory above it") {
		t.Errorf("without a spec: got %v", err)
	}
	for _, p := range []string{filepath.Join(root, "agent.yaml"), filepath.Join(root, "a", "agent.yaml")} {
		if err := os.WriteFile(p, []byte("version: 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := findSpec(filepath.Join(deep, "agent.yaml"), "agent.yaml")
	if want := filepath.Join("..", "..", "..", "agent.yaml"); err != nil || got != want {
		t.Errorf("findSpec = %q, %v; want %q", got, err, want)
	}
}

// TestExcerpt checks the source line and caret printed under a diagnostic
// on a terminal: the caret sits under the column, counted in characters,
// and a tab before it is kept so that it lines up.
func TestExcerpt(t *testing.T) {
	data := []byte("version: 1\nactors: [é, x]\n\tbad: 1\n")
	for _, tc := range []struct {
		name      string
		line, col int
		want      string
	}{
		{"first column", 1, 1, " 1 | version: 1\n   | ^\n"},
		{"after a wide character", 2, 13, " 2 | actors: [é, x]\n   |             ^\n"},
		{"after a tab", 3, 2, " 3 | \tbad: 1\n   | \t^\n"},
		{"no column", 2, 0, " 2 | actors: [é, x]\n"},
		{"no such line", 9, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := excerpt(data, tc.line, tc.col); got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// cmdFill is the script command
//
//	fill file func line...
//
// It is a person writing a migration that generate left as a stub: the
// body of func in file, one panic("not implemented..."), becomes the lines
// given (each a statement). The lines are added to the count that
// handwritten checks.
func cmdFill(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: fill file func line...")
	}
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	lines := strings.Split(string(data), "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "func "+args[1]+"(") })
	if start < 0 || start+2 >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[start+1]), `panic("not implemented`) || lines[start+2] != "}" {
		ts.Fatalf("fill: %s has no stub of func %s", args[0], args[1])
	}
	body := make([]string, len(args[2:]))
	for i, l := range args[2:] {
		body[i] = "\t" + l
	}
	lines = slices.Replace(lines, start+1, start+2, body...)
	ts.Check(os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644))
	n, _ := strconv.Atoi(ts.Getenv("HANDWRITTEN"))
	ts.Setenv("HANDWRITTEN", strconv.Itoa(n+len(body)))
}

// cmdHandwritten is the script command
//
//	handwritten N
//
// It fails unless the lines fill wrote, over the whole script, are N.
func cmdHandwritten(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: handwritten N")
	}
	n, _ := strconv.Atoi(ts.Getenv("HANDWRITTEN"))
	ts.Logf("%d lines written by hand", n)
	if want, err := strconv.Atoi(args[0]); err != nil || n != want {
		ts.Fatalf("%d lines written by hand, want %s", n, args[0])
	}
}
