package a2aserve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/httpbridge/a2aserve"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/registry"
)

type (
	state = decl.AgentState
	input = decl.AgentInput
	view  = decl.ContextOfUser
)

const (
	token         = "s3cret"
	operatorToken = "operator-token"
)

var clock atomic.Int64

func stamp(_ state, in input) (input, error) {
	if m, ok := in.(decl.SendUserMessage); ok {
		m.Timestamp = 1_000_000 + clock.Add(1)
		return m, nil
	}
	return in, nil
}

// llmJobs answers every user message at once: "echo: <content>".
func llmJobs(v decl.ContextOfLlm) map[string]automata.Job[input] {
	answered := map[string]bool{}
	for _, a := range v.AssiMessages {
		answered[strings.TrimPrefix(a.ID, "re-")] = true
	}
	jobs := map[string]automata.Job[input]{}
	for _, m := range v.UserMessages {
		if !answered[m.ID] {
			jobs[m.ID] = func(ctx context.Context, dispatch automata.Dispatch[input]) error {
				dispatch(decl.SendAssiMessage{ID: "re-" + m.ID, Content: "echo: " + m.Content, Timestamp: m.Timestamp + 1})
				return nil
			}
		}
	}
	return jobs
}

func inputID(in input) string {
	if m, ok := in.(decl.SendUserMessage); ok {
		return m.ID
	}
	return ""
}

func userView(s state) view { return s.ContextOfUser() }

// chatTask is the conversation as a task: working until the newest user
// message has its reply, then input-required with the reply; each reply
// an artifact.
func chatTask(v view) a2aserve.Status {
	var st a2aserve.Status
	replies := map[string]decl.AssiMessage{}
	for _, a := range v.AssiMessages {
		replies[a.ID] = a
		st.Artifacts = append(st.Artifacts, a2aserve.Artifact{ArtifactID: a.ID, Parts: []a2aserve.Part{{Text: a.Content}}})
	}
	for _, u := range v.UserMessages {
		st.History = append(st.History, a2aserve.Message{MessageID: u.ID, Role: a2aserve.RoleUser, Parts: []a2aserve.Part{{Text: u.Content}}})
		if r, ok := replies["re-"+u.ID]; ok {
			st.History = append(st.History, a2aserve.Message{MessageID: r.ID, Role: a2aserve.RoleAgent, Parts: []a2aserve.Part{{Text: r.Content}}})
		}
	}
	st.State = a2aserve.StateInputRequired
	if n := len(v.UserMessages); n > 0 {
		r, ok := replies["re-"+v.UserMessages[n-1].ID]
		if !ok {
			st.State = a2aserve.StateWorking
		} else {
			st.Message = &a2aserve.Message{MessageID: r.ID, Parts: []a2aserve.Part{{Text: r.Content}}}
		}
	}
	return st
}

func a2aConfig() a2aserve.Config[input, view] {
	return a2aserve.Config[input, view]{
		Schema: decl.InputSchema(),
		Name:   "echo",
		// The chat agent's message has a timestamp the client sends (0:
		// the admission step stamps it), so the mapping is its own.
		Input: func(m a2aserve.Message) (input, error) {
			return decl.SendUserMessage{ID: m.MessageID, Content: m.Text()}, nil
		},
		Task:   chatTask,
		Logger: slog.New(slog.DiscardHandler),
	}
}

func openMachine(t testing.TB, s journal.Store) *journal.Machine[state, input] {
	m, err := journal.Open(s, agent.Definition(), journal.Options[state, input]{
		Codec:  journal.JSON[state](decl.DecodeInput),
		Logger: slog.New(slog.DiscardHandler),
	}, agent.WithJobs(decl.JobFns{Llm: llmJobs}), automata.WithAdmission(stamp))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// single is one durable agent served by a bridge with the A2A front at
// /a2a, on loopback.
type single struct {
	m   *journal.Machine[state, input]
	srv *httptest.Server
}

func newSingle(t testing.TB, edit func(*a2aserve.Config[input, view], *httpbridge.Config[state, input, view])) *single {
	t.Helper()
	store, err := bolt.Open(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	m := openMachine(t, store)
	cfg := a2aConfig()
	bcfg := httpbridge.Config[state, input, view]{
		Decode:  decl.DecodeClientInput,
		View:    userView,
		Auth:    httpbridge.Bearer(token),
		InputID: inputID,
	}
	if edit != nil {
		edit(&cfg, &bcfg)
	}
	bcfg.Fronts = map[string]httpbridge.Front[state, input, view]{"/a2a": a2aserve.Front[state](cfg)}
	b, err := httpbridge.New(m, bcfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b)
	t.Cleanup(func() {
		b.Close()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		m.Close(ctx)
	})
	return &single{m: m, srv: srv}
}

// rpcAnswer is a JSON-RPC answer.
type rpcAnswer struct {
	status int
	header http.Header
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// call posts a JSON-RPC request body to url with tok.
func call(t testing.TB, url, tok, body string) rpcAnswer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	a := rpcAnswer{status: resp.StatusCode, header: resp.Header}
	if err := json.Unmarshal(data, &a); err != nil && resp.StatusCode == http.StatusOK {
		t.Fatalf("POST %s: %d %s: not JSON-RPC", url, resp.StatusCode, data)
	}
	return a
}

func send(id, text, taskID string) string {
	m := map[string]any{"messageId": id, "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}
	if taskID != "" {
		m["taskId"] = taskID
	}
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": map[string]any{"message": m}})
	return string(data)
}

func rpc(method, params string) string {
	return `{"jsonrpc":"2.0","id":"r1","method":"` + method + `","params":` + params + `}`
}

type sseEvent struct {
	id   string
	data struct {
		ID     json.RawMessage         `json:"id"`
		Result a2aserve.StreamResponse `json:"result"`
	}
}

// stream posts a streaming request and reads its events to the end.
func stream(t testing.TB, url, tok, body string) (*http.Response, []sseEvent) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []sseEvent
	var ev sseEvent
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		line := lines.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data); err != nil {
				t.Fatalf("event %q: %v", line, err)
			}
		case line == "":
			events = append(events, ev)
			ev = sseEvent{}
		}
	}
	return resp, events
}

// TestAgentOverA2A drives one agent over A2A's JSON-RPC: its card (the
// user's input a skill, the endpoint the agent's /a2a), a message (the
// task waits for the user once the reply is in; the message journaled),
// GetTask, a stream (the task, the reply's artifact, input-required, each
// event's id a journal position), and the protocol's errors.
func TestAgentOverA2A(t *testing.T) {
	a := newSingle(t, nil)
	req, _ := http.NewRequest(http.MethodGet, a.srv.URL+"/a2a/.well-known/agent-card.json", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var card a2aserve.AgentCard
	json.NewDecoder(resp.Body).Decode(&card)
	resp.Body.Close()
	if card.Name != "echo" || len(card.Skills) != 1 || card.Skills[0].ID != "send-user-message" || card.Skills[0].Description != "The user sends a message." ||
		len(card.SupportedInterfaces) != 1 || card.SupportedInterfaces[0].URL != a.srv.URL+"/a2a" || !card.Capabilities.Streaming {
		t.Fatalf("card %+v", card)
	}

	ans := call(t, a.srv.URL+"/a2a", token, send("m1", "hello", ""))
	var res a2aserve.StreamResponse
	json.Unmarshal(ans.Result, &res)
	if ans.Error != nil || res.Task == nil || res.Task.ID != "self" || res.Task.Status.State != a2aserve.StateInputRequired ||
		res.Task.Status.Message == nil || res.Task.Status.Message.Text() != "echo: hello" || string(ans.ID) != "7" {
		t.Fatalf("SendMessage: %s %+v", ans.Result, ans.Error)
	}
	if got := a.m.Current().UserMessages; len(got) != 1 || got[0].ID != "m1" || got[0].Content != "hello" {
		t.Fatalf("the journal's messages %+v", got)
	}
	// The same message again: applied once.
	call(t, a.srv.URL+"/a2a", token, send("m1", "hello", "self"))
	if got := a.m.Current().UserMessages; len(got) != 1 {
		t.Fatalf("the message sent twice: %+v", got)
	}

	ans = call(t, a.srv.URL+"/a2a", token, rpc("GetTask", `{"id":"self","historyLength":1}`))
	var task a2aserve.Task
	json.Unmarshal(ans.Result, &task)
	if ans.Error != nil || task.Status.State != a2aserve.StateInputRequired || len(task.History) != 1 || task.History[0].Text() != "echo: hello" {
		t.Fatalf("GetTask: %s %+v", ans.Result, ans.Error)
	}

	body := strings.Replace(send("m2", "again", "self"), "SendMessage", "SendStreamingMessage", 1)
	resp, events := stream(t, a.srv.URL+"/a2a", token, body)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || len(events) < 3 {
		t.Fatalf("stream: %s, %d events", ct, len(events))
	}
	if first := events[0].data.Result.Task; first == nil || first.Status.State != a2aserve.StateSubmitted || len(first.Artifacts) != 1 {
		t.Fatalf("the first event %+v: want the task, submitted, with its artifacts then", events[0].data.Result)
	}
	var artifact, final bool
	for i, ev := range events {
		if string(ev.data.ID) != "7" || ev.id == "" || ev.id == "0" {
			t.Errorf("event %d: id %q, request %s", i, ev.id, ev.data.ID)
		}
		if u := ev.data.Result.ArtifactUpdate; u != nil && u.Artifact.ArtifactID == "re-m2" && u.Artifact.Parts[0].Text == "echo: again" {
			artifact = true
		}
	}
	if last := events[len(events)-1].data.Result.StatusUpdate; last != nil && last.Status.State == a2aserve.StateInputRequired && last.Status.Message.Text() == "echo: again" {
		final = true
	}
	if !artifact || !final {
		t.Fatalf("stream %+v: want the reply's artifact, then input-required", events)
	}

	for _, c := range []struct {
		name, body string
		code       int
	}{
		{"another task", rpc("GetTask", `{"id":"other"}`), a2aserve.CodeTaskNotFound},
		{"a message to another task", send("m3", "x", "other"), a2aserve.CodeTaskNotFound},
		{"cancel", rpc("CancelTask", `{"id":"self"}`), a2aserve.CodeTaskNotCancelable},
		{"push", rpc("CreateTaskPushNotificationConfig", `{"taskId":"self"}`), a2aserve.CodePushNotSupported},
		{"list", rpc("ListTasks", `{}`), a2aserve.CodeUnsupported},
		{"extended card", rpc("GetExtendedAgentCard", `{}`), a2aserve.CodeExtendedCardMissing},
		{"no such method", rpc("message/send", `{}`), a2aserve.CodeMethodNotFound},
	} {
		if ans := call(t, a.srv.URL+"/a2a", token, c.body); ans.Error == nil || ans.Error.Code != c.code {
			t.Errorf("%s: %+v, want code %d", c.name, ans.Error, c.code)
		}
	}
	// Without the token: 401, as on every route of the bridge.
	req, _ = http.NewRequest(http.MethodPost, a.srv.URL+"/a2a", strings.NewReader(send("m4", "x", "")))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the token: %v %v", resp.Status, err)
	}
}

type fleetFixture struct {
	sessions *httpbridge.Sessions
	srv      *httptest.Server
}

func newFleet(t testing.TB) *fleetFixture {
	t.Helper()
	store, err := bolt.OpenFleet(filepath.Join(t.TempDir(), "agents.db"))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(registry.Config[state, input]{
		Fleet:       store,
		IdleTimeout: time.Hour,
		Logger:      slog.New(slog.DiscardHandler),
		Open: func(id string, s journal.Store) (*journal.Machine[state, input], error) {
			return openMachine(t, s), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := httpbridge.NewSessions([]byte("a key of sixteen bytes or more"))
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := httpbridge.NewFleet(httpbridge.FleetConfig[state, input, view]{
		Registry: reg,
		Identify: httpbridge.Identities(operatorToken, sessions),
		Sessions: sessions,
		Bridge: httpbridge.Config[state, input, view]{
			Decode: decl.DecodeClientInput, View: userView, InputID: inputID,
			Fronts: map[string]httpbridge.Front[state, input, view]{"/a2a": a2aserve.Front[state](a2aConfig())},
		},
		Fronts: map[string]httpbridge.FleetFront[state, input, view]{"/a2a": a2aserve.FleetFront[state](a2aConfig())},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fleet)
	t.Cleanup(func() {
		fleet.Close()
		srv.Close()
		reg.Close(context.Background())
		store.Close()
	})
	return &fleetFixture{sessions: sessions, srv: srv}
}

// TestFleetOverA2A: at the fleet's /a2a, a message without a task makes
// an agent of its caller's, whose id is the task's; the task is the
// caller's alone: another owner's GetTask, message, contextId and
// stream are "task not found", word for word as a task that does not
// exist, and the agent's own /agents/{id}/a2a is a 404 to them.
func TestFleetOverA2A(t *testing.T) {
	f := newFleet(t)
	alice, _ := f.sessions.Issue()
	bob, _ := f.sessions.Issue()
	url := f.srv.URL + "/a2a"

	ans := call(t, url, alice, send("a1", "hello", ""))
	var res a2aserve.StreamResponse
	json.Unmarshal(ans.Result, &res)
	if ans.Error != nil || res.Task == nil || res.Task.ID == "" || res.Task.ContextID != res.Task.ID || res.Task.Status.State != a2aserve.StateInputRequired {
		t.Fatalf("alice's message: %s %+v", ans.Result, ans.Error)
	}
	id := res.Task.ID
	if ans := call(t, url, alice, send("a2", "more", id)); ans.Error != nil {
		t.Fatalf("alice's answer to her task: %+v", ans.Error)
	}
	// With a contextId of her choosing: the agent of that id.
	ans = call(t, url, alice, strings.Replace(send("a3", "ticket", ""), `"messageId"`, `"contextId":"ticket-9","messageId"`, 1))
	json.Unmarshal(ans.Result, &res)
	if ans.Error != nil || res.Task.ID != "ticket-9" {
		t.Fatalf("alice's message in context ticket-9: %s %+v", ans.Result, ans.Error)
	}

	none := call(t, url, bob, rpc("GetTask", `{"id":"no-such-task"}`))
	if none.Error == nil || none.Error.Code != a2aserve.CodeTaskNotFound {
		t.Fatalf("bob's GetTask of no task: %+v", none.Error)
	}
	for _, c := range []struct{ name, body string }{
		{"GetTask", rpc("GetTask", `{"id":"`+id+`"}`)},
		{"SendMessage", send("b1", "mine now", id)},
		{"a contextId", strings.Replace(send("b2", "x", ""), `"messageId"`, `"contextId":"ticket-9","messageId"`, 1)},
		{"CancelTask", rpc("CancelTask", `{"id":"`+id+`"}`)},
	} {
		ans := call(t, url, bob, c.body)
		if ans.Error == nil || ans.Error.Code != none.Error.Code || ans.Error.Message != none.Error.Message {
			t.Errorf("bob's %s of alice's task: %+v, want %+v", c.name, ans.Error, none.Error)
		}
	}
	resp, _ := stream(t, url, bob, rpc("SubscribeToTask", `{"id":"`+id+`"}`))
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		t.Errorf("bob follows alice's task")
	}
	if ans := call(t, f.srv.URL+"/agents/"+id+"/a2a", bob, rpc("GetTask", `{"id":"`+id+`"}`)); ans.status != http.StatusNotFound {
		t.Errorf("bob at alice's agent's own /a2a: %d", ans.status)
	}
	// Alice at her agent's own endpoint: the task is the agent.
	ans = call(t, f.srv.URL+"/agents/"+id+"/a2a", alice, rpc("GetTask", `{"id":"`+id+`"}`))
	var task a2aserve.Task
	json.Unmarshal(ans.Result, &task)
	if ans.Error != nil || task.ID != id || len(task.History) != 4 {
		t.Fatalf("alice's task at its agent's /a2a: %s %+v", ans.Result, ans.Error)
	}
	// Alice streams a message of her task at the fleet's /a2a.
	_, events := stream(t, url, alice, strings.Replace(send("a4", "streamed", id), "SendMessage", "SendStreamingMessage", 1))
	if n := len(events); n < 2 || events[0].data.Result.Task == nil || events[n-1].data.Result.StatusUpdate == nil ||
		events[n-1].data.Result.StatusUpdate.Status.Message.Text() != "echo: streamed" {
		t.Fatalf("alice's stream: %+v", events)
	}
	// No identity: 401.
	if ans := call(t, url, "", send("x", "x", "")); ans.status != http.StatusUnauthorized {
		t.Errorf("without a token: %d", ans.status)
	}
}

func decodeBody(t testing.TB, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func decodeRaw(data json.RawMessage, v any) { json.Unmarshal(data, v) }
