package toolkit

import (
	"bytes"
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// InstrumentationName is the name of the tracer and the meter a Kit takes
// from Config.TracerProvider and Config.MeterProvider.
const InstrumentationName = "github.com/moora-go/moora/automata/toolkit"

// The keys of the attributes a Kit records. The gen_ai.* and error.type
// ones are the OpenTelemetry semantic conventions' (the GenAI ones are of
// status Development); the moora.* ones are ours.
const (
	keyOperation   = "gen_ai.operation.name"
	keyToolName    = "gen_ai.tool.name"
	keyToolType    = "gen_ai.tool.type"
	keyToolDesc    = "gen_ai.tool.description"
	keyCallID      = "gen_ai.tool.call.id"
	keyArguments   = "gen_ai.tool.call.arguments"
	keyResult      = "gen_ai.tool.call.result"
	keyErrorType   = "error.type"
	keyKind        = "moora.tool.kind"
	keyTries       = "moora.tool.tries"
	keyKey         = "moora.tool.key"
	keyRefused     = "moora.tool.breaker.refused"
	keyTry         = "moora.tool.try"
	keyTryDuration = "moora.tool.try.duration"
	keyError       = "moora.tool.error"
)

// tryEvent is the name of the span event of each try of a call.
const tryEvent = "moora.tool.try"

// otherTool is the gen_ai.tool.name of the metrics of calls of a name that
// is no tool's: the model wrote it, and a metric's attributes must stay
// few (OpenTelemetry's name for such a value, as in http.request.method).
const otherTool = "_OTHER"

// What a span quotes is cut: an error to maxTracedErrorBytes, the
// arguments and the output (with Config.TraceContent) to
// maxTracedContentBytes, a call's ID and key to maxTracedIDBytes.
const (
	maxTracedErrorBytes   = 1 << 10
	maxTracedContentBytes = 4 << 10
	maxTracedIDBytes      = 256
)

// kinds are the kinds of Result, in the order of their index (kindIndex).
var kinds = [...]Kind{KindNone, KindInvalid, KindPermission, KindTimeout, KindUnavailable, KindFailure, KindCancelled}

func kindIndex(k Kind) int {
	switch k {
	case KindInvalid:
		return 1
	case KindPermission:
		return 2
	case KindTimeout:
		return 3
	case KindUnavailable:
		return 4
	case KindFailure:
		return 5
	case KindCancelled:
		return 6
	}
	return 0
}

// kindName is k as telemetry says it: "none" for KindNone.
func kindName(k Kind) string {
	if k == KindNone {
		return "none"
	}
	return string(k)
}

// failed says whether a call that ended with k failed, for the span's
// status and error.type: a cancelled call did not (its caller gave up on
// it, as on a cancelled job, which is no error either), nor did one that
// succeeded.
func failed(k Kind) bool { return k != KindNone && k != KindCancelled }

// telemetry is what a Kit records its calls with; nil when
// Config.TracerProvider and Config.MeterProvider are both nil.
type telemetry struct {
	tracer  trace.Tracer // nil: no traces
	content bool         // Config.TraceContent
	meter   bool         // the instruments are set

	calls    metric.Int64Counter
	duration metric.Float64Histogram
	tries    metric.Int64Histogram
	refused  metric.Int64Counter

	other *toolTelemetry // of a name that is no tool's
}

// toolTelemetry is what is said of every call of one tool, made once.
type toolTelemetry struct {
	spanName string               // execute_tool {name}
	attrs    []attribute.KeyValue // at the span's start
	calls    [len(kinds)]metric.AddOption
	duration [len(kinds)]metric.RecordOption
	of       metric.MeasurementOption // gen_ai.tool.name
}

// newTelemetry returns what a kit of cfg records its calls with: nil when
// cfg has neither provider, so that such a kit pays for nothing.
func newTelemetry(cfg Config) *telemetry {
	if cfg.TracerProvider == nil && cfg.MeterProvider == nil {
		return nil
	}
	t := &telemetry{content: cfg.TraceContent}
	if cfg.TracerProvider != nil {
		t.tracer = cfg.TracerProvider.Tracer(InstrumentationName)
	}
	if cfg.MeterProvider != nil {
		m := cfg.MeterProvider.Meter(InstrumentationName)
		var err error
		// A meter that fails to make an instrument may return none with
		// its error: the kit runs on, measuring nothing with a no-op one.
		var none noop.Meter
		if t.calls, err = m.Int64Counter("moora.tool.calls",
			metric.WithDescription("Tool calls ended, by tool and how they ended (moora.tool.kind)."),
			metric.WithUnit("{call}")); err != nil || t.calls == nil {
			t.calls, _ = none.Int64Counter("")
		}
		if t.duration, err = m.Float64Histogram("gen_ai.execute_tool.duration",
			metric.WithDescription("The duration of a single tool execution."),
			metric.WithUnit("s"),
			metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)); err != nil || t.duration == nil {
			t.duration, _ = none.Float64Histogram("")
		}
		if t.tries, err = m.Int64Histogram("moora.tool.tries",
			metric.WithDescription("How many times a call's tool was run, retries included, of the calls that ran it."),
			metric.WithUnit("{try}"),
			metric.WithExplicitBucketBoundaries(1, 2, 3, 4, 5, 10)); err != nil || t.tries == nil {
			t.tries, _ = none.Int64Histogram("")
		}
		if t.refused, err = m.Int64Counter("moora.tool.breaker.refused",
			metric.WithDescription("Tool calls refused by the tool's circuit breaker (KindUnavailable)."),
			metric.WithUnit("{call}")); err != nil || t.refused == nil {
			t.refused, _ = none.Int64Counter("")
		}
		t.meter = true
	}
	t.other = t.of(nil)
	return t
}

// of makes what is said of every call of e (nil: of a name that is no
// tool's).
func (t *telemetry) of(e *entry) *toolTelemetry {
	tt := &toolTelemetry{spanName: "execute_tool"}
	name := attribute.String(keyToolName, otherTool)
	metricAttrs := []attribute.KeyValue{name}
	tt.attrs = []attribute.KeyValue{attribute.String(keyOperation, "execute_tool")}
	if e != nil {
		typ := attribute.String(keyToolType, "function")
		if e.url != "" || e.remote {
			typ = attribute.String(keyToolType, "extension")
		}
		name = attribute.String(keyToolName, e.name)
		tt.spanName = "execute_tool " + e.name
		tt.attrs = append(tt.attrs, name, typ)
		if e.description != "" {
			tt.attrs = append(tt.attrs, attribute.String(keyToolDesc, e.description))
		}
		metricAttrs = []attribute.KeyValue{name, typ}
	}
	tt.of = metric.WithAttributeSet(attribute.NewSet(name))
	for i, k := range kinds {
		kind := attribute.String(keyKind, kindName(k))
		tt.calls[i] = metric.WithAttributeSet(attribute.NewSet(name, kind))
		d := append(append([]attribute.KeyValue{}, metricAttrs...), kind)
		if failed(k) {
			d = append(d, attribute.String(keyErrorType, string(k)))
		}
		tt.duration[i] = metric.WithAttributeSet(attribute.NewSet(d...))
	}
	return tt
}

// start starts the span of call c of e (nil: of no tool), a child of
// the span in ctx, and returns the context the call runs in and the span
// (nil without traces).
func (t *telemetry) start(ctx context.Context, e *entry, c Call) (context.Context, trace.Span) {
	if t.tracer == nil {
		return ctx, nil
	}
	tt := t.other
	if e != nil {
		tt = e.tel
	}
	attrs := make([]attribute.KeyValue, 0, len(tt.attrs)+4)
	attrs = append(attrs, tt.attrs...)
	if e == nil {
		attrs = append(attrs, attribute.String(keyToolName, clip(c.Name, maxNameBytes)))
	}
	if c.ID != "" {
		attrs = append(attrs, attribute.String(keyCallID, clip(c.ID, maxTracedIDBytes)))
	}
	if c.Key != "" {
		attrs = append(attrs, attribute.String(keyKey, clip(c.Key, maxTracedIDBytes)))
	}
	if t.content {
		args := bytes.TrimSpace(c.Arguments)
		if len(args) > maxTracedContentBytes {
			args = args[:maxTracedContentBytes+1] // clip cuts the rest
		}
		attrs = append(attrs, attribute.String(keyArguments, clip(string(args), maxTracedContentBytes)))
	}
	return t.tracer.Start(ctx, tt.spanName, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// try records try n of a call, which took d and ended with kind and err,
// as an event of its span.
func (t *telemetry) try(span trace.Span, n int, d time.Duration, kind Kind, err error) {
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.Int(keyTry, n),
		attribute.String(keyKind, kindName(kind)),
		attribute.Float64(keyTryDuration, d.Seconds()),
	}
	if err != nil {
		attrs = append(attrs, attribute.String(keyError, clip(err.Error(), maxTracedErrorBytes)))
	}
	span.AddEvent(tryEvent, trace.WithAttributes(attrs...))
}

// end ends the span of call r (nil: none), of e (nil: of no tool), and
// measures it.
func (t *telemetry) end(ctx context.Context, span trace.Span, e *entry, r Result) {
	tt := t.other
	if e != nil {
		tt = e.tel
	}
	refused := r.Kind == KindUnavailable
	if span != nil {
		if span.IsRecording() {
			span.SetAttributes(
				attribute.String(keyKind, kindName(r.Kind)),
				attribute.Int(keyTries, r.Tries),
				attribute.Bool(keyRefused, refused),
			)
			if failed(r.Kind) {
				msg := string(r.Kind)
				if r.Err != nil {
					msg = clip(r.Err.Error(), maxTracedErrorBytes)
				}
				span.SetAttributes(attribute.String(keyErrorType, string(r.Kind)))
				span.SetStatus(codes.Error, msg)
			}
			if t.content && r.Kind == KindNone {
				span.SetAttributes(attribute.String(keyResult, clip(r.Output, maxTracedContentBytes)))
			}
		}
		span.End()
	}
	if t.meter {
		i := kindIndex(r.Kind)
		t.calls.Add(ctx, 1, tt.calls[i])
		t.duration.Record(ctx, r.Duration.Seconds(), tt.duration[i])
		if r.Tries > 0 {
			t.tries.Record(ctx, int64(r.Tries), tt.of)
		}
		if refused {
			t.refused.Add(ctx, 1, tt.of)
		}
	}
}
