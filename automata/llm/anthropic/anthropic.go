package anthropic

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/provider"
)

// The environment variables New reads for what Config leaves empty.
const (
	EnvAPIKey  = "ANTHROPIC_API_KEY"
	EnvBaseURL = "ANTHROPIC_BASE_URL"
	EnvModel   = "ANTHROPIC_MODEL"
)

// DefaultBaseURL is Anthropic's API, where a Config with no base URL points.
const DefaultBaseURL = "https://api.anthropic.com/"

// DefaultMaxTokens is the most tokens a reply may have when Config says
// nothing (the Messages API needs a number): 8192, which every current
// Claude model can write.
const DefaultMaxTokens = 8192

// The limits a Config leaves at zero, the OpenAI provider's. See "Limits"
// in the package documentation.
const (
	DefaultMaxResponseBytes = provider.DefaultMaxResponseBytes // 4 MiB
	DefaultMaxBodyBytes     = provider.DefaultMaxBodyBytes     // 64 MiB
	DefaultMaxDuration      = provider.DefaultMaxDuration      // 10 minutes
	DefaultMaxFirstByteWait = provider.DefaultMaxFirstByteWait // 5 minutes
	DefaultMaxIdle          = provider.DefaultMaxIdle          // 1 minute
)

// maxRetryWait is the longest wait the SDK may make before a retry, as the
// server's Retry-After asks: the OpenAI SDK's own bound. A longer one ends
// the call at once with llm.ErrRateLimited (or llm.ErrOverloaded) and the
// wait in llm.Error.RetryAfter, for the state to decide.
const maxRetryWait = 2 * time.Minute

// Config says which model to call, where, and with which key. An empty
// field is read from its environment variable.
type Config struct {
	// APIKey is the key; default $ANTHROPIC_API_KEY. Anthropic's own API
	// needs one; a gateway on this machine may not.
	APIKey string
	// BaseURL is the API's root, without /v1; default $ANTHROPIC_BASE_URL,
	// else DefaultBaseURL.
	BaseURL string
	// Model is the model's name, such as claude-sonnet-4-5; default
	// $ANTHROPIC_MODEL. It is required.
	Model string
	// MaxTokens bounds the reply, in tokens (the API's max_tokens); a
	// reply cut there ends with llm.FinishLength. Default
	// DefaultMaxTokens (8192).
	MaxTokens int64
	// NoPromptCache leaves the request without cache_control, so that
	// nothing is written to Anthropic's prompt cache (see "Prompt caching"
	// in the package documentation).
	NoPromptCache bool
	// NoStructuredOutputs makes the model say that it has no native mode
	// for llm.Request.ResponseFormat (SupportsResponseFormat false), for a
	// model older than Anthropic's structured outputs (before Claude
	// Sonnet 4.5, Opus 4.5 and Haiku 4.5), which refuses output_config's
	// format: package automata/llm/structured then asks it through a
	// forced tool call. A request's ResponseFormat is sent all the same.
	NoStructuredOutputs bool
	// Options are handed to the SDK client after New's own, to override
	// them or add others: option.WithMaxRetries (the SDK retries twice by
	// default), option.WithHTTPClient, option.WithHeader, or
	// option.WithOpenTelemetryTraces(true) for the SDK's own spans, which
	// New turns off (llm.Traced is this module's).
	Options []option.RequestOption

	// The limits on what one call takes from the server, the OpenAI
	// provider's, each ending the call with an *llm.Error whose Err is an
	// *llm.LimitError (see "Limits" in the package documentation). Zero is
	// the default; a negative value is an error of New.

	// MaxResponseBytes bounds the reply's text and its tool calls' IDs,
	// names and arguments (each block of the reply counting 1 KiB more),
	// and the body of an HTTP error, which is read whole; any one event of
	// the stream may have twice as many bytes, plus 64 KiB. Default
	// DefaultMaxResponseBytes (4 MiB).
	MaxResponseBytes int64
	// MaxBodyBytes bounds the bytes of the stream, as read from the
	// connection: events' envelopes, pings, all. Default
	// DefaultMaxBodyBytes (64 MiB).
	MaxBodyBytes int64
	// MaxDuration bounds the whole call, the SDK's retries and their
	// waits included, even when ctx has no deadline. Default
	// DefaultMaxDuration (10 minutes).
	MaxDuration time.Duration
	// MaxFirstByteWait bounds the wait for the server's first byte, from
	// the request (each attempt) to the first byte of the response's body.
	// Default DefaultMaxFirstByteWait (5 minutes).
	MaxFirstByteWait time.Duration
	// MaxIdle bounds every silence of the server after its first byte: the
	// time one read of the stream waits for it. Anthropic's API sends a
	// ping every few seconds while the model works, so that a silence of a
	// minute is a stalled stream. Default DefaultMaxIdle (1 minute).
	MaxIdle time.Duration
}

// Model is a Claude model behind Anthropic's Messages API: an llm.Model.
type Model struct {
	client    sdk.Client
	model     string
	baseURL   string
	maxTokens int64
	cache     bool
	noFormat  bool // Config.NoStructuredOutputs
	limits    *provider.Limits
}

var _ llm.Model = (*Model)(nil)

// New returns the model c names. It fails with an *llm.Error of kind
// llm.ErrMissingKey when c points at Anthropic's API (the default) with no
// key, and with a plain error when no model is named, the base URL is not
// an http or https URL, or MaxTokens or a limit is negative. It does not
// contact the server: an unreachable one shows in the first Complete.
//
// The SDK client reads nothing from the environment itself (no
// ANTHROPIC_AUTH_TOKEN, profile or custom headers): New reads the three
// variables above, and Config.Options may add what else a program needs.
func New(c Config) (*Model, error) {
	key := cmp.Or(c.APIKey, os.Getenv(EnvAPIKey))
	base := cmp.Or(c.BaseURL, os.Getenv(EnvBaseURL), DefaultBaseURL)
	model := cmp.Or(c.Model, os.Getenv(EnvModel))
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: base URL %q is not an http or https URL (set %s or Config.BaseURL)", base, EnvBaseURL)
	}
	if !strings.HasSuffix(base, "/") {
		base += "/" // the SDK resolves "v1/messages" against it
	}
	if model == "" {
		return nil, fmt.Errorf("anthropic: no model named: set %s or Config.Model (such as claude-sonnet-4-5)", EnvModel)
	}
	if key == "" && u.Hostname() == "api.anthropic.com" {
		return nil, &llm.Error{Kind: llm.ErrMissingKey,
			Message: fmt.Sprintf("anthropic: no API key for %s: set %s or Config.APIKey", base, EnvAPIKey)}
	}
	if c.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: Config.MaxTokens is negative (%d): zero is the default, %d", c.MaxTokens, DefaultMaxTokens)
	}
	lim, err := provider.NewLimits("anthropic", provider.Config{MaxResponseBytes: c.MaxResponseBytes, MaxBodyBytes: c.MaxBodyBytes,
		MaxDuration: c.MaxDuration, MaxFirstByteWait: c.MaxFirstByteWait, MaxIdle: c.MaxIdle})
	if err != nil {
		return nil, err
	}
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults(), option.WithBaseURL(base), option.WithoutOpenTelemetry()}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	opts = append(opts, c.Options...)
	return &Model{client: sdk.NewClient(opts...), model: model, baseURL: base,
		maxTokens: cmp.Or(c.MaxTokens, DefaultMaxTokens), cache: !c.NoPromptCache, noFormat: c.NoStructuredOutputs, limits: lim}, nil
}

// FromEnv returns the model the environment names: the Anthropic provider,
// configured from the environment alone, when $ANTHROPIC_MODEL is set, else
// offline. Package automata/llm/llmenv chooses between providers.
func FromEnv(offline llm.Model) (llm.Model, error) {
	if os.Getenv(EnvModel) == "" {
		return offline, nil
	}
	m, err := New(Config{})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// String names the model and where it is served, for a program to say
// which model it talks to.
func (m *Model) String() string { return m.model + " at " + m.baseURL }

// Complete streams req through the Messages API (Messages.NewStreaming)
// and returns the whole response; see llm.Model. The text streams to
// onChunk as its text_delta events arrive; a tool call's input_json_delta
// events are put together, and the call returned whole. The idempotency
// key goes in the Idempotency-Key header. The SDK retries a request that
// fails to connect or gets HTTP 408, 409, 429 or 5xx (529 included; twice,
// by default), but never a stream that has started, nor after a
// Retry-After longer than two minutes or than what is left of the call.
// The Config's limits bound the call: see "Limits" in the package
// documentation.
func (m *Model) Complete(ctx context.Context, req llm.Request, onChunk func(text string)) (llm.Response, error) {
	if err := req.Validate(); err != nil {
		return llm.Response{}, fmt.Errorf("anthropic: %w", err)
	}
	if err := imageLimits.Check(req); err != nil {
		return llm.Response{}, fmt.Errorf("anthropic: invalid request: %w", err)
	}
	params, err := m.params(req)
	if err != nil {
		return llm.Response{}, err
	}
	callCtx, w := provider.NewWatch(ctx, m.limits)
	defer w.Stop()
	var res *http.Response // set once the server answers, even with an error
	opts := []option.RequestOption{option.WithResponseInto(&res), option.WithMiddleware(w.Middleware, noLongWait(w))}
	if req.IdempotencyKey != "" {
		opts = append(opts, option.WithHeader("Idempotency-Key", req.IdempotencyKey))
	}
	stream := m.client.Messages.NewStreaming(callCtx, params, opts...)
	defer stream.Close()
	r := message{limit: m.limits.ResponseBytes}
	for stream.Next() {
		ev := stream.Current()
		if what := r.add(&ev, onChunk); what != "" {
			return llm.Response{}, m.malformed(what, nil)
		}
		if r.kept > m.limits.ResponseBytes {
			return llm.Response{}, m.limitError(res, m.limits.ResponseErr)
		}
	}
	err = stream.Err()
	w.Stop() // the stream is over: no limit ends it now
	if err != nil {
		return llm.Response{}, m.fail(ctx, w, res, err)
	}
	if err := ctx.Err(); err != nil {
		return llm.Response{}, fmt.Errorf("anthropic: %w", context.Cause(ctx))
	}
	if e := w.Exceeded(nil); e != nil {
		return llm.Response{}, m.limitError(res, e)
	}
	if what := r.unfinished(); what != "" {
		return llm.Response{}, m.malformed(what, nil)
	}
	return r.response(), nil
}

// noLongWait is a middleware that keeps the SDK from waiting before a
// retry longer than maxRetryWait, or past the call's deadline, as the
// server's Retry-After may ask (the SDK would wait any time it says): the
// answer is marked x-should-retry: false, which the SDK obeys, so that the
// call ends at once with the server's error and the wait it asked for.
func noLongWait(w *provider.Watch) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if err != nil || res == nil || res.StatusCode < 400 || res.Header.Get("X-Should-Retry") != "" {
			return res, err
		}
		now := time.Now()
		if wait := provider.ParseRetryAfter(res.Header, now); wait > maxRetryWait || now.Add(wait).After(w.Deadline()) {
			res.Header.Set("X-Should-Retry", "false")
		}
		return res, err
	}
}

// SupportsResponseFormat reports whether the model has a native mode for
// llm.Request.ResponseFormat: Anthropic's structured outputs,
// output_config.format of type json_schema, unless
// Config.NoStructuredOutputs says not (see llm.ResponseFormatter).
func (m *Model) SupportsResponseFormat() bool { return !m.noFormat }

// unsupported are the keywords of JSON Schema that Anthropic's structured
// outputs refuse (its documentation's limitations): outputSchema moves
// them into the description, as Anthropic's own SDKs for Python and
// TypeScript do, so that the model still reads them; what it answers is
// validated against the whole schema by its caller (package structured).
var unsupported = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "maxItems", "minProperties", "maxProperties", "uniqueItems"}

// outputSchema returns schema as output_config.format takes it: the
// unsupported keywords moved into the description, minItems above 1 too,
// every object with additionalProperties false unless it says otherwise
// (the API requires it), in the subschemas as well. It changes schema, a
// fresh decoding.
func outputSchema(schema map[string]any) map[string]any {
	var moved []string
	for _, k := range unsupported {
		if v, ok := schema[k]; ok {
			b, _ := json.Marshal(v)
			moved = append(moved, k+": "+string(b))
			delete(schema, k)
		}
	}
	if n, ok := schema["minItems"].(float64); ok && n > 1 {
		moved = append(moved, fmt.Sprintf("minItems: %v", n))
		delete(schema, "minItems")
	}
	if len(moved) > 0 {
		d, _ := schema["description"].(string)
		if d != "" {
			d += " "
		}
		schema["description"] = d + "{" + strings.Join(moved, ", ") + "}"
	}
	if schema["type"] == "object" {
		if _, ok := schema["additionalProperties"]; !ok {
			schema["additionalProperties"] = false
		}
	}
	sub := func(v any) {
		if m, ok := v.(map[string]any); ok {
			outputSchema(m)
		}
	}
	for _, k := range []string{"properties", "$defs", "definitions"} {
		if m, ok := schema[k].(map[string]any); ok {
			for _, v := range m {
				sub(v)
			}
		}
	}
	sub(schema["items"])
	for _, k := range []string{"anyOf", "allOf", "oneOf", "prefixItems"} {
		if l, ok := schema[k].([]any); ok {
			for _, v := range l {
				sub(v)
			}
		}
	}
	return schema
}

// params translates req into the SDK's request, with the cache_control
// breakpoints of "Prompt caching" in the package documentation.
func (m *Model) params(req llm.Request) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{Model: sdk.Model(m.model), MaxTokens: m.maxTokens}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
		if m.cache {
			p.System[0].CacheControl = sdk.NewCacheControlEphemeralParam()
		}
	}
	p.Messages = messages(req.Messages, m.cache)
	for _, t := range req.Tools {
		tool := sdk.ToolParam{Name: t.Name}
		if t.Description != "" {
			tool.Description = sdk.String(t.Description)
		}
		if len(t.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return p, fmt.Errorf("anthropic: tool %s: parameters: %w", t.Name, err) // Validate lets none through
			}
			tool.InputSchema.Properties = schema["properties"]
			delete(schema, "properties")
			if req, ok := schema["required"].([]any); ok {
				for _, r := range req {
					if s, ok := r.(string); ok {
						tool.InputSchema.Required = append(tool.InputSchema.Required, s)
					}
				}
				delete(schema, "required")
			}
			delete(schema, "type") // always "object", which the SDK writes
			if len(schema) > 0 {
				tool.InputSchema.ExtraFields = schema
			}
		}
		if tool.InputSchema.Properties == nil {
			tool.InputSchema.Properties = map[string]any{} // the API needs an input_schema, which the SDK leaves out when it is empty
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tool})
	}
	if m.cache && len(p.Tools) > 0 {
		p.Tools[len(p.Tools)-1].OfTool.CacheControl = sdk.NewCacheControlEphemeralParam()
	}
	if f := req.ResponseFormat; f != nil {
		var schema map[string]any
		if err := json.Unmarshal(f.Schema, &schema); err != nil {
			return p, fmt.Errorf("anthropic: response format %s: schema: %w", f.Name, err) // Validate lets none through
		}
		p.OutputConfig.Format = sdk.JSONOutputFormatParam{Schema: outputSchema(schema)}
	}
	switch req.RequiredTool {
	case "":
	case llm.AnyTool:
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}
	default:
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfTool: &sdk.ToolChoiceToolParam{Name: req.RequiredTool}}
	}
	return p, nil
}

// messages translates a conversation into the API's messages: a user
// message is an image block for each image and a text block, an assistant
// message a text block and a tool_use block for each call, a tool message
// a tool_result block (its content an image block for each image and a
// text block), and
// consecutive messages of one role (the API's user role for tool results)
// are one message, as the API requires: the results of one turn's calls
// go back in one user message, before the text of a user message that
// follows them. Empty texts are left out, and messages left empty with
// them. With cache, the last block before the newest user message is a
// cache breakpoint.
func messages(conv []llm.Message, cache bool) []sdk.MessageParam {
	newest := -1 // the newest user message
	for i, msg := range conv {
		if msg.Role == llm.RoleUser {
			newest = i
		}
	}
	var out []sdk.MessageParam
	var breakpoint *sdk.ContentBlockParamUnion // the last block before conv[newest]
	for i, msg := range conv {
		if i == newest && cache && breakpoint != nil {
			*breakpoint.GetCacheControl() = sdk.NewCacheControlEphemeralParam()
		}
		var blocks []sdk.ContentBlockParamUnion
		user := msg.Role != llm.RoleAssistant
		switch msg.Role {
		case llm.RoleUser:
			for _, im := range msg.Images {
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfImage: imageBlock(im)})
			}
			if msg.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(msg.Content))
			}
		case llm.RoleAssistant:
			if msg.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(msg.Content))
			}
			for _, c := range msg.ToolCalls {
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, toolInput(c.Arguments), c.Name))
			}
		case llm.RoleTool:
			result := sdk.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
			for _, im := range msg.Images {
				result.Content = append(result.Content, sdk.ToolResultBlockParamContentUnion{OfImage: imageBlock(im)})
			}
			if msg.Content != "" {
				result.Content = append(result.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: msg.Content}})
			}
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: &result})
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(out); n > 0 && (out[n-1].OfUser != nil) == user {
			if user {
				out[n-1].OfUser.Content = append(out[n-1].OfUser.Content, blocks...)
			} else {
				out[n-1].OfAssistant.Content = append(out[n-1].OfAssistant.Content, blocks...)
			}
		} else if user {
			out = append(out, sdk.NewUserMessage(blocks...))
		} else {
			out = append(out, sdk.NewAssistantMessage(blocks...))
		}
		last := &out[len(out)-1]
		if user {
			breakpoint = &last.OfUser.Content[len(last.OfUser.Content)-1]
		} else {
			breakpoint = &last.OfAssistant.Content[len(last.OfAssistant.Content)-1]
		}
	}
	return out
}

// imageLimits are what the Messages API takes of a request's images past
// llm.Request.Validate's bounds: 5 MiB of base64 an image (3.75 MiB of
// bytes), and 32 MB of base64 in all, the bound on a request's body. Its
// 100 images a request are past llm.MaxImages.
var imageLimits = provider.ImageLimits{API: "Anthropic's Messages API", MaxEncodedBytes: 5 << 20,
	MaxTotalBytes: 32_000_000, TotalEncoded: true}

// imageBlock is an image block of im, its bytes in base64.
func imageBlock(im llm.Image) *sdk.ImageBlockParam {
	return sdk.NewImageBlockBase64(im.MediaType, base64.StdEncoding.EncodeToString(im.Data)).OfImage
}

// toolInput is a tool call's arguments as the API takes them back: a JSON
// object. Arguments that are not one (cut off by FinishLength, or none)
// go back as {}: the API refuses anything else, and the tool's result
// says what became of the call.
func toolInput(args json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil || obj == nil {
		return json.RawMessage("{}")
	}
	return args
}
