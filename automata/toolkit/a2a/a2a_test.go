package a2a_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/automata/toolkit/a2a"
	"github.com/moora-go/moora/internal/tsctest"
)

// startUpper starts testdata/a2aserver.mjs, an agent written with the
// official A2A JavaScript SDK's server, wanting token, and returns its
// base URL.
func startUpper(t *testing.T, token string) string {
	t.Helper()
	node := tsctest.Node(t)
	tsctest.NodeModule(t, filepath.Join("@a2a-js", "sdk", "package.json"))
	tsctest.NodeModule(t, filepath.Join("express", "package.json"))
	cmd := exec.Command(node, filepath.Join(testdataDir(t), "a2aserver.mjs"), token)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if u, ok := strings.CutPrefix(lines.Text(), "LISTENING "); ok {
			go func() {
				for lines.Scan() {
				}
			}()
			return u
		}
	}
	t.Fatal("the A2A server did not start")
	return ""
}

func testdataDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestJavaScriptServer mounts an agent of the JavaScript SDK's server as a
// tool: its card makes the tool (name, description, skills), a call is a
// message whose task's artifact is the result; a question of the agent
// (input-required) is the result, answered by a call with its taskId; a
// failed task is a failure of the call; a wrong token is a permission
// error (the card fetched with the right one).
func TestJavaScriptServer(t *testing.T) {
	base := startUpper(t, "secret")
	kit, err := toolkit.New(toolkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := a2a.Mount(kit, a2a.Config{URL: base, Header: map[string][]string{"Authorization": {"Bearer secret"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := agent.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	tool, ok := kit.Tool("upper")
	if !ok || !strings.Contains(tool.Description(), "Upper-cases a text.") || !strings.Contains(tool.Description(), "Upper-case: Upper-cases the text it is sent") {
		t.Fatalf("the kit's tools %v; upper's description %q", kit.Names(), tool.Description())
	}
	run := func(args string) toolkit.Result {
		t.Helper()
		return kit.Run(ctx, toolkit.Call{ID: "c1", Key: "job-1/" + args, Name: "upper", Arguments: json.RawMessage(args)})
	}
	if r := run(`{"message":"hello there"}`); r.Kind != toolkit.KindNone || r.Output != "HELLO THERE" {
		t.Fatalf("upper: %+v", r)
	}
	r := run(`{"message":"ask"}`)
	if r.Kind != toolkit.KindNone || !strings.Contains(r.Output, "Which word shall I upper-case?") {
		t.Fatalf("ask: %+v", r)
	}
	_, rest, _ := strings.Cut(r.Output, `taskId "`)
	taskID, _, _ := strings.Cut(rest, `"`)
	if r := run(`{"message":"moora","taskId":"` + taskID + `"}`); r.Kind != toolkit.KindNone || r.Output != "MOORA" {
		t.Fatalf("the answer to task %q: %+v", taskID, r)
	}
	if r := run(`{"message":"fail"}`); r.Kind != toolkit.KindFailure || !strings.Contains(r.Content(), "failed") {
		t.Fatalf("fail: %+v", r)
	}
	if r := run(`{"message":"x","taskId":"no-such-task"}`); r.Kind == toolkit.KindNone {
		t.Fatalf("an unknown task: %+v", r)
	}
	if r := run(`{"text":"no message"}`); r.Kind != toolkit.KindInvalid {
		t.Fatalf("arguments without a message: %+v", r)
	}
}
