package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/moora-go/moora/automata/llm"
)

// The tests talk to a server on loopback that speaks the Messages API as
// Anthropic documents it: POST /v1/messages, answered with server-sent
// events (event: and data: lines) or with a JSON error body of
// {"type":"error","error":{"type":…,"message":…}}. The SDK is the real one,
// over HTTP: nothing of it is mocked. The streams of testdata are in the
// documented format, written for these tests, not recorded (see
// testdata/README.md).

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

// apiError is the body of an HTTP error of the API.
func apiError(typ, msg string) string {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg},
		"request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"})
	return string(b)
}

// request is what a test server received.
type request struct {
	path   string
	header http.Header
	body   []byte
}

// server is a test server of the Messages API: it answers the nth request
// with the nth reply (the last one again after that), streaming event by
// event, and records every request.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	requests []request
}

func newServer(t *testing.T, replies ...reply) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.requests = append(s.requests, request{path: r.URL.Path, header: r.Header.Clone(), body: body})
		rep := replies[min(len(s.requests), len(replies))-1]
		s.mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, apiError("not_found_error", "Not found"))
			return
		}
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Request-Id", "req_011CSHoEeqs5C35K2UUqR7Fy")
		if rep.status != http.StatusOK {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rep.status)
			io.WriteString(w, rep.body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
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
	cfg.APIKey, cfg.BaseURL, cfg.Model = "sk-ant-test", s.URL, "claude-test"
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

func TestStreams(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		chunks []string
		want   llm.Response
	}{
		{
			name:   "text, with a ping",
			file:   "text.sse",
			chunks: []string{"Hello", "! How", " can I", " help you", " today?"},
			want: llm.Response{Text: "Hello! How can I help you today?", FinishReason: llm.FinishStop,
				Usage: llm.Usage{InputTokens: 21, OutputTokens: 12}},
		},
		{
			name:   "the documented example: text, then a tool call whose input arrives in five pieces",
			file:   "documented_tool_use.sse",
			chunks: []string{"Okay", ",", " let", "'s", " count", " the", " words", " of", " that", " text", "."},
			want: llm.Response{
				Text: "Okay, let's count the words of that text.",
				ToolCalls: []llm.ToolCall{{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "word-count",
					Arguments: json.RawMessage(`{"text": "count these words"}`)}},
				FinishReason: llm.FinishToolCalls,
				Usage:        llm.Usage{InputTokens: 472, OutputTokens: 89},
			},
		},
		{
			name:   "text, then two parallel tool calls",
			file:   "parallel_tool_calls.sse",
			chunks: []string{"Counting", " both."},
			want: llm.Response{
				Text: "Counting both.",
				ToolCalls: []llm.ToolCall{
					{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "word-count", Arguments: json.RawMessage(`{"text": "one two"}`)},
					{ID: "toolu_01Hk2aEVxMx9MhZ3kLWNv5Rr", Name: "word-count", Arguments: json.RawMessage(`{"text": "three four five"}`)},
				},
				FinishReason: llm.FinishToolCalls,
				Usage:        llm.Usage{InputTokens: 472, OutputTokens: 89},
			},
		},
		{
			name:   "a prompt mostly read from the cache: the input tokens are all three counts",
			file:   "cached.sse",
			chunks: []string{"Two", " words."},
			want: llm.Response{Text: "Two words.", FinishReason: llm.FinishStop,
				Usage: llm.Usage{InputTokens: 12 + 248 + 1856, OutputTokens: 6, CacheReadInputTokens: 1856, CacheCreationInputTokens: 248}},
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

// The stop reasons of the API are llm's finish reasons.
func TestStopReasons(t *testing.T) {
	for stop, want := range map[string]llm.FinishReason{
		"end_turn": llm.FinishStop, "stop_sequence": llm.FinishStop, "tool_use": llm.FinishToolCalls,
		"max_tokens": llm.FinishLength, "model_context_window_exceeded": llm.FinishLength,
		"refusal": llm.FinishContentFilter, "pause_turn": "pause_turn",
	} {
		t.Run(stop, func(t *testing.T) {
			body := strings.Replace(sse(t, "text.sse").body, `"stop_reason":"end_turn"`, `"stop_reason":"`+stop+`"`, 1)
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

// The request body carries the system prompt, the conversation with its
// tool calls and results (the results of one turn in one user message,
// before the user's next words), the tools, the tool choice and the cache
// breakpoints; the headers carry the key and the idempotency key.
func TestRequest(t *testing.T) {
	req := llm.Request{
		System: "You count words.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "count: one two"},
			{Role: llm.RoleAssistant, Content: "Counting.", ToolCalls: []llm.ToolCall{
				{ID: "toolu_1", Name: "word-count", Arguments: json.RawMessage(`{"text":"one two"}`)},
				{ID: "toolu_2", Name: "clock"}, // no arguments: sent as {}
			}},
			{Role: llm.RoleTool, ToolCallID: "toolu_1", Content: "2"},
			{Role: llm.RoleTool, ToolCallID: "toolu_2", Content: "12:00"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "toolu_3", Name: "word-count", Arguments: json.RawMessage(`{"text":`)}}},
			{Role: llm.RoleTool, ToolCallID: "toolu_3", Content: "error: the arguments are not JSON"},
			{Role: llm.RoleUser, Content: "and: three"},
		},
		Tools:          []llm.Tool{wordCount, {Name: "clock"}},
		RequiredTool:   "word-count",
		IdempotencyKey: "llm/llm-u2",
	}
	want := `{
		"model": "claude-test",
		"max_tokens": 8192,
		"stream": true,
		"system": [{"type": "text", "text": "You count words.", "cache_control": {"type": "ephemeral"}}],
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "count: one two"}]},
			{"role": "assistant", "content": [
				{"type": "text", "text": "Counting."},
				{"type": "tool_use", "id": "toolu_1", "name": "word-count", "input": {"text": "one two"}},
				{"type": "tool_use", "id": "toolu_2", "name": "clock", "input": {}}
			]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "2"}]},
				{"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "12:00"}]}
			]},
			{"role": "assistant", "content": [
				{"type": "tool_use", "id": "toolu_3", "name": "word-count", "input": {}}
			]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "toolu_3", "content": [{"type": "text", "text": "error: the arguments are not JSON"}],
					"cache_control": {"type": "ephemeral"}},
				{"type": "text", "text": "and: three"}
			]}
		],
		"tools": [
			{"name": "word-count", "description": "Counts the words of a text.",
				"input_schema": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 10000}}, "required": ["text"], "additionalProperties": false}},
			{"name": "clock", "input_schema": {"type": "object", "properties": {}}, "cache_control": {"type": "ephemeral"}}
		],
		"tool_choice": {"type": "tool", "name": "word-count"}
	}`
	srv := newServer(t, sse(t, "documented_tool_use.sse"))
	if _, err := srv.model(t).Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.received()[0]
	assertJSON(t, got.body, want)
	if k := got.header.Get("Idempotency-Key"); k != "llm/llm-u2" {
		t.Errorf("Idempotency-Key = %q, want llm/llm-u2", k)
	}
	// The SDK's way of sending a key, whichever header it is.
	if a, x := got.header.Get("Authorization"), got.header.Get("X-Api-Key"); a != "Bearer sk-ant-test" && x != "sk-ant-test" {
		t.Errorf("Authorization = %q, X-Api-Key = %q: the key is not sent", a, x)
	}
	if v := got.header.Get("Anthropic-Version"); v == "" {
		t.Error("no anthropic-version header")
	}
	if tp := got.header.Get("Traceparent"); tp != "" {
		t.Errorf("traceparent %q sent: the SDK's telemetry is on", tp)
	}
}

// The cache breakpoints: the system prompt, the last tool, and the last
// block before the newest user message, none where there is nothing of
// the kind, and none at all with NoPromptCache.
func TestCacheBreakpoints(t *testing.T) {
	user := func(s string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: s} }
	assistant := func(s string) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: s} }
	tests := []struct {
		name    string
		req     llm.Request
		noCache bool
		want    []string // the paths of the blocks with cache_control, in the body's order
	}{
		{name: "first turn: system and tools", req: question, want: []string{"tools[0]", "system[0]"}},
		{name: "no system, no tools, one message", req: llm.Request{Messages: []llm.Message{user("hi")}}, want: nil},
		{name: "a conversation: the assistant's reply before the newest user message",
			req:  llm.Request{System: "s", Messages: []llm.Message{user("a"), assistant("b"), user("c"), assistant("d"), user("e")}},
			want: []string{"system[0]", "messages[3].content[0]"}},
		{name: "the newest user message first: nothing before it",
			req:  llm.Request{Messages: []llm.Message{user("a"), assistant("b")}},
			want: nil},
		{name: "an empty message before the newest: the block before it",
			req:  llm.Request{Messages: []llm.Message{user("a"), assistant("b"), user(""), user("c")}},
			want: []string{"messages[1].content[0]"}},
		{name: "NoPromptCache", req: question, noCache: true, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, sse(t, "text.sse"))
			if _, err := srv.model(t, Config{NoPromptCache: tt.noCache}).Complete(context.Background(), tt.req, nil); err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			if err := json.Unmarshal(srv.received()[0].body, &body); err != nil {
				t.Fatal(err)
			}
			got := breakpoints(body)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cache_control at %q, want %q", got, tt.want)
			}
			if len(got) > 4 {
				t.Errorf("%d breakpoints, past the API's 4", len(got))
			}
		})
	}
}

// breakpoints are the paths of the objects of a request body with a
// cache_control, tools first, then the system prompt, then the messages.
func breakpoints(body map[string]any) []string {
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if cc, ok := v["cache_control"].(map[string]any); ok && cc["type"] == "ephemeral" {
				out = append(out, path)
			}
			for _, k := range []string{"content"} {
				if c, ok := v[k]; ok {
					walk(path+"."+k, c)
				}
			}
		case []any:
			for i, e := range v {
				walk(path+"["+itoa(i)+"]", e)
			}
		}
	}
	for _, k := range []string{"tools", "system", "messages"} {
		if v, ok := body[k]; ok {
			walk(k, v)
		}
	}
	return out
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestToolChoice(t *testing.T) {
	tests := []struct {
		required string
		want     any // the tool_choice sent; nil for none
	}{
		{required: "", want: nil},
		{required: llm.AnyTool, want: map[string]any{"type": "any"}},
		{required: "word-count", want: map[string]any{"type": "tool", "name": "word-count"}},
	}
	for _, tt := range tests {
		t.Run(tt.required, func(t *testing.T) {
			srv := newServer(t, sse(t, "text.sse"))
			req := question
			req.RequiredTool = tt.required
			req.IdempotencyKey = ""
			if _, err := srv.model(t).Complete(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			got := srv.received()[0]
			var body map[string]any
			if err := json.Unmarshal(got.body, &body); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(body["tool_choice"], tt.want) {
				t.Errorf("tool_choice = %#v, want %#v", body["tool_choice"], tt.want)
			}
			if k, ok := got.header["Idempotency-Key"]; ok {
				t.Errorf("Idempotency-Key %q sent for an empty key", k)
			}
		})
	}
}

func TestBrokenStreams(t *testing.T) {
	start := strings.SplitAfter(sse(t, "text.sse").body, "\n\n")
	tests := []struct {
		name   string
		reply  reply
		chunks []string // before the error
		kind   error    // nil for a server's error without a kind
		want   string   // the whole message
	}{
		{
			name:   "an overloaded_error event in the middle",
			reply:  sse(t, "error_mid_stream.sse"),
			chunks: []string{"Hel"},
			kind:   llm.ErrOverloaded,
			want:   "anthropic: overloaded (in the stream): Overloaded",
		},
		{
			name:   "an api_error event in the middle",
			reply:  reply{status: 200, body: start[0] + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}\n\n"},
			chunks: nil,
			want:   "anthropic: the server reported an error in the stream: Internal server error",
		},
		{
			name:   "cut in the middle of a tool call's input",
			reply:  sse(t, "cut_tool_call.sse"),
			chunks: []string{"Counting."},
			kind:   llm.ErrMalformedStream,
			want:   "anthropic: malformed stream from $URL: the stream ended in the middle of tool call toolu_01QmZ3vDrf5yU6Jp8gM4sN2c (word-count)",
		},
		{
			name:   "cut before message_stop",
			reply:  reply{status: 200, body: strings.Join(start[:len(start)-2], "")},
			chunks: []string{"Hello", "! How", " can I", " help you", " today?"},
			kind:   llm.ErrMalformedStream,
			want:   "anthropic: malformed stream from $URL: the stream ended before the model finished (no message_stop)",
		},
		{
			name:  "an event before message_start",
			reply: reply{status: 200, body: strings.Join(start[1:], "")},
			kind:  llm.ErrMalformedStream,
			want:  "anthropic: malformed stream from $URL: a content_block_start event before message_start",
		},
		{
			name:   "a delta for a block that never started",
			reply:  reply{status: 200, body: start[0] + start[1] + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"},
			kind:   llm.ErrMalformedStream,
			chunks: nil,
			want:   "anthropic: malformed stream from $URL: a content_block_delta event for content block 3, of 1",
		},
		{
			name:  "an input_json_delta in a text block",
			reply: reply{status: 200, body: start[0] + start[1] + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}\n\n"},
			kind:  llm.ErrMalformedStream,
			want:  "anthropic: malformed stream from $URL: an input_json_delta in text block 0",
		},
		{
			name:  "an event that is not JSON",
			reply: reply{status: 200, body: start[0] + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\n\n"},
			kind:  llm.ErrMalformedStream,
			want:  `anthropic: malformed stream from $URL: invalid character '\n' in string literal`,
		},
		{
			name:  "a whole message instead of a stream",
			reply: reply{status: 200, body: `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn"}`},
			kind:  llm.ErrMalformedStream,
			want:  "anthropic: malformed stream from $URL: the stream ended before the model began (no message_start)",
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
			name:    "401: a wrong key",
			replies: []reply{{status: 401, body: apiError("authentication_error", "invalid x-api-key")}},
			kind:    llm.ErrUnauthorized, status: 401, requests: 1,
			want: "anthropic: unauthorized (HTTP 401): invalid x-api-key",
		},
		{
			name: "429 with a retry-after longer than two minutes: no retry",
			replies: []reply{{status: 429, header: map[string]string{"Retry-After": "300"},
				body: apiError("rate_limit_error", "This request would exceed your organization's rate limit of 50,000 input tokens per minute.")}},
			kind: llm.ErrRateLimited, status: 429, retryAfter: 5 * time.Minute, requests: 1,
			want: "anthropic: rate limited (HTTP 429, retry after 5m0s): This request would exceed your organization's rate limit of 50,000 input tokens per minute.",
		},
		{
			name: "429 until the SDK's two retries run out",
			replies: []reply{{status: 429, header: map[string]string{"Retry-After-Ms": "5", "Retry-After": "1"},
				body: apiError("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")}},
			kind: llm.ErrRateLimited, status: 429, retryAfter: 5 * time.Millisecond, requests: 3,
			want: "anthropic: rate limited (HTTP 429, retry after 5ms): Number of request tokens has exceeded your per-minute rate limit",
		},
		{
			name:    "529: overloaded, after the retries",
			replies: []reply{{status: 529, header: map[string]string{"Retry-After-Ms": "1"}, body: apiError("overloaded_error", "Overloaded")}},
			kind:    llm.ErrOverloaded, status: 529, retryAfter: time.Millisecond, requests: 3,
			want: "anthropic: overloaded (HTTP 529, retry after 1ms): Overloaded",
		},
		{
			name:    "400: the prompt is too long",
			replies: []reply{{status: 400, body: apiError("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum")}},
			kind:    llm.ErrContextLength, status: 400, requests: 1,
			want: "anthropic: context length exceeded (HTTP 400): prompt is too long: 208310 tokens > 200000 maximum",
		},
		{
			name:    "404: no such model",
			replies: []reply{{status: 404, body: apiError("not_found_error", "model: claude-test")}},
			status:  404, requests: 1,
			want: "anthropic: HTTP 404: model: claude-test",
		},
		{
			name:    "413: the request is too large, which is not the context's length",
			replies: []reply{{status: 413, body: apiError("request_too_large", "Request exceeds the maximum allowed number of bytes.")}},
			status:  413, requests: 1,
			want: "anthropic: HTTP 413: Request exceeds the maximum allowed number of bytes.",
		},
		{
			name:    "502 with no JSON, after the retries",
			replies: []reply{{status: 502, header: map[string]string{"Retry-After-Ms": "1"}, body: "<html>Bad Gateway</html>"}},
			status:  502, requests: 3,
			want: "anthropic: HTTP 502: Bad Gateway",
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

// A retry-after within two minutes but past the call's MaxDuration is not
// waited for: the call ends at once, rate limited, with the wait.
func TestNoRetryPastTheDeadline(t *testing.T) {
	srv := newServer(t, reply{status: 429, header: map[string]string{"Retry-After": "30"}, body: apiError("rate_limit_error", "slow down")})
	start := time.Now()
	_, err := srv.model(t, Config{MaxDuration: 10 * time.Second}).Complete(context.Background(), question, nil)
	e := assertError(t, err, llm.ErrRateLimited, "anthropic: rate limited (HTTP 429, retry after 30s): slow down")
	if e.RetryAfter != 30*time.Second || len(srv.received()) != 1 {
		t.Errorf("retry after %v, %d requests; want 30s and 1", e.RetryAfter, len(srv.received()))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v: the SDK waited", d)
	}
}

// The SDK retries a 429 as the server asks, with the same idempotency key,
// and the call succeeds.
func TestRetriesWithTheSameKey(t *testing.T) {
	limited := reply{status: 429, header: map[string]string{"Retry-After-Ms": "10"}, body: apiError("rate_limit_error", "Rate limited")}
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
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nobody listens there now
	m, err := New(Config{APIKey: "sk-ant-test", BaseURL: "http://" + addr, Model: "claude-test",
		Options: []option.RequestOption{option.WithMaxRetries(0)}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Complete(context.Background(), question, nil)
	assertError(t, err, llm.ErrUnreachable,
		"anthropic: cannot reach http://"+addr+"/: dial tcp "+addr+": connect: connection refused")
}

func TestNew(t *testing.T) {
	t.Setenv(EnvAPIKey, "")
	t.Setenv(EnvBaseURL, "")
	t.Setenv(EnvModel, "")
	_, err := New(Config{Model: "claude-test"})
	assertError(t, err, llm.ErrMissingKey, "anthropic: no API key for https://api.anthropic.com/: set ANTHROPIC_API_KEY or Config.APIKey")

	if _, err := New(Config{APIKey: "sk-ant-test"}); err == nil || err.Error() != "anthropic: no model named: set ANTHROPIC_MODEL or Config.Model (such as claude-sonnet-4-5)" {
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
	local, err := New(Config{Model: "claude-test", BaseURL: "http://localhost:4000"})
	if err != nil {
		t.Fatalf("a gateway on this machine needs no key: %v", err)
	}
	if got := local.String(); got != "claude-test at http://localhost:4000/" {
		t.Errorf("String = %q", got)
	}
	if local.ProviderName() != "anthropic" || local.ModelName() != "claude-test" {
		t.Errorf("names %q, %q", local.ProviderName(), local.ModelName())
	}
	if local.maxTokens != DefaultMaxTokens {
		t.Errorf("a zero Config's max tokens %d, want %d", local.maxTokens, DefaultMaxTokens)
	}
	if l := local.limits; l.ResponseBytes != DefaultMaxResponseBytes || l.BodyBytes != DefaultMaxBodyBytes || l.Duration != DefaultMaxDuration ||
		l.FirstByteWait != DefaultMaxFirstByteWait || l.Idle != DefaultMaxIdle {
		t.Errorf("the limits of a zero Config are %+v, want the defaults", *l)
	}
}

func TestFromEnv(t *testing.T) {
	offline := llm.Scripted{Reply: llm.Script(llm.Response{Text: "offline"})}
	t.Setenv(EnvAPIKey, "")
	t.Setenv(EnvBaseURL, "")
	t.Setenv(EnvModel, "")
	if m, err := FromEnv(offline); err != nil {
		t.Fatal(err)
	} else if resp, err := m.Complete(context.Background(), question, nil); err != nil || resp.Text != "offline" {
		t.Fatalf("FromEnv with no model named answers %+v, %v; want the offline model's answer", resp, err)
	}

	t.Setenv(EnvModel, "claude-test")
	_, err := FromEnv(offline)
	assertError(t, err, llm.ErrMissingKey, "anthropic: no API key for https://api.anthropic.com/: set ANTHROPIC_API_KEY or Config.APIKey")

	srv := newServer(t, sse(t, "text.sse"))
	t.Setenv(EnvBaseURL, srv.URL)
	t.Setenv(EnvAPIKey, "sk-ant-env")
	m, err := FromEnv(offline)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Complete(context.Background(), question, nil)
	if err != nil || resp.Text != "Hello! How can I help you today?" {
		t.Fatalf("Complete = %+v, %v", resp, err)
	}
	got := srv.received()[0]
	if a, x := got.header.Get("Authorization"), got.header.Get("X-Api-Key"); a != "Bearer sk-ant-env" && x != "sk-ant-env" {
		t.Errorf("Authorization = %q, X-Api-Key = %q, want the key of the environment", a, x)
	}
	var body struct{ Model string }
	json.Unmarshal(got.body, &body)
	if body.Model != "claude-test" {
		t.Errorf("model = %q, want the environment's claude-test", body.Model)
	}
}

// Cancelling the ctx while the server holds the stream open (it sent some
// text and sends nothing more, so that only cancellation can end the call)
// returns at once, and the server sees its connection closed.
func TestCancelMidStream(t *testing.T) {
	events := strings.SplitAfter(sse(t, "text.sse").body, "\n\n")
	serverDone := make(chan struct{})
	release := make(chan struct{}) // closed when the test ends, in case cancellation does not work
	t.Cleanup(func() { close(release) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(serverDone)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, strings.Join(events[:4], "")) // message_start, the block's start, a ping, "Hello"
		http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done(): // the client closed the connection
		case <-release:
			t.Error("the server's request did not end: the connection stayed open")
		}
	}))
	t.Cleanup(srv.Close)
	m, err := New(Config{APIKey: "sk-ant-test", BaseURL: srv.URL, Model: "claude-test"})
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
	if len(spans) != 1 || spans[0].Name() != "chat claude-test" {
		t.Fatalf("spans %v, want one chat claude-test", spans)
	}
	want := map[string]string{
		"gen_ai.provider.name":                     "anthropic",
		"gen_ai.request.model":                     "claude-test",
		"gen_ai.usage.input_tokens":                "2116",
		"gen_ai.usage.output_tokens":               "6",
		"gen_ai.usage.cache_read.input_tokens":     "1856",
		"gen_ai.usage.cache_creation.input_tokens": "248",
		"gen_ai.response.finish_reasons":           `["stop"]`,
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
