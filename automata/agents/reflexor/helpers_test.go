package reflexor

import (
	"context"
	"encoding/json"
	"fmt"
	"go/token"
	"go/types"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/internal/browsertest"
)

const hangGuard = browsertest.HangGuard

// testClock is the time the test kit's clock tells.
var testClock = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// testKit is the tools of the tests: word_count, calculator (Go's constant
// arithmetic) and clock (testClock), in that order.
func testKit(t testing.TB) *toolkit.Kit {
	t.Helper()
	type textArgs struct {
		Text string `json:"text"`
	}
	type expressionArgs struct {
		Expression string `json:"expression"`
	}
	kit, err := toolkit.New(toolkit.Config{},
		toolkit.Func("word_count", "Counts the words of a text.", func(_ context.Context, a textArgs) (string, error) {
			return strconv.Itoa(len(strings.Fields(a.Text))), nil
		}),
		toolkit.Func("calculator", "Evaluates an arithmetic expression.", func(_ context.Context, a expressionArgs) (string, error) {
			tv, err := types.Eval(token.NewFileSet(), nil, token.NoPos, a.Expression)
			if err != nil || tv.Value == nil {
				return "", fmt.Errorf("%w: not an arithmetic expression: %q", toolkit.ErrInvalid, a.Expression)
			}
			return tv.Value.String(), nil
		}),
		toolkit.Func("clock", "Tells the time in UTC.", func(context.Context, struct{}) (string, error) {
			return testClock.Format(time.RFC1123), nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return kit
}

// arithmetic finds an arithmetic expression in a message.
var arithmetic = regexp.MustCompile(`[-+(]*\d[\d.]*(?:\s*[-+*/()]+\s*[-+(]*\d[\d.]*\)*)+`)

// testBrain is the brain of the tests, deterministic: it calls the
// calculator for a message with arithmetic in it, word_count when asked to
// count, the clock when asked for the time; it reports a tool's result in a
// sentence, summarises by listing what the user said after the earlier
// summary, and otherwise repeats
// the message. Each word of its replies takes delay to stream.
func testBrain(delay time.Duration) llm.Scripted {
	return llm.Scripted{Delay: delay, Reply: func(req llm.Request) (llm.Response, error) {
		if req.RequiredTool == CompressTool {
			var said []string
			for _, m := range req.Messages {
				if m.Role == llm.RoleUser {
					said = append(said, strconv.Quote(m.Content))
				}
			}
			summary := "The user said " + strings.Join(said, ", ") + "."
			if _, earlier, ok := strings.Cut(req.System, "Summary of the conversation so far:\n"); ok {
				earlier, _, _ = strings.Cut(earlier, "\n\n")
				summary = earlier + " Then " + summary
			}
			args, err := json.Marshal(map[string]string{"summary": summary})
			if err != nil {
				return llm.Response{}, err
			}
			return llm.Response{ToolCalls: []llm.ToolCall{{ID: "compress", Name: CompressTool, Arguments: args}}}, nil
		}
		if len(req.Messages) == 0 {
			return llm.Response{Text: "Hello."}, nil
		}
		last := req.Messages[len(req.Messages)-1]
		callID := fmt.Sprintf("call-%d", len(req.Messages))
		call := func(text, tool, args string) (llm.Response, error) {
			return llm.Response{Text: text, ToolCalls: []llm.ToolCall{{ID: callID, Name: tool, Arguments: []byte(args)}}}, nil
		}
		switch last.Role {
		case llm.RoleTool:
			name := ""
			for _, m := range req.Messages {
				for _, c := range m.ToolCalls {
					if c.ID == last.ToolCallID {
						name = c.Name
					}
				}
			}
			if after, ok := strings.CutPrefix(last.Content, "error: "); ok {
				return llm.Response{Text: fmt.Sprintf("The %s tool failed: %s.", name, after)}, nil
			}
			return llm.Response{Text: fmt.Sprintf("The %s tool says: %s.", name, last.Content)}, nil
		case llm.RoleUser:
			text := strings.ToLower(last.Content)
			switch {
			case arithmetic.MatchString(last.Content):
				return call("Let me calculate that.", "calculator", fmt.Sprintf(`{"expression":%q}`, arithmetic.FindString(last.Content)))
			case strings.Contains(text, "count"):
				return call("Let me count the words.", "word_count", fmt.Sprintf(`{"text":%q}`, last.Content))
			case strings.Contains(text, "time"):
				return call("Let me look at the clock.", "clock", `{}`)
			}
			return llm.Response{Text: fmt.Sprintf("You said: %s.", last.Content)}, nil
		}
		return llm.Response{Text: "I have nothing to add."}, nil
	}}
}

// host is an application of its own — a home page at /, /healthz — that
// mounts a Reflexor under /support/, served on loopback: what a program
// that embeds the agent does.
type host struct {
	url   string // the server's, without a trailing slash
	base  string // the agent's bridge: url + "/support/agent"
	token string
	agent *Agent
	idle  chan int // the number of user messages, each time the agent is idle
}

// startHost starts a host whose Reflexor (the test brain, each word delay
// apart, and the test kit) keeps its journal in a new directory.
func startHost(t testing.TB, delay time.Duration) *host {
	t.Helper()
	return startHostOf(t, Config{Model: testBrain(delay)})
}

// startHostOf starts a host whose Reflexor is cfg's Model, Logger, Prices
// and Budget, with cfg's Tools (default the test kit), its journal in a
// new directory.
func startHostOf(t testing.TB, cfg Config) *host {
	t.Helper()
	store, err := bolt.Open(filepath.Join(t.TempDir(), "support.db"))
	if err != nil {
		t.Fatal(err)
	}
	h := &host{token: "support-token", idle: make(chan int, 1)}
	failed := make(chan error, 1)
	tools := cfg.Tools
	if tools == nil {
		tools = testKit(t)
	}
	h.agent, err = New(Config{
		System: "You are the support desk.",
		Tools:  tools,
		Model:  cfg.Model,
		Logger: cfg.Logger,
		Prices: cfg.Prices,
		Budget: cfg.Budget,
		Store:  store,
		Token:  h.token,
		Options: []automata.Option[decl.AgentState, decl.AgentInput]{
			automata.WithPurityCheck[decl.AgentState, decl.AgentInput](),
			automata.WithEvents(func(e automata.Event[decl.AgentState, decl.AgentInput]) {
				if e.Kind == automata.EffectFailed || e.Kind == automata.InputRejected {
					select {
					case failed <- fmt.Errorf("%v", e):
					default:
					}
				}
			}),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.agent.Machine().Subscribe(func(s decl.AgentState) {
		if Idle(s) {
			select {
			case <-h.idle:
			default:
			}
			h.idle <- len(s.UserMessages)
		}
	})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "<!doctype html><title>Example Inc.</title><h1>Example Inc.</h1>")
	})
	mux.Handle("/support/", http.StripPrefix("/support", h.agent.Handler()))
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.RegisterOnShutdown(h.agent.CloseStreams)
	srv.Start()
	h.url = srv.URL
	h.base = srv.URL + "/support/agent"
	t.Cleanup(func() {
		// The streams end first: the server's Close waits for the
		// requests under way.
		h.agent.CloseStreams()
		srv.Close()
		if err := h.agent.Close(context.Background()); err != nil {
			t.Errorf("closing the agent: %v", err)
		}
		select {
		case err := <-failed:
			t.Errorf("the agent: %v", err)
		default:
		}
	})
	return h
}

// post posts body to the bridge's inputs with the host's token, and returns
// the status and the answer.
func (h *host) post(t testing.TB, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", h.base+"/inputs", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(answer)
}

// say posts the user's n-th message and waits until the agent is idle
// again, with the reply written.
func (h *host) say(t testing.TB, n int, content string) {
	t.Helper()
	if code, answer := h.post(t, fmt.Sprintf(`{"type":"user-send-message","messageId":"u-%d","content":%q}`, n, content)); code != http.StatusOK {
		t.Fatalf("POST of message %d: %d %s", n, code, answer)
	}
	timeout := time.After(hangGuard)
	for {
		select {
		case users := <-h.idle:
			if users >= n {
				return
			}
		case <-timeout:
			t.Fatalf("hung: message %d was never answered", n)
		}
	}
}
