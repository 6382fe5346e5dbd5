package llm_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/hostiletest"
)

// The telemetry tests run the real OpenTelemetry SDK, with its in-memory
// span recorder and a manual metric reader.

// otelRecorder is a tracer and a meter provider, and what they record.
type otelRecorder struct {
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newOtelRecorder() *otelRecorder {
	r := &otelRecorder{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	r.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	return r
}

// chatSpans returns the spans ended whose name starts with "chat".
func (r *otelRecorder) chatSpans() []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if strings.HasPrefix(s.Name(), "chat") {
			out = append(out, s)
		}
	}
	return out
}

// oneChatSpan returns the one chat span ended.
func (r *otelRecorder) oneChatSpan(t *testing.T) sdktrace.ReadOnlySpan {
	t.Helper()
	spans := r.chatSpans()
	if len(spans) != 1 {
		t.Fatalf("%d chat spans, want 1", len(spans))
	}
	return spans[0]
}

// histogram returns the data points of the histogram named name.
func (r *otelRecorder) histogram(t *testing.T, name string) []histogramPoint {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var out []histogramPoint
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch data := m.Data.(type) {
			case metricdata.Histogram[int64]:
				for _, p := range data.DataPoints {
					out = append(out, histogramPoint{attrs: p.Attributes, count: p.Count, sum: float64(p.Sum), unit: m.Unit})
				}
			case metricdata.Histogram[float64]:
				for _, p := range data.DataPoints {
					out = append(out, histogramPoint{attrs: p.Attributes, count: p.Count, sum: p.Sum, unit: m.Unit})
				}
			default:
				t.Fatalf("%s is a %T, not a histogram", name, m.Data)
			}
		}
	}
	return out
}

type histogramPoint struct {
	attrs attribute.Set
	count uint64
	sum   float64
	unit  string
}

func (p histogramPoint) String() string {
	return fmt.Sprintf("{%d, sum %v %s, %s}", p.count, p.sum, p.unit, p.attrs.Encoded(attribute.DefaultEncoder()))
}

func (p histogramPoint) attr(key string) string {
	v, _ := p.attrs.Value(attribute.Key(key))
	return v.String()
}

func spanAttr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// weather is a scripted model that answers with text, or calls tools when
// the request offers them, with the usage it says.
var weather = llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
	if len(req.Tools) > 0 {
		return llm.Response{ToolCalls: []llm.ToolCall{
			{ID: "c1", Name: "forecast", Arguments: json.RawMessage(`{"city":"Paris","days":3}`)},
			{ID: "c2", Name: "word-count", Arguments: json.RawMessage(`{"text":"rain"}`)},
		}, Usage: llm.Usage{InputTokens: 40, OutputTokens: 9}}, nil
	}
	return llm.Response{Text: "Rain in Paris today.", Usage: llm.Usage{InputTokens: 12, OutputTokens: 5}}, nil
}}

var (
	forecast    = llm.Tool{Name: "forecast", Description: "The weather to come."}
	countWords  = llm.Tool{Name: "word-count", Description: "Counts words."}
	askWeather  = llm.Request{System: "You talk about the weather.", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Weather in Paris?"}}}
	callWeather = llm.Request{System: "You talk about the weather.", Messages: askWeather.Messages, Tools: []llm.Tool{forecast, countWords}}
)

// TestTracedSpan: a call in a parent span is a chat span under it, of kind
// Client, with the conventions' attributes; the reply and its chunks are
// those of the model itself.
func TestTracedSpan(t *testing.T) {
	tests := []struct {
		name       string
		req        llm.Request
		attrs      map[string]string // Value.String() of each attribute expected
		firstChunk bool              // gen_ai.response.time_to_first_chunk is set
	}{
		{name: "text", req: askWeather, firstChunk: true, attrs: map[string]string{
			"gen_ai.operation.name":          "chat",
			"gen_ai.provider.name":           "moora.scripted",
			"gen_ai.request.model":           "scripted",
			"gen_ai.request.stream":          "true",
			"gen_ai.response.finish_reasons": `["stop"]`,
			"gen_ai.usage.input_tokens":      "12",
			"gen_ai.usage.output_tokens":     "5",
			"moora.llm.tool_call.count":      "0",
		}},
		{name: "tool calls", req: callWeather, attrs: map[string]string{
			"gen_ai.operation.name":          "chat",
			"gen_ai.provider.name":           "moora.scripted",
			"gen_ai.request.model":           "scripted",
			"gen_ai.request.stream":          "true",
			"gen_ai.response.finish_reasons": `["tool_calls"]`,
			"gen_ai.usage.input_tokens":      "40",
			"gen_ai.usage.output_tokens":     "9",
			"moora.llm.tool_call.count":      "2",
			"moora.llm.tool_call.names":      `["forecast","word-count"]`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newOtelRecorder()
			ctx, parent := r.tp.Tracer("test").Start(context.Background(), "job")
			var chunks, wantChunks []string
			resp, err := llm.Traced(weather, r.tp, r.mp).Complete(ctx, tt.req, func(s string) { chunks = append(chunks, s) })
			parent.End()
			if err != nil {
				t.Fatal(err)
			}
			want, _ := weather.Complete(context.Background(), tt.req, func(s string) { wantChunks = append(wantChunks, s) })
			if !slices.Equal(chunks, wantChunks) || resp.Text != want.Text || len(resp.ToolCalls) != len(want.ToolCalls) {
				t.Errorf("chunks %q and reply %+v, want the model's own: %q and %+v", chunks, resp, wantChunks, want)
			}

			span := r.oneChatSpan(t)
			if span.Name() != "chat scripted" || span.SpanKind() != trace.SpanKindClient {
				t.Errorf("span %q of kind %v, want %q of kind client", span.Name(), span.SpanKind(), "chat scripted")
			}
			if span.Parent().SpanID() != parent.SpanContext().SpanID() || span.SpanContext().TraceID() != parent.SpanContext().TraceID() {
				t.Errorf("the chat span's parent is %v, want the job's span %v", span.Parent().SpanID(), parent.SpanContext().SpanID())
			}
			for key, want := range tt.attrs {
				if got, ok := spanAttr(span, key); !ok || got.String() != want {
					t.Errorf("%s = %q (set: %v), want %q", key, got.String(), ok, want)
				}
			}
			_, ok := spanAttr(span, "gen_ai.response.time_to_first_chunk")
			if ok != tt.firstChunk {
				t.Errorf("gen_ai.response.time_to_first_chunk set: %v, want %v", ok, tt.firstChunk)
			}
			for _, key := range []string{"gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages", "error.type"} {
				if v, ok := spanAttr(span, key); ok {
					t.Errorf("%s = %s, recorded without WithContent", key, v.String())
				}
			}
			if span.Status().Code == codes.Error {
				t.Errorf("status %v", span.Status())
			}
		})
	}
}

// TestTracedNames: the options name the provider and the model over what
// the model says; a model that says nothing has provider "unknown", no
// gen_ai.request.model and a span named "chat".
func TestTracedNames(t *testing.T) {
	tests := []struct {
		name               string
		model              llm.Model
		opts               []llm.TraceOption
		span, provider, md string // md: gen_ai.request.model, "" for none
	}{
		{name: "named model", model: weather, span: "chat scripted", provider: "moora.scripted", md: "scripted"},
		{name: "options", model: weather, opts: []llm.TraceOption{llm.WithProviderName("openai"), llm.WithModelName("gpt-4o-mini")},
			span: "chat gpt-4o-mini", provider: "openai", md: "gpt-4o-mini"},
		{name: "unnamed model", model: unnamed{weather}, span: "chat", provider: "unknown"},
		{name: "unnamed model, provider option", model: unnamed{weather}, opts: []llm.TraceOption{llm.WithProviderName("openai")},
			span: "chat", provider: "openai"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newOtelRecorder()
			m := llm.Traced(tt.model, r.tp, r.mp, tt.opts...)
			if _, err := m.Complete(context.Background(), askWeather, nil); err != nil {
				t.Fatal(err)
			}
			span := r.oneChatSpan(t)
			provider, _ := spanAttr(span, "gen_ai.provider.name")
			md, hasModel := spanAttr(span, "gen_ai.request.model")
			if span.Name() != tt.span || provider.AsString() != tt.provider || md.AsString() != tt.md || hasModel != (tt.md != "") {
				t.Errorf("span %q, provider %q, model %q (set: %v); want %q, %q, %q", span.Name(), provider.AsString(), md.AsString(), hasModel, tt.span, tt.provider, tt.md)
			}
			n, ok := m.(llm.Named)
			if !ok || n.ProviderName() != tt.provider || n.ModelName() != tt.md {
				t.Errorf("the traced model is not Named %q, %q", tt.provider, tt.md)
			}
			for _, p := range r.histogram(t, "gen_ai.client.operation.duration") {
				if p.attr("gen_ai.provider.name") != tt.provider || p.attr("gen_ai.request.model") != tt.md {
					t.Errorf("duration's attributes %v", p.attrs.ToSlice())
				}
			}
		})
	}
}

// unnamed is a Model that does not say its names.
type unnamed struct{ m llm.Model }

func (u unnamed) Complete(ctx context.Context, req llm.Request, onChunk func(string)) (llm.Response, error) {
	return u.m.Complete(ctx, req, onChunk)
}

// TestTracedContent: WithContent records the system prompt, the
// conversation and the reply in the conventions' structure, each text cut
// at 4 KiB; the conversation's oldest messages are left out past 64 KiB.
func TestTracedContent(t *testing.T) {
	long := strings.Repeat("é", 3000) // 6000 bytes
	r := newOtelRecorder()
	m := llm.Traced(llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		if len(req.Tools) > 0 {
			return weather.Reply(req)
		}
		return llm.Response{Text: long}, nil
	}}, r.tp, nil, llm.WithContent())

	// A text reply to a long question.
	if _, err := m.Complete(context.Background(), llm.Request{System: "Be brief.", Messages: []llm.Message{{Role: llm.RoleUser, Content: long}}}, nil); err != nil {
		t.Fatal(err)
	}
	cut := strings.Repeat("é", 2048) + "…[truncated: 6000 bytes]"
	span := r.oneChatSpan(t)
	want := map[string]string{
		"gen_ai.system_instructions": `[{"content":"Be brief.","type":"text"}]`,
		"gen_ai.input.messages":      `[{"parts":[{"content":"` + cut + `","type":"text"}],"role":"user"}]`,
		"gen_ai.output.messages":     `[{"finish_reason":"stop","parts":[{"content":"` + cut + `","type":"text"}],"role":"assistant"}]`,
	}
	for key, want := range want {
		if got, _ := spanAttr(span, key); got.String() != want {
			t.Errorf("%s =\n%s\nwant\n%s", key, got.String(), want)
		}
	}

	// A whole tool round, and tool calls in reply.
	r.spans.Reset()
	req := callWeather
	req.System = ""
	req.Messages = []llm.Message{
		{Role: llm.RoleUser, Content: "Weather?"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c0", Name: "forecast", Arguments: json.RawMessage(`{"city":`)}}},
		{Role: llm.RoleTool, ToolCallID: "c0", Content: "error: arguments are not JSON"},
		{Role: llm.RoleUser, Content: "Paris."},
	}
	if _, err := m.Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	span = r.oneChatSpan(t)
	want = map[string]string{
		"gen_ai.input.messages": `[{"parts":[{"content":"Weather?","type":"text"}],"role":"user"},` +
			`{"parts":[{"arguments":"{\"city\":","id":"c0","name":"forecast","type":"tool_call"}],"role":"assistant"},` +
			`{"parts":[{"id":"c0","response":"error: arguments are not JSON","type":"tool_call_response"}],"role":"tool"},` +
			`{"parts":[{"content":"Paris.","type":"text"}],"role":"user"}]`,
		"gen_ai.output.messages": `[{"finish_reason":"tool_calls","parts":[` +
			`{"arguments":{"city":"Paris","days":3},"id":"c1","name":"forecast","type":"tool_call"},` +
			`{"arguments":{"text":"rain"},"id":"c2","name":"word-count","type":"tool_call"}],"role":"assistant"}]`,
	}
	for key, want := range want {
		if got, _ := spanAttr(span, key); got.String() != want {
			t.Errorf("%s =\n%s\nwant\n%s", key, got.String(), want)
		}
	}
	if v, ok := spanAttr(span, "gen_ai.system_instructions"); ok {
		t.Errorf("gen_ai.system_instructions = %s for a request without a system prompt", v.String())
	}

	// A conversation longer than 64 KiB: its latest messages.
	r.spans.Reset()
	var msgs []llm.Message
	for i := range 40 {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("%02d%s", i, strings.Repeat("x", 4000))},
			llm.Message{Role: llm.RoleAssistant, Content: "ok"})
	}
	msgs = msgs[:len(msgs)-1]
	if _, err := m.Complete(context.Background(), llm.Request{Messages: msgs}, nil); err != nil {
		t.Fatal(err)
	}
	span = r.oneChatSpan(t)
	in, _ := spanAttr(span, "gen_ai.input.messages")
	omitted, _ := spanAttr(span, "moora.llm.input.messages.omitted")
	kept := in.AsSlice()
	// From the end: 16 questions of 4002 bytes and the 16 answers of 2
	// before them fit in 64 KiB, and the question before those does not.
	if len(kept) != 32 || omitted.AsInt64() != int64(len(msgs)-32) {
		t.Fatalf("%d messages kept and %d omitted, want 32 and %d", len(kept), omitted.AsInt64(), len(msgs)-32)
	}
	if first, second, last := kept[0].String(), kept[1].String(), kept[31].String(); !strings.Contains(first, `"content":"ok"`) ||
		!strings.Contains(second, `"content":"24xxx`) || !strings.Contains(last, `"content":"39xxx`) {
		t.Errorf("kept %.40s…, %.40s… to %.40s…, want an answer, then from question 24 to 39", first, second, last)
	}
	if size := len(in.String()); size > 70<<10 {
		t.Errorf("gen_ai.input.messages holds %d bytes", size)
	}
}

// failing fails every call with err.
type failing struct{ err error }

func (f failing) Complete(context.Context, llm.Request, func(string)) (llm.Response, error) {
	return llm.Response{}, f.err
}

// TestTracedCachedTokens: the input tokens read from and written to the
// provider's prompt cache are on the span, as the conventions name them,
// and only when there are some.
func TestTracedCachedTokens(t *testing.T) {
	usage := llm.Usage{InputTokens: 1200, OutputTokens: 5, CacheReadInputTokens: 1000, CacheCreationInputTokens: 150}
	cached := llm.Scripted{Reply: llm.Script(llm.Response{Text: "Rain.", Usage: usage})}
	for _, tt := range []struct {
		name  string
		model llm.Model
		want  map[string]string // "" for an attribute not set
	}{
		{"cached", cached, map[string]string{
			"gen_ai.usage.input_tokens":                "1200",
			"gen_ai.usage.cache_read.input_tokens":     "1000",
			"gen_ai.usage.cache_creation.input_tokens": "150",
		}},
		{"not cached", weather, map[string]string{
			"gen_ai.usage.input_tokens":                "12",
			"gen_ai.usage.cache_read.input_tokens":     "",
			"gen_ai.usage.cache_creation.input_tokens": "",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newOtelRecorder()
			if _, err := llm.Traced(tt.model, r.tp, nil).Complete(context.Background(), askWeather, nil); err != nil {
				t.Fatal(err)
			}
			span := r.oneChatSpan(t)
			for key, want := range tt.want {
				got, ok := spanAttr(span, key)
				if want == "" && ok {
					t.Errorf("%s = %s, want it not set", key, got.Emit())
				} else if want != "" && got.Emit() != want {
					t.Errorf("%s = %q (set: %v), want %q", key, got.Emit(), ok, want)
				}
			}
		})
	}
}

// TestTracedError: a call that fails has an error status with its message
// and an error.type naming its kind, on the span and on the duration.
func TestTracedError(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name  string
		model llm.Model
		ctx   context.Context
		want  string // error.type
	}{
		{name: "kind", model: failing{&llm.Error{Kind: llm.ErrRateLimited, StatusCode: 429, Message: "openai: rate limited (HTTP 429)"}}, want: "rate_limited"},
		{name: "overloaded", model: failing{&llm.Error{Kind: llm.ErrOverloaded, StatusCode: 529, Message: "anthropic: overloaded (HTTP 529): Overloaded"}}, want: "overloaded"},
		{name: "kind, wrapped", model: failing{fmt.Errorf("agent: %w", &llm.Error{Kind: llm.ErrStreamStalled, Message: "stalled"})}, want: "stream_stalled"},
		{name: "status without kind", model: failing{&llm.Error{StatusCode: 500, Message: "openai: HTTP 500: oops"}}, want: "500"},
		{name: "cancelled", model: weather, ctx: cancelled, want: "canceled"},
		{name: "script error", model: llm.Scripted{Reply: llm.Script()}, want: "_OTHER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newOtelRecorder()
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			_, err := llm.Traced(tt.model, r.tp, r.mp).Complete(ctx, askWeather, nil)
			if err == nil {
				t.Fatal("no error")
			}
			span := r.oneChatSpan(t)
			if span.Status().Code != codes.Error || span.Status().Description != err.Error() {
				t.Errorf("status %v, want an error %q", span.Status(), err.Error())
			}
			if got, _ := spanAttr(span, "error.type"); got.AsString() != tt.want {
				t.Errorf("error.type %q, want %q", got.AsString(), tt.want)
			}
			if _, ok := spanAttr(span, "gen_ai.response.finish_reasons"); ok {
				t.Errorf("finish reasons on a failed call")
			}
			d := r.histogram(t, "gen_ai.client.operation.duration")
			if len(d) != 1 || d[0].attr("error.type") != tt.want || d[0].count != 1 {
				t.Errorf("duration %+v, want one call with error.type %q", d, tt.want)
			}
			if tokens := r.histogram(t, "gen_ai.client.token.usage"); len(tokens) != 0 {
				t.Errorf("token usage of a failed call: %+v", tokens)
			}
		})
	}
}

// TestTracedMetrics: the token usage is the Usage of the calls, by token
// type; each call has its duration, each reply with text its time to first
// chunk, and each chunk after the first its time.
func TestTracedMetrics(t *testing.T) {
	r := newOtelRecorder()
	m := llm.Traced(weather, nil, r.mp)
	var chunks int
	for _, req := range []llm.Request{askWeather, callWeather, askWeather} {
		if _, err := m.Complete(context.Background(), req, func(string) { chunks++ }); err != nil {
			t.Fatal(err)
		}
	}
	base := map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "moora.scripted", "gen_ai.request.model": "scripted"}
	check := func(p histogramPoint, extra map[string]string) {
		t.Helper()
		want := len(base) + len(extra)
		if p.attrs.Len() != want {
			t.Errorf("attributes %v, want %d", p.attrs.ToSlice(), want)
		}
		for _, attrs := range []map[string]string{base, extra} {
			for k, v := range attrs {
				if p.attr(k) != v {
					t.Errorf("%s = %q, want %q", k, p.attr(k), v)
				}
			}
		}
	}

	tokens := r.histogram(t, "gen_ai.client.token.usage")
	if len(tokens) != 2 {
		t.Fatalf("%d token usage points, want input and output", len(tokens))
	}
	for _, p := range tokens {
		typ := p.attr("gen_ai.token.type")
		check(p, map[string]string{"gen_ai.token.type": typ})
		want := map[string]float64{"input": 12 + 40 + 12, "output": 5 + 9 + 5}[typ]
		if p.count != 3 || p.sum != want || p.unit != "{token}" {
			t.Errorf("%s tokens: %d calls, %v tokens, unit %q; want 3, %v, {token}", typ, p.count, p.sum, p.unit, want)
		}
	}
	for _, c := range []struct {
		name  string
		count int
	}{
		{"gen_ai.client.operation.duration", 3},
		{"gen_ai.client.operation.time_to_first_chunk", 2}, // the tool calls have no text
		{"gen_ai.client.operation.time_per_output_chunk", chunks - 2},
	} {
		d := r.histogram(t, c.name)
		if len(d) != 1 || d[0].count != uint64(c.count) || d[0].unit != "s" {
			t.Errorf("%s: %+v, want one point of %d in seconds", c.name, d, c.count)
			continue
		}
		check(d[0], nil)
	}
	if len(r.spans.Ended()) != 0 {
		t.Errorf("spans without a tracer provider")
	}
}

// TestTracedMetricsOnly: without a tracer provider, the model makes no
// span, and leaves the span of its context alone.
func TestTracedMetricsOnly(t *testing.T) {
	r := newOtelRecorder()
	ctx, parent := r.tp.Tracer("test").Start(context.Background(), "job")
	if _, err := llm.Traced(weather, nil, r.mp).Complete(ctx, askWeather, nil); err != nil {
		t.Fatal(err)
	}
	if !parent.IsRecording() || len(r.spans.Ended()) != 0 {
		t.Errorf("the parent span was ended, or a span was made: %d spans", len(r.spans.Ended()))
	}
	parent.End()
}

// TestTracedInJob: in a machine with telemetry, the model call a job makes
// with its context is a child of the job's span.
func TestTracedInJob(t *testing.T) {
	r := newOtelRecorder()
	model := llm.Traced(weather, r.tp, r.mp)
	type state struct{ Answer string }
	def := automata.Definition[state, string]{
		Initial:    func() state { return state{} },
		Transition: func(s state, answer string) state { return state{Answer: answer} },
	}
	jobs := func(s state) map[string]automata.Job[string] {
		if s.Answer != "" {
			return nil
		}
		return map[string]automata.Job[string]{"answer": func(ctx context.Context, dispatch automata.Dispatch[string]) error {
			resp, err := model.Complete(ctx, askWeather, nil)
			if err != nil {
				return err
			}
			dispatch(resp.Text)
			return nil
		}}
	}
	m := automata.NewMoore(def, func(s state) state { return s },
		automata.WithJobs(jobs), automata.WithTelemetry[state, string](r.tp, nil))
	answered := make(chan struct{})
	m.Subscribe(func(s state) {
		if s.Answer != "" {
			close(answered)
		}
	})
	select {
	case <-answered:
	case <-time.After(time.Minute):
		t.Fatal("no answer")
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var job sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == "moora.job" {
			job = s
		}
	}
	chat := r.oneChatSpan(t)
	if job == nil || chat.Parent().SpanID() != job.SpanContext().SpanID() {
		t.Errorf("the chat span's parent is %v, want the job's span", chat.Parent().SpanID())
	}
}

// TestTracedOff: with no provider, Traced returns the model itself, and
// allocates nothing.
func TestTracedOff(t *testing.T) {
	m := &failing{}
	if got := llm.Traced(m, nil, nil, llm.WithContent()); got != llm.Model(m) {
		t.Errorf("Traced(m, nil, nil) = %#v, want m", got)
	}
	if allocs := testing.AllocsPerRun(100, func() { llm.Traced(m, nil, nil) }); allocs != 0 {
		t.Errorf("Traced(m, nil, nil) allocates %v times", allocs)
	}
}

func BenchmarkTraced(b *testing.B) {
	r := newOtelRecorder()
	for _, bc := range []struct {
		name  string
		model llm.Model
	}{
		{"off", llm.Traced(weather, nil, nil)},
		{"noop", llm.Traced(weather, tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider())},
		{"sdk", llm.Traced(weather, r.tp, r.mp)},
		{"sdk content", llm.Traced(weather, r.tp, r.mp, llm.WithContent())},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.model.Complete(context.Background(), askWeather, nil); err != nil {
					b.Fatal(err)
				}
				r.spans.Reset()
			}
		})
	}
}

// TestTracedImages: a request's images are counted on the span (their
// number and bytes), with or without WithContent; with it, each is a blob
// part of its message with its media type and size; their bytes are
// recorded nowhere.
func TestTracedImages(t *testing.T) {
	shot, dot := hostiletest.PNG(64, 32), hostiletest.PNG(2, 2)
	req := llm.Request{
		Tools: []llm.Tool{{Name: "screenshot"}},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "What is it?", Images: []llm.Image{dot}},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "screenshot"}}},
			{Role: llm.RoleTool, ToolCallID: "c1", Content: "the screen", Images: []llm.Image{shot}},
			{Role: llm.RoleUser, Images: []llm.Image{dot}},
		},
	}
	reply := llm.Scripted{Reply: func(llm.Request) (llm.Response, error) { return llm.Response{Text: "A red line."}, nil }}
	for _, content := range []bool{false, true} {
		t.Run(fmt.Sprint("content ", content), func(t *testing.T) {
			r := newOtelRecorder()
			var opts []llm.TraceOption
			if content {
				opts = append(opts, llm.WithContent())
			}
			if _, err := llm.Traced(reply, r.tp, nil, opts...).Complete(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			span := r.oneChatSpan(t)
			count, _ := spanAttr(span, "moora.llm.input.image.count")
			size, _ := spanAttr(span, "moora.llm.input.image.bytes")
			if count.AsInt64() != 3 || size.AsInt64() != int64(2*len(dot.Data)+len(shot.Data)) {
				t.Errorf("image count %d, bytes %d; want 3 and %d", count.AsInt64(), size.AsInt64(), 2*len(dot.Data)+len(shot.Data))
			}
			in, ok := spanAttr(span, "gen_ai.input.messages")
			if ok != content {
				t.Fatalf("gen_ai.input.messages recorded: %v", ok)
			}
			blob := func(im llm.Image) string {
				return fmt.Sprintf(`{"mime_type":"image/png","modality":"image","size":%d,"type":"blob"}`, len(im.Data))
			}
			if content {
				want := `[{"parts":[` + blob(dot) + `,{"content":"What is it?","type":"text"}],"role":"user"},` +
					`{"parts":[{"arguments":"","id":"c1","name":"screenshot","type":"tool_call"}],"role":"assistant"},` +
					`{"parts":[{"id":"c1","response":"the screen","type":"tool_call_response"},` + blob(shot) + `],"role":"tool"},` +
					`{"parts":[` + blob(dot) + `],"role":"user"}]`
				if in.String() != want {
					t.Errorf("gen_ai.input.messages =\n%s\nwant\n%s", in.String(), want)
				}
			}
			// No attribute holds the bytes, raw or in base64.
			for _, kv := range span.Attributes() {
				v := kv.Value.Emit()
				for _, im := range []llm.Image{dot, shot} {
					if strings.Contains(v, base64.StdEncoding.EncodeToString(im.Data)[:24]) || strings.Contains(v, string(im.Data[:16])) {
						t.Errorf("%s holds an image's bytes", kv.Key)
					}
				}
			}
		})
	}
}

// TestTracedResponseFormat: a traced model says what the model it traces
// says of its native JSON mode, and a call that asks for JSON is marked
// gen_ai.output.type json.
func TestTracedResponseFormat(t *testing.T) {
	r := newOtelRecorder()
	native := llm.Scripted{ResponseFormat: true, Reply: func(llm.Request) (llm.Response, error) { return llm.Response{Text: `{"ok":true}`}, nil }}
	m := llm.Traced(native, r.tp, r.mp)
	if !llm.SupportsResponseFormat(m) || llm.SupportsResponseFormat(llm.Traced(llm.Scripted{}, r.tp, r.mp)) {
		t.Fatal("the traced model does not say what its model says")
	}
	if _, err := m.Complete(context.Background(), llm.Request{System: "s",
		ResponseFormat: &llm.JSONSchema{Name: "answer", Schema: json.RawMessage(`{"type":"object"}`)}}, nil); err != nil {
		t.Fatal(err)
	}
	if v, ok := spanAttr(r.oneChatSpan(t), "gen_ai.output.type"); !ok || v.AsString() != "json" {
		t.Errorf("gen_ai.output.type = %v, %v", v, ok)
	}
}
