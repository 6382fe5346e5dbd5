package gemini

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/provider"
)

// The environment variables New reads for what Config leaves empty. The
// key is EnvGoogleAPIKey's, else EnvAPIKey's, as the SDK documents (it
// prefers GOOGLE_API_KEY when both are set); the base URL EnvBaseURL's,
// else the SDK's own EnvGoogleBaseURL's.
const (
	EnvAPIKey        = "GEMINI_API_KEY"
	EnvGoogleAPIKey  = "GOOGLE_API_KEY"
	EnvBaseURL       = "GEMINI_BASE_URL"
	EnvGoogleBaseURL = "GOOGLE_GEMINI_BASE_URL"
	EnvModel         = "GEMINI_MODEL"
)

// DefaultBaseURL is the Gemini API, where a Config with no base URL points.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/"

// DefaultMaxRetries is how many times a request that failed to connect, or
// got HTTP 408, 429, 500, 502, 503 or 504, is sent again when Config says
// nothing: twice, as the OpenAI and Anthropic SDKs do.
const DefaultMaxRetries = 2

// The limits a Config leaves at zero, the OpenAI provider's. See "Limits"
// in the package documentation.
const (
	DefaultMaxResponseBytes = provider.DefaultMaxResponseBytes // 4 MiB
	DefaultMaxBodyBytes     = provider.DefaultMaxBodyBytes     // 64 MiB
	DefaultMaxDuration      = provider.DefaultMaxDuration      // 10 minutes
	DefaultMaxFirstByteWait = provider.DefaultMaxFirstByteWait // 5 minutes
	DefaultMaxIdle          = provider.DefaultMaxIdle          // 1 minute
)

// maxRetryWait is the longest wait before a retry, as the server asks
// (RetryInfo's retryDelay, or Retry-After): the OpenAI SDK's own bound. A
// longer one ends the call at once with llm.ErrRateLimited (or
// llm.ErrOverloaded) and the wait in llm.Error.RetryAfter, for the state
// to decide.
const maxRetryWait = 2 * time.Minute

// Config says which model to call, where, and with which key. An empty
// field is read from its environment variable.
type Config struct {
	// APIKey is the key; default $GOOGLE_API_KEY, else $GEMINI_API_KEY.
	// The Gemini API needs one; a server on this machine may not, and is
	// then sent none.
	APIKey string
	// BaseURL is the API's root, without /v1beta; default
	// $GEMINI_BASE_URL, else $GOOGLE_GEMINI_BASE_URL, else DefaultBaseURL.
	BaseURL string
	// Model is the model's name, such as gemini-2.5-flash; default
	// $GEMINI_MODEL. It is required.
	Model string
	// MaxTokens bounds the reply, in tokens (the API's maxOutputTokens); a
	// reply cut there ends with llm.FinishLength. Zero leaves the model's
	// own bound.
	MaxTokens int32
	// MaxRetries is how many times a request that failed to connect or got
	// HTTP 408, 429 or 5xx but 501 is sent again; default
	// DefaultMaxRetries (2), negative for none. A stream that has started
	// is never sent again.
	MaxRetries int
	// HTTPClient, if set, is the client the requests go through (its
	// Transport, its Jar, its CheckRedirect); its Timeout, if any, bounds
	// every attempt as well as MaxDuration does.
	HTTPClient *http.Client

	// The limits on what one call takes from the server, the OpenAI
	// provider's, each ending the call with an *llm.Error whose Err is an
	// *llm.LimitError (see "Limits" in the package documentation). Zero is
	// the default; a negative value is an error of New.

	// MaxResponseBytes bounds the reply's text and its tool calls' IDs,
	// names, arguments and thought signatures (each call counting 1 KiB
	// more), and the body of an HTTP error, which is read whole; any one
	// event of the stream may have twice as many bytes, plus 64 KiB.
	// Default DefaultMaxResponseBytes (4 MiB).
	MaxResponseBytes int64
	// MaxBodyBytes bounds the bytes of the stream, as read from the
	// connection. Default DefaultMaxBodyBytes (64 MiB).
	MaxBodyBytes int64
	// MaxDuration bounds the whole call, the retries and their waits
	// included, even when ctx has no deadline. Default DefaultMaxDuration
	// (10 minutes).
	MaxDuration time.Duration
	// MaxFirstByteWait bounds the wait for the server's first byte, from
	// the request (each attempt) to the first byte of the response's body.
	// Default DefaultMaxFirstByteWait (5 minutes).
	MaxFirstByteWait time.Duration
	// MaxIdle bounds every silence of the server after its first byte: the
	// time one read of the stream waits for it. The Gemini API sends no
	// pings: a silence is the time between two chunks of the reply.
	// Default DefaultMaxIdle (1 minute).
	MaxIdle time.Duration
}

// Model is a Gemini model behind the Gemini API: an llm.Model.
type Model struct {
	client    *genai.Client
	model     string
	baseURL   string
	maxTokens int32
	retries   int
	limits    *provider.Limits
}

var _ llm.Model = (*Model)(nil)

// New returns the model c names. It fails with an *llm.Error of kind
// llm.ErrMissingKey when c points at the Gemini API (the default) with no
// key, and with a plain error when no model is named, the base URL is not
// an http or https URL, or MaxTokens or a limit is negative. It does not
// contact the server: an unreachable one shows in the first Complete.
//
// The SDK client is given the backend (the Gemini API, whatever
// GOOGLE_GENAI_USE_VERTEXAI says), the key and the base URL, so that it
// takes none of them from the environment: New reads the variables above.
func New(c Config) (*Model, error) {
	key := cmp.Or(c.APIKey, os.Getenv(EnvGoogleAPIKey), os.Getenv(EnvAPIKey))
	base := cmp.Or(c.BaseURL, os.Getenv(EnvBaseURL), os.Getenv(EnvGoogleBaseURL), DefaultBaseURL)
	model := cmp.Or(c.Model, os.Getenv(EnvModel))
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("gemini: base URL %q is not an http or https URL (set %s or Config.BaseURL)", base, EnvBaseURL)
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	if model == "" {
		return nil, fmt.Errorf("gemini: no model named: set %s or Config.Model (such as gemini-2.5-flash)", EnvModel)
	}
	if key == "" && u.Hostname() == "generativelanguage.googleapis.com" {
		return nil, &llm.Error{Kind: llm.ErrMissingKey,
			Message: fmt.Sprintf("gemini: no API key for %s: set %s (or %s) or Config.APIKey", base, EnvAPIKey, EnvGoogleAPIKey)}
	}
	if c.MaxTokens < 0 {
		return nil, fmt.Errorf("gemini: Config.MaxTokens is negative (%d): zero leaves the model's own bound", c.MaxTokens)
	}
	lim, err := provider.NewLimits("gemini", provider.Config{MaxResponseBytes: c.MaxResponseBytes, MaxBodyBytes: c.MaxBodyBytes,
		MaxDuration: c.MaxDuration, MaxFirstByteWait: c.MaxFirstByteWait, MaxIdle: c.MaxIdle})
	if err != nil {
		return nil, err
	}
	lim.Framing = provider.BlankLineFraming // the SDK's scanner
	hc := &http.Client{}
	if c.HTTPClient != nil {
		*hc = *c.HTTPClient
	}
	hc.Transport = &transport{base: cmp.Or[http.RoundTripper](hc.Transport, http.DefaultTransport), noKey: key == ""}
	if key == "" {
		key = "none" // the SDK wants one; the transport sends none
	}
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      key,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  hc,
		HTTPOptions: genai.HTTPOptions{BaseURL: base},
	})
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	retries := DefaultMaxRetries
	if c.MaxRetries != 0 {
		retries = max(c.MaxRetries, 0)
	}
	return &Model{client: client, model: model, baseURL: base, maxTokens: c.MaxTokens, retries: retries, limits: lim}, nil
}

// FromEnv returns the model the environment names: the Gemini provider,
// configured from the environment alone, when $GEMINI_MODEL is set, else
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

// Complete streams req through the Gemini API (streamGenerateContent with
// alt=sse, the SDK's Models.GenerateContentStream) and returns the whole
// response; see llm.Model. The text streams to onChunk as its chunks
// arrive; each functionCall part is a tool call, returned whole, with an
// ID of the provider's (see "Tool calls" in the package documentation).
// A request that fails to connect or gets HTTP 408, 429 or 5xx is sent
// again (twice, by default), but never a stream that has started, nor
// after a wait the server asks for longer than two minutes or than what is
// left of the call. The Config's limits bound the call: see "Limits" in
// the package documentation.
func (m *Model) Complete(ctx context.Context, req llm.Request, onChunk func(text string)) (resp llm.Response, err error) {
	// The SDK panics on some chunks it cannot read (a null candidate): that
	// is a malformed stream, not a crash. A panic of onChunk is the
	// caller's, and goes on.
	inChunk := false
	if onChunk != nil {
		f := onChunk
		onChunk = func(t string) { inChunk = true; f(t); inChunk = false }
	}
	defer func() {
		if p := recover(); p != nil {
			if inChunk {
				panic(p)
			}
			resp, err = llm.Response{}, m.malformed(fmt.Sprintf("a chunk the SDK could not read (it panicked: %v)", p), nil)
		}
	}()
	if err := req.Validate(); err != nil {
		return llm.Response{}, fmt.Errorf("gemini: %w", err)
	}
	if err := imageLimits.Check(req); err != nil {
		return llm.Response{}, fmt.Errorf("gemini: invalid request: %w", err)
	}
	contents, config, err := m.request(req)
	if err != nil {
		return llm.Response{}, err
	}
	callCtx, w := provider.NewWatch(ctx, m.limits)
	defer w.Stop()
	c := &call{w: w, retries: m.retries}
	callCtx = context.WithValue(callCtx, callKey{}, c)
	r := answer{limit: m.limits.ResponseBytes, digest: digest(req)}
	for chunk, err := range m.client.Models.GenerateContentStream(callCtx, m.model, contents, config) {
		if err != nil {
			w.Stop() // the stream is over: no limit ends it now
			return llm.Response{}, m.fail(ctx, w, c.response(), err)
		}
		if what := r.add(chunk, onChunk); what != "" {
			return llm.Response{}, m.malformed(what, nil)
		}
		if r.kept > m.limits.ResponseBytes {
			return llm.Response{}, m.limitError(c.response(), m.limits.ResponseErr)
		}
	}
	w.Stop()
	if err := ctx.Err(); err != nil {
		return llm.Response{}, fmt.Errorf("gemini: %w", context.Cause(ctx))
	}
	if e := w.Exceeded(nil); e != nil {
		return llm.Response{}, m.limitError(c.response(), e)
	}
	if what := r.unfinished(); what != "" {
		return llm.Response{}, m.malformed(what, nil)
	}
	return r.response(), nil
}

// SupportsResponseFormat reports true: the Gemini API has a native mode for
// llm.Request.ResponseFormat, responseMimeType application/json with
// responseJsonSchema, the schema as it is (the API takes a subset of JSON
// Schema, which the toolkit's derived schemas keep to; see
// llm.ResponseFormatter). The format's name and description, which the API
// has no place for, are not sent.
func (m *Model) SupportsResponseFormat() bool { return true }

// request translates req into the SDK's contents and config.
func (m *Model) request(req llm.Request) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	config := &genai.GenerateContentConfig{
		// A stream that broke is not continued by a second request: it
		// fails, as the other providers' do.
		AutomaticContinuation: genai.Ptr(false),
	}
	if req.IdempotencyKey != "" {
		config.HTTPOptions = &genai.HTTPOptions{Headers: http.Header{"Idempotency-Key": {req.IdempotencyKey}}}
	}
	if m.maxTokens > 0 {
		config.MaxOutputTokens = m.maxTokens
	}
	if req.System != "" {
		config.SystemInstruction = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: req.System}}}
	}
	if len(req.Tools) > 0 {
		tool := &genai.Tool{}
		for _, t := range req.Tools {
			fd := &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
			if len(t.Parameters) > 0 {
				fd.ParametersJsonSchema = t.Parameters // as it is: a json.RawMessage marshals to itself
			}
			tool.FunctionDeclarations = append(tool.FunctionDeclarations, fd)
		}
		config.Tools = []*genai.Tool{tool}
	}
	if f := req.ResponseFormat; f != nil {
		config.ResponseMIMEType = "application/json"
		config.ResponseJsonSchema = f.Schema // as it is, as a tool's parameters
	}
	switch req.RequiredTool {
	case "":
	case llm.AnyTool:
		config.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAny}}
	default:
		config.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{
			Mode: genai.FunctionCallingConfigModeAny, AllowedFunctionNames: []string{req.RequiredTool}}}
	}
	return contents(req.Messages), config, nil
}

// contents translates a conversation into the API's contents: a user
// message is a user content with an inlineData part for each image and a
// text part; an assistant message a
// model content with a text part and a functionCall part for each call
// (with the thought signature its ID carries); the tool messages that
// answer one assistant message one user content with a functionResponse
// part for each call, in the order of the calls, whatever the order of the
// messages (the API matches them by name and order), the images of a
// result in its parts, as inlineData. Empty texts are left out, and
// contents left empty with them.
func contents(conv []llm.Message) []*genai.Content {
	var out []*genai.Content
	var calls []llm.ToolCall           // of the last assistant message
	var results map[string]*genai.Part // their answers so far, by ID
	var answers *genai.Content         // the content of those answers, once begun
	flush := func() {
		if answers == nil {
			return
		}
		for _, c := range calls {
			if p := results[c.ID]; p != nil {
				answers.Parts = append(answers.Parts, p)
			}
		}
		answers = nil
	}
	for _, msg := range conv {
		if msg.Role != llm.RoleTool {
			flush()
		}
		switch msg.Role {
		case llm.RoleUser:
			c := &genai.Content{Role: genai.RoleUser}
			for _, im := range msg.Images {
				c.Parts = append(c.Parts, &genai.Part{InlineData: &genai.Blob{MIMEType: im.MediaType, Data: im.Data}})
			}
			if msg.Content != "" {
				c.Parts = append(c.Parts, &genai.Part{Text: msg.Content})
			}
			if len(c.Parts) > 0 {
				out = append(out, c)
			}
		case llm.RoleAssistant:
			c := &genai.Content{Role: genai.RoleModel}
			if msg.Content != "" {
				c.Parts = append(c.Parts, &genai.Part{Text: msg.Content})
			}
			for _, tc := range msg.ToolCalls {
				id, sig := splitID(tc.ID)
				c.Parts = append(c.Parts, &genai.Part{
					FunctionCall:     &genai.FunctionCall{ID: id, Name: tc.Name, Args: args(tc.Arguments)},
					ThoughtSignature: sig,
				})
			}
			calls, results = msg.ToolCalls, map[string]*genai.Part{}
			if len(c.Parts) > 0 {
				out = append(out, c)
			}
		case llm.RoleTool:
			if answers == nil {
				answers = &genai.Content{Role: genai.RoleUser}
				out = append(out, answers)
			}
			for _, tc := range calls {
				if tc.ID == msg.ToolCallID {
					id, _ := splitID(tc.ID)
					r := &genai.FunctionResponse{ID: id, Name: tc.Name, Response: map[string]any{"output": msg.Content}}
					for _, im := range msg.Images {
						r.Parts = append(r.Parts, &genai.FunctionResponsePart{InlineData: &genai.FunctionResponseBlob{MIMEType: im.MediaType, Data: im.Data}})
					}
					results[tc.ID] = &genai.Part{FunctionResponse: r}
				}
			}
		}
	}
	flush()
	return out
}

// imageLimits are what the Gemini API takes of a request's images past
// llm.Request.Validate's bounds: PNG, JPEG and WebP (no GIF), and 20 MB of
// inline data in a request, in base64 as the request's body carries it.
var imageLimits = provider.ImageLimits{API: "the Gemini API", MediaTypes: []string{"image/png", "image/jpeg", "image/webp"},
	MaxTotalBytes: 20_000_000, TotalEncoded: true}

// args is a tool call's arguments as the API takes them back: a JSON
// object. Arguments that are not one (cut off by FinishLength, or none)
// go back as none (the SDK leaves out an empty args, which the API does
// not require): the API refuses anything but an object, and the tool's
// result says what became of the call.
func args(raw json.RawMessage) map[string]any {
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil || len(obj) == 0 {
		return nil
	}
	return obj
}

// The IDs of tool calls. The Gemini API gives a functionCall no id (its
// id field is optional, and left out): the provider derives one, which
// begins with derivedPrefix, from what identifies the call, so that the
// same reply to the same request has the same IDs. A call the server did
// give an id keeps it, and it goes back with the call and its response. A
// call with a thought signature (thinking models sign the calls they make,
// and Gemini 3 refuses a conversation whose calls come back without their
// signatures) carries it in its ID, after sigSeparator, in unpadded
// base64url: the conversation, and the journal with it, keeps it for the
// calls that follow.
const (
	derivedPrefix = "gemini-"
	sigSeparator  = "~"
)

// digest identifies a request, for the IDs of its reply's calls: calls of
// replies to different conversations never have the same ID. Images count
// by their media type and bytes, hashed as they are rather than encoded
// in JSON (a request without images has the digest it had before images).
func digest(req llm.Request) [sha256.Size]byte {
	h := sha256.New()
	var images []llm.Image
	for i, m := range req.Messages {
		if len(m.Images) > 0 {
			if images == nil {
				req.Messages = slices.Clone(req.Messages)
			}
			images = append(images, m.Images...)
			req.Messages[i].Images = nil
		}
	}
	b, _ := json.Marshal(req) // of plain data: it cannot fail
	h.Write(b)
	for _, im := range images {
		fmt.Fprintf(h, "\x00%s\x00%d\x00", im.MediaType, len(im.Data))
		h.Write(im.Data)
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// callID is the ID of the i-th call of a reply: the server's id, or one
// derived from the request's digest, the reply's responseId, i, the name
// and the arguments; and its thought signature, if any.
func callID(serverID string, d [sha256.Size]byte, responseID string, i int, name string, arguments []byte, sig []byte) string {
	id := serverID
	if id == "" {
		h := sha256.New()
		h.Write(d[:])
		fmt.Fprintf(h, "\x00%s\x00%d\x00%s\x00", responseID, i, name)
		h.Write(arguments)
		id = fmt.Sprintf("%s%x", derivedPrefix, h.Sum(nil)[:8])
	}
	if len(sig) > 0 {
		id += sigSeparator + base64.RawURLEncoding.EncodeToString(sig)
	}
	return id
}

// splitID is the inverse of callID: the id to send back ("" for a
// derived one) and the thought signature (nil for none).
func splitID(id string) (string, []byte) {
	var sig []byte
	if i := strings.LastIndex(id, sigSeparator); i >= 0 {
		if b, err := base64.RawURLEncoding.DecodeString(id[i+len(sigSeparator):]); err == nil && len(b) > 0 {
			id, sig = id[:i], b
		}
	}
	if strings.HasPrefix(id, derivedPrefix) {
		id = ""
	}
	return id, sig
}
