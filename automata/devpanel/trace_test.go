package devpanel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/registry"
)

// spanWatch is a span processor that hands the names of the spans that end
// to the test, which waits on them: added after the Traces, it sees a span
// once the Traces has recorded it.
type spanWatch struct{ ended chan string }

func newSpanWatch() *spanWatch { return &spanWatch{ended: make(chan string, 4096)} }

func (w *spanWatch) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (w *spanWatch) OnEnd(s sdktrace.ReadOnlySpan)                   { w.ended <- s.Name() }
func (w *spanWatch) Shutdown(context.Context) error                  { return nil }
func (w *spanWatch) ForceFlush(context.Context) error                { return nil }

// wait waits until a span of each of names has ended (a name given twice,
// two spans).
func (w *spanWatch) wait(t *testing.T, names ...string) {
	t.Helper()
	want := slices.Clone(names)
	timeout := time.After(hangGuard)
	for len(want) > 0 {
		select {
		case n := <-w.ended:
			if i := slices.Index(want, n); i >= 0 {
				want = slices.Delete(want, i, i+1)
			}
		case <-timeout:
			t.Fatalf("spans %q never ended", want)
		}
	}
}

// tracedReplies is the llm's job of the chat test agent as a model-driven
// one is traced: the reply to a user message first calls a model ("chat
// scripted"), then the tool it asks for ("execute_tool calculator"), which
// fails when the message says "fail", then the model again, each for
// latency, and dispatches the reply. The spans are made as package llm and
// toolkit make them: children of the span in the job's context.
func tracedReplies(latency time.Duration) decl.JobsFnOfLlm {
	return func(c decl.ContextOfLlm) map[string]automata.Job[decl.AgentInput] {
		jobs := map[string]automata.Job[decl.AgentInput]{}
		for _, m := range c.UserMessages {
			if slices.ContainsFunc(c.AssiMessages, func(a decl.AssiMessage) bool { return a.ID == "re-"+m.ID }) {
				continue
			}
			jobs["reply-"+m.ID] = func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
				tr := trace.SpanFromContext(ctx).TracerProvider().Tracer("devpanel-test")
				chat := func() {
					_, s := tr.Start(ctx, "chat scripted", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
						attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", "scripted"),
						attribute.String("gen_ai.request.model", "scripted")))
					time.Sleep(latency)
					s.SetAttributes(attribute.Int("gen_ai.usage.input_tokens", 42), attribute.Int("gen_ai.usage.output_tokens", 7))
					s.End()
				}
				chat()
				_, tool := tr.Start(ctx, "execute_tool calculator", trace.WithAttributes(
					attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", "calculator")))
				time.Sleep(latency / 2)
				if strings.Contains(m.Content, "fail") {
					tool.SetStatus(codes.Error, "division by zero")
				}
				tool.End()
				chat()
				dispatch(decl.SendAssiMessage{ID: "re-" + m.ID, Content: "you said " + m.Content, Timestamp: m.Timestamp + 1})
				return nil
			}
		}
		return jobs
	}
}

// tracedFixture opens the chat test agent with tracedReplies, traced into a
// Traces that its panel reads, the agent named agentID.
func tracedFixture(t *testing.T, agentID string, latency time.Duration) (*fixture, *spanWatch) {
	t.Helper()
	traces := devpanel.NewTraces(0)
	watch := newSpanWatch()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(traces), sdktrace.WithSpanProcessor(watch))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	f := &fixture{t: t}
	f.open(decl.JobFns{Llm: tracedReplies(latency)}, func(c *devpanel.Config[decl.AgentState, decl.AgentInput]) {
		c.Traces, c.AgentID = traces, agentID
	}, automata.WithTelemetry[decl.AgentState, decl.AgentInput](tp, nil))
	return f, watch
}

// traceJSON is the answer of GET /trace.
type traceJSON struct {
	Seq     uint64
	Agent   string
	TraceID string
	Start   int64
	Omitted int
	Spans   []struct {
		SpanID, ParentID      string
		Depth                 int
		Name, Kind, Category  string
		Start                 float64
		End                   *float64
		Status, StatusMessage string
		Attributes            map[string]any
		Events                []struct{ Name string }
		Input                 *struct {
			Seq         uint64
			Type, Actor string
		}
		Chosen bool
	}
}

// getTrace answers GET path (with the token), decoded when it is 200, else
// the error's message.
func getTrace(t *testing.T, srv *httptest.Server, path, tok string) (int, traceJSON, string) {
	t.Helper()
	code, body := get(t, srv, "GET", path, tok, false, "")
	var tj traceJSON
	if code != http.StatusOK {
		var e struct{ Error string }
		json.Unmarshal([]byte(body), &e)
		return code, tj, e.Error
	}
	if err := json.Unmarshal([]byte(body), &tj); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
	return code, tj, ""
}

// tree is the spans of a trace as "depth name <parent's name>", one a line.
func tree(tj traceJSON) string {
	names := map[string]string{}
	for _, s := range tj.Spans {
		names[s.SpanID] = s.Name
	}
	var b strings.Builder
	for _, s := range tj.Spans {
		fmt.Fprintf(&b, "%d %s <%s>\n", s.Depth, s.Name, names[s.ParentID])
	}
	return b.String()
}

const chainOf1 = `0 moora.input send-user-message <>
1 moora.job <moora.input send-user-message>
2 chat scripted <moora.job>
2 execute_tool calculator <moora.job>
2 chat scripted <moora.job>
2 moora.input send-assi-message <moora.job>
`

// TestTraceOfAnInput: the trace of a user's message, from the spans
// recorded and the journal, is the causal chain: the input, the job its
// state called for, that job's model and tool calls, and the reply the
// job dispatched, each under its parent, the journal's entry beside each
// input; the reply's input has the same trace, chosen; a failed tool call
// has an error status.
func TestTraceOfAnInput(t *testing.T) {
	f, watch := tracedFixture(t, "agent-1", 0)
	f.send("u1", "2+2")
	watch.wait(t, "moora.job", "moora.input send-assi-message")

	code, tj, msg := getTrace(t, f.srv, "/trace?seq=1", token)
	if code != http.StatusOK {
		t.Fatalf("GET /trace?seq=1 = %d %s", code, msg)
	}
	if got := tree(tj); got != chainOf1 {
		t.Fatalf("the trace of input 1:\n%s\nwant:\n%s", got, chainOf1)
	}
	if tj.Seq != 1 || tj.Agent != "agent-1" || tj.Omitted != 0 || len(tj.TraceID) != 32 {
		t.Errorf("the trace's header: seq %d, agent %q, omitted %d, trace id %q", tj.Seq, tj.Agent, tj.Omitted, tj.TraceID)
	}
	var cats []string
	for i, s := range tj.Spans {
		cats = append(cats, s.Category)
		if s.Chosen != (i == 0) {
			t.Errorf("span %d (%s) chosen: %v", i, s.Name, s.Chosen)
		}
		if s.End == nil || *s.End < s.Start || s.Start < 0 || s.Status != "unset" {
			t.Errorf("span %d (%s): %v to %v, status %q", i, s.Name, s.Start, s.End, s.Status)
		}
		if s.Category == "input" || s.Category == "job" {
			if s.Attributes["moora.agent.id"] != "agent-1" {
				t.Errorf("span %d (%s) has moora.agent.id %v, want agent-1", i, s.Name, s.Attributes["moora.agent.id"])
			}
		}
	}
	if want := []string{"input", "job", "model", "tool", "model", "input"}; !slices.Equal(cats, want) {
		t.Errorf("categories %q, want %q", cats, want)
	}
	if tj.Spans[0].Start != 0 {
		t.Errorf("the first span starts at %v ms, want 0: the trace's start", tj.Spans[0].Start)
	}
	if s := tj.Spans[1]; s.Attributes["moora.job.key"] != "llm/reply-u1" {
		t.Errorf("the job's key: %v", s.Attributes["moora.job.key"])
	}
	if s := tj.Spans[2]; s.Kind != "client" || s.Attributes["gen_ai.usage.input_tokens"] != float64(42) {
		t.Errorf("the model call: kind %q, attributes %v", s.Kind, s.Attributes)
	}
	for i, want := range map[int]string{0: "1 send-user-message user", 5: "2 send-assi-message llm"} {
		s := tj.Spans[i]
		if s.Input == nil {
			t.Errorf("span %d (%s) has no journal entry", i, s.Name)
			continue
		}
		if got := fmt.Sprintf("%d %s %s", s.Input.Seq, s.Input.Type, s.Input.Actor); got != want {
			t.Errorf("span %d's journal entry: %s, want %s", i, got, want)
		}
	}
	var events []string
	for _, e := range tj.Spans[0].Events {
		events = append(events, e.Name)
	}
	if !slices.Contains(events, "committed") {
		t.Errorf("the input's events %q lack committed", events)
	}

	// The reply's own trace is the same one, with the reply chosen.
	code, tj2, msg := getTrace(t, f.srv, "/trace?seq=2", token)
	if code != http.StatusOK || tj2.TraceID != tj.TraceID || tree(tj2) != chainOf1 || !tj2.Spans[5].Chosen || tj2.Spans[0].Chosen {
		t.Errorf("GET /trace?seq=2 = %d %s: trace %s (want %s)\n%s", code, msg, tj2.TraceID, tj.TraceID, tree(tj2))
	}

	// A second message starts a trace of its own; its tool call fails.
	f.send("u2", "fail please")
	watch.wait(t, "moora.job", "moora.input send-assi-message")
	code, tj3, msg := getTrace(t, f.srv, "/trace?seq=3", token)
	if code != http.StatusOK || tj3.TraceID == tj.TraceID || len(tj3.Spans) != 6 {
		t.Fatalf("GET /trace?seq=3 = %d %s: trace %s (input 1's: %s)\n%s", code, msg, tj3.TraceID, tj.TraceID, tree(tj3))
	}
	if s := tj3.Spans[3]; s.Name != "execute_tool calculator" || s.Status != "error" || s.StatusMessage != "division by zero" {
		t.Errorf("the failed tool call: %s, status %q %q", s.Name, s.Status, s.StatusMessage)
	}
}

// TestTraceRefusals: what GET /trace answers when it has no trace to show,
// each with a message that says why.
func TestTraceRefusals(t *testing.T) {
	f, watch := tracedFixture(t, "", 0)
	f.send("u1", "hi")
	watch.wait(t, "moora.job", "moora.input send-assi-message")
	plain := newFixture(t)     // no Config.Traces
	untraced := &fixture{t: t} // Config.Traces, and no automata.WithTelemetry
	untraced.open(decl.JobFns{Llm: tracedReplies(0)}, func(c *devpanel.Config[decl.AgentState, decl.AgentInput]) {
		c.Traces = devpanel.NewTraces(0)
	})
	untraced.send("u1", "hi")
	for _, c := range []struct {
		name string
		srv  *httptest.Server
		path string
		tok  string
		code int
		msg  string
	}{
		{"found by seq alone, the agent having no id", f.srv, "/trace?seq=1", token, 200, ""},
		{"no such input", f.srv, "/trace?seq=9", token, 404, "no input 9 yet: the journal ends at 2"},
		{"no seq", f.srv, "/trace", token, 400, `seq "" is not the sequence number of an input`},
		{"a seq that is not a number", f.srv, "/trace?seq=x", token, 400, `seq "x" is not`},
		{"seq 0, which is no input's", f.srv, "/trace?seq=0", token, 400, `seq "0" is not`},
		{"no token", f.srv, "/trace?seq=1", "", 401, ""},
		{"a panel without Traces", plain.srv, "/trace?seq=1", token, 404, "the panel records no traces: its Config.Traces is nil"},
		{"an agent not traced", untraced.srv, "/trace?seq=1", token, 404, "no span is recorded for input 1: either the agent is not traced " +
			"(open it with automata.WithTelemetry and a TracerProvider that has Config.Traces as a span processor), " +
			"or the span was forgotten (Traces keeps the latest 20000 spans)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, msg := getTrace(t, c.srv, c.path, c.tok)
			if code != c.code || !strings.Contains(msg, c.msg) {
				t.Errorf("GET %s = %d %q, want %d %q", c.path, code, msg, c.code, c.msg)
			}
		})
	}
}

// TestFleetTraces: the agents of a fleet share one Traces; each agent's
// panel shows the trace of its own input 1, told from the other's by the
// agent's id, which Fleet.OpenAgent adds to its spans. An agent opened
// with Fleet.Open, which does not know its id, has no trace view, and
// says so.
func TestFleetTraces(t *testing.T) {
	sessions, err := httpbridge.NewSessions([]byte("sixteen bytes or more of key"))
	if err != nil {
		t.Fatal(err)
	}
	traces := devpanel.NewTraces(0)
	watch := newSpanWatch()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(traces), sdktrace.WithSpanProcessor(watch))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	panels, err := devpanel.NewFleet(devpanel.FleetConfig[decl.AgentState, decl.AgentInput]{
		Panel: devpanel.Config[decl.AgentState, decl.AgentInput]{
			Definition: agent.Definition(), Decode: decl.DecodeInput, InputSchema: decl.InputSchema(), Traces: traces,
		},
		Identify: httpbridge.Identities(operator, sessions),
	})
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := bolt.OpenFleet(filepath.Join(t.TempDir(), "agents.db"))
	if err != nil {
		t.Fatal(err)
	}
	const anonymous = "agent-opened-without-id"
	reg, err := registry.New(registry.Config[decl.AgentState, decl.AgentInput]{
		Fleet:  fleet,
		Logger: slog.New(slog.DiscardHandler),
		Open: func(id string, s journal.Store) (*journal.Machine[decl.AgentState, decl.AgentInput], error) {
			opts := journal.Options[decl.AgentState, decl.AgentInput]{Codec: journal.JSON[decl.AgentState](decl.DecodeInput), Logger: slog.New(slog.DiscardHandler)}
			options := []automata.Option[decl.AgentState, decl.AgentInput]{
				automata.WithTelemetry[decl.AgentState, decl.AgentInput](tp, nil), agent.WithJobs(decl.JobFns{Llm: tracedReplies(0)}),
			}
			if id == anonymous {
				return panels.Open(s, opts, options...)
			}
			return panels.OpenAgent(id, s, opts, options...)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(panels.Handler(reg))
	t.Cleanup(func() {
		srv.Close()
		if err := reg.Close(context.Background()); err != nil {
			t.Error(err)
		}
		if err := fleet.Close(); err != nil {
			t.Error(err)
		}
	})
	_, owner := sessions.Issue()
	ids := []string{"ann", "bob", anonymous}
	for _, id := range ids {
		if _, err := reg.Create(id, owner); err != nil {
			t.Fatal(err)
		}
		in := `{"type":"send-user-message","id":"m1","content":"hello ` + id + `","timestamp":1}`
		if code, body := get(t, srv, "POST", "/agents/"+id+"/inputs", operator, false, in); code != 200 {
			t.Fatalf("POST to %s = %d %s", id, code, body)
		}
	}
	watch.wait(t, "moora.job", "moora.job", "moora.job", "moora.input send-assi-message", "moora.input send-assi-message", "moora.input send-assi-message")

	seen := map[string]string{} // trace id -> agent
	for _, id := range ids[:2] {
		code, tj, msg := getTrace(t, srv, "/agents/"+id+"/trace?seq=1", operator)
		if code != http.StatusOK || tree(tj) != chainOf1 || tj.Agent != id {
			t.Fatalf("%s's trace of input 1 = %d %s, agent %q:\n%s", id, code, msg, tj.Agent, tree(tj))
		}
		for _, s := range tj.Spans {
			if a, ok := s.Attributes["moora.agent.id"]; ok && a != id {
				t.Errorf("%s's trace shows span %s of agent %v", id, s.Name, a)
			}
		}
		if other, ok := seen[tj.TraceID]; ok {
			t.Errorf("%s and %s show the same trace", other, id)
		}
		seen[tj.TraceID] = id
	}
	code, _, msg := getTrace(t, srv, "/agents/"+anonymous+"/trace?seq=1", operator)
	if code != http.StatusNotFound || !strings.Contains(msg, "open it with Fleet.OpenAgent") {
		t.Errorf("the trace of an agent opened with Fleet.Open = %d %q, want 404 naming Fleet.OpenAgent", code, msg)
	}
}
