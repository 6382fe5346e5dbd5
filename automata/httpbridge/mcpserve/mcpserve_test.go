package mcpserve_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/httpbridge/mcpserve"
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

// replied holds once the reply to the message the call sent is in the view.
var replied = mcpserve.Condition[input, view]{
	Description: "the llm has replied to the message sent",
	Holds: func(in input, v view) bool {
		m, ok := in.(decl.SendUserMessage)
		if !ok {
			return true
		}
		for _, a := range v.AssiMessages {
			if a.ID == "re-"+m.ID {
				return true
			}
		}
		return false
	},
}

func mcpConfig() mcpserve.Config[input, view] {
	return mcpserve.Config[input, view]{
		Schema:     decl.InputSchema(),
		Conditions: map[string]mcpserve.Condition[input, view]{"replied": replied},
		Logger:     slog.New(slog.DiscardHandler),
	}
}

func openMachine(t testing.TB, s journal.Store, options ...automata.Option[state, input]) *journal.Machine[state, input] {
	m, err := journal.Open(s, agent.Definition(), journal.Options[state, input]{
		Codec:  journal.JSON[state](decl.DecodeInput),
		Logger: slog.New(slog.DiscardHandler),
	}, append([]automata.Option[state, input]{agent.WithJobs(decl.JobFns{Llm: llmJobs}), automata.WithAdmission(stamp)}, options...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// single is one durable agent served by a bridge with the MCP front at
// /mcp, on loopback.
type single struct {
	m   *journal.Machine[state, input]
	b   *httpbridge.Bridge[state, input, view]
	srv *httptest.Server
}

func newSingle(t testing.TB, edit func(*mcpserve.Config[input, view])) *single {
	t.Helper()
	return newSingleWith(t, httpbridge.Bearer(token), edit)
}

func newSingleAuth(t testing.TB, auth func(*http.Request) error) *single {
	t.Helper()
	return newSingleWith(t, auth, nil)
}

func newSingleWith(t testing.TB, auth func(*http.Request) error, edit func(*mcpserve.Config[input, view])) *single {
	t.Helper()
	store, err := bolt.Open(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	m := openMachine(t, store)
	cfg := mcpConfig()
	if edit != nil {
		edit(&cfg)
	}
	b, err := httpbridge.New(m, httpbridge.Config[state, input, view]{
		Decode:  decl.DecodeClientInput,
		View:    userView,
		Auth:    auth,
		InputID: inputID,
		Fronts:  map[string]httpbridge.Front[state, input, view]{"/mcp": mcpserve.Front[state](cfg)},
	})
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
	return &single{m: m, b: b, srv: srv}
}

// bearer adds a bearer token to each request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connect opens an MCP session on url with the Go SDK's client.
func connect(t testing.TB, url, tok string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{tok, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestAgentOverMCP drives an agent through the Go SDK's client: its tools
// are the user's inputs with the spec's schema and description, a call is
// journaled and answers with its position, waits for a condition, is
// deduplicated by the input's id; the state resource reads the view, and a
// subscriber is told of each change with its JSON Patch.
func TestAgentOverMCP(t *testing.T) {
	a := newSingle(t, nil)
	updates := make(chan *mcp.ResourceUpdatedNotificationParams, 100)
	s := connect(t, a.srv.URL+"/mcp", token, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updates <- req.Params
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "send-user-message" {
		t.Fatalf("tools: %+v, want send-user-message only (the user's)", tools.Tools)
	}
	tool := tools.Tools[0]
	if !strings.HasPrefix(tool.Description, "The user sends a message.") {
		t.Errorf("description %q: want the spec's", tool.Description)
	}
	schema, _ := json.Marshal(tool.InputSchema)
	for _, want := range []string{`"id":{"type":"string"}`, `"required":["id","content","timestamp"]`, `"waitFor"`, `"timeoutMs"`} {
		if !strings.Contains(string(schema), want) {
			t.Errorf("schema %s: no %s", schema, want)
		}
	}
	if strings.Contains(string(schema), `"const":"send-user-message"`) {
		t.Errorf("schema %s: the type discriminator is the tool's, not an argument", schema)
	}

	if err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: "agent://self/state"}); err != nil {
		t.Fatal(err)
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "send-user-message", Arguments: map[string]any{"id": "m1", "content": "hello", "timestamp": 0, "waitFor": "replied", "timeoutMs": 10000}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	var out struct {
		Seq       uint64
		Journaled bool
		Held      bool
		View      view
	}
	data, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(data, &out)
	if !out.Journaled || out.Seq == 0 || !out.Held || len(out.View.AssiMessages) != 1 {
		t.Fatalf("result %s: want journaled, a seq, the condition held and the reply in the view", data)
	}
	entries, err := a.m.Inputs(out.Seq, out.Seq)
	if err != nil || len(entries) != 1 {
		t.Fatal(entries, err)
	}
	if m, ok := entries[0].Input.(decl.SendUserMessage); !ok || m.ID != "m1" || m.Content != "hello" || m.Timestamp < 1_000_000 {
		t.Fatalf("journal at %d: %+v, want the message, stamped", out.Seq, entries[0].Input)
	}

	// The same id again: a duplicate, nothing applied.
	res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "send-user-message", Arguments: map[string]any{"id": "m1", "content": "hello", "timestamp": 0}})
	if err != nil || res.IsError {
		t.Fatalf("call again: %v %+v", err, res)
	}
	data, _ = json.Marshal(res.StructuredContent)
	if !strings.Contains(string(data), `"duplicate":true`) {
		t.Fatalf("result %s: want a duplicate", data)
	}

	// A bad input is a tool error, with the decoder's words.
	res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "send-user-message", Arguments: map[string]any{"id": "m2", "content": 3, "timestamp": 0}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "/content") {
		t.Fatalf("bad input: %v %+v", err, res)
	}

	read, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: "agent://self/state"})
	if err != nil {
		t.Fatal(err)
	}
	c := read.Contents[0]
	var v view
	if c.MIMEType != "application/json" || json.Unmarshal([]byte(c.Text), &v) != nil || len(v.UserMessages) != 1 || len(v.AssiMessages) != 1 {
		t.Fatalf("resource: %+v", c)
	}

	// Updates: the user's message and the reply, each with its delta.
	for _, want := range []string{"/userMessages", "/assiMessages"} {
		select {
		case u := <-updates:
			delta, _ := json.Marshal(u.Meta[mcpserve.MetaDelta])
			if u.URI != "agent://self/state" || !strings.Contains(string(delta), want) {
				t.Fatalf("update %+v: want a delta of %s", u, want)
			}
		case <-ctx.Done():
			t.Fatalf("no update of %s", want)
		}
	}
}

// TestAuth: the bridge's front guards /mcp (Auth).
func TestAuth(t *testing.T) {
	a := newSingle(t, nil)
	req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a token: %d, want 401", resp.StatusCode)
	}
}

// fleetFixture is a Fleet with the MCP front on each agent (/agents/{id}/mcp)
// and on the fleet (/mcp).
type fleetFixture struct {
	reg      *registry.Registry[state, input]
	fleet    *httpbridge.Fleet[state, input, view]
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
			Fronts: map[string]httpbridge.Front[state, input, view]{"/mcp": mcpserve.Front[state](mcpConfig())},
		},
		Fronts: map[string]httpbridge.FleetFront[state, input, view]{"/mcp": mcpserve.FleetFront[state](mcpConfig())},
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
	return &fleetFixture{reg: reg, fleet: fleet, sessions: sessions, srv: srv}
}

// TestFleetOverMCP: create-agent at the fleet's /mcp, the input tools with
// an agent argument, the resource template; another owner's agent is not
// found, there and at its own /agents/{id}/mcp.
func TestFleetOverMCP(t *testing.T) {
	f := newFleet(t)
	alice, _ := f.sessions.Issue()
	bob, _ := f.sessions.Issue()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	updates := make(chan *mcp.ResourceUpdatedNotificationParams, 100)
	sa := connect(t, f.srv.URL+"/mcp", alice, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updates <- req.Params },
	})
	res, err := sa.CallTool(ctx, &mcp.CallToolParams{Name: "create-agent", Arguments: map[string]any{"id": "ticket-1"}})
	if err != nil || res.IsError {
		t.Fatalf("create-agent: %v %+v", err, res)
	}
	if err := sa.Subscribe(ctx, &mcp.SubscribeParams{URI: "agent://ticket-1/state"}); err != nil {
		t.Fatal(err)
	}
	res, err = sa.CallTool(ctx, &mcp.CallToolParams{Name: "send-user-message", Arguments: map[string]any{"agent": "ticket-1", "id": "m1", "content": "hi", "timestamp": 0, "waitFor": "replied"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	read, err := sa.ReadResource(ctx, &mcp.ReadResourceParams{URI: "agent://ticket-1/state"})
	if err != nil || !strings.Contains(read.Contents[0].Text, "echo: hi") {
		t.Fatalf("read: %v %+v", err, read)
	}
	select {
	case u := <-updates:
		if u.URI != "agent://ticket-1/state" {
			t.Fatalf("update %+v", u)
		}
	case <-ctx.Done():
		t.Fatal("no update")
	}

	// Bob: alice's agent is not found, at the fleet's /mcp and at its own.
	sb := connect(t, f.srv.URL+"/mcp", bob, nil)
	if _, err := sb.ReadResource(ctx, &mcp.ReadResourceParams{URI: "agent://ticket-1/state"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("bob reads alice's agent: %v, want not found", err)
	}
	if err := sb.Subscribe(ctx, &mcp.SubscribeParams{URI: "agent://ticket-1/state"}); err == nil {
		t.Fatal("bob subscribes to alice's agent")
	}
	res, err = sb.CallTool(ctx, &mcp.CallToolParams{Name: "send-user-message", Arguments: map[string]any{"agent": "ticket-1", "id": "b1", "content": "hi", "timestamp": 0}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "no agent") {
		t.Fatalf("bob calls on alice's agent: %v %+v", err, res)
	}
	res, err = sb.CallTool(ctx, &mcp.CallToolParams{Name: "create-agent", Arguments: map[string]any{"id": "ticket-1"}})
	if err != nil || !res.IsError {
		t.Fatalf("bob creates alice's id: %v %+v, want not found", err, res)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	_, err = c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.srv.URL + "/agents/ticket-1/mcp", HTTPClient: &http.Client{Transport: bearer{bob, http.DefaultTransport}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "404") && !strings.Contains(strings.ToLower(err.Error()), "not found") {
		t.Fatalf("bob connects to alice's agent: %v, want 404", err)
	}

	// Alice at the agent's own endpoint: its resource names it.
	s1 := connect(t, f.srv.URL+"/agents/ticket-1/mcp", alice, nil)
	read, err = s1.ReadResource(ctx, &mcp.ReadResourceParams{URI: "agent://ticket-1/state"})
	if err != nil || !strings.Contains(read.Contents[0].Text, "echo: hi") {
		t.Fatalf("read at the agent's endpoint: %v %+v", err, read)
	}
}
