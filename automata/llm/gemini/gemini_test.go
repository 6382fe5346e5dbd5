package gemini

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/moora-go/moora/automata/llm"
)

// The tests talk to a server on loopback that speaks the Gemini API as
// Google documents it: POST /v1beta/models/{model}:streamGenerateContent
// ?alt=sse, answered with server-sent events, each a data: line with a
// GenerateContentResponse, or with a JSON error body of {"error": {"code",
// "message", "status", "details"}}. The SDK is the real one, over HTTP:
// nothing of it is mocked. The streams of testdata are in the documented
// format, written for these tests, not recorded (see testdata/README.md).

const testModel = "gemini-test"

// reply is one answer of a test server: a stream of server-sent events when
// status is 200, else a JSON error body.
type reply struct {
	status int
	header map[string]string
	body   string
}

// sse returns a reply that streams the body of testdata/name.
func sse(t *testing.T, name string) reply {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: http.StatusOK, body: string(b)}
}

// apiError is the body of an HTTP error of the API, with details (each a
// JSON object) if any.
func apiError(code int, status, msg string, details ...string) string {
	e := map[string]any{"code": code, "message": msg, "status": status}
	if len(details) > 0 {
		var ds []json.RawMessage
		for _, d := range details {
			ds = append(ds, json.RawMessage(d))
		}
		e["details"] = ds
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return string(b)
}

// retryInfoDetail is the RetryInfo detail of an error that asks for a wait.
func retryInfoDetail(delay string) string {
	return `{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "` + delay + `"}`
}

const quotaFailure = `{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "quotaValue": "10"}]}`

// request is what a test server received.
type request struct {
	path, query string
	header      http.Header
	body        []byte
}

// server is a test server of the Gemini API: it answers the nth request
// with the nth reply (the last one again after that), streaming event by
// event, and records every request.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	requests []request
}

const streamPath = "/v1beta/models/" + testModel + ":streamGenerateContent"

func newServer(t *testing.T, replies ...reply) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.requests = append(s.requests, request{path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: body})
		rep := replies[min(len(s.requests), len(replies))-1]
		s.mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != streamPath || r.URL.Query().Get("alt") != "sse" {
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, apiError(404, "NOT_FOUND", "models/nonesuch is not found for API version v1beta"))
			return
		}
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		if rep.status != http.StatusOK {
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			w.WriteHeader(rep.status)
			io.WriteString(w, rep.body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Disposition", "attachment")
		rc := http.NewResponseController(w)
		for _, event := range strings.SplitAfter(rep.body, "\n\n") {
			io.WriteString(w, event)
			rc.Flush()
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) received() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.requests...)
}

// model returns the provider pointed at s.
func (s *server) model(t *testing.T, c ...Config) *Model {
	t.Helper()
	var cfg Config
	if len(c) > 0 {
		cfg = c[0]
	}
	cfg.APIKey, cfg.BaseURL, cfg.Model = "AIza-test", s.URL, testModel
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var wordCount = llm.Tool{
	Name:        "word-count",
	Description: "Counts the words of a text.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","maxLength":10000}},"required":["text"],"additionalProperties":false}`),
}

var question = llm.Request{
	System:         "You count words.",
	Messages:       []llm.Message{{Role: llm.RoleUser, Content: "count these words"}},
	Tools:          []llm.Tool{wordCount},
	IdempotencyKey: "llm/llm-u1",
}

// derivedID is the ID the provider derives for the i-th call of a reply to
// req.
func derivedID(req llm.Request, responseID string, i int, name, args string) string {
	return callID("", digest(req), responseID, i, name, []byte(args), nil)
}

func TestStreams(t *testing.T) {
	sig, _ := base64.StdEncoding.DecodeString("CiQBVKhc7oQnMbgzi1PDYpg2iFY1ob3Blp2rlRLuwVnw+YjqE0M=")
	tests := []struct {
		name   string
		file   string
		chunks []string
		want   llm.Response
	}{
		{
			name:   "text in three chunks",
			file:   "text.sse",
			chunks: []string{"Hello", "! How can I", " help you today?"},
			want: llm.Response{Text: "Hello! How can I help you today?", FinishReason: llm.FinishStop,
				Usage: llm.Usage{InputTokens: 21, OutputTokens: 9}},
		},
		{
			name:   "text, then two parallel function calls in one chunk",
			file:   "parallel_function_calls.sse",
			chunks: []string{"Counting both."},
			want: llm.Response{
				Text: "Counting both.",
				ToolCalls: []llm.ToolCall{
					{ID: derivedID(question, "b9TxaJ2xOYS3nvgPkJ2TmAc", 0, "word-count", `{"text":"one two"}`), Name: "word-count", Arguments: json.RawMessage(`{"text":"one two"}`)},
					{ID: derivedID(question, "b9TxaJ2xOYS3nvgPkJ2TmAc", 1, "word-count", `{"text":"three four five"}`), Name: "word-count", Arguments: json.RawMessage(`{"text":"three four five"}`)},
				},
				FinishReason: llm.FinishToolCalls,
				Usage:        llm.Usage{InputTokens: 64, OutputTokens: 31},
			},
		},
		{
			name: "a signed function call of a thinking model: the signature rides in the ID, the thoughts are output",
			file: "signed_function_call.sse",
			want: llm.Response{
				ToolCalls: []llm.ToolCall{{
					ID:   callID("", digest(question), "QNvxaPeIL4mYnvgP_JSn8A4", 0, "word-count", []byte(`{"text":"count these words"}`), sig),
					Name: "word-count", Arguments: json.RawMessage(`{"text":"count these words"}`)}},
				FinishReason: llm.FinishToolCalls,
				Usage:        llm.Usage{InputTokens: 58, OutputTokens: 18 + 112},
			},
		},
		{
			name:   "a prompt mostly read from the cache",
			file:   "cached.sse",
			chunks: []string{"Two", " words."},
			want: llm.Response{Text: "Two words.", FinishReason: llm.FinishStop,
				Usage: llm.Usage{InputTokens: 2116, OutputTokens: 4 + 38, CacheReadInputTokens: 1856}},
		},
		{
			name: "a prompt blocked: promptFeedback's blockReason, no candidate",
			file: "blocked_prompt.sse",
			want: llm.Response{FinishReason: llm.FinishContentFilter, Usage: llm.Usage{InputTokens: 9}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, sse(t, tt.file))
			var chunks []string
			resp, err := srv.model(t).Complete(context.Background(), question, func(c string) { chunks = append(chunks, c) })
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if !reflect.DeepEqual(resp, tt.want) {
				t.Errorf("response:\n got %+v\nwant %+v", resp, tt.want)
			}
			if !reflect.DeepEqual(chunks, tt.chunks) {
				t.Errorf("chunks = %q, want %q", chunks, tt.chunks)
			}
			if got := len(srv.received()); got != 1 {
				t.Errorf("%d requests, want 1", got)
			}
		})
	}
}

// The stream of events may end its lines with \r\n, which the SDK reads as
// well.
func TestCRLFStream(t *testing.T) {
	body := strings.ReplaceAll(sse(t, "text.sse").body, "\n\n", "\r\n\r\n")
	srv := newServer(t, reply{status: 200, body: body})
	resp, err := srv.model(t).Complete(context.Background(), question, nil)
	if err != nil || resp.Text != "Hello! How can I help you today?" {
		t.Fatalf("Complete = %+v, %v", resp, err)
	}
}

// The finish reasons of the API are llm's.
func TestFinishReasons(t *testing.T) {
	for finish, want := range map[string]llm.FinishReason{
		"STOP": llm.FinishStop, "MAX_TOKENS": llm.FinishLength,
		"SAFETY": llm.FinishContentFilter, "RECITATION": llm.FinishContentFilter, "BLOCKLIST": llm.FinishContentFilter,
		"PROHIBITED_CONTENT": llm.FinishContentFilter, "SPII": llm.FinishContentFilter,
		"MALFORMED_FUNCTION_CALL": "MALFORMED_FUNCTION_CALL", "OTHER": "OTHER",
	} {
		t.Run(finish, func(t *testing.T) {
			body := strings.Replace(sse(t, "text.sse").body, `"finishReason": "STOP"`, `"finishReason": "`+finish+`"`, 1)
			srv := newServer(t, reply{status: 200, body: body})
			resp, err := srv.model(t).Complete(context.Background(), question, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.FinishReason != want {
				t.Errorf("finish reason %q, want %q", resp.FinishReason, want)
			}
		})
	}
}

// The request: the path and alt=sse, the key in x-goog-api-key, the
// idempotency key; in the body the system instruction, the conversation
// (a model content with its function calls, their thought signatures and
// the id a server gave; the results of one turn in one user content, in
// the order of the calls, whatever the order of their messages), the
// function declarations with their JSON Schema as it is, the tool config.
func TestRequest(t *testing.T) {
	sig := []byte("a thought signature")
	req := llm.Request{
		System: "You count words.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "count: one two"},
			{Role: llm.RoleAssistant, Content: "Counting.", ToolCalls: []llm.ToolCall{
				{ID: derivedPrefix + "0011223344556677" + sigSeparator + base64.RawURLEncoding.EncodeToString(sig), Name: "word-count", Arguments: json.RawMessage(`{"text":"one two"}`)},
				{ID: "server-id-7", Name: "clock"}, // an id the server gave, no arguments: sent as none
			}},
			{Role: llm.RoleTool, ToolCallID: "server-id-7", Content: "12:00"}, // before the first call's
			{Role: llm.RoleTool, ToolCallID: derivedPrefix + "0011223344556677" + sigSeparator + base64.RawURLEncoding.EncodeToString(sig), Content: "2"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: derivedPrefix + "8899aabbccddeeff", Name: "word-count", Arguments: json.RawMessage(`{"text":`)}}},
			{Role: llm.RoleTool, ToolCallID: derivedPrefix + "8899aabbccddeeff", Content: "error: the arguments are not JSON"},
			{Role: llm.RoleUser, Content: ""}, // empty: left out
			{Role: llm.RoleUser, Content: "and: three"},
		},
		Tools:          []llm.Tool{wordCount, {Name: "clock"}},
		RequiredTool:   "word-count",
		IdempotencyKey: "llm/llm-u2",
	}
	want := `{
		"contents": [
			{"role": "user", "parts": [{"text": "count: one two"}]},
			{"role": "model", "parts": [
				{"text": "Counting."},
				{"functionCall": {"name": "word-count", "args": {"text": "one two"}}, "thoughtSignature": "` + base64.StdEncoding.EncodeToString(sig) + `"},
				{"functionCall": {"id": "server-id-7", "name": "clock"}}
			]},
			{"role": "user", "parts": [
				{"functionResponse": {"name": "word-count", "response": {"output": "2"}}},
				{"functionResponse": {"id": "server-id-7", "name": "clock", "response": {"output": "12:00"}}}
			]},
			{"role": "model", "parts": [{"functionCall": {"name": "word-count"}}]},
			{"role": "user", "parts": [{"functionResponse": {"name": "word-count", "response": {"output": "error: the arguments are not JSON"}}}]},
			{"role": "user", "parts": [{"text": "and: three"}]}
		],
		"systemInstruction": {"role": "user", "parts": [{"text": "You count words."}]},
		"tools": [{"functionDeclarations": [
			{"name": "word-count", "description": "Counts the words of a text.",
				"parametersJsonSchema": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 10000}}, "required": ["text"], "additionalProperties": false}},
			{"name": "clock"}
		]}],
		"toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["word-count"]}},
		"generationConfig": {"maxOutputTokens": 512}
	}`
	srv := newServer(t, sse(t, "text.sse"))
	if _, err := srv.model(t, Config{MaxTokens: 512}).Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.received()[0]
	if got.path != streamPath || got.query != "alt=sse" {
		t.Errorf("request to %s?%s, want %s?alt=sse", got.path, got.query, streamPath)
	}
	assertJSON(t, got.body, want)
	if k := got.header.Get("X-Goog-Api-Key"); k != "AIza-test" {
		t.Errorf("x-goog-api-key = %q, want the key", k)
	}
	if k := got.header.Get("Idempotency-Key"); k != "llm/llm-u2" {
		t.Errorf("Idempotency-Key = %q, want llm/llm-u2", k)
	}
	if tp := got.header.Get("Traceparent"); tp != "" {
		t.Errorf("traceparent %q sent", tp)
	}
}

func TestToolChoice(t *testing.T) {
	tests := []struct {
		required string
		want     any // the toolConfig sent; nil for none
	}{
		{required: "", want: nil},
		{required: llm.AnyTool, want: map[string]any{"functionCallingConfig": map[string]any{"mode": "ANY"}}},
		{required: "word-count", want: map[string]any{"functionCallingConfig": map[string]any{"mode": "ANY", "allowedFunctionNames": []any{"word-count"}}}},
	}
	for _, tt := range tests {
		t.Run(cmpOr(tt.required, "none"), func(t *testing.T) {
			srv := newServer(t, sse(t, "text.sse"))
			req := question
			req.RequiredTool = tt.required
			req.IdempotencyKey = ""
			if _, err := srv.model(t).Complete(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			got := srv.received()[0]
			var body map[string]any
			json.Unmarshal(got.body, &body)
			if !reflect.DeepEqual(body["toolConfig"], tt.want) {
				t.Errorf("toolConfig = %v, want %v", body["toolConfig"], tt.want)
			}
			if gc, _ := body["generationConfig"].(map[string]any); len(gc) > 0 { // the SDK sends {}
				t.Errorf("generationConfig %v sent with no MaxTokens", gc)
			}
			if k, ok := got.header["Idempotency-Key"]; ok {
				t.Errorf("Idempotency-Key %q sent for an empty key", k)
			}
		})
	}
}

// The IDs the provider derives are the same for the same reply to the same
// request, differ between the calls of a reply and between replies to
// different requests, and go back to the API as no id at all, the
// signature as the part's thoughtSignature.
func TestCallIDs(t *testing.T) {
	srv := newServer(t, sse(t, "parallel_function_calls.sse"))
	m := srv.model(t)
	first, err := m.Complete(context.Background(), question, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := m.Complete(context.Background(), question, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`^gemini-[0-9a-f]{16}$`)
	a, b := first.ToolCalls[0].ID, first.ToolCalls[1].ID
	if !id.MatchString(a) || !id.MatchString(b) || a == b {
		t.Errorf("IDs %q, %q: want two different gemini-<16 hex>", a, b)
	}
	if !reflect.DeepEqual(first.ToolCalls, again.ToolCalls) {
		t.Errorf("the same reply to the same request has other IDs: %v, then %v", first.ToolCalls, again.ToolCalls)
	}
	// The next turn: the same reply to a longer conversation has other IDs,
	// and the conversation is valid.
	next := question
	next.Messages = append(append([]llm.Message(nil), question.Messages...),
		llm.Message{Role: llm.RoleAssistant, Content: first.Text, ToolCalls: first.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: a, Content: "2"},
		llm.Message{Role: llm.RoleTool, ToolCallID: b, Content: "3"})
	third, err := m.Complete(context.Background(), next, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range third.ToolCalls {
		if c.ID == a || c.ID == b {
			t.Errorf("a call of the next turn has the ID %q of a call before it", c.ID)
		}
	}
	next.Messages = append(next.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: third.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: third.ToolCalls[0].ID, Content: "2"},
		llm.Message{Role: llm.RoleTool, ToolCallID: third.ToolCalls[1].ID, Content: "3"})
	if err := next.Validate(); err != nil {
		t.Errorf("the conversation with the IDs of both turns: %v", err)
	}
	var body struct {
		Contents []struct {
			Role  string
			Parts []map[string]any
		}
	}
	json.Unmarshal(srv.received()[2].body, &body)
	model := body.Contents[1]
	if model.Role != "model" || len(model.Parts) != 3 {
		t.Fatalf("the second content is %+v, want the model's text and two calls", model)
	}
	for _, p := range model.Parts[1:] {
		fc, _ := p["functionCall"].(map[string]any)
		if _, ok := fc["id"]; ok || fc["name"] != "word-count" {
			t.Errorf("a call sent back as %v, want its name and no id", p)
		}
	}
}

func TestBrokenStreams(t *testing.T) {
	text := strings.SplitAfter(sse(t, "text.sse").body, "\n\n")
	calls := strings.SplitAfter(sse(t, "parallel_function_calls.sse").body, "\n\n")
	tests := []struct {
		name   string
		reply  reply
		chunks []string // before the error
		kind   error    // nil for a server's error without a kind
		want   string   // the whole message
	}{
		{
			name:   "an UNAVAILABLE error event in the middle: overloaded",
			reply:  sse(t, "error_mid_stream.sse"),
			chunks: []string{"Hel"},
			kind:   llm.ErrOverloaded,
			want:   "gemini: overloaded (in the stream): The model is overloaded. Please try again later.",
		},
		{
			name:   "an INTERNAL error event in the middle",
			reply:  reply{status: 200, body: text[0] + "data: " + apiError(500, "INTERNAL", "An internal error has occurred.") + "\n\n"},
			chunks: []string{"Hello"},
			want:   "gemini: the server reported an error in the stream: An internal error has occurred.",
		},
		{
			name:   "cut in the middle of the chunk of a function call",
			reply:  sse(t, "cut_function_call.sse"),
			chunks: []string{"Counting."},
			kind:   llm.ErrMalformedStream,
			want:   "gemini: malformed stream from $URL: a chunk that is not JSON: unexpected end of JSON input",
		},
		{
			name:   "cut after a function call, before the finishReason",
			reply:  reply{status: 200, body: calls[0] + strings.Replace(calls[1], `, "finishReason": "STOP"`, "", 1)},
			chunks: []string{"Counting both."},
			kind:   llm.ErrMalformedStream,
			want: "gemini: malformed stream from $URL: the stream ended before the model finished (no finishReason), after tool call " +
				derivedID(question, "b9TxaJ2xOYS3nvgPkJ2TmAc", 1, "word-count", `{"text":"three four five"}`) + " (word-count)",
		},
		{
			name:   "cut before the finishReason",
			reply:  reply{status: 200, body: text[0] + text[1]},
			chunks: []string{"Hello", "! How can I"},
			kind:   llm.ErrMalformedStream,
			want:   "gemini: malformed stream from $URL: the stream ended before the model finished (no finishReason)",
		},
		{
			name:  "nothing at all",
			reply: reply{status: 200, body: ""},
			kind:  llm.ErrMalformedStream,
			want:  "gemini: malformed stream from $URL: the stream ended before the model began (no chunk)",
		},
		{
			name:  "a chunk that is not JSON",
			reply: reply{status: 200, body: "data: {\"candidates\": [{\"content\n\n"},
			kind:  llm.ErrMalformedStream,
			want:  "gemini: malformed stream from $URL: a chunk that is not JSON: unexpected end of JSON input",
		},
		{
			name:  "an event of another kind than data",
			reply: reply{status: 200, body: "event: message\ndata: {}\n\n"},
			kind:  llm.ErrMalformedStream,
			want:  "gemini: malformed stream from $URL: invalid stream chunk: event: message data: {}",
		},
		{
			name:  "a function call without a name",
			reply: reply{status: 200, body: `data: {"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}], "role": "model"}}]}` + "\n\n"},
			kind:  llm.ErrMalformedStream,
			want:  "gemini: malformed stream from $URL: a functionCall part without a name (call 0)",
		},
		{
			name:   "text after the finishReason",
			reply:  reply{status: 200, body: strings.Join(text, "") + text[0]},
			chunks: []string{"Hello", "! How can I", " help you today?"},
			kind:   llm.ErrMalformedStream,
			want:   "gemini: malformed stream from $URL: content after the finish reason STOP",
		},
		{
			name:  "a whole response instead of a stream",
			reply: reply{status: 200, body: `{"candidates": [{"content": {"parts": [{"text": "Hi"}], "role": "model"}, "finishReason": "STOP"}]}`},
			kind:  llm.ErrMalformedStream,
			want:  `gemini: malformed stream from $URL: invalid stream chunk: {"candidates": [{"content": {"parts": [{"text": "Hi"}], "role": "model"}, "finishReason": "STOP"}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.reply)
			var chunks []string
			_, err := srv.model(t).Complete(context.Background(), question, func(c string) { chunks = append(chunks, c) })
			assertError(t, err, tt.kind, strings.ReplaceAll(tt.want, "$URL", srv.URL+"/"))
			if !reflect.DeepEqual(chunks, tt.chunks) {
				t.Errorf("chunks = %q, want %q", chunks, tt.chunks)
			}
			if n := len(srv.received()); n != 1 {
				t.Errorf("%d requests, want 1: a stream that started is not retried", n)
			}
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name       string
		replies    []reply
		kind       error
		status     int
		retryAfter time.Duration
		want       string
		requests   int
	}{
		{
			name: "400: a key that is not valid",
			replies: []reply{{status: 400, body: apiError(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
				`{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}`)}},
			kind: llm.ErrUnauthorized, status: 400, requests: 1,
			want: "gemini: unauthorized (HTTP 400): API key not valid. Please pass a valid API key.",
		},
		{
			name:    "403: permission denied",
			replies: []reply{{status: 403, body: apiError(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")}},
			kind:    llm.ErrUnauthorized, status: 403, requests: 1,
			want: "gemini: unauthorized (HTTP 403): Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
		},
		{
			name: "429 RESOURCE_EXHAUSTED whose RetryInfo asks for more than two minutes: no retry",
			replies: []reply{{status: 429, body: apiError(429, "RESOURCE_EXHAUSTED",
				"You exceeded your current quota, please check your plan and billing details.", quotaFailure, retryInfoDetail("300s"))}},
			kind: llm.ErrRateLimited, status: 429, retryAfter: 5 * time.Minute, requests: 1,
			want: "gemini: rate limited (HTTP 429, retry after 5m0s): You exceeded your current quota, please check your plan and billing details.",
		},
		{
			name: "429 until the two retries run out, each after the RetryInfo's wait",
			replies: []reply{{status: 429, body: apiError(429, "RESOURCE_EXHAUSTED",
				"Resource has been exhausted (e.g. check quota).", retryInfoDetail("0.005s"))}},
			kind: llm.ErrRateLimited, status: 429, retryAfter: 5 * time.Millisecond, requests: 3,
			want: "gemini: rate limited (HTTP 429, retry after 5ms): Resource has been exhausted (e.g. check quota).",
		},
		{
			name: "429 with a Retry-After header and no RetryInfo",
			replies: []reply{{status: 429, header: map[string]string{"Retry-After": "200"},
				body: apiError(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).")}},
			kind: llm.ErrRateLimited, status: 429, retryAfter: 200 * time.Second, requests: 1,
			want: "gemini: rate limited (HTTP 429, retry after 3m20s): Resource has been exhausted (e.g. check quota).",
		},
		{
			name: "503 UNAVAILABLE: overloaded, after the retries",
			replies: []reply{{status: 503, body: apiError(503, "UNAVAILABLE", "The model is overloaded. Please try again later.",
				retryInfoDetail("0.001s"))}},
			kind: llm.ErrOverloaded, status: 503, retryAfter: time.Millisecond, requests: 3,
			want: "gemini: overloaded (HTTP 503, retry after 1ms): The model is overloaded. Please try again later.",
		},
		{
			name: "400: the input is longer than the context",
			replies: []reply{{status: 400, body: apiError(400, "INVALID_ARGUMENT",
				"The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).")}},
			kind: llm.ErrContextLength, status: 400, requests: 1,
			want: "gemini: context length exceeded (HTTP 400): The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).",
		},
		{
			name:    "400: another invalid argument",
			replies: []reply{{status: 400, body: apiError(400, "INVALID_ARGUMENT", "Please ensure that function response turn comes immediately after a function call turn.")}},
			status:  400, requests: 1,
			want: "gemini: HTTP 400: Please ensure that function response turn comes immediately after a function call turn.",
		},
		{
			name:    "500 INTERNAL, after the retries",
			replies: []reply{{status: 500, header: map[string]string{"Retry-After": "0.001"}, body: apiError(500, "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting")}},
			status:  500, requests: 3,
			want: "gemini: HTTP 500: An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
		},
		{
			name:    "502 with an HTML page, after the retries",
			replies: []reply{{status: 502, header: map[string]string{"Retry-After": "0.001"}, body: "<html>Bad Gateway</html>"}},
			status:  502, requests: 3,
			want: "gemini: HTTP 502: Bad Gateway",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.replies...)
			_, err := srv.model(t).Complete(context.Background(), question, nil)
			e := assertError(t, err, tt.kind, tt.want)
			if e.StatusCode != tt.status || e.RetryAfter != tt.retryAfter {
				t.Errorf("status %d, retry after %v; want %d, %v", e.StatusCode, e.RetryAfter, tt.status, tt.retryAfter)
			}
			if n := len(srv.received()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
		})
	}
}

// A model the API does not know: HTTP 404 with the API's words.
func TestNoSuchModel(t *testing.T) {
	srv := newServer(t, sse(t, "text.sse"))
	m, err := New(Config{APIKey: "AIza-test", BaseURL: srv.URL, Model: "nonesuch"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Complete(context.Background(), question, nil)
	assertError(t, err, nil, "gemini: HTTP 404: models/nonesuch is not found for API version v1beta")
}

// A RetryInfo within two minutes but past the call's MaxDuration is not
// waited for: the call ends at once, rate limited, with the wait.
func TestNoRetryPastTheDeadline(t *testing.T) {
	srv := newServer(t, reply{status: 429, body: apiError(429, "RESOURCE_EXHAUSTED", "slow down", retryInfoDetail("30s"))})
	start := time.Now()
	_, err := srv.model(t, Config{MaxDuration: 10 * time.Second}).Complete(context.Background(), question, nil)
	e := assertError(t, err, llm.ErrRateLimited, "gemini: rate limited (HTTP 429, retry after 30s): slow down")
	if e.RetryAfter != 30*time.Second || len(srv.received()) != 1 {
		t.Errorf("retry after %v, %d requests; want 30s and 1", e.RetryAfter, len(srv.received()))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v: the provider waited", d)
	}
}

// A 429 is retried as the server asks, with the same body and idempotency
// key, and the call succeeds; MaxRetries < 0 retries nothing.
func TestRetriesWithTheSameKey(t *testing.T) {
	limited := reply{status: 429, body: apiError(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", retryInfoDetail("0.010s"))}
	srv := newServer(t, limited, limited, sse(t, "text.sse"))
	resp, err := srv.model(t).Complete(context.Background(), question, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Hello! How can I help you today?" {
		t.Errorf("text = %q", resp.Text)
	}
	reqs := srv.received()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if k := r.header.Get("Idempotency-Key"); k != question.IdempotencyKey {
			t.Errorf("request %d: Idempotency-Key = %q, want %q", i, k, question.IdempotencyKey)
		}
		if string(r.body) != string(reqs[0].body) {
			t.Errorf("request %d: a body other than the first's", i)
		}
	}
	none := newServer(t, limited, sse(t, "text.sse"))
	_, err = none.model(t, Config{MaxRetries: -1}).Complete(context.Background(), question, nil)
	assertError(t, err, llm.ErrRateLimited, "gemini: rate limited (HTTP 429, retry after 10ms): Resource has been exhausted (e.g. check quota).")
	if n := len(none.received()); n != 1 {
		t.Errorf("MaxRetries -1: %d requests, want 1", n)
	}
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nobody listens there now
	m, err := New(Config{APIKey: "AIza-test", BaseURL: "http://" + addr, Model: testModel, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Complete(context.Background(), question, nil)
	assertError(t, err, llm.ErrUnreachable,
		"gemini: cannot reach http://"+addr+"/: dial tcp "+addr+": connect: connection refused")
}

func clearEnv(t *testing.T) {
	for _, v := range []string{EnvAPIKey, EnvGoogleAPIKey, EnvBaseURL, EnvGoogleBaseURL, EnvModel, "GOOGLE_GENAI_USE_VERTEXAI"} {
		t.Setenv(v, "")
	}
}

func TestNew(t *testing.T) {
	clearEnv(t)
	_, err := New(Config{Model: testModel})
	assertError(t, err, llm.ErrMissingKey, "gemini: no API key for https://generativelanguage.googleapis.com/: set GEMINI_API_KEY (or GOOGLE_API_KEY) or Config.APIKey")

	if _, err := New(Config{APIKey: "AIza-test"}); err == nil || err.Error() != "gemini: no model named: set GEMINI_MODEL or Config.Model (such as gemini-2.5-flash)" {
		t.Errorf("New without a model: %v", err)
	}
	for _, base := range []string{"localhost:4000", "ftp://example.com/", "http://", "http://[::1"} {
		if _, err := New(Config{Model: "m", BaseURL: base}); err == nil || !strings.Contains(err.Error(), "is not an http or https URL") {
			t.Errorf("New with base URL %q: %v", base, err)
		}
	}
	for _, c := range []Config{{MaxTokens: -1}, {MaxResponseBytes: -1}, {MaxBodyBytes: -1}, {MaxDuration: -1}, {MaxFirstByteWait: -1}, {MaxIdle: -time.Second}} {
		c.Model, c.BaseURL = "m", "http://localhost:4000"
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), "is negative") {
			t.Errorf("New(%+v): %v, want an error", c, err)
		}
	}
	local, err := New(Config{Model: testModel, BaseURL: "http://localhost:4000"})
	if err != nil {
		t.Fatalf("a server on this machine needs no key: %v", err)
	}
	if got := local.String(); got != testModel+" at http://localhost:4000/" {
		t.Errorf("String = %q", got)
	}
	if local.ProviderName() != "gcp.gemini" || local.ModelName() != testModel {
		t.Errorf("names %q, %q", local.ProviderName(), local.ModelName())
	}
	if local.retries != DefaultMaxRetries || local.maxTokens != 0 {
		t.Errorf("a zero Config's retries %d and max tokens %d, want %d and 0", local.retries, local.maxTokens, DefaultMaxRetries)
	}
	if l := local.limits; l.ResponseBytes != DefaultMaxResponseBytes || l.BodyBytes != DefaultMaxBodyBytes || l.Duration != DefaultMaxDuration ||
		l.FirstByteWait != DefaultMaxFirstByteWait || l.Idle != DefaultMaxIdle {
		t.Errorf("the limits of a zero Config are %+v, want the defaults", *l)
	}
}

// From the environment: the model, the base URL, the key (GOOGLE_API_KEY
// over GEMINI_API_KEY, as the SDK documents); Vertex AI's switch is not
// obeyed; a server on this machine with no key is sent none.
func TestFromEnv(t *testing.T) {
	offline := llm.Scripted{Reply: llm.Script(llm.Response{Text: "offline"})}
	clearEnv(t)
	if m, err := FromEnv(offline); err != nil {
		t.Fatal(err)
	} else if resp, err := m.Complete(context.Background(), question, nil); err != nil || resp.Text != "offline" {
		t.Fatalf("FromEnv with no model named answers %+v, %v; want the offline model's answer", resp, err)
	}

	t.Setenv(EnvModel, testModel)
	_, err := FromEnv(offline)
	assertError(t, err, llm.ErrMissingKey, "gemini: no API key for https://generativelanguage.googleapis.com/: set GEMINI_API_KEY (or GOOGLE_API_KEY) or Config.APIKey")

	srv := newServer(t, sse(t, "text.sse"))
	t.Setenv(EnvBaseURL, srv.URL)
	t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
	for _, tt := range []struct {
		gemini, google, want string
	}{{"AIza-gemini", "", "AIza-gemini"}, {"", "AIza-google", "AIza-google"}, {"AIza-gemini", "AIza-google", "AIza-google"}, {"", "", ""}} {
		t.Setenv(EnvAPIKey, tt.gemini)
		t.Setenv(EnvGoogleAPIKey, tt.google)
		m, err := FromEnv(offline)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := m.Complete(context.Background(), question, nil)
		if err != nil || resp.Text != "Hello! How can I help you today?" {
			t.Fatalf("Complete = %+v, %v", resp, err)
		}
		reqs := srv.received()
		got := reqs[len(reqs)-1]
		if k, ok := got.header["X-Goog-Api-Key"]; tt.want == "" && ok || tt.want != "" && got.header.Get("X-Goog-Api-Key") != tt.want {
			t.Errorf("GEMINI_API_KEY %q, GOOGLE_API_KEY %q: x-goog-api-key %q, want %q", tt.gemini, tt.google, k, tt.want)
		}
		if got.path != streamPath {
			t.Errorf("request to %s, want %s (the Gemini API's path, not Vertex AI's)", got.path, streamPath)
		}
	}
}

// Cancelling the ctx while the server holds the stream open returns at
// once, and the server sees its connection closed.
func TestCancelMidStream(t *testing.T) {
	events := strings.SplitAfter(sse(t, "text.sse").body, "\n\n")
	serverDone := make(chan struct{})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(serverDone)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, events[0])
		http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
			t.Error("the server's request did not end: the connection stayed open")
		}
	}))
	t.Cleanup(srv.Close)
	m, err := New(Config{APIKey: "AIza-test", BaseURL: srv.URL, Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gotChunk := make(chan struct{})
	type result struct {
		err error
		at  time.Time
	}
	returned := make(chan result, 1)
	go func() {
		_, err := m.Complete(ctx, question, func(string) { close(gotChunk) })
		returned <- result{err, time.Now()}
	}()
	select {
	case <-gotChunk:
	case <-time.After(30 * time.Second):
		t.Fatal("no chunk in 30s")
	}
	cancelled := time.Now()
	cancel()
	var res result
	select {
	case res = <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("Complete did not return 30s after the cancellation")
	}
	if !errors.Is(res.err, context.Canceled) {
		t.Errorf("Complete: %v, want context.Canceled", res.err)
	}
	if latency := res.at.Sub(cancelled); latency > 100*time.Millisecond {
		t.Errorf("returned %v after the cancellation, want within 100ms", latency)
	}
	select {
	case <-serverDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the server's request did not end 30s after the cancellation")
	}
}

// Traced: the span of a call names the provider and the model, and
// carries the tokens, the cached ones too.
func TestTraced(t *testing.T) {
	srv := newServer(t, sse(t, "cached.sse"))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	if _, err := llm.Traced(srv.model(t), tp, nil).Complete(context.Background(), question, nil); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 1 || spans[0].Name() != "chat "+testModel {
		t.Fatalf("spans %v, want one chat %s", spans, testModel)
	}
	want := map[string]string{
		"gen_ai.provider.name":                 "gcp.gemini",
		"gen_ai.request.model":                 testModel,
		"gen_ai.usage.input_tokens":            "2116",
		"gen_ai.usage.output_tokens":           "42",
		"gen_ai.usage.cache_read.input_tokens": "1856",
		"gen_ai.response.finish_reasons":       `["stop"]`,
	}
	got := map[string]string{}
	for _, kv := range spans[0].Attributes() {
		got[string(kv.Key)] = kv.Value.Emit()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// assertError checks that err is an *llm.Error of kind (nil: none of the
// kinds) whose message is want, on one line, and returns it.
func assertError(t *testing.T, err error, kind error, want string) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want an *llm.Error", err, err)
	}
	if e.Kind != kind {
		t.Errorf("kind %v, want %v", e.Kind, kind)
	}
	if kind != nil && !errors.Is(err, kind) {
		t.Errorf("errors.Is(err, %v) = false", kind)
	}
	if err.Error() != want {
		t.Errorf("message:\n got %s\nwant %s", err, want)
	}
	if strings.ContainsAny(err.Error(), "\r\n") {
		t.Errorf("message on more than one line: %q", err)
	}
	return e
}

// assertJSON checks that got is the JSON want, whatever the spacing and
// the order of keys.
func assertJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("the body is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		pretty, _ := json.MarshalIndent(g, "", "  ")
		t.Errorf("body:\n%s\nwant:\n%s", pretty, want)
	}
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
