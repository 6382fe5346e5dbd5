package automata_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/internal/testbuf"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/moora-go/moora/automata"
)

// The telemetry tests run the real OpenTelemetry SDK, with its in-memory
// span recorder and a manual metric reader.

// chat is a tiny agent: a question calls for the brain's job reply-{n},
// which calls the model (a span of its own, under the job's context) and
// answers; "stop" calls for no job.
type chat struct {
	asked, answered int
	stopped         bool
}

type chatInput struct {
	kind string // "ask", "answer", "stop"
	text string
}

func (in chatInput) InputType() string { return in.kind }

var chatDef = automata.Definition[chat, chatInput]{
	Initial: func() chat { return chat{} },
	Transition: func(s chat, in chatInput) chat {
		switch in.kind {
		case "ask":
			s.asked++
		case "answer":
			s.answered++
		case "stop":
			s.stopped = true
		}
		return s
	},
}

// recorded is a machine with telemetry on the SDK, and what it records.
type recorded struct {
	spans   *tracetest.SpanRecorder
	tp      *sdktrace.TracerProvider
	reader  *sdkmetric.ManualReader
	machine *automata.Machine[chat, chatInput, chat]
}

func newRecorded(t *testing.T, job func(n int) automata.Job[chatInput], opts ...automata.Option[chat, chatInput]) *recorded {
	t.Helper()
	r := &recorded{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	opts = append(opts,
		automata.WithTelemetry[chat, chatInput](r.tp, mp),
		automata.WithActorJobs("brain", func(s chat) map[string]automata.Job[chatInput] {
			if s.stopped || s.asked == s.answered {
				return nil
			}
			return map[string]automata.Job[chatInput]{"reply-" + string(rune('0'+s.asked)): job(s.asked)}
		}))
	r.machine = automata.NewMoore(chatDef, func(s chat) chat { return s }, opts...)
	t.Cleanup(func() { r.machine.Close(context.Background()) })
	return r
}

// ended returns the spans ended so far, by name.
func (r *recorded) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value
		}
	}
	return attribute.Value{}
}

// waitState waits until the machine's state satisfies ok.
func waitState(t *testing.T, m *automata.Machine[chat, chatInput, chat], ok func(chat) bool) {
	t.Helper()
	got := make(chan struct{}, 1)
	unsubscribe := m.Subscribe(func(s chat) {
		if ok(s) {
			select {
			case got <- struct{}{}:
			default:
			}
		}
	})
	defer unsubscribe()
	select {
	case <-got:
	case <-time.After(time.Minute):
		t.Fatalf("hung; state %+v", m.Current())
	}
}

// TestTelemetrySpanTree: the trace of one turn follows cause to effect. The
// caller's span is the parent of the question's input span (DispatchWait's
// context); the question's span is the parent of the job it called for;
// the job's span is the parent of the model call it makes with its context
// and of the answer it dispatches.
func TestTelemetrySpanTree(t *testing.T) {
	r := newRecorded(t, func(n int) automata.Job[chatInput] {
		return func(ctx context.Context, dispatch automata.Dispatch[chatInput]) error {
			// A model client traces with the provider of the span in
			// its context, as otel's instrumentation does.
			_, model := trace.SpanFromContext(ctx).TracerProvider().Tracer("model").Start(ctx, "chat model")
			model.End()
			dispatch(chatInput{kind: "answer", text: "hi"})
			return nil
		}
	})
	ctx, caller := r.tp.Tracer("test").Start(context.Background(), "POST /inputs")
	if err := r.machine.DispatchWait(ctx, chatInput{kind: "ask"}); err != nil {
		t.Fatal(err)
	}
	caller.End()
	waitState(t, r.machine, func(s chat) bool { return s.answered == 1 })
	waitJobs(t, r.machine)

	ask, answer, job, model := one(t, r, "moora.input ask"), one(t, r, "moora.input answer"), one(t, r, "moora.job"), one(t, r, "chat model")
	if ask.Parent().SpanID() != caller.SpanContext().SpanID() || ask.SpanContext().TraceID() != caller.SpanContext().TraceID() {
		t.Errorf("the question's parent is %v, want the caller's span %v", ask.Parent().SpanID(), caller.SpanContext().SpanID())
	}
	if job.Parent().SpanID() != ask.SpanContext().SpanID() {
		t.Errorf("the job's parent is %v, want the question's span %v", job.Parent().SpanID(), ask.SpanContext().SpanID())
	}
	if model.Parent().SpanID() != job.SpanContext().SpanID() || answer.Parent().SpanID() != job.SpanContext().SpanID() {
		t.Errorf("the model call's parent %v and the answer's %v, want the job's span %v", model.Parent().SpanID(), answer.Parent().SpanID(), job.SpanContext().SpanID())
	}
	if got := attr(job, "moora.job.key").AsString(); got != "brain/reply-1" || attr(job, "moora.job.actor").AsString() != "brain" || attr(job, "moora.job.cancelled").AsBool() {
		t.Errorf("the job's attributes %v", job.Attributes())
	}
	var events []string
	for _, e := range ask.Events() {
		events = append(events, e.Name)
	}
	if !slices.Equal(events, []string{"admitted", "transitioned"}) || attr(ask, "moora.input.type").AsString() != "ask" || ask.Status().Code == codes.Error {
		t.Errorf("the question's span: events %v, attributes %v, status %v", events, ask.Attributes(), ask.Status())
	}
	if !ask.StartTime().Before(ask.EndTime()) && !ask.StartTime().Equal(ask.EndTime()) {
		t.Errorf("the question's span ends before it starts")
	}
}

// one returns the one span ended named name.
func one(t *testing.T, r *recorded, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	// The span of a job that returned nil ends when the machine takes its
	// report up, which may be after Jobs no longer counts it (waitJobs):
	// wait for the first span of the name to end.
	got := r.ended(name)
	for deadline := time.Now().Add(time.Minute); len(got) == 0 && time.Now().Before(deadline); got = r.ended(name) {
		time.Sleep(time.Millisecond)
	}
	if len(got) != 1 {
		var names []string
		for _, s := range r.spans.Ended() {
			names = append(names, s.Name())
		}
		t.Fatalf("%d spans named %q; the spans: %v", len(got), name, names)
	}
	return got[0]
}

// waitJobs waits until no job runs. A job that failed has ended its span;
// one that returned nil may not have yet (see one).
func waitJobs(t *testing.T, m *automata.Machine[chat, chatInput, chat]) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for m.Jobs() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs still run", m.Jobs())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTelemetryCancelledJob: a job whose key vanishes while it runs ends
// its span as cancelled, without an error status; the metrics count it
// cancelled, and no job runs any more.
func TestTelemetryCancelledJob(t *testing.T) {
	started := make(chan struct{})
	r := newRecorded(t, func(n int) automata.Job[chatInput] {
		return func(ctx context.Context, dispatch automata.Dispatch[chatInput]) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		}
	})
	ctx := context.Background()
	if err := r.machine.DispatchWait(ctx, chatInput{kind: "ask"}); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := r.machine.DispatchWait(ctx, chatInput{kind: "stop"}); err != nil {
		t.Fatal(err)
	}
	waitJobs(t, r.machine)
	job := one(t, r, "moora.job")
	if !attr(job, "moora.job.cancelled").AsBool() || attr(job, "moora.job.cancel.reason").AsString() != "its key vanished" || job.Status().Code == codes.Error {
		t.Errorf("the cancelled job's span: attributes %v, status %v", job.Attributes(), job.Status())
	}
	m := collect(t, r.reader)
	if got := sum(m, "moora.jobs", "moora.job.outcome", "cancelled"); got != 1 {
		t.Errorf("moora.jobs cancelled = %d", got)
	}
	if got := sum(m, "moora.jobs.running", "", ""); got != 0 {
		t.Errorf("moora.jobs.running = %d once the job ended", got)
	}
}

// TestTelemetryJobReturningNilAtClose: a job that returns nil once Close
// has cut it off still ends its span, though the machine, closed, reports
// its end to nobody.
func TestTelemetryJobReturningNilAtClose(t *testing.T) {
	started := make(chan struct{})
	r := newRecorded(t, func(n int) automata.Job[chatInput] {
		return func(ctx context.Context, dispatch automata.Dispatch[chatInput]) error {
			close(started)
			<-ctx.Done()
			return nil
		}
	})
	if err := r.machine.DispatchWait(context.Background(), chatInput{kind: "ask"}); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := r.machine.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	job := one(t, r, "moora.job")
	if job.Status().Code == codes.Error {
		t.Errorf("the job's span: status %v", job.Status())
	}
}

// TestTelemetryRejectedInput: an input the admission step rejects has a
// span with an error status that says why, and is counted rejected.
func TestTelemetryRejectedInput(t *testing.T) {
	refuse := errors.New("no stopping here")
	r := newRecorded(t, func(int) automata.Job[chatInput] { return nil },
		automata.WithAdmission(func(_ chat, in chatInput) (chatInput, error) {
			if in.kind == "stop" {
				return in, refuse
			}
			return in, nil
		}))
	if err := r.machine.DispatchWait(context.Background(), chatInput{kind: "stop"}); !errors.Is(err, refuse) {
		t.Fatalf("DispatchWait = %v", err)
	}
	stop := one(t, r, "moora.input stop")
	if stop.Status().Code != codes.Error || stop.Status().Description != "no stopping here" || len(stop.Events()) == 0 || stop.Events()[0].Name != "exception" {
		t.Errorf("the rejected input's span: status %v, events %v", stop.Status(), stop.Events())
	}
	m := collect(t, r.reader)
	if got := sum(m, "moora.inputs", "moora.input.outcome", "rejected"); got != 1 {
		t.Errorf("moora.inputs rejected = %d", got)
	}
}

// TestTelemetryMetricsCount: after a scripted run, the metrics count the
// inputs applied and the jobs completed, by type and actor.
func TestTelemetryMetricsCount(t *testing.T) {
	r := newRecorded(t, func(n int) automata.Job[chatInput] {
		return func(ctx context.Context, dispatch automata.Dispatch[chatInput]) error {
			dispatch(chatInput{kind: "answer"})
			return nil
		}
	})
	const turns = 5
	for i := range turns {
		if err := r.machine.DispatchWait(context.Background(), chatInput{kind: "ask"}); err != nil {
			t.Fatal(err)
		}
		waitState(t, r.machine, func(s chat) bool { return s.answered == i+1 })
	}
	waitJobs(t, r.machine)
	// A job's end is recorded when the machine takes its report up,
	// which may be after Jobs no longer counts it.
	m := collect(t, r.reader)
	for deadline := time.Now().Add(time.Minute); sum(m, "moora.jobs", "moora.job.outcome", "completed") < turns && time.Now().Before(deadline); m = collect(t, r.reader) {
		time.Sleep(time.Millisecond)
	}
	for _, c := range []struct {
		metric, key, value string
		want               int64
	}{
		{"moora.inputs", "moora.input.type", "ask", turns},
		{"moora.inputs", "moora.input.type", "answer", turns},
		{"moora.inputs", "moora.input.outcome", "applied", 2 * turns},
		{"moora.jobs", "moora.job.outcome", "completed", turns},
		{"moora.jobs", "moora.job.actor", "brain", turns},
		{"moora.jobs.started", "moora.job.actor", "brain", turns},
		{"moora.jobs.running", "", "", 0},
	} {
		if got := sum(m, c.metric, c.key, c.value); got != c.want {
			t.Errorf("%s{%s=%s} = %d, want %d", c.metric, c.key, c.value, got, c.want)
		}
	}
	if got := count(m, "moora.input.duration"); got != 2*turns {
		t.Errorf("moora.input.duration has %d records, want %d", got, 2*turns)
	}
	if got := count(m, "moora.transition.duration"); got != 2*turns {
		t.Errorf("moora.transition.duration has %d records, want %d", got, 2*turns)
	}
}

func collect(t *testing.T, r *sdkmetric.ManualReader) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// sum adds up the data points of an integer sum metric whose attribute key
// is value ("" key: every point).
func sum(rm metricdata.ResourceMetrics, name, key, value string) int64 {
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			if s, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range s.DataPoints {
					if v, ok := p.Attributes.Value(attribute.Key(key)); key == "" || ok && v.AsString() == value {
						n += p.Value
					}
				}
			}
		}
	}
	return n
}

// count is the number of values a histogram recorded.
func count(rm metricdata.ResourceMetrics, name string) uint64 {
	var n uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch h := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range h.DataPoints {
					n += p.Count
				}
			case metricdata.Histogram[int64]:
				for _, p := range h.DataPoints {
					n += p.Count
				}
			}
		}
	}
	return n
}

// TestLoggerSaysWhatWentWrong: WithLogger logs a rejected input and a
// failed job as structured records, with the machine's attributes (the
// agent's id) and the trace and span ids of their spans.
func TestLoggerSaysWhatWentWrong(t *testing.T) {
	var buf testbuf.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	r := newRecorded(t, func(int) automata.Job[chatInput] {
		return func(context.Context, automata.Dispatch[chatInput]) error { return errors.New("the model is down") }
	},
		automata.WithLogger[chat, chatInput](log),
		automata.WithTelemetryAttributes[chat, chatInput](attribute.String("moora.agent.id", "agent-9")),
		automata.WithAdmission(func(_ chat, in chatInput) (chatInput, error) {
			if in.kind == "stop" {
				return in, errors.New("no stopping here")
			}
			return in, nil
		}))
	ctx := context.Background()
	r.machine.DispatchWait(ctx, chatInput{kind: "stop"})
	if err := r.machine.DispatchWait(ctx, chatInput{kind: "ask"}); err != nil {
		t.Fatal(err)
	}
	waitJobs(t, r.machine)
	r.machine.Close(ctx)
	records := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		records[rec["msg"].(string)] = rec
	}
	stop, job := one(t, r, "moora.input stop"), one(t, r, "moora.job")
	for msg, want := range map[string]map[string]any{
		"automata: input rejected": {"level": "WARN", "moora.input.type": "stop", "error": "no stopping here", "moora.agent.id": "agent-9",
			"trace_id": stop.SpanContext().TraceID().String(), "span_id": stop.SpanContext().SpanID().String()},
		"automata: job failed": {"level": "WARN", "moora.job.key": "brain/reply-1", "error": "the model is down", "moora.agent.id": "agent-9",
			"trace_id": job.SpanContext().TraceID().String(), "span_id": job.SpanContext().SpanID().String()},
	} {
		rec, ok := records[msg]
		if !ok {
			t.Errorf("no record %q in:\n%s", msg, buf.String())
			continue
		}
		for k, v := range want {
			if rec[k] != v {
				t.Errorf("%q: %s = %v, want %v", msg, k, rec[k], v)
			}
		}
	}
}
