package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationName is the name of the tracer and the meter Traced takes
// from its providers.
const InstrumentationName = "github.com/moora-go/moora/automata/llm"

// The names of the OpenTelemetry GenAI semantic conventions that Traced
// records (go.opentelemetry.io/otel/semconv has none of them yet), spelled
// as the conventions spell them, and the few of moora's own.
const (
	keyOperationName    = "gen_ai.operation.name"
	keyProviderName     = "gen_ai.provider.name"
	keyRequestModel     = "gen_ai.request.model"
	keyRequestStream    = "gen_ai.request.stream"
	keyFinishReasons    = "gen_ai.response.finish_reasons"
	keyTimeToFirstChunk = "gen_ai.response.time_to_first_chunk"
	keyInputTokens      = "gen_ai.usage.input_tokens"
	keyOutputTokens     = "gen_ai.usage.output_tokens"
	keyCacheReadTokens  = "gen_ai.usage.cache_read.input_tokens"
	keyCacheWriteTokens = "gen_ai.usage.cache_creation.input_tokens"
	keyTokenType        = "gen_ai.token.type"
	keySystem           = "gen_ai.system_instructions"
	keyInputMessages    = "gen_ai.input.messages"
	keyOutputMessages   = "gen_ai.output.messages"
	keyErrorType        = "error.type"
	keyOutputType       = "gen_ai.output.type"

	keyToolCallCount   = "moora.llm.tool_call.count"
	keyToolCallNames   = "moora.llm.tool_call.names"
	keyMessagesOmitted = "moora.llm.input.messages.omitted"
	keyImageCount      = "moora.llm.input.image.count"
	keyImageBytes      = "moora.llm.input.image.bytes"

	operationChat   = "chat"
	unknownProvider = "unknown"
)

// The bounds of the content WithContent records.
const (
	// maxContentBytes bounds each text: a message's content, a tool
	// call's arguments, a tool's result, the system prompt.
	maxContentBytes = 4 << 10
	// maxContentTotal bounds the texts of one attribute, put together.
	maxContentTotal = 64 << 10
)

// Named is implemented by a Model that can name itself in telemetry: the
// provider that serves it, as the OpenTelemetry GenAI semantic conventions
// name providers (gen_ai.provider.name: "openai", "anthropic",
// "aws.bedrock", …), and the model it asks for (gen_ai.request.model, such
// as "gpt-4o-mini"). Package automata/llm/openai's Model and Scripted
// implement it, and so does the Model Traced returns. Traced reads it once,
// when it wraps the model; WithProviderName and WithModelName override it.
type Named interface {
	ProviderName() string
	ModelName() string
}

// A TraceOption changes what Traced records.
type TraceOption func(*traceConfig)

type traceConfig struct {
	provider, model string
	content         bool
}

// WithContent makes Traced record what the model is sent and what it
// answers, which the conventions leave out by default, as they may hold
// personal or secret data: gen_ai.system_instructions (the system prompt),
// gen_ai.input.messages (the conversation: texts, tool calls with their
// arguments, tool results, and for each image a part of type "blob" with
// its modality, "image", its mime_type and its size in bytes, but not its
// content: image bytes are never recorded) and, for a call that succeeds,
// gen_ai.output.messages (the reply's text, tool calls and finish reason).
// They are span attributes of the conventions' structure (a list of
// messages of role and parts), as structured values, not JSON strings.
//
// The content is bounded: a text (a message's content, a tool call's
// arguments, a tool's result, the system prompt) longer than 4 KiB is cut to
// its first 4 KiB, at a character boundary, and marked with a suffix such
// as "…[truncated: 10000 bytes]"; the texts of one attribute together hold
// at most 64 KiB, beyond which the oldest messages of the conversation are
// left out (moora.llm.input.messages.omitted says how many) and the last
// tool calls of the reply too. Arguments that are valid JSON and not cut
// are recorded as structured values, the others as text.
func WithContent() TraceOption { return func(c *traceConfig) { c.content = true } }

// WithProviderName sets gen_ai.provider.name, over the model's own
// ProviderName (see Named). Use the conventions' name of a known provider
// ("openai", "anthropic", "aws.bedrock", "gcp.vertex_ai", …).
func WithProviderName(name string) TraceOption {
	return func(c *traceConfig) { c.provider = name }
}

// WithModelName sets gen_ai.request.model, over the model's own ModelName
// (see Named).
func WithModelName(name string) TraceOption {
	return func(c *traceConfig) { c.model = name }
}

// Traced returns m, traced and measured with OpenTelemetry as its GenAI
// semantic conventions say (https://opentelemetry.io/docs/specs/semconv/gen-ai/;
// they are in development, so their names may yet change). Either provider
// may be nil, for no traces or no metrics; with both nil Traced returns m
// itself, which costs nothing. The Model it returns calls m with the same
// request and hands every chunk of the reply to onChunk, unchanged and in
// order: it only watches.
//
// Traces: each Complete is a span "chat {model}" ("chat" when the model has
// no name) of kind Client, a child of the span in ctx (in a job, the job's
// span: see automata.WithTelemetry) and the parent of what m does with ctx.
// Its attributes:
//
//   - gen_ai.operation.name ("chat"), gen_ai.provider.name,
//     gen_ai.request.model and gen_ai.request.stream (true: every Model
//     streams), set as the span starts, for samplers to see. The names come
//     from WithProviderName and WithModelName, else from m if it is Named;
//     else the provider is "unknown" and the model is left out;
//   - gen_ai.response.finish_reasons, the Response's FinishReason;
//   - gen_ai.usage.input_tokens and gen_ai.usage.output_tokens, when the
//     provider counted them (Usage is not zero), the input tokens with the
//     cached ones, as the conventions say;
//   - gen_ai.usage.cache_read.input_tokens and
//     gen_ai.usage.cache_creation.input_tokens, the input tokens read from
//     and written to the provider's prompt cache, when they are not zero;
//   - gen_ai.response.time_to_first_chunk, in seconds, from the call to the
//     first chunk of text, when the reply had text;
//   - moora.llm.tool_call.count and moora.llm.tool_call.names, the number
//     and the names of the tool calls the model asked for, in its order
//     (moora's own: outside the opt-in content, the conventions have no
//     attribute for them);
//   - moora.llm.input.image.count and moora.llm.input.image.bytes, the
//     number of images in the request and their bytes put together, when
//     it has some (moora's own too); the images themselves are never
//     recorded;
//   - for a call that failed, error.type, and an error status with the
//     error's message (the error is recorded as an exception event too).
//
// The error.type of an Error's Kind is missing_key, unreachable,
// unauthorized, rate_limited, overloaded, context_length_exceeded,
// malformed_stream, response_too_large, response_timeout or
// stream_stalled; of a call whose
// ctx ended, canceled or deadline_exceeded; of another *Error, its HTTP
// status (such as "500") when it has one; else "_OTHER". A call cancelled
// because its job was (see automata.JobKey) is an error too: filter on
// error.type canceled to leave those out.
//
// The messages are not recorded unless WithContent says so.
//
// Metrics, all with gen_ai.operation.name, gen_ai.provider.name and
// gen_ai.request.model (when the model has a name), with the bucket
// boundaries the conventions advise:
//
//   - gen_ai.client.operation.duration (histogram, seconds): each call,
//     with error.type when it failed;
//   - gen_ai.client.token.usage (histogram, {token}): the input and the
//     output tokens of each call that succeeded, by gen_ai.token.type
//     ("input", "output"), when the provider counted them;
//   - gen_ai.client.operation.time_to_first_chunk (histogram, seconds):
//     from the call to the first chunk of text, for each reply with text;
//   - gen_ai.client.operation.time_per_output_chunk (histogram, seconds):
//     for each chunk after the first, the time since the one before.
//
// Request and Response carry no maximum of tokens, no response ID and no
// name of the model that answered: gen_ai.request.max_tokens,
// gen_ai.response.id and gen_ai.response.model are not recorded.
func Traced(m Model, tp trace.TracerProvider, mp metric.MeterProvider, opts ...TraceOption) Model {
	if tp == nil && mp == nil {
		return m
	}
	var c traceConfig
	if n, ok := m.(Named); ok {
		c.provider, c.model = n.ProviderName(), n.ModelName()
	}
	for _, o := range opts {
		o(&c)
	}
	if c.provider == "" {
		c.provider = unknownProvider
	}
	t := &traced{model: m, provider: c.provider, name: c.model, content: c.content, spanName: operationChat}
	t.attrs = []attribute.KeyValue{
		attribute.String(keyOperationName, operationChat),
		attribute.String(keyProviderName, c.provider),
	}
	if c.model != "" {
		t.spanName += " " + c.model
		t.attrs = append(t.attrs, attribute.String(keyRequestModel, c.model))
	}
	if tp != nil {
		t.tracer = tp.Tracer(InstrumentationName)
		t.spanAttrs = append(slices.Clip(t.attrs), attribute.Bool(keyRequestStream, true))
	}
	if mp != nil {
		t.newInstruments(mp.Meter(InstrumentationName))
	}
	return t
}

// traced is the Model Traced returns. Its fields are set by Traced and
// never change: it is safe for concurrent use, as m is.
type traced struct {
	model          Model
	provider, name string // gen_ai.provider.name, gen_ai.request.model ("" for none)
	content        bool   // WithContent
	spanName       string
	attrs          []attribute.KeyValue // operation, provider and model: the metrics'

	tracer    trace.Tracer         // nil: no traces
	spanAttrs []attribute.KeyValue // attrs and gen_ai.request.stream

	meter         bool // the instruments are set
	duration      metric.Float64Histogram
	tokens        metric.Int64Histogram
	firstChunk    metric.Float64Histogram
	perChunk      metric.Float64Histogram
	of            metric.MeasurementOption // attrs
	input, output metric.MeasurementOption // attrs and gen_ai.token.type
}

var (
	_ Named             = (*traced)(nil)
	_ ResponseFormatter = (*traced)(nil)
)

func (t *traced) ProviderName() string { return t.provider }
func (t *traced) ModelName() string    { return t.name }

// SupportsResponseFormat says what the model it traces says.
func (t *traced) SupportsResponseFormat() bool { return SupportsResponseFormat(t.model) }

// The bucket boundaries the conventions advise for their histograms.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

func (t *traced) newInstruments(m metric.Meter) {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	t.duration, err = m.Float64Histogram("gen_ai.client.operation.duration",
		metric.WithDescription("GenAI operation duration."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	add(err)
	t.tokens, err = m.Int64Histogram("gen_ai.client.token.usage",
		metric.WithDescription("Number of input and output tokens used."), metric.WithUnit("{token}"),
		metric.WithExplicitBucketBoundaries(tokenBuckets...))
	add(err)
	t.firstChunk, err = m.Float64Histogram("gen_ai.client.operation.time_to_first_chunk",
		metric.WithDescription("Time to receive the first chunk, from when the client issues the generation request."),
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(durationBuckets...))
	add(err)
	t.perChunk, err = m.Float64Histogram("gen_ai.client.operation.time_per_output_chunk",
		metric.WithDescription("Time per output chunk, from the end of the previous chunk to the end of this one."),
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(durationBuckets...))
	add(err)
	if err := errors.Join(errs...); err != nil {
		otel.Handle(fmt.Errorf("llm: telemetry: %w", err))
	}
	// A meter that fails to make an instrument may return none: then the
	// model measures nothing, and runs on.
	t.meter = t.duration != nil && t.tokens != nil && t.firstChunk != nil && t.perChunk != nil
	t.of = metric.WithAttributeSet(attribute.NewSet(t.attrs...))
	t.input = metric.WithAttributeSet(attribute.NewSet(append(slices.Clip(t.attrs), attribute.String(keyTokenType, "input"))...))
	t.output = metric.WithAttributeSet(attribute.NewSet(append(slices.Clip(t.attrs), attribute.String(keyTokenType, "output"))...))
}

// Complete calls the model in a span of its own, and measures the call.
func (t *traced) Complete(ctx context.Context, req Request, onChunk func(text string)) (Response, error) {
	start := time.Now()
	var span trace.Span = noop.Span{} // when there are no traces
	if t.tracer != nil {
		ctx, span = t.tracer.Start(ctx, t.spanName, trace.WithTimestamp(start),
			trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(t.spanAttrs...))
		if req.ResponseFormat != nil {
			span.SetAttributes(attribute.String(keyOutputType, "json"))
		}
		if span.IsRecording() {
			if n, size := imagesOf(req); n > 0 {
				span.SetAttributes(attribute.Int(keyImageCount, n), attribute.Int64(keyImageBytes, size))
			}
			if t.content {
				span.SetAttributes(inputContent(req)...)
			}
		}
	}
	// The chunks arrive on this goroutine, before Complete returns (see
	// Model): first and last need no lock.
	var first, last time.Time
	resp, err := t.model.Complete(ctx, req, func(text string) {
		now := time.Now()
		if first.IsZero() {
			first = now
		} else if t.meter {
			t.perChunk.Record(ctx, now.Sub(last).Seconds(), t.of)
		}
		last = now
		if onChunk != nil {
			onChunk(text)
		}
	})
	end := time.Now()

	var errType attribute.KeyValue
	if err != nil {
		errType = attribute.String(keyErrorType, errorType(err))
	}
	if span.IsRecording() {
		if err != nil {
			span.SetAttributes(errType)
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		} else {
			span.SetAttributes(responseAttrs(resp)...)
			if t.content {
				span.SetAttributes(outputContent(resp))
			}
		}
		if !first.IsZero() {
			span.SetAttributes(attribute.Float64(keyTimeToFirstChunk, first.Sub(start).Seconds()))
		}
	}
	span.End(trace.WithTimestamp(end))

	if t.meter {
		if err != nil {
			t.duration.Record(ctx, end.Sub(start).Seconds(),
				metric.WithAttributeSet(attribute.NewSet(append(slices.Clip(t.attrs), errType)...)))
		} else {
			t.duration.Record(ctx, end.Sub(start).Seconds(), t.of)
			if resp.Usage != (Usage{}) {
				t.tokens.Record(ctx, resp.Usage.InputTokens, t.input)
				t.tokens.Record(ctx, resp.Usage.OutputTokens, t.output)
			}
		}
		if !first.IsZero() {
			t.firstChunk.Record(ctx, first.Sub(start).Seconds(), t.of)
		}
	}
	return resp, err
}

// responseAttrs are the span attributes of a response.
func responseAttrs(resp Response) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 7)
	if resp.FinishReason != "" {
		attrs = append(attrs, attribute.StringSlice(keyFinishReasons, []string{string(resp.FinishReason)}))
	}
	if resp.Usage != (Usage{}) {
		attrs = append(attrs,
			attribute.Int64(keyInputTokens, resp.Usage.InputTokens),
			attribute.Int64(keyOutputTokens, resp.Usage.OutputTokens))
	}
	if n := resp.Usage.CacheReadInputTokens; n != 0 {
		attrs = append(attrs, attribute.Int64(keyCacheReadTokens, n))
	}
	if n := resp.Usage.CacheCreationInputTokens; n != 0 {
		attrs = append(attrs, attribute.Int64(keyCacheWriteTokens, n))
	}
	names := make([]string, len(resp.ToolCalls))
	for i, c := range resp.ToolCalls {
		names[i] = c.Name
	}
	attrs = append(attrs, attribute.Int(keyToolCallCount, len(names)))
	if len(names) > 0 {
		attrs = append(attrs, attribute.StringSlice(keyToolCallNames, names))
	}
	return attrs
}

// errorTypes are the error.type of the kinds of Error.
var errorTypes = []struct {
	kind error
	name string
}{
	{ErrMissingKey, "missing_key"},
	{ErrUnreachable, "unreachable"},
	{ErrUnauthorized, "unauthorized"},
	{ErrRateLimited, "rate_limited"},
	{ErrOverloaded, "overloaded"},
	{ErrContextLength, "context_length_exceeded"},
	{ErrMalformedStream, "malformed_stream"},
	{ErrResponseTooLarge, "response_too_large"},
	{ErrResponseTimeout, "response_timeout"},
	{ErrStreamStalled, "stream_stalled"},
}

// errorType is the error.type of err, a low-cardinality name of its kind
// (see Traced).
func errorType(err error) string {
	for _, e := range errorTypes {
		if errors.Is(err, e.kind) {
			return e.name
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	if e, ok := errors.AsType[*Error](err); ok && e.StatusCode != 0 {
		return strconv.Itoa(e.StatusCode)
	}
	return "_OTHER"
}

// inputContent is the content of req that WithContent records: the system
// prompt and the latest messages that fit in maxContentTotal.
func inputContent(req Request) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	if req.System != "" {
		var sys budget
		attrs = append(attrs, attribute.Slice(keySystem, textPart(sys.text(req.System))))
	}
	var b budget
	msgs := make([]attribute.Value, 0, len(req.Messages))
	omitted := len(req.Messages)
	for ; omitted > 0; omitted-- {
		spent := b.spent
		v := b.message(req.Messages[omitted-1])
		if b.spent > maxContentTotal && len(msgs) > 0 {
			b.spent = spent
			break
		}
		msgs = append(msgs, v)
	}
	slices.Reverse(msgs)
	if len(msgs) > 0 {
		attrs = append(attrs, attribute.Slice(keyInputMessages, msgs...))
	}
	if omitted > 0 {
		attrs = append(attrs, attribute.Int(keyMessagesOmitted, omitted))
	}
	return attrs
}

// outputContent is the content of resp that WithContent records: one
// message of the assistant, with the reply's finish reason.
func outputContent(resp Response) attribute.KeyValue {
	var b budget
	m := b.parts(Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
	return attribute.Slice(keyOutputMessages, attribute.MapValue(
		attribute.String("role", string(RoleAssistant)),
		attribute.Slice("parts", m...),
		attribute.String("finish_reason", string(resp.FinishReason)),
	))
}

// budget counts the bytes of the texts of one attribute.
type budget struct{ spent int }

// text returns s cut to maxContentBytes, and counts it.
func (b *budget) text(s string) string {
	s = truncate(s)
	b.spent += len(s)
	return s
}

// message is m in the conventions' structure: its role and its parts.
func (b *budget) message(m Message) attribute.Value {
	return attribute.MapValue(attribute.String("role", string(m.Role)), attribute.Slice("parts", b.parts(m)...))
}

// parts are the parts of m: its images, its text, its tool calls or the
// tool result it is. The tool calls past maxContentTotal are left out.
func (b *budget) parts(m Message) []attribute.Value {
	if m.Role == RoleTool {
		return append([]attribute.Value{attribute.MapValue(
			attribute.String("type", "tool_call_response"),
			attribute.String("id", m.ToolCallID),
			attribute.String("response", b.text(m.Content)),
		)}, imageParts(m.Images)...)
	}
	parts := imageParts(m.Images)
	if m.Content != "" || len(m.ToolCalls) == 0 && len(m.Images) == 0 {
		parts = append(parts, textPart(b.text(m.Content)))
	}
	for _, c := range m.ToolCalls {
		if b.spent >= maxContentTotal {
			break
		}
		parts = append(parts, attribute.MapValue(
			attribute.String("type", "tool_call"),
			attribute.String("id", c.ID),
			attribute.String("name", c.Name),
			attribute.KeyValue{Key: "arguments", Value: b.arguments(c.Arguments)},
		))
	}
	return parts
}

// arguments are a tool call's arguments as a structured value when they
// are valid JSON of at most maxContentBytes, else as text.
func (b *budget) arguments(raw json.RawMessage) attribute.Value {
	if len(raw) <= maxContentBytes {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil && !dec.More() {
			b.spent += len(raw)
			return jsonValue(v)
		}
	}
	return attribute.StringValue(b.text(string(raw)))
}

// imageParts are the conventions' blob parts of images, without their
// content: the bytes are never recorded, only their media type and their
// size.
func imageParts(images []Image) []attribute.Value {
	var parts []attribute.Value
	for _, im := range images {
		parts = append(parts, attribute.MapValue(
			attribute.String("type", "blob"),
			attribute.String("modality", "image"),
			attribute.String("mime_type", im.MediaType),
			attribute.Int("size", len(im.Data)),
		))
	}
	return parts
}

// imagesOf counts the images of req, and their bytes.
func imagesOf(req Request) (n int, size int64) {
	for _, m := range req.Messages {
		for _, im := range m.Images {
			n++
			size += int64(len(im.Data))
		}
	}
	return n, size
}

// textPart is a text part of a message.
func textPart(s string) attribute.Value {
	return attribute.MapValue(attribute.String("type", "text"), attribute.String("content", s))
}

// jsonValue is v, decoded from JSON with numbers as json.Number, as an
// attribute value: an object a map (its keys sorted), an array a slice.
func jsonValue(v any) attribute.Value {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		kvs := make([]attribute.KeyValue, len(keys))
		for i, k := range keys {
			kvs[i] = attribute.KeyValue{Key: attribute.Key(k), Value: jsonValue(v[k])}
		}
		return attribute.MapValue(kvs...)
	case []any:
		vs := make([]attribute.Value, len(v))
		for i, e := range v {
			vs[i] = jsonValue(e)
		}
		return attribute.SliceValue(vs...)
	case string:
		return attribute.StringValue(v)
	case bool:
		return attribute.BoolValue(v)
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return attribute.Int64Value(n)
		}
		f, _ := v.Float64()
		return attribute.Float64Value(f)
	default: // null
		return attribute.Value{}
	}
}

// truncate cuts s to maxContentBytes, at a character boundary, and marks
// the cut.
func truncate(s string) string {
	if len(s) <= maxContentBytes {
		return s
	}
	n := maxContentBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…[truncated: " + strconv.Itoa(len(s)) + " bytes]"
}
