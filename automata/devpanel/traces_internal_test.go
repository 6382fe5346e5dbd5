package devpanel

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/moora-go/moora/automata/journal"
)

// tracer returns a tracer whose spans t records.
func tracer(tr *testing.T, t *Traces) trace.Tracer {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(t))
	tr.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp.Tracer("test")
}

// chain records a trace as a machine makes one: an input span (seq, of
// agent, when not ""), a job under it, and a model call under the job, and
// returns the input span's context.
func chain(tr trace.Tracer, agent string, seq int64) trace.SpanContext {
	var attrs []attribute.KeyValue
	if agent != "" {
		attrs = append(attrs, attribute.String(keyAgentID, agent))
	}
	ctx, in := tr.Start(context.Background(), "moora.input ping", trace.WithAttributes(attrs...))
	in.SetAttributes(attribute.Int64(keyInputSeq, seq)) // set after Start, as automata does
	in.End()
	ctx, job := tr.Start(ctx, "moora.job", trace.WithAttributes(attrs...))
	_, call := tr.Start(ctx, "chat scripted")
	call.End()
	job.End()
	return in.SpanContext()
}

// checkIndex checks the invariants of t's fields (see Traces) and returns
// how many spans it keeps.
func checkIndex(tb testing.TB, t *Traces) int {
	tb.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	inTraces := 0
	for id, l := range t.byTrace {
		if len(l.spans) == 0 {
			tb.Errorf("trace %s has an empty list", id)
		}
		inTraces += len(l.spans)
	}
	if len(t.byID) != t.n || inTraces != t.n {
		tb.Errorf("%d spans in the ring, %d by id, %d by trace", t.n, len(t.byID), inTraces)
	}
	for i := range t.n {
		r := t.ring[(t.head+i)%len(t.ring)]
		if r == nil || t.byID[r.span.SpanContext().SpanID()] != r {
			tb.Fatalf("ring slot %d is not indexed by its span's id", i)
		}
	}
	for k, r := range t.byInput {
		if r.in == nil || *r.in != k || t.byID[r.span.SpanContext().SpanID()] != r {
			tb.Errorf("input %v points at a record that is not kept, or not its", k)
		}
	}
	for s, r := range t.bySeq {
		if r.in == nil || r.in.seq != s || t.byID[r.span.SpanContext().SpanID()] != r {
			tb.Errorf("seq %d points at a record that is not kept, or not its", s)
		}
	}
	return t.n
}

func TestTracesLookup(t *testing.T) {
	traces := NewTraces(0)
	tr := tracer(t, traces)
	a1 := chain(tr, "a", 1)
	b1 := chain(tr, "b", 1)
	a2 := chain(tr, "a", 2)
	// A rejected input has no seq: it is kept, and not found by one.
	_, rejected := tr.Start(context.Background(), "moora.input ping", trace.WithAttributes(attribute.String(keyAgentID, "a")))
	rejected.End()

	for _, c := range []struct {
		name  string
		agent string
		seq   uint64
		want  trace.SpanContext
	}{
		{"agent a's first input", "a", 1, a1},
		{"agent b's, with the same seq", "b", 1, b1},
		{"agent a's second", "a", 2, a2},
		{"by seq alone: the latest input with that seq", "", 1, b1},
		{"no such input", "b", 2, trace.SpanContext{}},
		{"no such agent", "c", 1, trace.SpanContext{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spans, id, ok := traces.input(c.agent, c.seq)
			if ok != c.want.IsValid() {
				t.Fatalf("found %v, want %v", ok, c.want.IsValid())
			}
			if !ok {
				return
			}
			if id != c.want.SpanID() {
				t.Errorf("the input's span is %s, want %s", id, c.want.SpanID())
			}
			var names []string
			for _, s := range spans {
				if s.SpanContext().TraceID() != c.want.TraceID() {
					t.Errorf("span %q of trace %s, want only %s", s.Name(), s.SpanContext().TraceID(), c.want.TraceID())
				}
				names = append(names, s.Name())
			}
			if fmt.Sprint(names) != "[moora.input ping moora.job chat scripted]" {
				t.Errorf("the trace holds %q, want the input, its job and the model call, in the order they started", names)
			}
		})
	}
	if n := checkIndex(t, traces); n != 10 {
		t.Errorf("%d spans kept, want 10", n)
	}
}

// TestTracesKeepsRunningSpans: a span is kept from its start, and shows its
// end once it ended.
func TestTracesKeepsRunningSpans(t *testing.T) {
	traces := NewTraces(0)
	tr := tracer(t, traces)
	ctx, in := tr.Start(context.Background(), "moora.input ping")
	in.SetAttributes(attribute.Int64(keyInputSeq, 7))
	in.End()
	_, job := tr.Start(ctx, "moora.job")
	spans, _, ok := traces.input("", 7)
	if !ok || len(spans) != 2 || spans[1].Name() != "moora.job" || !spans[1].EndTime().IsZero() {
		t.Fatalf("while the job runs, the trace holds %d spans (%v), want the input and the running job", len(spans), ok)
	}
	job.End()
	spans, _, _ = traces.input("", 7)
	if spans[1].EndTime().IsZero() {
		t.Error("the job's span has no end once it ended")
	}
}

// TestTracesForgetsTheOldest is hostile: ten thousand traces through a
// Traces that keeps 100 spans. It keeps exactly 100 at every step, its
// indexes hold those and no more, a trace whose first spans went shows the
// rest, the inputs whose spans went are not found, and a span forgotten
// while it ran is not recorded when it ends.
func TestTracesForgetsTheOldest(t *testing.T) {
	const max, traces = 100, 10_000
	ts := NewTraces(max)
	tr := tracer(t, ts)
	_, early := tr.Start(context.Background(), "moora.job") // runs through it all
	for i := range traces {
		chain(tr, "a", int64(i+1))
		if n := ts.len(); n > max {
			t.Fatalf("%d spans kept after %d traces, want at most %d", n, i+1, max)
		}
	}
	early.End()
	if n := checkIndex(t, ts); n != max {
		t.Errorf("%d spans kept, want %d", n, max)
	}
	ts.mu.Lock()
	inputs, seqs, traceLists := len(ts.byInput), len(ts.bySeq), len(ts.byTrace)
	ts.mu.Unlock()
	// 100 spans: the last 33 traces whole, and the model call of the one
	// before, whose input and job went.
	if inputs != 33 || seqs != 33 || traceLists != 34 {
		t.Errorf("indexed: %d inputs, %d seqs, %d traces; want 33, 33 and 34", inputs, seqs, traceLists)
	}
	if _, _, ok := ts.input("a", traces-33); ok {
		t.Errorf("input %d is found, whose span went", traces-33)
	}
	if spans, _, ok := ts.input("a", traces-32); !ok || len(spans) != 3 {
		t.Errorf("input %d: %d spans (%v), want its 3", traces-32, len(spans), ok)
	}
	if spans, _, ok := ts.input("a", 1); ok {
		t.Errorf("input 1 is found, with %d spans, long gone", len(spans))
	}
}

// TestTracesConcurrent records spans from many goroutines while others look
// them up; with -race it checks the locking, and after it the indexes.
func TestTracesConcurrent(t *testing.T) {
	ts := NewTraces(500)
	tr := tracer(t, ts)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 300 {
				chain(tr, fmt.Sprint("agent-", g), int64(i+1))
			}
		}()
		go func() {
			defer wg.Done()
			for i := range 300 {
				if spans, id, ok := ts.input(fmt.Sprint("agent-", g), uint64(i+1)); ok {
					found := false
					for _, s := range spans {
						s.Attributes() // read, as the view does
						found = found || s.SpanContext().SpanID() == id
					}
					if !found {
						t.Errorf("input %d's trace lacks its span", i+1)
					}
				}
			}
		}()
	}
	wg.Wait()
	if n := checkIndex(t, ts); n != 500 {
		t.Errorf("%d spans kept, want 500", n)
	}
}

// noJournal is an agent whose journal is empty, for views built from
// spans alone.
type noJournal struct{ Agent[struct{}, int] }

func (noJournal) Inputs(from, to uint64) ([]journal.Entry[int], error) { return nil, nil }

// viewOf returns the view of the trace of agent's input seq, as the panel
// of agent shows it: "depth name", one a line, and how many were left out.
func viewOf(t *testing.T, traces *Traces, agent string, seq uint64) (string, int) {
	t.Helper()
	spans, id, ok := traces.input(agent, seq)
	if !ok {
		t.Fatalf("no span of input %d of %q", seq, agent)
	}
	p := &Panel[struct{}, int]{cfg: Config[struct{}, int]{AgentID: agent, Logger: slog.Default()}, agent: noJournal{}}
	v := p.view(seq, spans, id)
	var b strings.Builder
	for _, s := range v.Spans {
		mark := ""
		if s.Chosen {
			mark = " *"
		}
		fmt.Fprintf(&b, "%d %s%s\n", s.Depth, s.Name, mark)
	}
	return b.String(), v.Omitted
}

// span starts a span of agent under ctx, with seq when it is an input's.
func span(ctx context.Context, tr trace.Tracer, name, agent string, seq int64) (context.Context, trace.Span) {
	ctx, s := tr.Start(ctx, name, trace.WithAttributes(attribute.String(keyAgentID, agent)))
	if seq > 0 {
		s.SetAttributes(attribute.Int64(keyInputSeq, seq))
	}
	return ctx, s
}

// TestViewLeavesOutOtherAgents: a trace that crosses agents (a's job calls
// b, whose job calls a) shows a's panel a's spans, and what they did, and
// not b's: b's input, its job and that job's model call are left out, and
// a's input that b's job dispatched is shown under a's job.
func TestViewLeavesOutOtherAgents(t *testing.T) {
	traces := NewTraces(0)
	tr := tracer(t, traces)
	ctx, in1 := span(context.Background(), tr, "moora.input ask", "a", 1)
	in1.End()
	ctx, job := span(ctx, tr, "moora.job", "a", 0)
	ctxB, inB := span(ctx, tr, "moora.input question", "b", 1)
	inB.End()
	ctxB, jobB := span(ctxB, tr, "moora.job", "b", 0)
	_, chatB := tr.Start(ctxB, "chat b's model")
	chatB.End()
	_, in2 := span(ctxB, tr, "moora.input answer", "a", 2)
	in2.End()
	jobB.End()
	_, chat := tr.Start(ctx, "chat a's model")
	chat.End()
	job.End()

	got, omitted := viewOf(t, traces, "a", 1)
	want := "0 moora.input ask *\n1 moora.job\n2 moora.input answer\n2 chat a's model\n"
	if got != want || omitted != 0 {
		t.Errorf("a's view:\n%swant:\n%s(omitted %d)", got, want, omitted)
	}
	got, _ = viewOf(t, traces, "b", 1)
	want = "0 moora.input question *\n1 moora.job\n2 chat b's model\n"
	if got != want {
		t.Errorf("b's view:\n%swant:\n%s", got, want)
	}
}

// TestViewIsBounded: a trace of more spans than a view holds shows the
// chosen input's ancestors and descendants first, and counts the others.
func TestViewIsBounded(t *testing.T) {
	traces := NewTraces(0)
	tr := tracer(t, traces)
	ctx, root := span(context.Background(), tr, "moora.input start", "a", 1)
	root.End()
	ctx, job := span(ctx, tr, "moora.job", "a", 0)
	for range maxViewSpans + 500 { // before the chosen input, by start time
		_, s := tr.Start(ctx, "chat")
		s.End()
	}
	ctx2, in := span(ctx, tr, "moora.input chosen", "a", 2)
	in.End()
	_, late := span(ctx2, tr, "moora.job", "a", 0)
	late.End()
	job.End()

	got, omitted := viewOf(t, traces, "a", 2)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != maxViewSpans || omitted != 504 {
		t.Fatalf("%d spans shown, %d omitted; want %d and %d", len(lines), omitted, maxViewSpans, 504)
	}
	if lines[0] != "0 moora.input start" || lines[1] != "1 moora.job" ||
		lines[len(lines)-2] != "2 moora.input chosen *" || lines[len(lines)-1] != "3 moora.job" {
		t.Errorf("the view starts %q and ends %q: want the chosen input's ancestors and its job kept", lines[:2], lines[len(lines)-2:])
	}
}
