package delegate_test

import (
	"log/slog"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/delegate"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/registry"
)

// TestTraceLinksParentAndChild: the child's task is an input whose span is
// a child of the span of the parent's job that delegated it, so that one
// trace runs from the parent's input through the child's work to the
// parent's result.
func TestTraceLinksParentAndChild(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	cfleet, err := bolt.OpenFleet(filepath.Join(dir, "children.db"))
	if err != nil {
		t.Fatal(err)
	}
	pfleet, err := bolt.OpenFleet(filepath.Join(dir, "parents.db"))
	if err != nil {
		t.Fatal(err)
	}
	children, err := registry.New(registry.Config[childState, childInput]{Fleet: cfleet, Logger: quiet,
		Open: func(_ string, s journal.Store) (*journal.Machine[childState, childInput], error) {
			return journal.Open(s, childModel, journal.Options[childState, childInput]{Codec: journal.JSON[childState, childInput](nil), Logger: quiet},
				childWork(nil), automata.WithTelemetry[childState, childInput](tp, nil),
				automata.WithTelemetryAttributes[childState, childInput](attribute.String("agent", "child")))
		}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := delegate.New(delegate.Config[childState, childInput]{Registry: children, Owner: "team"})
	if err != nil {
		t.Fatal(err)
	}
	parents, err := registry.New(registry.Config[parentState, parentInput]{Fleet: pfleet, Logger: quiet,
		Open: func(id string, s journal.Store) (*journal.Machine[parentState, parentInput], error) {
			return journal.Open(s, parentModel, journal.Options[parentState, parentInput]{Codec: journal.JSON[parentState, parentInput](nil), Logger: quiet},
				parentJobs(d, id), automata.WithTelemetry[parentState, parentInput](tp, nil),
				automata.WithTelemetryAttributes[parentState, parentInput](attribute.String("agent", "parent")))
		}})
	if err != nil {
		t.Fatal(err)
	}
	tm := &team{parents: parents, children: children, d: d, pfleet: pfleet, cfleet: cfleet}
	parents.Create("boss", "ann")
	tm.ask(t, "boss", parentInput{Ask: "draw"})
	tm.waitParent(t, "boss", "the result", func(s parentState) bool { return len(s.Results) == 1 })
	tm.close(t) // every span has ended

	var job, task sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		agent := ""
		for _, a := range s.Attributes() {
			if a.Key == "agent" {
				agent = a.Value.AsString()
			}
		}
		switch {
		case agent == "parent" && s.Name() == "moora.job":
			job = s
		case agent == "child" && s.Name() != "moora.job" && task == nil:
			task = s // the child's first input: its task
		}
	}
	if job == nil || task == nil {
		t.Fatalf("spans: the parent's job %v, the child's task %v", job, task)
	}
	if task.Parent().SpanID() != job.SpanContext().SpanID() || task.SpanContext().TraceID() != job.SpanContext().TraceID() {
		t.Fatalf("the child's task %q has parent %v in trace %v; want the parent's job %v in trace %v",
			task.Name(), task.Parent().SpanID(), task.SpanContext().TraceID(), job.SpanContext().SpanID(), job.SpanContext().TraceID())
	}
}
