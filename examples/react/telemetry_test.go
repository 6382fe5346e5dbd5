package main

import (
	"io/fs"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/moora-go/moora/examples/internal/otelenv"
	"github.com/moora-go/moora/examples/react/decl"
)

// TestRunIsTraced: with telemetry, a run is one trace from the user's
// request to the answer: the request's input span is the parent of the
// start job; the tool call's execute_tool span is a child of the toolkit's
// call job, which the plan that asked for it called for; every span names
// the run's agent.
func TestRunIsTraced(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ws := testWork(t, never)
	kit, err := newKit(otelenv.Providers{Tracer: tp}, Tools(mustWorkspace(t))...)
	if err != nil {
		t.Fatal(err)
	}
	ws.Toolkit, ws.Telemetry = kit, otelenv.Providers{Tracer: tp}
	r, _ := runTask(t, testRuns(t, ws, 0), decl.UserRunTask{RunID: "traced", Goal: "compute 6*7"})
	if r.Outcome != decl.RunRecordOutcomeFinished {
		t.Fatalf("run %+v", r)
	}
	byID := map[[8]byte]sdktrace.ReadOnlySpan{}
	var request, tool sdktrace.ReadOnlySpan
	trace := rec.Ended()[0].SpanContext().TraceID()
	for _, s := range rec.Ended() {
		byID[s.SpanContext().SpanID()] = s
		switch s.Name() {
		case "moora.input user-run-task":
			request = s
		case "execute_tool calculator":
			tool = s
		}
		if s.SpanContext().TraceID() != trace {
			t.Errorf("span %s is in another trace", s.Name())
		}
		if s.Name() != "execute_tool calculator" && attrOf(s, "moora.agent.id") != "traced" {
			t.Errorf("span %s: moora.agent.id %q", s.Name(), attrOf(s, "moora.agent.id"))
		}
	}
	if request == nil || tool == nil {
		t.Fatalf("no request or tool span among %d", len(rec.Ended()))
	}
	// The chain above the tool: its call job, the plan input that called
	// for it, ... up to the request.
	var chain []string
	for s := tool; s != nil; s = byID[s.Parent().SpanID()] {
		name := s.Name()
		if k := attrOf(s, "moora.job.key"); k != "" {
			name += " " + k
		}
		chain = append(chain, name)
		if s == request {
			break
		}
	}
	want := []string{"execute_tool calculator", "moora.job toolkit/call-traced-c1", "moora.input agent-plan", "moora.job agent/plan-traced-1-1", "moora.input agent-plan", "moora.job agent/start-traced", "moora.input user-run-task"}
	if len(chain) != len(want) {
		t.Fatalf("the chain from the tool up: %q, want %q", chain, want)
	}
	for i := range want {
		if chain[i] != want[i] {
			t.Fatalf("the chain from the tool up: %q, want %q", chain, want)
		}
	}
}

func attrOf(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}

func mustWorkspace(t *testing.T) fs.FS {
	t.Helper()
	ws, err := Workspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws
}
