package devpanel

import (
	"context"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// DefaultMaxSpans is how many spans NewTraces keeps when it is given no
// bound.
const DefaultMaxSpans = 20_000

// Attribute keys the trace view reads: the ones package automata sets on
// the spans of a machine (see automata.WithTelemetry).
const (
	keyAgentID   = "moora.agent.id"
	keyInputSeq  = "moora.input.seq"
	keyInputType = "moora.input.type"
)

// Traces records the spans of a TracerProvider in memory for the panel's
// trace view (Config.Traces): add it to the provider the agent is traced
// with, as a span processor beside the exporters, if any:
//
//	traces := devpanel.NewTraces(0)
//	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(traces))
//
// and open the agent with automata.WithTelemetry(tp, nil). One Traces may
// serve the panels of many agents (a Fleet): they tell their spans apart by
// the agents' ids (moora.agent.id), which the panels add.
//
// It keeps the most recent spans, by when they started, up to its bound:
// the oldest is forgotten when a span starts beyond it, so memory is
// bounded by the bound times the size of a span, which the provider's
// limits bound in turn (sdktrace.WithSpanLimits: the number of attributes
// and events, the length of attribute values). A span is recorded as it
// starts, so that the view shows what still runs, and its final copy
// replaces it when it ends. Recording costs a few map operations per span,
// whatever the number kept. A trace whose spans were partly forgotten shows
// what is left of it; the view of an input whose own span was forgotten
// answers 404.
//
// It is safe for concurrent use. It exports nothing: it is not an exporter,
// and keeps nothing across a restart.
type Traces struct {
	// The fields below are guarded by mu. ring holds the records in the order
	// their spans started, the oldest at ring[head] once the ring is full (n ==
	// len(ring)); every record in ring is in byID under its span's id and in
	// byTrace under its trace's id, whose list is in the same order, so the
	// oldest record of the ring is the first of its trace's list. byInput and
	// bySeq point at the records of ended input spans, the latest of each key.
	mu      sync.Mutex
	ring    []*spanRecord
	head, n int
	byID    map[trace.SpanID]*spanRecord
	byTrace map[trace.TraceID]*traceList
	byInput map[inputKey]*spanRecord // by agent id and seq
	bySeq   map[uint64]*spanRecord   // by seq alone
}

// spanRecord is a span kept: the span itself while it runs, its final copy
// once it ended.
type spanRecord struct {
	span sdktrace.ReadOnlySpan
	in   *inputKey // of an ended input span that has a seq
}

// traceList is the records of one trace, oldest first.
type traceList struct {
	spans []*spanRecord
}

// inputKey names an input: its agent's id ("" for none) and its seq.
type inputKey struct {
	agent string
	seq   uint64
}

var _ sdktrace.SpanProcessor = (*Traces)(nil)

// NewTraces returns a Traces that keeps the latest maxSpans spans
// (DefaultMaxSpans when maxSpans <= 0).
func NewTraces(maxSpans int) *Traces {
	if maxSpans <= 0 {
		maxSpans = DefaultMaxSpans
	}
	return &Traces{
		ring:    make([]*spanRecord, maxSpans),
		byID:    map[trace.SpanID]*spanRecord{},
		byTrace: map[trace.TraceID]*traceList{},
		byInput: map[inputKey]*spanRecord{},
		bySeq:   map[uint64]*spanRecord{},
	}
}

// OnStart records a span that starts, forgetting the oldest beyond the
// bound. It is part of sdktrace.SpanProcessor.
func (t *Traces) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	sc := s.SpanContext()
	r := &spanRecord{span: s}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == len(t.ring) {
		t.evictLocked()
	}
	t.ring[(t.head+t.n)%len(t.ring)] = r
	t.n++
	t.byID[sc.SpanID()] = r
	l := t.byTrace[sc.TraceID()]
	if l == nil {
		l = &traceList{}
		t.byTrace[sc.TraceID()] = l
	}
	l.spans = append(l.spans, r)
}

// evictLocked forgets the oldest record.
func (t *Traces) evictLocked() {
	r := t.ring[t.head]
	t.ring[t.head] = nil
	t.head = (t.head + 1) % len(t.ring)
	t.n--
	sc := r.span.SpanContext()
	if t.byID[sc.SpanID()] == r {
		delete(t.byID, sc.SpanID())
	}
	if l := t.byTrace[sc.TraceID()]; l != nil && len(l.spans) > 0 && l.spans[0] == r {
		l.spans[0] = nil
		l.spans = l.spans[1:]
		if len(l.spans) == 0 {
			delete(t.byTrace, sc.TraceID())
		}
	}
	if r.in != nil {
		if t.byInput[*r.in] == r {
			delete(t.byInput, *r.in)
		}
		if t.bySeq[r.in.seq] == r {
			delete(t.bySeq, r.in.seq)
		}
	}
}

// OnEnd keeps the final copy of a span that ends, and indexes an input's
// span by its agent and seq. A span forgotten since it started is not
// recorded again. It is part of sdktrace.SpanProcessor.
func (t *Traces) OnEnd(s sdktrace.ReadOnlySpan) {
	var in *inputKey
	if strings.HasPrefix(s.Name(), "moora.input ") {
		in = inputOf(s.Attributes())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.byID[s.SpanContext().SpanID()]
	if r == nil {
		return
	}
	r.span = s
	if in != nil {
		r.in = in
		t.byInput[*in] = r
		t.bySeq[in.seq] = r
	}
}

// inputOf returns the key of an input span's attributes, or nil when it
// has no seq (a rejected input).
func inputOf(attrs []attribute.KeyValue) *inputKey {
	var k inputKey
	found := false
	for _, a := range attrs {
		switch a.Key {
		case keyInputSeq:
			if a.Value.Type() == attribute.INT64 && a.Value.AsInt64() > 0 {
				k.seq, found = uint64(a.Value.AsInt64()), true
			}
		case keyAgentID:
			k.agent = a.Value.Emit()
		}
	}
	if !found {
		return nil
	}
	return &k
}

// Shutdown does nothing: the spans stay to be looked at. It is part of
// sdktrace.SpanProcessor.
func (t *Traces) Shutdown(context.Context) error { return nil }

// ForceFlush does nothing: there is nothing to flush. It is part of
// sdktrace.SpanProcessor.
func (t *Traces) ForceFlush(context.Context) error { return nil }

// input returns the spans kept of the trace of an input, oldest first, and
// the id of the input's own span: the input numbered seq of the agent
// named agent, or, for agent "", the latest input numbered seq whatever
// its agent. ok is false when no span of that input is kept.
func (t *Traces) input(agent string, seq uint64) (spans []sdktrace.ReadOnlySpan, id trace.SpanID, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.bySeq[seq]
	if agent != "" {
		r = t.byInput[inputKey{agent, seq}]
	}
	if r == nil {
		return nil, id, false
	}
	sc := r.span.SpanContext()
	l := t.byTrace[sc.TraceID()]
	spans = make([]sdktrace.ReadOnlySpan, len(l.spans))
	for i, r := range l.spans {
		spans[i] = r.span
	}
	return spans, sc.SpanID(), true
}

// len returns how many spans are kept.
func (t *Traces) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}
