package httpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/internal/wire"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

const testToken = "s3cret"

type (
	state = decl.AgentState
	input = decl.AgentInput
	view  = decl.ContextOfUser
)

// stamp is the server-side admission step of seed 000: a user message is
// timestamped on arrival, whatever the browser said.
var clock atomic.Int64

func stamp(_ state, in input) (input, error) {
	if m, ok := in.(decl.SendUserMessage); ok {
		m.Timestamp = 1_000_000 + clock.Add(1)
		return m, nil
	}
	return in, nil
}

// replyWords is what the scripted llm answers to a message.
func replyWords(m decl.UserMessage) []string {
	return []string{"echo", ": ", m.Content, " (", m.ID, ")"}
}

func replyText(m decl.UserMessage) string { return strings.Join(replyWords(m), "") }

// llmJobs answers every user message that has no reply: it streams the
// reply word by word to "reply-<id>", ends the stream, then hands the whole
// reply in as an input.
func llmJobs(streams *Streams) decl.JobsFnOfLlm {
	return func(v decl.ContextOfLlm) map[string]automata.Job[input] {
		answered := map[string]bool{}
		for _, a := range v.AssiMessages {
			answered[strings.TrimPrefix(a.ID, "re-")] = true
		}
		jobs := map[string]automata.Job[input]{}
		for _, m := range v.UserMessages {
			if answered[m.ID] {
				continue
			}
			jobs[m.ID] = func(ctx context.Context, dispatch automata.Dispatch[input]) error {
				name := "reply-" + m.ID
				for _, w := range replyWords(m) {
					if streams.Write(name, w) != nil {
						break // written by an earlier run of this job
					}
				}
				streams.End(name)
				dispatch(decl.SendAssiMessage{ID: "re-" + m.ID, Content: replyText(m), Timestamp: m.Timestamp + 1})
				return nil
			}
		}
		return jobs
	}
}

type fixture struct {
	t       testing.TB
	m       *journal.Machine[state, input]
	b       *Bridge[state, input, view]
	streams *Streams
	srv     *httptest.Server
}

func userView(s state) view { return s.ContextOfUser() }

func inputID(in input) string {
	if m, ok := in.(decl.SendUserMessage); ok {
		return m.ID
	}
	return ""
}

// newFixture serves the chat test agent, durable, on a real loopback server.
func newFixture(t testing.TB, edit func(*Config[state, input, view])) *fixture {
	t.Helper()
	return newFixtureWith(t, edit)
}

// newFixtureWith is newFixture with more options for the agent's machine.
func newFixtureWith(t testing.TB, edit func(*Config[state, input, view]), options ...automata.Option[state, input]) *fixture {
	t.Helper()
	streams := NewStreams(StreamOptions{})
	store, err := bolt.Open(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := journal.Open(store, agent.Definition(), journal.Options[state, input]{
		Codec: journal.JSON[state](decl.DecodeInput),
	}, append([]automata.Option[state, input]{agent.WithJobs(decl.JobFns{Llm: llmJobs(streams)}), automata.WithAdmission(stamp)}, options...)...)
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	cfg := Config[state, input, view]{
		Decode:  decl.DecodeInput,
		View:    userView,
		Auth:    Bearer(testToken),
		InputID: inputID,
		Streams: streams,
	}
	if edit != nil {
		edit(&cfg)
	}
	b, err := New[state, input, view](m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(b)
	srv.Config.RegisterOnShutdown(b.Close)
	srv.Start()
	f := &fixture{t: t, m: m, b: b, streams: streams, srv: srv}
	t.Cleanup(func() {
		b.Close()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return f
}

func userMessage(id, content string) map[string]any {
	return map[string]any{"type": "send-user-message", "id": id, "content": content, "timestamp": 0}
}

// serverView is the server's view as plain JSON, as a client holds it.
func (f *fixture) serverView() any {
	data, err := json.Marshal(userView(f.m.Current()))
	if err != nil {
		f.t.Fatal(err)
	}
	var v any
	json.Unmarshal(data, &v)
	return v
}

// TestConversation posts messages, follows the state and the token
// streams, and ends with the client's view equal to the server's.
func TestConversation(t *testing.T) {
	f := newFixture(t, nil)
	c := newClient(f.srv.URL, testToken)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 5 {
		id := fmt.Sprintf("u%d", i)
		status, body, err := c.post(ctx, userMessage(id, fmt.Sprintf("hello %d", i)))
		if err != nil || status != http.StatusOK {
			t.Fatalf("post %s: %d %s %v", id, status, body, err)
		}
		var res struct{ Seq uint64 }
		json.Unmarshal(body, &res)
		if res.Seq == 0 {
			t.Fatalf("post %s: no seq in %s", id, body)
		}
		chunks, end, _, err := c.stream(ctx, "reply-"+id)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("echo: hello %d (%s)", i, id)
		if chunks != want || end != want {
			t.Fatalf("stream %s: chunks %q, end %q, want %q", id, chunks, end, want)
		}
	}
	// The state: both messages of each exchange, server-side timestamps.
	waitFor(t, func() bool { return len(f.m.Current().AssiMessages) == 5 })
	if err := c.follow(ctx, func() bool { return c.seq >= f.m.Seq() }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.view, f.serverView()) {
		t.Fatalf("client view %v\nserver view %v", c.view, f.serverView())
	}
	for _, m := range f.m.Current().UserMessages {
		if m.Timestamp <= 1_000_000 {
			t.Errorf("message %s: timestamp %d is the client's, not the server's", m.ID, m.Timestamp)
		}
	}
	if c.snapshots != 1 || c.resyncs != 0 || c.gaps != 0 {
		t.Errorf("snapshots %d, resyncs %d, gaps %d: want 1, 0, 0", c.snapshots, c.resyncs, c.gaps)
	}
}

// waitFor waits for cond; it fails only when cond never holds, after a
// minute: a hang, not a slow machine.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
	}
}

// TestBadInput sends what a POST must refuse: each gets its status and a
// message saying what is wrong, and nothing is journaled.
func TestBadInput(t *testing.T) {
	f := newFixture(t, func(c *Config[state, input, view]) { c.MaxBody = 1024 })
	valid := `{"type":"send-user-message","id":"u1","content":"hi","timestamp":0}`
	cases := []struct {
		name    string
		body    string
		header  map[string]string
		noAuth  bool
		status  int
		message string
	}{
		{name: "oversized body", body: `{"type":"send-user-message","id":"u1","content":"` + strings.Repeat("x", 2000) + `","timestamp":0}`, status: 413, message: "over 1024 bytes (Config.MaxBody)"},
		{name: "wrong JSON", body: `{"type":"send-user-message",`, status: 400, message: "unexpected EOF"},
		{name: "not an object", body: `[1,2]`, status: 400, message: "not a JSON object"},
		{name: "unknown input type", body: `{"type":"launch-missiles"}`, status: 400, message: `unknown type "launch-missiles"`},
		{name: "schema violation", body: `{"type":"send-user-message","id":"u1","content":5,"timestamp":0}`, status: 400, message: "/content: expected string, but got number"},
		{name: "missing property", body: `{"type":"send-user-message","id":"u1"}`, status: 400, message: "missing properties: 'content', 'timestamp'"},
		{name: "a key written twice", body: `{"type":"send-user-message","id":"u1","content":"a","content":"b","timestamp":0}`, status: 400, message: `the key "content" is written twice`},
		{name: "not UTF-8", body: "{\"type\":\"send-user-message\",\"id\":\"u1\",\"content\":\"a\xff\",\"timestamp\":0}", status: 400, message: "at /content: not valid UTF-8: byte 0xff"},
		{name: "half a surrogate pair", body: `{"type":"send-user-message","id":"u1","content":"\ud800x","timestamp":0}`, status: 400, message: `at /content: \ud800 is half of a UTF-16 surrogate pair`},
		{name: "missing token", body: valid, noAuth: true, status: 401, message: "missing Authorization header"},
		{name: "wrong token", body: valid, header: map[string]string{"Authorization": "Bearer nope"}, status: 401, message: "wrong bearer token"},
		{name: "disallowed origin", body: valid, header: map[string]string{"Origin": "https://evil.example"}, status: 403, message: `origin "https://evil.example" is not allowed`},
		{name: "not JSON content type", body: valid, header: map[string]string{"Content-Type": "text/plain"}, status: 415, message: "want application/json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", f.srv.URL+"/inputs", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			if !tc.noAuth {
				req.Header.Set("Authorization", "Bearer "+testToken)
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var e wire.Error
			if err := json.NewDecoder(res.Body).Decode(&e); err != nil {
				t.Fatalf("the body is not a JSON error: %v", err)
			}
			if res.StatusCode != tc.status || !strings.Contains(e.Error, tc.message) {
				t.Fatalf("got %d %q, want %d and a message with %q", res.StatusCode, e.Error, tc.status, tc.message)
			}
			t.Logf("%d %s", res.StatusCode, e.Error)
		})
	}
	if n := f.m.Seq(); n != 0 {
		t.Fatalf("%d inputs journaled, want none", n)
	}
}

// TestDuplicatePost retries a POST with the same input id: one input is
// journaled, and the retry gets the same answer. After a restart, the id
// is still known: it is read back from the journal.
func TestDuplicatePost(t *testing.T) {
	dir := t.TempDir()
	open := func() (*journal.Machine[state, input], *Bridge[state, input, view], *httptest.Server) {
		store, err := bolt.Open(filepath.Join(dir, "agent.db"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := journal.Open(store, agent.Definition(), journal.Options[state, input]{Codec: journal.JSON[state](decl.DecodeInput)})
		if err != nil {
			t.Fatal(err)
		}
		b, err := New[state, input, view](m, Config[state, input, view]{Decode: decl.DecodeInput, View: userView, Auth: AllowAll, InputID: inputID})
		if err != nil {
			t.Fatal(err)
		}
		return m, b, httptest.NewServer(b)
	}
	ctx := context.Background()
	m, b, srv := open()
	c := newClient(srv.URL, "")
	var answers []string
	for range 3 {
		status, body, err := c.post(ctx, userMessage("u1", "once"))
		if err != nil || status != 200 {
			t.Fatalf("%d %s %v", status, body, err)
		}
		answers = append(answers, string(body))
	}
	if answers[0] != `{"seq":1}`+"\n" || answers[1] != `{"seq":1,"duplicate":true}`+"\n" || answers[2] != answers[1] {
		t.Fatalf("answers %q", answers)
	}
	b.Close()
	srv.Close()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	m, b, srv = open()
	defer func() { b.Close(); srv.Close(); m.Close(ctx) }()
	c = newClient(srv.URL, "")
	status, body, err := c.post(ctx, userMessage("u1", "once"))
	if err != nil || status != 200 || string(body) != `{"seq":1,"duplicate":true}`+"\n" {
		t.Fatalf("after a restart: %d %s %v", status, body, err)
	}
	if m.Seq() != 1 {
		t.Fatalf("%d inputs journaled, want 1", m.Seq())
	}
}

// TestQueryToken opens a stream with a query token from /token, as a page
// using EventSource must; a forged or expired one is refused.
func TestQueryToken(t *testing.T) {
	f := newFixture(t, nil)
	get := func(path string, auth bool) (int, string) {
		req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+testToken)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		res, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode == 200 && strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			return 200, res.Header.Get("Content-Type")
		}
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if status, body := get("/token", false); status != 401 {
		t.Fatalf("/token without auth: %d %s", status, body)
	}
	status, body := get("/token", true)
	var tok struct{ Token string }
	if status != 200 || json.Unmarshal([]byte(body), &tok) != nil {
		t.Fatalf("/token: %d %s", status, body)
	}
	if status, body := get("/state?access_token="+tok.Token, false); status != 200 {
		t.Fatalf("state with a query token: %d %s", status, body)
	}
	forged := tok.Token[:len(tok.Token)-2] + "AA"
	if status, body := get("/state?access_token="+forged, false); status != 401 || !strings.Contains(body, "bad signature") {
		t.Fatalf("forged token: %d %s", status, body)
	}
	f.b.tokens.now = func() time.Time { return time.Now().Add(2 * queryTokenTTL) }
	if status, body := get("/state?access_token="+tok.Token, false); status != 401 || !strings.Contains(body, "expired") {
		t.Fatalf("expired token: %d %s", status, body)
	}
}

// TestCORS: a listed origin gets the CORS headers, preflight included;
// another is refused.
func TestCORS(t *testing.T) {
	f := newFixture(t, func(c *Config[state, input, view]) { c.AllowOrigins = []string{"https://app.example"} })
	req, _ := http.NewRequest("OPTIONS", f.srv.URL+"/inputs", nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 204 || res.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), "Last-Event-ID") {
		t.Fatalf("preflight: %d %v", res.StatusCode, res.Header)
	}
	req.Header.Set("Origin", "https://other.example")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("another origin: %d %v", res.StatusCode, res.Header)
	}
}

// lateAgent is a durable agent whose subscribers hear of each state a
// little after Dispatch has returned, as Agent allows.
type lateAgent struct {
	*journal.Machine[state, input]
}

func (a lateAgent) Subscribe(fn func(state)) func() {
	states := make(chan state, 1024)
	go func() {
		for s := range states {
			time.Sleep(50 * time.Millisecond)
			fn(s)
		}
	}()
	return a.Machine.Subscribe(func(s state) { states <- s })
}

// TestPostOfAnInputThatLeavesTheViewAlone: a POST is answered once the
// bridge has seen its input applied, also when the view did not change
// (it waited for the next change of the view, or for InputTimeout, when
// the subscriber heard of the input after Dispatch returned).
func TestPostOfAnInputThatLeavesTheViewAlone(t *testing.T) {
	f := newFixture(t, nil)
	b, err := New[state, input, view](lateAgent{f.m}, Config[state, input, view]{
		Decode:       decl.DecodeInput,
		View:         func(state) view { return view{} },
		Auth:         Bearer(testToken),
		InputTimeout: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srv := httptest.NewServer(b)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only if it hangs
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/inputs", strings.NewReader(`{"type":"send-user-message","id":"u1","content":"hi","timestamp":0}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the POST was not answered: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"seq":1`) {
		t.Fatalf("%d %s, want 200 with seq 1", resp.StatusCode, body)
	}
}

// TestNewOnAClosedAgent: a bridge made for an agent that has closed (a
// registry deactivated it as the bridge was being made) fails at once,
// saying so, rather than waiting a minute for a state a closed machine
// never delivers.
func TestNewOnAClosedAgent(t *testing.T) {
	store, err := bolt.Open(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := journal.Open(store, agent.Definition(), journal.Options[state, input]{Codec: journal.JSON[state](decl.DecodeInput)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = New[state, input, view](m, Config[state, input, view]{Decode: decl.DecodeInput, View: userView, Auth: AllowAll})
	if err == nil || !strings.Contains(err.Error(), "closed before it delivered its state") {
		t.Fatalf("New on a closed agent: %v", err)
	}
}
