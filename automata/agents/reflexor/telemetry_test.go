package reflexor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
)

// TestTraceOfATurnWithATool: one Reflexor turn in which the brain calls
// the calculator, traced with the real SDK. The caller's traceparent is
// the parent of the POST's server span; under it, the user's message; the
// brain's job under the message; the model call under the job, a GenAI
// "chat" span with its tokens; the assistant's message (with the tool
// call) under the job; the tool's job under that message, and the
// execute_tool span under the tool's job; its result, the next brain job,
// its chat, and the reply, in turn. One trace, cause to effect.
func TestTraceOfATurnWithATool(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	store, err := bolt.Open(filepath.Join(t.TempDir(), "traced.db"))
	if err != nil {
		t.Fatal(err)
	}
	kit := testKit(t)
	traced, err := toolkit.New(toolkit.Config{TracerProvider: tp}, kitTools(kit)...)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Model: llm.Traced(testBrain(0), tp, nil), Tools: traced, Store: store, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/support", a.Handler()))
	defer func() {
		a.CloseStreams()
		srv.Close()
		a.Close(context.Background())
	}()
	idle := make(chan struct{}, 1)
	a.Machine().Subscribe(func(s decl.AgentState) {
		if len(s.UserMessages) == 1 && Idle(s) {
			select {
			case idle <- struct{}{}:
			default:
			}
		}
	})
	caller := sdktrace.NewTracerProvider() // the caller's own, another process's
	ctx, span := caller.Tracer("caller").Start(context.Background(), "the caller")
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/support/agent/inputs", strings.NewReader(`{"type":"user-send-message","messageId":"u-1","content":"what is 6*7?"}`))
	req.Header.Set("Content-Type", "application/json")
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	span.End()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	<-idle
	a.Close(context.Background()) // the jobs' spans end

	byID := map[[8]byte]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byID[s.SpanContext().SpanID()] = s
		if s.SpanContext().TraceID() != span.SpanContext().TraceID() {
			t.Errorf("span %s is not in the caller's trace", s.Name())
		}
	}
	// Every span's chain of parents, as names, from the reply up.
	chainOf := func(s sdktrace.ReadOnlySpan) []string {
		var names []string
		for ; s != nil; s = byID[s.Parent().SpanID()] {
			name := s.Name()
			if k := attr(s, "moora.job.key"); k != "" {
				name += " " + k
			}
			names = append(names, name)
		}
		return names
	}
	var tool sdktrace.ReadOnlySpan
	chats := 0
	for _, s := range rec.Ended() {
		switch {
		case s.Name() == "execute_tool calculator":
			tool = s
		case s.Name() == "chat scripted":
			chats++
			if attr(s, "gen_ai.operation.name") != "chat" || attr(s, "gen_ai.provider.name") == "" || attr(s, "gen_ai.usage.output_tokens") == "" {
				t.Errorf("the chat span's attributes: %v", s.Attributes())
			}
		}
	}
	if tool == nil || chats < 2 {
		t.Fatalf("no tool span, or %d chat spans, among %d", chats, len(rec.Ended()))
	}
	got := strings.Join(chainOf(tool), " < ")
	t.Log(got)
	for _, want := range []string{"execute_tool calculator < moora.job ", "< moora.input ", "< moora.job brain/", "< moora.input user-send-message < POST /inputs"} {
		if !strings.Contains(got, want) {
			t.Errorf("the tool's chain of parents: %s; it lacks %q", got, want)
		}
	}
	if tool.Parent().SpanID() == ([8]byte{}) || attr(byID[tool.Parent().SpanID()], "moora.job.actor") != "toolkit" {
		t.Errorf("the tool's parent is not the toolkit's job: %s", got)
	}
	post := tool
	for p, ok := byID[post.Parent().SpanID()]; ok; p, ok = byID[post.Parent().SpanID()] {
		post = p
	}
	if post.Name() != "POST /inputs" || post.Parent().SpanID() != span.SpanContext().SpanID() || !post.Parent().IsRemote() {
		t.Errorf("the top of the chain, %s, is not the POST's span, a child of the caller's: %s", post.Name(), got)
	}
}

// kitTools are the tools of kit.
func kitTools(kit *toolkit.Kit) []toolkit.Tool {
	var tools []toolkit.Tool
	for _, name := range kit.Names() {
		tool, _ := kit.Tool(name)
		tools = append(tools, tool)
	}
	return tools
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}
