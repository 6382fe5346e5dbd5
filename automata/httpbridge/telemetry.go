package httpbridge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/httpconv"
	"go.opentelemetry.io/otel/trace"
)

// InstrumentationName is the name of the tracer and the meter a bridge takes
// from Config.TracerProvider and Config.MeterProvider.
const InstrumentationName = "github.com/moora-go/moora/automata/httpbridge"

// telemetry is what a bridge records its traces and metrics with; nil when
// Config has neither provider, and then every method is a nil check.
type telemetry struct {
	tracer     trace.Tracer // nil: no traces
	propagator propagation.TextMapPropagator

	meter    bool // the instruments below are set
	duration httpconv.ServerRequestDuration
	clients  metric.Int64UpDownCounter
	bytes    metric.Int64Counter
	events   metric.Int64Counter
	// The attributes of the two kinds of stream (moora.sse.stream).
	kinds [3]metric.MeasurementOption
}

// streamKind tells a bridge's state streams from its token streams, in the
// metrics of the streams.
type streamKind uint8

const (
	stateStream streamKind = iota // GET /state
	tokenStream                   // GET /streams/{name}
	chatStream                    // POST /chat, GET /chat/{chat}/stream
)

// newTelemetry returns the telemetry of a bridge configured with cfg's
// providers and propagator, or nil when it has neither provider.
func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider, prop propagation.TextMapPropagator) (*telemetry, error) {
	if tp == nil && mp == nil {
		return nil, nil
	}
	t := &telemetry{}
	if tp != nil {
		t.tracer = tp.Tracer(InstrumentationName, trace.WithSchemaURL(semconv.SchemaURL))
		t.propagator = propagatorOf(tp, prop)
	}
	if mp == nil {
		return t, nil
	}
	m := mp.Meter(InstrumentationName, metric.WithSchemaURL(semconv.SchemaURL))
	var err error
	if t.duration, err = httpconv.NewServerRequestDuration(m); err != nil {
		return nil, fmt.Errorf("httpbridge: Config.MeterProvider: %w", err)
	}
	if t.clients, err = m.Int64UpDownCounter("moora.sse.clients",
		metric.WithDescription("Server-sent event streams being served."), metric.WithUnit("{client}")); err != nil {
		return nil, fmt.Errorf("httpbridge: Config.MeterProvider: %w", err)
	}
	if t.bytes, err = m.Int64Counter("moora.sse.bytes",
		metric.WithDescription("Bytes written to server-sent event streams: events, heartbeats and retry lines, not the HTTP framing."), metric.WithUnit("By")); err != nil {
		return nil, fmt.Errorf("httpbridge: Config.MeterProvider: %w", err)
	}
	if t.events, err = m.Int64Counter("moora.sse.events",
		metric.WithDescription("Server-sent events written whole (heartbeats and retry lines are not events)."), metric.WithUnit("{event}")); err != nil {
		return nil, fmt.Errorf("httpbridge: Config.MeterProvider: %w", err)
	}
	t.kinds[stateStream] = metric.WithAttributeSet(attribute.NewSet(attribute.String("moora.sse.stream", "state")))
	t.kinds[tokenStream] = metric.WithAttributeSet(attribute.NewSet(attribute.String("moora.sse.stream", "token")))
	t.kinds[chatStream] = metric.WithAttributeSet(attribute.NewSet(attribute.String("moora.sse.stream", "chat")))
	t.meter = true
	return t, nil
}

// propagatorOf is Config.Propagator, or its default when traces are on.
func propagatorOf(tp trace.TracerProvider, p propagation.TextMapPropagator) propagation.TextMapPropagator {
	if tp == nil {
		return nil
	}
	if p == nil {
		return propagation.TraceContext{}
	}
	return p
}

// corsAllowHeaders is the Access-Control-Allow-Headers of a preflight: the
// bridge's own headers, and those the propagator reads (traceparent and
// tracestate by default), so that a page of another origin can continue its
// trace.
func corsAllowHeaders(tp trace.TracerProvider, p propagation.TextMapPropagator) string {
	h := "Authorization, Content-Type, Idempotency-Key, Last-Event-ID"
	if p = propagatorOf(tp, p); p != nil {
		if f := p.Fields(); len(f) > 0 {
			h += ", " + strings.Join(f, ", ")
		}
	}
	return h
}

// routePrefixKey is the key of a context value that a Fleet gives the
// requests it hands to an agent's bridge: the route the bridge's routes are
// under ("/agents/{id}"), for http.route.
type routePrefixKey struct{}

// serveInput serves a POST /inputs with serve, within a server span (when
// traces are on) and measured in http.server.request.duration (when metrics
// are).
func (t *telemetry) serveInput(w http.ResponseWriter, r *http.Request, serve http.HandlerFunc) {
	start := time.Now()
	route := "/inputs"
	if p, ok := r.Context().Value(routePrefixKey{}).(string); ok {
		route = p + route
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	version := protocolVersion(r)
	var span trace.Span
	if t.tracer != nil {
		ctx := t.propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		attrs := []attribute.KeyValue{
			semconv.HTTPRequestMethodPost,
			semconv.HTTPRoute(route),
			semconv.URLPath(requestPath(r)),
			semconv.URLScheme(scheme),
			semconv.NetworkProtocolVersion(version),
		}
		if ua := r.UserAgent(); ua != "" {
			attrs = append(attrs, semconv.UserAgentOriginal(ua))
		}
		ctx, span = t.tracer.Start(ctx, "POST "+route, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithTimestamp(start), trace.WithAttributes(attrs...))
		r = r.WithContext(ctx)
	}
	rec := &statusRecorder{ResponseWriter: w}
	returned := false
	defer func() {
		// A handler that panics (net/http recovers it and drops the
		// connection) has not returned: its request failed, whatever
		// status it may have written.
		status, errorType := rec.status, ""
		switch {
		case !returned:
			errorType = "_OTHER" // the conventions' fallback
		case status == 0:
			status = http.StatusOK // what net/http sends for a handler that wrote nothing
		}
		if errorType == "" && status >= 400 {
			errorType = strconv.Itoa(status)
		}
		if span != nil {
			if status != 0 {
				span.SetAttributes(semconv.HTTPResponseStatusCode(status))
			}
			if errorType != "" {
				span.SetAttributes(semconv.ErrorTypeKey.String(errorType))
			}
			// The HTTP conventions: a server span's status is Error
			// for a 5xx, and left unset for a 4xx (the client's
			// mistake, not the server's).
			if status >= 500 || !returned {
				span.SetStatus(codes.Error, "")
			}
			span.End()
		}
		if t.meter {
			attrs := make([]attribute.KeyValue, 0, 4)
			attrs = append(attrs, t.duration.AttrRoute(route), t.duration.AttrNetworkProtocolVersion(version))
			if status != 0 {
				attrs = append(attrs, t.duration.AttrResponseStatusCode(status))
			}
			if errorType != "" {
				attrs = append(attrs, t.duration.AttrErrorType(httpconv.ErrorTypeAttr(errorType)))
			}
			t.duration.Record(context.Background(), time.Since(start).Seconds(), httpconv.RequestMethodPost, scheme, attrs...)
		}
	}()
	serve(rec, r)
	returned = true
}

// inputKnown adds to the span of a POST /inputs the type of its input,
// once decoded.
func (t *telemetry) inputKnown(ctx context.Context, in any) {
	if t == nil || t.tracer == nil {
		return
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String("moora.input.type", inputType(in)))
	}
}

// answered adds to the span of a POST /inputs what its answer says: the
// journal sequence number of its input (moora.journal.seq: the one given
// to the input with its id, for a duplicate), and whether it was a
// duplicate (moora.input.duplicate).
func (t *telemetry) answered(ctx context.Context, res postResult) {
	if t == nil || t.tracer == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	if res.Seq != nil {
		span.SetAttributes(attribute.Int64("moora.journal.seq", int64(*res.Seq)))
	}
	if res.Duplicate {
		span.SetAttributes(attribute.Bool("moora.input.duplicate", true))
	}
}

// streamOpened and streamClosed count a stream of kind k in and out of
// moora.sse.clients.
func (t *telemetry) streamOpened(k streamKind) {
	if t != nil && t.meter {
		t.clients.Add(context.Background(), 1, t.kinds[k])
	}
}

func (t *telemetry) streamClosed(k streamKind) {
	if t != nil && t.meter {
		t.clients.Add(context.Background(), -1, t.kinds[k])
	}
}

// sent counts n bytes written to a stream of kind k, and events events
// written whole.
func (t *telemetry) sent(k streamKind, n, events int) {
	if t == nil || !t.meter {
		return
	}
	if n > 0 {
		t.bytes.Add(context.Background(), int64(n), t.kinds[k])
	}
	if events > 0 {
		t.events.Add(context.Background(), int64(events), t.kinds[k])
	}
}

// statusRecorder is a ResponseWriter that remembers the status written.
type statusRecorder struct {
	http.ResponseWriter
	status int // 0 until written
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap gives http.ResponseController the ResponseWriter of net/http.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// unwrapRecorder returns the ResponseWriter a statusRecorder wraps, or w:
// http.MaxBytesReader must see the one of net/http, which it tells to close
// the connection once a body is over the limit.
func unwrapRecorder(w http.ResponseWriter) http.ResponseWriter {
	if s, ok := w.(*statusRecorder); ok {
		return s.ResponseWriter
	}
	return w
}

// requestPath is the path the client asked for (url.path), before a
// prefix was stripped (http.StripPrefix, a Fleet's /agents/{id}).
func requestPath(r *http.Request) string {
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil && u.Path != "" {
		return u.Path
	}
	return r.URL.Path
}

// protocolVersion is network.protocol.version: "1.1", "2".
func protocolVersion(r *http.Request) string {
	switch {
	case r.ProtoMajor == 1 && r.ProtoMinor == 1:
		return "1.1"
	case r.ProtoMajor >= 2:
		return strconv.Itoa(r.ProtoMajor)
	}
	return strconv.Itoa(r.ProtoMajor) + "." + strconv.Itoa(r.ProtoMinor)
}

// inputType names an input as package automata's spans and metrics do
// (moora.input.type): its InputType() when it has one, else its Go type.
func inputType(in any) string {
	if t, ok := in.(interface{ InputType() string }); ok {
		return t.InputType()
	}
	if in == nil {
		return "nil"
	}
	return reflect.TypeOf(in).String()
}
