package automata

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// InstrumentationName is the name of the tracer and the meter WithTelemetry
// takes from its providers.
const InstrumentationName = "github.com/moora-go/moora/automata"

// WithTelemetry traces and measures the machine with OpenTelemetry (the API
// of go.opentelemetry.io/otel: the SDK and the exporters are the caller's
// choice). Either provider may be nil, for no traces or no metrics. Without
// this option (the default) the machine records nothing, at no cost.
//
// Traces:
//
//   - a span "moora.input {type}" for each input applied or rejected, from
//     when it is taken up for applying to when it is applied (before its
//     subscribers are called) or rejected, with events "admitted",
//     "transitioned" and, in a durable machine, "committed" (with the size of
//     the commit's batch, moora.commit.inputs), and moora.input.seq, its
//     number (in a durable machine, its record's in the journal: see
//     WithSeqBase); a rejected input's span has an error status. Its parent is the span of the job that dispatched it,
//     or the span in the context given to DispatchWait (a journal's
//     Dispatch; the bridge's request, which continues a caller's
//     traceparent), else none. {type} is the input's InputType() when it has
//     one (generated inputs do), else its Go type's name.
//   - a span "moora.job" for each job, under its key (moora.job.key), from
//     its start to its return, a child of the span of the input whose state
//     called for it: the last one applied before the job started (inputs
//     applied together, as a durable machine's batch or a queue behind a
//     busy subscriber, are reconciled once: the job's span is linked to the
//     others, up to 64, any of which may have called for it first); it is
//     the parent of what the job does with its context (a model call, a tool
//     call, the inputs it dispatches). So a trace follows cause to effect:
//     a user's input, the job it called for, the model call of that job,
//     the input the job dispatched, the job that one called for. A job
//     cancelled says so, and why (moora.job.cancelled, and
//     moora.job.cancel.reason: "its key vanished" or "the machine
//     closed"); a job that failed has an error status.
//
// Replay (a journal's recovery and time travel) applies inputs through the
// pure definition, not a machine: it records nothing.
//
// Metrics (all with the attribute moora.input.type or moora.job.actor, the
// part of the job's key before its first '/'):
//
//   - moora.inputs (counter): inputs applied or rejected, by
//     moora.input.outcome;
//   - moora.input.duration (histogram, seconds): from taken up to applied;
//   - moora.transition.duration (histogram, seconds): the transition alone;
//   - moora.commit.inputs (histogram): the inputs of each commit, in a
//     durable machine: its count is the commits (a journal's fsyncs), its
//     sum the records;
//   - moora.commit.duration (histogram, seconds): each commit, the
//     journal's append and fsync;
//   - moora.jobs.started (counter): jobs started;
//   - moora.jobs (counter): jobs ended, by moora.job.outcome: completed,
//     failed, cancelled;
//   - moora.jobs.running (up-down counter): jobs started and not ended.
func WithTelemetry[S, I any](tp trace.TracerProvider, mp metric.MeterProvider) Option[S, I] {
	return func(c *config[S, I]) { c.telemetry = newTelemetry(tp, mp) }
}

// WithSeqBase numbers the inputs the machine applies from base+1 in its
// telemetry: the attribute moora.input.seq of an input's span is base plus
// the input's position (see DispatchWaitPos). journal.Open gives it the
// last sequence number of the journal it opened, so that a span names its
// input's record. It does nothing without WithTelemetry, and may come
// before or after it.
func WithSeqBase[S, I any](base uint64) Option[S, I] {
	return func(c *config[S, I]) { c.seqBase = base }
}

// WithTelemetryAttributes adds attrs to every span of the machine, input's
// and job's: such as the agent's id (moora.agent.id), when many agents
// share one TracerProvider (devpanel.Fleet adds it). It does nothing
// without WithTelemetry, and may come before or after it.
func WithTelemetryAttributes[S, I any](attrs ...attribute.KeyValue) Option[S, I] {
	return func(c *config[S, I]) { c.spanAttrs = append(c.spanAttrs, attrs...) }
}

// WithLogger logs what goes wrong in the machine with log/slog, as
// structured records an operator's tools can read: an input rejected
// (Warn: moora.input.type, error), a job failed (Warn: moora.job.key,
// error) or cut off (Debug), the machine failed (Error: error, where).
// Each record has the attributes of WithTelemetryAttributes (such as the
// agent's id), and with WithTelemetry the trace_id and span_id of the
// input's or the job's span, to find it in the traces. Nil: no logging,
// the default.
func WithLogger[S, I any](l *slog.Logger) Option[S, I] {
	return func(c *config[S, I]) { c.logger = l }
}

// logAttrs are the attributes of a log record about the span sc (none when
// it is invalid) of a machine with extra attributes.
func logAttrs(sc trace.SpanContext, extra []attribute.KeyValue, attrs ...slog.Attr) []slog.Attr {
	for _, kv := range extra {
		attrs = append(attrs, slog.Any(string(kv.Key), kv.Value.AsInterface()))
	}
	if sc.IsValid() {
		attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return attrs
}

// telemetry is what WithTelemetry records with; nil when it is off.
type telemetry struct {
	tracer    trace.Tracer         // nil: no traces
	meter     bool                 // the instruments are set
	spanAttrs []attribute.KeyValue // WithTelemetryAttributes

	inputs      metric.Int64Counter
	inputTime   metric.Float64Histogram
	transitions metric.Float64Histogram
	commits     metric.Int64Histogram
	commitTime  metric.Float64Histogram
	started     metric.Int64Counter
	jobs        metric.Int64Counter
	running     metric.Int64UpDownCounter

	// The attributes of each input type, made once: owned by the
	// goroutine applying inputs (the telemetry is the machine's own).
	types map[string]*typeAttrs
}

// typeAttrs are the attributes of one input type, for spans and metrics.
type typeAttrs struct {
	name              string // the span's
	attr              attribute.KeyValue
	of                metric.MeasurementOption // moora.input.type
	applied, rejected metric.MeasurementOption // and moora.input.outcome
}

func (t *telemetry) attrs(typ string) *typeAttrs {
	if a, ok := t.types[typ]; ok {
		return a
	}
	kv := attribute.String("moora.input.type", typ)
	a := &typeAttrs{
		name:     "moora.input " + typ,
		attr:     kv,
		of:       metric.WithAttributeSet(attribute.NewSet(kv)),
		applied:  metric.WithAttributeSet(attribute.NewSet(kv, attribute.String("moora.input.outcome", "applied"))),
		rejected: metric.WithAttributeSet(attribute.NewSet(kv, attribute.String("moora.input.outcome", "rejected"))),
	}
	if len(t.types) < maxInputTypes {
		t.types[typ] = a
	}
	return a
}

// maxSince bounds the inputs a job's span is linked to (see jobStart).
const maxSince = 64

// maxInputTypes bounds the input types whose attributes are kept: a spec
// has a few dozen; an I that is not generated could have any number.
const maxInputTypes = 1024

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) *telemetry {
	if tp == nil && mp == nil {
		return nil
	}
	t := &telemetry{types: map[string]*typeAttrs{}}
	if tp != nil {
		t.tracer = tp.Tracer(InstrumentationName)
	}
	if mp != nil {
		m := mp.Meter(InstrumentationName)
		var errs []error
		add := func(err error) { errs = append(errs, err) }
		var err error
		t.inputs, err = m.Int64Counter("moora.inputs", metric.WithDescription("Inputs applied or rejected."), metric.WithUnit("{input}"))
		add(err)
		t.inputTime, err = m.Float64Histogram("moora.input.duration", metric.WithDescription("From an input taken up for applying to applied or rejected."), metric.WithUnit("s"))
		add(err)
		t.transitions, err = m.Float64Histogram("moora.transition.duration", metric.WithDescription("The transition of an input."), metric.WithUnit("s"))
		add(err)
		t.commits, err = m.Int64Histogram("moora.commit.inputs", metric.WithDescription("The inputs a commit made durable at once."), metric.WithUnit("{input}"))
		add(err)
		t.commitTime, err = m.Float64Histogram("moora.commit.duration", metric.WithDescription("A commit: the journal's append of a batch of inputs, its fsync included."), metric.WithUnit("s"))
		add(err)
		t.started, err = m.Int64Counter("moora.jobs.started", metric.WithDescription("Jobs started."), metric.WithUnit("{job}"))
		add(err)
		t.jobs, err = m.Int64Counter("moora.jobs", metric.WithDescription("Jobs ended."), metric.WithUnit("{job}"))
		add(err)
		t.running, err = m.Int64UpDownCounter("moora.jobs.running", metric.WithDescription("Jobs started and not ended."), metric.WithUnit("{job}"))
		add(err)
		// A meter that fails to make an instrument returns a no-op one
		// with the error: the machine runs on, measuring less.
		t.meter = errors.Join(errs...) == nil || t.inputs != nil
	}
	return t
}

// inputType names an input for spans and metrics.
func inputType(in any) string {
	if t, ok := in.(interface{ InputType() string }); ok {
		return t.InputType()
	}
	if in == nil {
		return "nil"
	}
	return reflect.TypeOf(in).String()
}

// actorOf is the actor of a job's key: what comes before its first '/'
// (WithActorJobs), or "" for a key without one.
func actorOf(key string) string {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return ""
}

// inputTimes are the moments of an input's way through the machine, for its
// span, which is made once the input is applied or rejected.
type inputTimes struct {
	start, admitted, transitioned time.Time
	committed                     time.Time // zero without a committer
	batch                         int       // inputs of the commit
}

// parentOf returns the context an input's span is a child of: the job's
// that dispatched it, or the DispatchWait's.
func parentOf[I any](q queued[I]) context.Context {
	if q.from != nil && q.from.tel != nil && q.from.tel.traced != nil {
		return q.from.tel.traced
	}
	if q.wait != nil && q.wait.ctx != nil {
		return *q.wait.ctx
	}
	return context.Background()
}

// input records an input applied (err nil) as the seq-th, or rejected, and
// returns its span's context (invalid without traces).
func (t *telemetry) input(parent context.Context, in any, seq uint64, times inputTimes, err error) (sc trace.SpanContext) {
	end := time.Now()
	a := t.attrs(inputType(in))
	if t.tracer != nil {
		_, span := t.tracer.Start(parent, a.name, trace.WithTimestamp(times.start),
			trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(a.attr), trace.WithAttributes(t.spanAttrs...))
		if span.IsRecording() {
			if err == nil {
				span.SetAttributes(attribute.Int64("moora.input.seq", int64(seq)))
			}
			if !times.admitted.IsZero() {
				span.AddEvent("admitted", trace.WithTimestamp(times.admitted))
			}
			if !times.transitioned.IsZero() {
				span.AddEvent("transitioned", trace.WithTimestamp(times.transitioned))
			}
			if !times.committed.IsZero() {
				span.AddEvent("committed", trace.WithTimestamp(times.committed),
					trace.WithAttributes(attribute.Int("moora.commit.inputs", times.batch)))
			}
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
		}
		span.End(trace.WithTimestamp(end))
		sc = span.SpanContext()
	}
	if t.meter {
		outcome := a.applied
		if err != nil {
			outcome = a.rejected
		}
		ctx := context.Background()
		t.inputs.Add(ctx, 1, outcome)
		t.inputTime.Record(ctx, end.Sub(times.start).Seconds(), a.of)
		if !times.transitioned.IsZero() && !times.admitted.IsZero() {
			t.transitions.Record(ctx, times.transitioned.Sub(times.admitted).Seconds(), a.of)
		}
	}
	return sc
}

// commit records a commit of n inputs that took d.
func (t *telemetry) commit(n int, d time.Duration) {
	if t.meter {
		t.commits.Record(context.Background(), int64(n))
		t.commitTime.Record(context.Background(), d.Seconds())
	}
}

// jobStart starts the span of job key, a child of the span of the last
// input applied before it started (cause; none when it is invalid, as for
// the jobs of the initial state), linked to those of the other inputs
// applied since the jobs were last reconciled (also). ctx is the job's own
// context, which the returned one wraps.
func (t *telemetry) jobStart(ctx context.Context, key string, cause trace.SpanContext, also []trace.SpanContext) (context.Context, trace.Span) {
	if t.meter {
		actor := metric.WithAttributes(attribute.String("moora.job.actor", actorOf(key)))
		t.running.Add(ctx, 1, actor)
		t.started.Add(ctx, 1, actor)
	}
	if t.tracer == nil {
		return ctx, nil
	}
	parent := ctx
	if cause.IsValid() {
		parent = trace.ContextWithSpanContext(ctx, cause)
	}
	var links []trace.Link
	for _, sc := range also {
		links = append(links, trace.Link{SpanContext: sc})
	}
	return t.tracer.Start(parent, "moora.job", trace.WithAttributes(t.spanAttrs...), trace.WithLinks(links...),
		trace.WithAttributes(attribute.String("moora.job.key", key), attribute.String("moora.job.actor", actorOf(key))))
}

// jobEnd ends the span of job key, which returned err; cancelled says it
// was cut off: its context was cancelled and it returned an error; why
// says why it was: "its key vanished" or "the machine closed".
func (t *telemetry) jobEnd(span trace.Span, key string, err error, cancelled bool, why string) {
	outcome := "completed"
	switch {
	case cancelled:
		outcome = "cancelled"
	case err != nil:
		outcome = "failed"
	}
	if span != nil {
		span.SetAttributes(attribute.Bool("moora.job.cancelled", cancelled))
		if why != "" {
			span.SetAttributes(attribute.String("moora.job.cancel.reason", why))
		}
		if err != nil && !cancelled {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
	if t.meter {
		actor := attribute.String("moora.job.actor", actorOf(key))
		ctx := context.Background()
		t.running.Add(ctx, -1, metric.WithAttributes(actor))
		t.jobs.Add(ctx, 1, metric.WithAttributes(actor, attribute.String("moora.job.outcome", outcome)))
	}
}
