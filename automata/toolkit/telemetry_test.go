package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/toolkit"
)

// The telemetry tests run the real OpenTelemetry SDK, with its in-memory
// span recorder and a manual metric reader.

// observed is an SDK's providers and what they recorded.
type observed struct {
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newObserved() *observed {
	o := &observed{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	o.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(o.spans))
	o.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(o.reader))
	return o
}

// config is cfg with both providers set.
func (o *observed) config(cfg toolkit.Config) toolkit.Config {
	cfg.TracerProvider, cfg.MeterProvider = o.tp, o.mp
	return cfg
}

// parent starts a span for the calls to be children of, as a job's.
func (o *observed) parent() (context.Context, trace.Span) {
	return o.tp.Tracer("test").Start(context.Background(), "moora.job")
}

// toolSpans returns the tool calls' spans ended so far.
func (o *observed) toolSpans() []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range o.spans.Ended() {
		if strings.HasPrefix(s.Name(), "execute_tool") {
			out = append(out, s)
		}
	}
	return out
}

// toolSpan returns the one tool call's span ended so far.
func (o *observed) toolSpan(t *testing.T) sdktrace.ReadOnlySpan {
	t.Helper()
	got := o.toolSpans()
	if len(got) != 1 {
		t.Fatalf("%d tool spans, want 1 (the spans: %v)", len(got), names(o.spans.Ended()))
	}
	return got[0]
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// attrOf returns the value of the attribute key of s, and whether s has it.
func attrOf(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// checkAttrs checks that s has the attributes want (values as Emit says
// them) and none of the keys absent.
func checkAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]string, absent ...string) {
	t.Helper()
	for k, w := range want {
		got, ok := attrOf(s, k)
		if !ok || got.Emit() != w {
			t.Errorf("span %q: attribute %s is %q (set: %v), want %q", s.Name(), k, got.Emit(), ok, w)
		}
	}
	for _, k := range absent {
		if got, ok := attrOf(s, k); ok {
			t.Errorf("span %q: attribute %s is %q, want none", s.Name(), k, got.Emit())
		}
	}
}

// metrics collects the kit's metrics, by name.
func (o *observed) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := o.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != toolkit.InstrumentationName {
			continue
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// count is the value of counter data at exactly the attributes attrs (0
// when there is no such point).
func count(t *testing.T, data metricdata.Aggregation, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	if data == nil {
		return 0
	}
	sum, ok := data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%T is not an int64 counter", data)
	}
	want := attribute.NewSet(attrs...)
	for _, dp := range sum.DataPoints {
		if dp.Attributes.Equals(&want) {
			return dp.Value
		}
	}
	return 0
}

// histogram is the count and sum of histogram data at exactly the
// attributes attrs.
func histogram[N int64 | float64](t *testing.T, data metricdata.Aggregation, attrs ...attribute.KeyValue) (uint64, N) {
	t.Helper()
	if data == nil {
		return 0, 0
	}
	h, ok := data.(metricdata.Histogram[N])
	if !ok {
		t.Fatalf("%T is not a histogram of %T", data, N(0))
	}
	want := attribute.NewSet(attrs...)
	for _, dp := range h.DataPoints {
		if dp.Attributes.Equals(&want) {
			return dp.Count, dp.Sum
		}
	}
	return 0, 0
}

// tries returns the try events of s: each one's number, kind and error.
func tries(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		if e.Name != "moora.tool.try" {
			continue
		}
		var n int64
		var kind, msg string
		for _, a := range e.Attributes {
			switch a.Key {
			case "moora.tool.try":
				n = a.Value.AsInt64()
			case "moora.tool.kind":
				kind = a.Value.AsString()
			case "moora.tool.error":
				msg = a.Value.AsString()
			}
		}
		out = append(out, fmt.Sprintf("%d %s %s", n, kind, msg))
	}
	return out
}

var (
	toolName = func(name string) attribute.KeyValue { return attribute.String("gen_ai.tool.name", name) }
	kindOf   = func(kind string) attribute.KeyValue { return attribute.String("moora.tool.kind", kind) }
	function = attribute.String("gen_ai.tool.type", "function")
)

// turn is a tiny agent: a question calls for a job that calls the weather
// tool and answers.
type turn struct{ asked, answered int }

type turnInput struct{ answer bool }

// TestTelemetryToolSpanIsAChildOfTheJobSpan: in an agent traced by
// automata.WithTelemetry, a tool call a job makes with its context is a
// child of the job's span, and what the tool does with its own context is
// a child of the call's; the call's span says what the conventions ask
// and what moora adds, and records no content by default.
func TestTelemetryToolSpanIsAChildOfTheJobSpan(t *testing.T) {
	o := newObserved()
	weather := toolkit.Func("weather", "Tells the weather in a city.",
		func(ctx context.Context, a WeatherArgs) (string, error) {
			// An instrumented client traces with the provider of the
			// span in its context.
			_, s := trace.SpanFromContext(ctx).TracerProvider().Tracer("client").Start(ctx, "GET weather")
			s.End()
			return a.City + ": 18°C", nil
		})
	kit := newKit(t, o.config(toolkit.Config{}), weather)
	var result atomic.Value
	def := automata.Definition[turn, turnInput]{
		Initial: func() turn { return turn{} },
		Transition: func(s turn, in turnInput) turn {
			if in.answer {
				s.answered++
			} else {
				s.asked++
			}
			return s
		},
	}
	m := automata.NewMoore(def, func(s turn) turn { return s },
		automata.WithTelemetry[turn, turnInput](o.tp, nil),
		automata.WithJobs(func(s turn) map[string]automata.Job[turnInput] {
			if s.asked == s.answered {
				return nil
			}
			return map[string]automata.Job[turnInput]{"weather-1": func(ctx context.Context, dispatch automata.Dispatch[turnInput]) error {
				r := kit.Run(ctx, toolkit.Call{ID: "call-1", Name: "weather", Arguments: json.RawMessage(`{"city": "Paris"}`), Key: automata.JobKey(ctx) + "/call-1"})
				result.Store(r)
				dispatch(turnInput{answer: true})
				return nil
			}}
		}))
	t.Cleanup(func() { m.Close(context.Background()) })
	if err := m.Dispatch(turnInput{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(hang)
	for m.Current().answered == 0 || m.Jobs() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("hung: state %+v, %d jobs", m.Current(), m.Jobs())
		}
		time.Sleep(time.Millisecond)
	}
	if r := result.Load().(toolkit.Result); r.Kind != toolkit.KindNone {
		t.Fatalf("the call: %q %v", r.Kind, r.Err)
	}

	var job, client sdktrace.ReadOnlySpan
	for _, s := range o.spans.Ended() {
		switch s.Name() {
		case "moora.job":
			job = s
		case "GET weather":
			client = s
		}
	}
	call := o.toolSpan(t)
	if job == nil || client == nil {
		t.Fatalf("no job's or tool's own span; the spans: %v", names(o.spans.Ended()))
	}
	if call.Parent().SpanID() != job.SpanContext().SpanID() || call.SpanContext().TraceID() != job.SpanContext().TraceID() {
		t.Errorf("the call's parent is %v, want the job's span %v", call.Parent().SpanID(), job.SpanContext().SpanID())
	}
	if client.Parent().SpanID() != call.SpanContext().SpanID() {
		t.Errorf("the tool's own span's parent is %v, want the call's span %v", client.Parent().SpanID(), call.SpanContext().SpanID())
	}
	if call.Name() != "execute_tool weather" || call.SpanKind() != trace.SpanKindInternal {
		t.Errorf("the call's span is %q of kind %v, want \"execute_tool weather\" internal", call.Name(), call.SpanKind())
	}
	checkAttrs(t, call, map[string]string{
		"gen_ai.operation.name":      "execute_tool",
		"gen_ai.tool.name":           "weather",
		"gen_ai.tool.type":           "function",
		"gen_ai.tool.description":    "Tells the weather in a city.",
		"gen_ai.tool.call.id":        "call-1",
		"moora.tool.key":             "weather-1/call-1",
		"moora.tool.kind":            "none",
		"moora.tool.tries":           "1",
		"moora.tool.breaker.refused": "false",
	}, "error.type", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")
	if call.Status().Code != codes.Unset {
		t.Errorf("the call's status is %v, want unset", call.Status())
	}
	if got := tries(call); len(got) != 1 || got[0] != "1 none " {
		t.Errorf("the call's tries: %q, want one that succeeded", got)
	}

	ms := o.metrics(t)
	if got := count(t, ms["moora.tool.calls"], toolName("weather"), kindOf("none")); got != 1 {
		t.Errorf("moora.tool.calls{weather, none} = %d, want 1", got)
	}
	if n, _ := histogram[float64](t, ms["gen_ai.execute_tool.duration"], toolName("weather"), function, kindOf("none")); n != 1 {
		t.Errorf("gen_ai.execute_tool.duration{weather, function, none} has %d calls, want 1 (%+v)", n, ms["gen_ai.execute_tool.duration"])
	}
}

// TestTelemetryRetriesAreEventsOfTheCall: a call that fails twice and then
// succeeds is one span with three try events, each with how it ended and
// its error; the call succeeded, so its status is no error (the errors
// were handled by retrying).
func TestTelemetryRetriesAreEventsOfTheCall(t *testing.T) {
	o := newObserved()
	var n atomic.Int32
	flaky := toolkit.Func("flaky", "Fails twice.", func(ctx context.Context, _ struct{}) (string, error) {
		if n.Add(1) <= 2 {
			return "", fmt.Errorf("flaky: try %d failed", toolkit.Attempt(ctx))
		}
		return "ok", nil
	})
	kit := newKit(t, o.config(toolkit.Config{}), flaky.With(toolkit.Policy{Retries: 2, Backoff: time.Millisecond}))
	ctx, parent := o.parent()
	r := kit.Run(ctx, toolkit.Call{ID: "c", Name: "flaky"})
	parent.End()
	if r.Kind != toolkit.KindNone || r.Tries != 3 {
		t.Fatalf("the call: %q after %d tries (%v), want success after 3", r.Kind, r.Tries, r.Err)
	}
	call := o.toolSpan(t)
	checkAttrs(t, call, map[string]string{"moora.tool.kind": "none", "moora.tool.tries": "3"}, "error.type")
	want := []string{"1 failure flaky: try 1 failed", "2 failure flaky: try 2 failed", "3 none "}
	if got := tries(call); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the tries: %q, want %q", got, want)
	}
	if call.Status().Code != codes.Unset {
		t.Errorf("the call's status is %v, want unset", call.Status())
	}
	if n, sum := histogram[int64](t, o.metrics(t)["moora.tool.tries"], toolName("flaky")); n != 1 || sum != 3 {
		t.Errorf("moora.tool.tries{flaky}: %d calls, %d tries; want 1 call, 3 tries", n, sum)
	}
}

// TestTelemetryCallsThatFail: a call that failed has an error status,
// error.type and its kind, on its span and its metrics; a cancelled call
// says it was cancelled, without an error status; a name that is no
// tool's is its own span's, but not a metric's.
func TestTelemetryCallsThatFail(t *testing.T) {
	block := toolkit.Func("block", "Waits for its context to end.", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	weather := toolkit.Func("weather", "Tells the weather in a city.", func(context.Context, WeatherArgs) (string, error) {
		return "", errors.New("the weather service is down")
	})
	private := toolkit.Func("private", "Refuses.", func(context.Context, struct{}) (string, error) {
		return "secret", nil
	}).With(toolkit.Policy{Allow: func(context.Context, toolkit.Call) error { return errors.New("not for this user") }})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name     string
		ctx      context.Context
		call     toolkit.Call
		kind     string
		tries    string
		span     string // the span's name
		metric   string // the metrics' gen_ai.tool.name
		failed   bool   // error status and error.type
		describe string // in the status's description
	}{
		{"timeout", nil, toolkit.Call{Name: "block", Timeout: 20 * time.Millisecond}, "timeout", "1", "execute_tool block", "block", true, "block timed out after 20ms"},
		{"failure", nil, toolkit.Call{Name: "weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}, "failure", "1", "execute_tool weather", "weather", true, "the weather service is down"},
		{"invalid arguments", nil, toolkit.Call{Name: "weather", Arguments: json.RawMessage(`{"city": 3}`)}, "invalid", "0", "execute_tool weather", "weather", true, "do not match its schema"},
		{"no such tool", nil, toolkit.Call{Name: "nope"}, "invalid", "0", "execute_tool", "_OTHER", true, `there is no tool "nope"`},
		{"permission", nil, toolkit.Call{Name: "private"}, "permission", "0", "execute_tool private", "private", true, "not for this user"},
		{"cancelled: not an error", cancelled, toolkit.Call{Name: "weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}, "cancelled", "0", "execute_tool weather", "weather", false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := newObserved()
			kit := newKit(t, o.config(toolkit.Config{}), block, weather, private)
			ctx := c.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			r := kit.Run(ctx, c.call)
			if string(r.Kind) != c.kind {
				t.Fatalf("the call ended %q (%v), want %q", r.Kind, r.Err, c.kind)
			}
			call := o.toolSpan(t)
			if call.Name() != c.span {
				t.Errorf("the span is named %q, want %q", call.Name(), c.span)
			}
			want := map[string]string{"moora.tool.kind": c.kind, "moora.tool.tries": c.tries, "gen_ai.tool.name": c.call.Name}
			if c.failed {
				want["error.type"] = c.kind
				checkAttrs(t, call, want)
				if st := call.Status(); st.Code != codes.Error || !strings.Contains(st.Description, c.describe) {
					t.Errorf("the status is %v, want an error with %q", st, c.describe)
				}
			} else {
				checkAttrs(t, call, want, "error.type")
				if st := call.Status(); st.Code != codes.Unset {
					t.Errorf("the status is %v, want unset", st)
				}
			}

			ms := o.metrics(t)
			if got := count(t, ms["moora.tool.calls"], toolName(c.metric), kindOf(c.kind)); got != 1 {
				t.Errorf("moora.tool.calls{%s, %s} = %d, want 1", c.metric, c.kind, got)
			}
			attrs := []attribute.KeyValue{toolName(c.metric), kindOf(c.kind)}
			if c.metric != "_OTHER" {
				attrs = append(attrs, function)
			}
			if c.failed {
				attrs = append(attrs, attribute.String("error.type", c.kind))
			}
			if n, _ := histogram[float64](t, ms["gen_ai.execute_tool.duration"], attrs...); n != 1 {
				t.Errorf("gen_ai.execute_tool.duration%v has %d calls, want 1 (%+v)", attrs, n, ms["gen_ai.execute_tool.duration"])
			}
		})
	}
}

// TestTelemetryBreakerRefusals: a call refused by an open breaker says so
// on its span, and is counted, apart from the calls that ran.
func TestTelemetryBreakerRefusals(t *testing.T) {
	o := newObserved()
	down := toolkit.Func("down", "Always fails.", func(context.Context, struct{}) (string, error) {
		return "", errors.New("down")
	})
	kit := newKit(t, o.config(toolkit.Config{}), down.With(toolkit.Policy{BreakerFailures: 1, BreakerCooldown: time.Hour}))
	if r := kit.Run(context.Background(), toolkit.Call{Name: "down"}); r.Kind != toolkit.KindFailure {
		t.Fatalf("the first call: %q, want failure", r.Kind)
	}
	if r := kit.Run(context.Background(), toolkit.Call{Name: "down"}); r.Kind != toolkit.KindUnavailable {
		t.Fatalf("the second call: %q, want unavailable (the breaker is %s)", r.Kind, kit.Breaker("down"))
	}
	spans := o.toolSpans()
	if len(spans) != 2 {
		t.Fatalf("%d tool spans, want 2", len(spans))
	}
	checkAttrs(t, spans[0], map[string]string{"moora.tool.kind": "failure", "moora.tool.breaker.refused": "false", "moora.tool.tries": "1"})
	checkAttrs(t, spans[1], map[string]string{"moora.tool.kind": "unavailable", "moora.tool.breaker.refused": "true", "moora.tool.tries": "0", "error.type": "unavailable"})
	if st := spans[1].Status(); st.Code != codes.Error || !strings.Contains(st.Description, "circuit breaker") {
		t.Errorf("the refused call's status is %v, want an error that names the breaker", st)
	}
	if got := tries(spans[1]); len(got) != 0 {
		t.Errorf("the refused call has tries %q", got)
	}

	ms := o.metrics(t)
	if got := count(t, ms["moora.tool.breaker.refused"], toolName("down")); got != 1 {
		t.Errorf("moora.tool.breaker.refused{down} = %d, want 1", got)
	}
	for kind, want := range map[string]int64{"failure": 1, "unavailable": 1, "none": 0} {
		if got := count(t, ms["moora.tool.calls"], toolName("down"), kindOf(kind)); got != want {
			t.Errorf("moora.tool.calls{down, %s} = %d, want %d", kind, got, want)
		}
	}
	if n, sum := histogram[int64](t, ms["moora.tool.tries"], toolName("down")); n != 1 || sum != 1 {
		t.Errorf("moora.tool.tries{down}: %d calls, %d tries; want the one call that ran, once", n, sum)
	}
}

// TestTelemetryContentOnlyWhenAskedFor: the arguments and the output are
// recorded with Config.TraceContent only: the output as the model is told
// it (filtered), and each cut to 4 KiB.
func TestTelemetryContentOnlyWhenAskedFor(t *testing.T) {
	echo := toolkit.Func("echo", "Says it again.", func(_ context.Context, a struct {
		Text string `json:"text"`
	}) (string, error) {
		if a.Text == "fail" {
			return "", errors.New("asked to fail")
		}
		return a.Text, nil
	})
	redact := func(_ toolkit.Call, out string) string { return strings.ReplaceAll(out, "hunter2", "[redacted]") }
	long := strings.Repeat("é", 8<<10)
	for _, c := range []struct {
		name         string
		content      bool
		text         string
		args, result string // "": none
		cut          bool   // both are cut, ending with "…"
	}{
		{"off", false, "the password is hunter2", "", "", false},
		{"on", true, "the password is hunter2", `{"text": "the password is hunter2"}`, "the password is [redacted]", false},
		{"on, a failed call: no result", true, "fail", `{"text": "fail"}`, "", false},
		{"on, long: cut", true, long, "", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := newObserved()
			kit := newKit(t, o.config(toolkit.Config{TraceContent: c.content, Filter: redact}), echo)
			args, _ := json.Marshal(map[string]string{"text": c.text})
			if c.args != "" {
				args = []byte(c.args)
			}
			kit.Run(context.Background(), toolkit.Call{Name: "echo", Arguments: args})
			call := o.toolSpan(t)
			gotArgs, hasArgs := attrOf(call, "gen_ai.tool.call.arguments")
			gotResult, hasResult := attrOf(call, "gen_ai.tool.call.result")
			switch {
			case !c.content:
				if hasArgs || hasResult {
					t.Errorf("content recorded without TraceContent: arguments %q, result %q", gotArgs.Emit(), gotResult.Emit())
				}
			case c.cut:
				for what, v := range map[string]attribute.Value{"arguments": gotArgs, "result": gotResult} {
					if s := v.AsString(); len(s) > 4<<10 || len(s) < 4<<10-8 || !strings.HasSuffix(s, "…") || !utf8.ValidString(s) {
						t.Errorf("the %s are %d bytes, ending %q: want them cut to 4 KiB at a character, ending with …", what, len(s), s[max(len(s)-8, 0):])
					}
				}
			default:
				if gotArgs.AsString() != c.args {
					t.Errorf("the arguments are %q, want %q", gotArgs.AsString(), c.args)
				}
				if gotResult.AsString() != c.result || hasResult != (c.result != "") {
					t.Errorf("the result is %q (set: %v), want %q", gotResult.AsString(), hasResult, c.result)
				}
			}
		})
	}
}

// TestTelemetryRunAllCallsAreChildrenOfTheParent: the calls RunAll runs in
// parallel are each a span, a child of the span in its context.
func TestTelemetryRunAllCallsAreChildrenOfTheParent(t *testing.T) {
	o := newObserved()
	const calls = 4
	var started sync.WaitGroup
	started.Add(calls)
	meet := toolkit.Func("meet", "Waits until all the calls run.", func(ctx context.Context, _ struct{}) (string, error) {
		started.Done()
		started.Wait() // they run at once, or this hangs (the test's deadline fails it)
		return "met", nil
	})
	kit := newKit(t, o.config(toolkit.Config{}), meet)
	ctx, parent := o.parent()
	var cs []toolkit.Call
	for i := range calls {
		cs = append(cs, toolkit.Call{ID: fmt.Sprint("call-", i), Name: "meet"})
	}
	for _, r := range kit.RunAll(ctx, cs) {
		if r.Kind != toolkit.KindNone {
			t.Fatalf("%s: %q %v", r.CallID, r.Kind, r.Err)
		}
	}
	parent.End()
	spans := o.toolSpans()
	ids := map[string]bool{}
	for _, s := range spans {
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s's parent is %v, want %v", s.Name(), s.Parent().SpanID(), parent.SpanContext().SpanID())
		}
		id, _ := attrOf(s, "gen_ai.tool.call.id")
		ids[id.AsString()] = true
	}
	if len(spans) != calls || len(ids) != calls {
		t.Errorf("%d spans of %d calls, want one for each of %d", len(spans), len(ids), calls)
	}
}

// TestTelemetryOff: without a TracerProvider a kit makes no span and adds
// nothing to the caller's, whose span the tool sees; with a MeterProvider
// only, it measures.
func TestTelemetryOff(t *testing.T) {
	o := newObserved()
	var seen trace.SpanContext
	tool := toolkit.Func("tool", "Looks at its context.", func(ctx context.Context, _ struct{}) (string, error) {
		seen = trace.SpanContextFromContext(ctx)
		return "ok", nil
	})
	for _, c := range []struct {
		name    string
		cfg     toolkit.Config
		metrics bool
	}{
		{"no providers", toolkit.Config{}, false},
		{"a meter only", toolkit.Config{MeterProvider: o.mp}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			o.spans.Reset()
			kit := newKit(t, c.cfg, tool)
			ctx, parent := o.parent()
			kit.Run(ctx, toolkit.Call{Name: "tool"})
			parent.End()
			if spans := o.spans.Ended(); len(spans) != 1 || len(spans[0].Events()) != 0 || len(spans[0].Attributes()) != 0 {
				t.Errorf("the spans: %v; want the parent's only, as it was", names(spans))
			}
			if !seen.Equal(parent.SpanContext()) {
				t.Errorf("the tool saw the span %v, want the caller's %v", seen.SpanID(), parent.SpanContext().SpanID())
			}
			got := count(t, o.metrics(t)["moora.tool.calls"], toolName("tool"), kindOf("none"))
			if c.metrics && got == 0 || !c.metrics && got != 0 {
				t.Errorf("moora.tool.calls{tool, none} = %d with metrics %v", got, c.metrics)
			}
		})
	}
}
