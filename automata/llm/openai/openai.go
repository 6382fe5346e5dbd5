package openai

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/provider"
)

// The environment variables New reads for what Config leaves empty.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
	EnvModel   = "OPENAI_MODEL"
)

// DefaultBaseURL is OpenAI's API, where a Config with no base URL points.
const DefaultBaseURL = "https://api.openai.com/v1/"

// Config says which model to call, where, and with which key. An empty
// field is read from its environment variable.
type Config struct {
	// APIKey is sent as a bearer token; default $OPENAI_API_KEY. OpenAI's
	// own API needs one; a local server may not.
	APIKey string
	// BaseURL is the API's root, up to /v1; default $OPENAI_BASE_URL, else
	// DefaultBaseURL. Any server with OpenAI's chat completions API will do
	// (http://localhost:11434/v1 for Ollama).
	BaseURL string
	// Model is the model's name, such as gpt-4o-mini; default
	// $OPENAI_MODEL. It is required.
	Model string
	// Options are handed to the SDK client after New's own, to override
	// them or add others: option.WithMaxRetries (the SDK retries twice by
	// default), option.WithHTTPClient, option.WithHeader,
	// option.WithRequestTimeout.
	Options []option.RequestOption

	// The limits on what one call takes from the server, each ending the
	// call with an *llm.Error whose Err is a *LimitError (see "Limits" in
	// the package documentation). Zero is the default; a negative value is
	// an error of New.

	// MaxResponseBytes bounds the reply's text and its tool calls' IDs,
	// types, names and arguments (each tool call counting 1 KiB more, and
	// the length of the completion's ID, of which Complete makes the
	// call's ID when the server gives none), and the body of an HTTP
	// error, which is read whole; any one event of the stream may have
	// twice as many bytes, plus 64 KiB. Default DefaultMaxResponseBytes
	// (4 MiB).
	MaxResponseBytes int64
	// MaxBodyBytes bounds the bytes of the stream, as read from the
	// connection: chunks' envelopes, comments, all. Default
	// DefaultMaxBodyBytes (64 MiB).
	MaxBodyBytes int64
	// MaxDuration bounds the whole call, the SDK's retries and their
	// waits included, even when ctx has no deadline. Default
	// DefaultMaxDuration (10 minutes).
	MaxDuration time.Duration
	// MaxFirstByteWait bounds the wait for the server's first byte, from
	// the request (each attempt) to the first byte of the response's body:
	// the prompt's processing, and a reasoning model's thinking, of which
	// OpenAI's API streams nothing. Default DefaultMaxFirstByteWait
	// (5 minutes).
	MaxFirstByteWait time.Duration
	// MaxIdle bounds every silence of the server after its first byte: the
	// time one read of the stream waits for it. Default DefaultMaxIdle
	// (1 minute).
	MaxIdle time.Duration
}

// Model is a chat model behind OpenAI's chat completions API: an llm.Model.
type Model struct {
	client  sdk.Client
	model   string
	baseURL string
	limits  *provider.Limits
}

var _ llm.Model = (*Model)(nil)

// New returns the model c names. It fails with an *llm.Error of kind
// llm.ErrMissingKey when c points at OpenAI's API (the default) with no
// key, and with a plain error when no model is named, the base URL is not
// an http or https URL, or a limit is negative. It does not contact the
// server: an unreachable one shows in the first Complete.
func New(c Config) (*Model, error) {
	key := cmp.Or(c.APIKey, os.Getenv(EnvAPIKey))
	base := cmp.Or(c.BaseURL, os.Getenv(EnvBaseURL), DefaultBaseURL)
	model := cmp.Or(c.Model, os.Getenv(EnvModel))
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q is not an http or https URL (set %s or Config.BaseURL)", base, EnvBaseURL)
	}
	if !strings.HasSuffix(base, "/") {
		base += "/" // the SDK resolves "chat/completions" against it
	}
	if model == "" {
		return nil, fmt.Errorf("openai: no model named: set %s or Config.Model (such as gpt-4o-mini)", EnvModel)
	}
	if key == "" && u.Hostname() == "api.openai.com" {
		return nil, &llm.Error{Kind: llm.ErrMissingKey,
			Message: fmt.Sprintf("openai: no API key for %s: set %s or Config.APIKey", base, EnvAPIKey)}
	}
	lim, err := newLimits(c)
	if err != nil {
		return nil, err
	}
	opts := append([]option.RequestOption{option.WithBaseURL(base), option.WithAPIKey(key)}, c.Options...)
	return &Model{client: sdk.NewClient(opts...), model: model, baseURL: base, limits: lim}, nil
}

// FromEnv returns the model the environment names: the OpenAI provider,
// configured from the environment alone, when $OPENAI_MODEL is set, else
// offline. Package automata/llm/llmenv, which the examples use, chooses
// between this provider, the Anthropic one and the offline model.
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

// Complete streams req through the chat completions API (NewStreaming, with
// the SDK's ChatCompletionAccumulator putting the chunks together) and
// returns the whole response; see llm.Model. The idempotency key goes in the
// Idempotency-Key header. The SDK retries a request that fails to connect
// or gets HTTP 408, 409, 429 or 5xx (twice, by default), but never a stream
// that has started. The Config's limits bound the call: see "Limits" in the
// package documentation.
func (m *Model) Complete(ctx context.Context, req llm.Request, onChunk func(text string)) (llm.Response, error) {
	if err := req.Validate(); err != nil {
		return llm.Response{}, fmt.Errorf("openai: %w", err)
	}
	if err := imageLimits.Check(req); err != nil {
		return llm.Response{}, fmt.Errorf("openai: invalid request: %w", err)
	}
	params, err := m.params(req)
	if err != nil {
		return llm.Response{}, err
	}
	callCtx, w := provider.NewWatch(ctx, m.limits)
	defer w.Stop()
	var res *http.Response // set once the server answers, even with an error
	opts := []option.RequestOption{option.WithResponseInto(&res), option.WithMiddleware(w.Middleware)}
	if req.IdempotencyKey != "" {
		opts = append(opts, option.WithHeader("Idempotency-Key", req.IdempotencyKey))
	}
	stream := m.client.Chat.Completions.NewStreaming(callCtx, params, opts...)
	defer stream.Close()
	var acc sdk.ChatCompletionAccumulator
	var text strings.Builder // what went to onChunk: the response's text
	var kept int64           // what the reply keeps, as keptBytes counts it
	for stream.Next() {
		chunk := stream.Current()
		// Only the first choice is asked for, without log probabilities:
		// the accumulator keeps nothing else a server sends.
		chunk.Choices = slices.DeleteFunc(chunk.Choices, func(c sdk.ChatCompletionChunkChoice) bool { return c.Index != 0 })
		for i := range chunk.Choices {
			chunk.Choices[i].Logprobs = sdk.ChatCompletionChunkChoiceLogprobs{}
		}
		calls := 0
		if len(acc.Choices) > 0 {
			calls = len(acc.Choices[0].Message.ToolCalls)
		}
		kept += keptBytes(&chunk, int64(calls), len(cmp.Or(acc.ID, chunk.ID)))
		if kept > m.limits.ResponseBytes {
			return llm.Response{}, m.limitError(res, m.limits.ResponseErr)
		}
		if !acc.AddChunk(chunk) {
			return llm.Response{}, m.malformed(fmt.Sprintf("a chunk that does not follow the ones before it (id %q)", provider.OneLine(chunk.ID)), nil)
		}
		for _, c := range chunk.Choices {
			if t := c.Delta.Content + c.Delta.Refusal; t != "" {
				text.WriteString(t)
				if onChunk != nil {
					onChunk(t)
				}
			}
		}
	}
	err = stream.Err()
	w.Stop() // the stream is over: no limit ends it now
	if err != nil {
		return llm.Response{}, m.fail(ctx, w, res, err)
	}
	if err := ctx.Err(); err != nil {
		return llm.Response{}, fmt.Errorf("openai: %w", context.Cause(ctx))
	}
	if e := w.Exceeded(nil); e != nil {
		return llm.Response{}, m.limitError(res, e)
	}
	if len(acc.Choices) == 0 || acc.Choices[0].FinishReason == "" {
		return llm.Response{}, m.malformed("the stream ended before the model finished (no finish reason)", nil)
	}
	return m.response(&acc, text.String()), nil
}

// SupportsResponseFormat reports true: the chat completions API has a
// native mode for llm.Request.ResponseFormat, response_format of type
// json_schema (see llm.ResponseFormatter). A server that imitates the API
// without it (an older model, some local servers) refuses or ignores it:
// ask such a model through a forced tool call (structured.ToolMode).
func (m *Model) SupportsResponseFormat() bool { return true }

// params translates req into the SDK's request.
func (m *Model) params(req llm.Request) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{
		Model:         m.model,
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)},
	}
	if req.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.System))
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case llm.RoleUser:
			p.Messages = append(p.Messages, userMessage(msg))
		case llm.RoleTool:
			p.Messages = append(p.Messages, sdk.ToolMessage(msg.Content, msg.ToolCallID))
		case llm.RoleAssistant:
			var a sdk.ChatCompletionAssistantMessageParam
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				a.Content.OfString = sdk.String(msg.Content)
			}
			for _, c := range msg.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID: c.ID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      c.Name,
							Arguments: cmp.Or(string(c.Arguments), "{}"),
						},
					},
				})
			}
			p.Messages = append(p.Messages, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	for _, t := range req.Tools {
		def := sdk.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			def.Description = sdk.String(t.Description)
		}
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &def.Parameters); err != nil {
				return p, fmt.Errorf("openai: tool %s: parameters: %w", t.Name, err) // Validate lets none through
			}
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(def))
	}
	if f := req.ResponseFormat; f != nil {
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: f.Name, Strict: sdk.Bool(f.Strict)}
		if f.Description != "" {
			js.Description = sdk.String(f.Description)
		}
		var schema map[string]any
		if err := json.Unmarshal(f.Schema, &schema); err != nil {
			return p, fmt.Errorf("openai: response format %s: schema: %w", f.Name, err) // Validate lets none through
		}
		js.Schema = schema
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}
	}
	switch req.RequiredTool {
	case "":
	case llm.AnyTool:
		p.ToolChoice.OfAuto = sdk.String("required")
	default:
		p.ToolChoice = sdk.ToolChoiceOptionFunctionToolChoice(sdk.ChatCompletionNamedToolChoiceFunctionParam{Name: req.RequiredTool})
	}
	return p, nil
}

// imageLimits are what the chat completions API takes of a request's
// images past llm.Request.Validate's bounds: none in a tool message, no
// animated GIF, and 50 MB of images in a request (20 MB an image, and 500
// images, are past llm.MaxImageBytes and llm.MaxImages).
var imageLimits = provider.ImageLimits{API: "OpenAI's chat completions API", NoToolResults: true, NoAnimatedGIFs: true,
	MaxTotalBytes: 50_000_000}

// userMessage is a user message: its text as a string, or, when it has
// images, content parts: an image_url part for each image, whose URL is a
// data URL of its bytes in base64, then a text part (unless the text is
// empty).
func userMessage(msg llm.Message) sdk.ChatCompletionMessageParamUnion {
	if len(msg.Images) == 0 {
		return sdk.UserMessage(msg.Content)
	}
	parts := make([]sdk.ChatCompletionContentPartUnionParam, 0, 1+len(msg.Images))
	for _, im := range msg.Images {
		parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{
			URL: "data:" + im.MediaType + ";base64," + base64.StdEncoding.EncodeToString(im.Data)}))
	}
	if msg.Content != "" {
		parts = append(parts, sdk.TextContentPart(msg.Content))
	}
	return sdk.UserMessage(parts)
}

// response reads the accumulated completion, whose text (content, or a
// refusal) was streamed.
func (m *Model) response(acc *sdk.ChatCompletionAccumulator, text string) llm.Response {
	choice := acc.Choices[0]
	resp := llm.Response{
		Text:         text,
		FinishReason: llm.FinishReason(choice.FinishReason),
		Usage: llm.Usage{
			InputTokens:              acc.Usage.PromptTokens, // the cached ones included, as the API counts them
			OutputTokens:             acc.Usage.CompletionTokens,
			CacheReadInputTokens:     acc.Usage.PromptTokensDetails.CachedTokens,
			CacheCreationInputTokens: acc.Usage.PromptTokensDetails.CacheWriteTokens,
		},
	}
	for i, c := range choice.Message.ToolCalls {
		call := llm.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(cmp.Or(c.Function.Arguments, "{}"))}
		if call.ID == "" { // some servers give none; the conversation needs one
			call.ID = acc.ID + "-" + strconv.Itoa(i)
		}
		resp.ToolCalls = append(resp.ToolCalls, call)
	}
	return resp
}
