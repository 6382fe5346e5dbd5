package reflexor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/internal/tsctest"
)

// gatedBrain is the test brain, but a reply that reports a tool's result
// to a user message listed in gates stops after its second chunk until
// that gate is closed: the reply is then under way for as long as the test
// needs it to be. It counts the calls of the model.
type gatedBrain struct {
	inner llm.Model
	gates map[string]chan struct{} // by the user message's content
	calls atomic.Int32
}

func (g *gatedBrain) Complete(ctx context.Context, req llm.Request, onChunk func(string)) (llm.Response, error) {
	g.calls.Add(1)
	var gate chan struct{}
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == llm.RoleTool {
		for i := n - 1; i >= 0; i-- {
			if req.Messages[i].Role == llm.RoleUser {
				gate = g.gates[req.Messages[i].Content]
				break
			}
		}
	}
	chunks := 0
	return g.inner.Complete(ctx, req, func(text string) {
		onChunk(text)
		if chunks++; chunks == 2 && gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
			}
		}
	})
}

// releaseOnStream closes, for the i-th GET chat/{chat}/stream, gates[order[i]],
// once the bridge has answered it 200 (it found the reply under way): the
// reply goes on only once the client has resumed it.
func releaseOnStream(next http.Handler, gates map[string]chan struct{}, order ...string) http.Handler {
	var mu sync.Mutex
	n := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/chat/") && strings.HasSuffix(r.URL.Path, "/stream") {
			mu.Lock()
			var gate chan struct{}
			if n < len(order) {
				gate = gates[order[n]]
			}
			n++
			mu.Unlock()
			if gate != nil {
				w = &onHeader{ResponseWriter: w, fn: func(status int) {
					if status == http.StatusOK {
						close(gate)
					}
				}}
			}
		}
		next.ServeHTTP(w, r)
	})
}

type onHeader struct {
	http.ResponseWriter
	fn   func(status int)
	once sync.Once
}

func (o *onHeader) WriteHeader(status int) {
	o.once.Do(func() { o.fn(status) })
	o.ResponseWriter.WriteHeader(status)
}

func (o *onHeader) Write(p []byte) (int, error) {
	o.once.Do(func() { o.fn(http.StatusOK) })
	return o.ResponseWriter.Write(p)
}

func (o *onHeader) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// uiMessage is a UI message as the AI SDK's client holds it.
type uiMessage struct {
	ID    string `json:"id"`
	Role  string `json:"role"`
	Parts []struct {
		Type       string          `json:"type"`
		Text       string          `json:"text"`
		State      string          `json:"state"`
		ToolCallID string          `json:"toolCallId"`
		Input      json.RawMessage `json:"input"`
		Output     json.RawMessage `json:"output"`
	} `json:"parts"`
}

// texts are the texts of m's text parts; tools its tool parts, as
// "type input output state".
func (m uiMessage) texts() (texts, tools []string, steps int) {
	for _, p := range m.Parts {
		switch {
		case p.Type == "text":
			texts = append(texts, p.Text)
		case p.Type == "step-start":
			steps++
		case strings.HasPrefix(p.Type, "tool-"):
			tools = append(tools, strings.Join([]string{p.Type, string(p.Input), string(p.Output), p.State}, " "))
		}
	}
	return texts, tools, steps
}

// TestAISDKChat runs the AI SDK's own client (npm ai: the Chat that
// useChat wraps, over its DefaultChatTransport) against Reflexor's UI
// message stream, served on loopback: a reply with a tool call is
// assembled into its texts and the tool's call and result; a connection
// broken in the middle of a reply is resumed, and so is a reply that a new
// page finds under way, each without a text lost or twice; and what the
// client ends with is what the agent's state holds, every user message
// journaled once, the model asked once per step.
func TestAISDKChat(t *testing.T) {
	node := tsctest.Node(t)
	store, err := bolt.Open(filepath.Join(t.TempDir(), "chat.db"))
	if err != nil {
		t.Fatal(err)
	}
	gates := map[string]chan struct{}{
		"Count these words slowly please": make(chan struct{}),
		"What time is it, slowly?":        make(chan struct{}),
	}
	brain := &gatedBrain{inner: testBrain(time.Millisecond), gates: gates}
	const token = "chat-token"
	a, err := New(Config{Model: brain, Tools: testKit(t), Store: store, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(releaseOnStream(a.Handler(), gates, "Count these words slowly please", "What time is it, slowly?"))
	t.Cleanup(func() {
		a.CloseStreams()
		srv.Close()
		if err := a.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "aisdk", "chat.mjs"), srv.URL+"/agent", token)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node chat.mjs: %v\n%s\n%s", err, out, stderr.Bytes())
	}
	type partial struct {
		Status string
		Error  string
		Text   []string
		Count  int
	}
	reports := map[string]struct {
		Status   string
		Error    string
		Messages []uiMessage
		Partial  partial
		Listed   partial
	}{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			Scenario string
			Status   string
			Error    string
			Messages []uiMessage
			Partial  partial
			Listed   partial
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("a line of chat.mjs: %v: %s", err, sc.Bytes())
		}
		reports[r.Scenario] = struct {
			Status   string
			Error    string
			Messages []uiMessage
			Partial  partial
			Listed   partial
		}{r.Status, r.Error, r.Messages, r.Partial, r.Listed}
	}

	// What the state holds of each turn: the brain's texts, and its tool
	// calls with their results.
	s := a.Machine().Current()
	if len(s.UserMessages) != 3 {
		t.Fatalf("the state has %d user messages, want 3", len(s.UserMessages))
	}
	want := func(turn int) (texts, tools []string) {
		from := s.UserMessages[turn].Timestamp
		to := int64(1 << 62)
		if turn+1 < len(s.UserMessages) {
			to = s.UserMessages[turn+1].Timestamp
		}
		for _, m := range s.AssistantMessages {
			if m.CalledBrainAt >= from && m.CalledBrainAt < to {
				texts = append(texts, m.Content)
			}
		}
		for _, c := range s.ToolCalls {
			if c.CalledBrainAt >= from && c.CalledBrainAt < to {
				i := slices.IndexFunc(s.ToolResults, func(r decl.ToolResult) bool { return r.ToolCallID == c.ID })
				if i < 0 {
					t.Fatalf("tool call %s has no result", c.ID)
				}
				output, _ := json.Marshal(s.ToolResults[i].Content)
				tools = append(tools, strings.Join([]string{"tool-" + c.Name, c.Arguments, string(output), "output-available"}, " "))
			}
		}
		return texts, tools
	}
	check := func(scenario string, turns int) {
		t.Helper()
		r, ok := reports[scenario]
		if !ok {
			t.Fatalf("chat.mjs printed no %s line:\n%s", scenario, out)
		}
		if r.Status != "ready" {
			t.Errorf("%s: the chat ended %q (%s), want ready", scenario, r.Status, r.Error)
		}
		if len(r.Messages) != 2*turns {
			t.Fatalf("%s: the chat holds %d messages, want %d: %+v", scenario, len(r.Messages), 2*turns, r.Messages)
		}
		for i := range turns {
			u, m := r.Messages[2*i], r.Messages[2*i+1]
			if u.Role != "user" || u.ID != s.UserMessages[i].ID || m.Role != "assistant" {
				t.Errorf("%s: messages %d and %d are %s %q and %s, want the user's %q and the assistant's", scenario, 2*i, 2*i+1, u.Role, u.ID, m.Role, s.UserMessages[i].ID)
			}
			texts, tools, steps := m.texts()
			wantTexts, wantTools := want(i)
			if !slices.Equal(texts, wantTexts) {
				t.Errorf("%s: turn %d's texts are %q, the state's %q", scenario, i, texts, wantTexts)
			}
			if !slices.Equal(tools, wantTools) {
				t.Errorf("%s: turn %d's tool parts are %q, the state's %q", scenario, i, tools, wantTools)
			}
			if steps != 2 {
				t.Errorf("%s: turn %d has %d steps, want 2 (the call of the tool, the answer)", scenario, i, steps)
			}
		}
	}
	check("tools", 1)
	check("disconnect", 2)
	check("reload", 3)
	if texts, _ := want(0); !slices.Equal(texts, []string{"Let me calculate that.", "The calculator tool says: 42."}) {
		t.Errorf("the brain said %q", texts)
	}

	// The breaks came in the middle of the replies.
	final, _ := want(1)
	p := reports["disconnect"].Partial
	if p.Status != "error" || len(p.Text) != 2 || p.Text[1] == "" || !strings.HasPrefix(final[1], p.Text[1]) || p.Text[1] == final[1] {
		t.Errorf("disconnect: as the connection broke, the chat was %q (%s) with the texts %q: want an error, and a part of %q", p.Status, p.Error, p.Text, final[1])
	}
	if l := reports["reload"].Listed; l.Count != 6 || len(l.Text) != 2 || l.Text[1] != "" {
		t.Errorf("reload: the conversation listed as the reply was under way has %d messages, its last texts %q: want 6, and the reply's second text not yet there", l.Count, l.Text)
	}

	// Each user message journaled once; each step asked of the model once.
	entries, err := a.Machine().Inputs(1, a.Machine().Seq())
	if err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, e := range entries {
		if m, ok := e.Input.(decl.UserSendMessage); ok {
			sent = append(sent, m.MessageID)
		}
	}
	if !slices.Equal(sent, []string{"u-tools", "u-disconnect", "u-reload"}) {
		t.Errorf("the journal has the user messages %q", sent)
	}
	if n := brain.calls.Load(); n != 6 {
		t.Errorf("the model was called %d times, want 6 (two steps a turn)", n)
	}
}
