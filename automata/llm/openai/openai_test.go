package openai

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

	"github.com/openai/openai-go/v3/option"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/hostiletest"
)

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

// request is what a test server received.
type request struct {
	header http.Header
	body   []byte
}

// server is an OpenAI-compatible test server: it answers the nth request
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
		s.requests = append(s.requests, request{header: r.Header.Clone(), body: body})
		rep := replies[min(len(s.requests), len(replies))-1]
		s.mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"no such path"}}`, http.StatusNotFound)
			return
		}
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
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
func (s *server) model(t *testing.T, opts ...option.RequestOption) *Model {
	t.Helper()
	m, err := New(Config{APIKey: "sk-test", BaseURL: s.URL + "/v1", Model: "gpt-test", Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var wordCount = llm.Tool{
	Name:        "word-count",
	Description: "Counts the words of a text.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","maxLength":10000}},"required":["text"]}`),
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
			name:   "plain text, with keep-alive comments and a usage chunk",
			file:   "text.sse",
			chunks: []string{"Hello", "!", " How", " can", " I", " help", " you", " today", "?"},
			want: llm.Response{Text: "Hello! How can I help you today?", FinishReason: llm.FinishStop,
				Usage: llm.Usage{InputTokens: 19, OutputTokens: 10}},
		},
		{
			name:   "plain text, most of the prompt read from OpenAI's cache (text.sse with the usage of a cached prompt)",
			file:   "cached.sse",
			chunks: []string{"Hello", "!", " How", " can", " I", " help", " you", " today", "?"},
			want: llm.Response{Text: "Hello! How can I help you today?", FinishReason: llm.FinishStop,
				Usage: llm.Usage{InputTokens: 2006, OutputTokens: 10, CacheReadInputTokens: 1920}},
		},
		{
			name:   "a tool call whose arguments arrive in seven pieces, none of them a chunk",
			file:   "tool_call.sse",
			chunks: nil,
			want: llm.Response{
				ToolCalls: []llm.ToolCall{{ID: "call_DdmO9pD3xa9XTPNJ32zg2hcA", Name: "word-count",
					Arguments: json.RawMessage(`{"text":"count these words"}`)}},
				FinishReason: llm.FinishToolCalls,
				Usage:        llm.Usage{InputTokens: 82, OutputTokens: 18},
			},
		},
		{
			name:   "text, then two parallel tool calls",
			file:   "parallel_tool_calls.sse",
			chunks: []string{"Counting", " both."},
			want: llm.Response{
				Text: "Counting both.",
				ToolCalls: []llm.ToolCall{
					{ID: "call_Xx1pL0aQ2bR3cS4dT5eU6fV7", Name: "word-count", Arguments: json.RawMessage(`{"text":"one two"}`)},
					{ID: "call_Yy8gW9hX0iY1jZ2kA3lB4mC5", Name: "word-count", Arguments: json.RawMessage(`{"text":"three four five"}`)},
				},
				FinishReason: llm.FinishToolCalls,
				Usage:        llm.Usage{InputTokens: 96, OutputTokens: 51},
			},
		},
		{
			name:   "a refusal, which is the text",
			file:   "refusal.sse",
			chunks: []string{"I'm", " sorry,", " I", " can't", " help", " with", " that."},
			want: llm.Response{Text: "I'm sorry, I can't help with that.", FinishReason: llm.FinishStop,
				Usage: llm.Usage{InputTokens: 25, OutputTokens: 8}},
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

// The request body carries the system prompt, the whole conversation with
// its tool calls and results, the tools and the tool choice; the headers
// carry the key and the idempotency key.
func TestRequest(t *testing.T) {
	req := llm.Request{
		System: "You count words.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "count: one two"},
			{Role: llm.RoleAssistant, Content: "Counting.", ToolCalls: []llm.ToolCall{
				{ID: "call_1", Name: "word-count", Arguments: json.RawMessage(`{"text":"one two"}`)},
				{ID: "call_2", Name: "clock"}, // no arguments: sent as {}
			}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Content: "2"},
			{Role: llm.RoleTool, ToolCallID: "call_2", Content: "12:00"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_3", Name: "word-count", Arguments: json.RawMessage(`{"text":`)}}},
			{Role: llm.RoleTool, ToolCallID: "call_3", Content: "error: the arguments are not JSON"},
			{Role: llm.RoleAssistant, Content: "2 words, at noon."},
			{Role: llm.RoleUser, Content: "and: three"},
		},
		Tools:          []llm.Tool{wordCount, {Name: "clock"}},
		RequiredTool:   "word-count",
		IdempotencyKey: "llm/llm-u2",
	}
	want := `{
		"model": "gpt-test",
		"messages": [
			{"role": "system", "content": "You count words."},
			{"role": "user", "content": "count: one two"},
			{"role": "assistant", "content": "Counting.", "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "word-count", "arguments": "{\"text\":\"one two\"}"}},
				{"id": "call_2", "type": "function", "function": {"name": "clock", "arguments": "{}"}}
			]},
			{"role": "tool", "tool_call_id": "call_1", "content": "2"},
			{"role": "tool", "tool_call_id": "call_2", "content": "12:00"},
			{"role": "assistant", "tool_calls": [
				{"id": "call_3", "type": "function", "function": {"name": "word-count", "arguments": "{\"text\":"}}
			]},
			{"role": "tool", "tool_call_id": "call_3", "content": "error: the arguments are not JSON"},
			{"role": "assistant", "content": "2 words, at noon."},
			{"role": "user", "content": "and: three"}
		],
		"tools": [
			{"type": "function", "function": {"name": "word-count", "description": "Counts the words of a text.",
				"parameters": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 10000}}, "required": ["text"]}}},
			{"type": "function", "function": {"name": "clock"}}
		],
		"tool_choice": {"type": "function", "function": {"name": "word-count"}},
		"stream": true,
		"stream_options": {"include_usage": true}
	}`
	srv := newServer(t, sse(t, "tool_call.sse"))
	if _, err := srv.model(t).Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.received()[0]
	assertJSON(t, got.body, want)
	if k := got.header.Get("Idempotency-Key"); k != "llm/llm-u2" {
		t.Errorf("Idempotency-Key = %q, want llm/llm-u2", k)
	}
	if a := got.header.Get("Authorization"); a != "Bearer sk-test" {
		t.Errorf("Authorization = %q, want Bearer sk-test", a)
	}
}

func TestToolChoice(t *testing.T) {
	tests := []struct {
		required string
		want     any // the tool_choice sent; nil for none
	}{
		{required: "", want: nil},
		{required: llm.AnyTool, want: "required"},
		{required: "word-count", want: map[string]any{"type": "function", "function": map[string]any{"name": "word-count"}}},
	}
	for _, tt := range tests {
		t.Run(tt.required, func(t *testing.T) {
			srv := newServer(t, sse(t, "tool_call.sse"))
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
	const id = `"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m"`
	tests := []struct {
		name   string
		reply  reply
		chunks []string // before the error
		kind   error    // nil for a server's error without a kind
		want   string   // the whole message
	}{
		{
			name:   "an error event in the middle",
			reply:  sse(t, "error_mid_stream.sse"),
			chunks: []string{"Hel"},
			want:   "openai: the server reported an error in the stream: The server had an error while processing your request. Sorry about that!",
		},
		{
			name:   "cut without [DONE] or a finish reason",
			reply:  sse(t, "cut.sse"),
			chunks: []string{"Once", " upon"},
			kind:   llm.ErrMalformedStream,
			want:   "openai: malformed stream from $URL: the stream ended before the model finished (no finish reason)",
		},
		{
			name:   "[DONE] before a finish reason",
			reply:  reply{status: 200, body: `data: {` + id + `,"choices":[{"index":0,"delta":{"content":"Hi"}}]}` + "\n\ndata: [DONE]\n\n"},
			chunks: []string{"Hi"},
			kind:   llm.ErrMalformedStream,
			want:   "openai: malformed stream from $URL: the stream ended before the model finished (no finish reason)",
		},
		{
			name:  "a chunk that is not JSON",
			reply: reply{status: 200, body: "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"delta\n\n"},
			kind:  llm.ErrMalformedStream,
			want:  `openai: malformed stream from $URL: invalid character '\n' in string literal`,
		},
		{
			name: "a chunk of another completion",
			reply: reply{status: 200, body: `data: {` + id + `,"choices":[{"index":0,"delta":{"content":"Hi"}}]}` + "\n\n" +
				`data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"!"}}]}` + "\n\n"},
			chunks: []string{"Hi"},
			kind:   llm.ErrMalformedStream,
			want:   `openai: malformed stream from $URL: a chunk that does not follow the ones before it (id "chatcmpl-2")`,
		},
		{
			name:  "a whole completion instead of a stream",
			reply: reply{status: 200, body: `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}`},
			kind:  llm.ErrMalformedStream,
			want:  "openai: malformed stream from $URL: the stream ended before the model finished (no finish reason)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.reply)
			var chunks []string
			_, err := srv.model(t).Complete(context.Background(), question, func(c string) { chunks = append(chunks, c) })
			assertError(t, err, tt.kind, strings.ReplaceAll(tt.want, "$URL", srv.URL+"/v1/"))
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
			replies: []reply{{status: 401, body: `{"error":{"message":"Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`}},
			kind:    llm.ErrUnauthorized, status: 401, requests: 1,
			want: "openai: unauthorized (HTTP 401): Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.",
		},
		{
			name: "429 with a Retry-After longer than the SDK waits: no retry",
			replies: []reply{{status: 429, header: map[string]string{"Retry-After": "300"},
				body: `{"error":{"message":"Rate limit reached for gpt-test in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1.\nPlease try again in 20s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`}},
			kind: llm.ErrRateLimited, status: 429, retryAfter: 5 * time.Minute, requests: 1,
			want: "openai: rate limited (HTTP 429, retry after 5m0s): Rate limit reached for gpt-test in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.",
		},
		{
			name: "429 until the SDK's two retries run out",
			replies: []reply{{status: 429, header: map[string]string{"Retry-After-Ms": "5", "Retry-After": "1"},
				body: `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`}},
			kind: llm.ErrRateLimited, status: 429, retryAfter: 5 * time.Millisecond, requests: 3,
			want: "openai: rate limited (HTTP 429, retry after 5ms): You exceeded your current quota.",
		},
		{
			name:    "400: the context is too long",
			replies: []reply{{status: 400, body: `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130013 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`}},
			kind:    llm.ErrContextLength, status: 400, requests: 1,
			want: "openai: context length exceeded (HTTP 400): This model's maximum context length is 128000 tokens. However, your messages resulted in 130013 tokens. Please reduce the length of the messages.",
		},
		{
			name:    "400 from llama.cpp: the context is too long",
			replies: []reply{{status: 400, body: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`}},
			kind:    llm.ErrContextLength, status: 400, requests: 1,
			want: "openai: context length exceeded (HTTP 400): the request exceeds the available context size, try increasing it",
		},
		{
			name: "503, overloaded, after the retries",
			replies: []reply{{status: 503, header: map[string]string{"Retry-After-Ms": "1"},
				body: `{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":null}}`}},
			kind: llm.ErrOverloaded, status: 503, requests: 3,
			want: "openai: overloaded (HTTP 503): The engine is currently overloaded, please try again later.",
		},
		{
			name:    "404: no such model",
			replies: []reply{{status: 404, body: `{"error":{"message":"The model ` + "`gpt-test`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`}},
			status:  404, requests: 1,
			want: "openai: HTTP 404: The model `gpt-test` does not exist or you do not have access to it.",
		},
		{
			name:    "502 with no JSON, after the retries",
			replies: []reply{{status: 502, header: map[string]string{"Retry-After-Ms": "1"}, body: "<html>Bad Gateway</html>"}},
			status:  502, requests: 3,
			want: "openai: HTTP 502: Bad Gateway",
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

// The SDK retries a 429 as the server asks, with the same idempotency key,
// and the call succeeds.
func TestRetriesWithTheSameKey(t *testing.T) {
	limited := reply{status: 429, header: map[string]string{"Retry-After-Ms": "10"},
		body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`}
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
	m, err := New(Config{APIKey: "sk-test", BaseURL: "http://" + addr + "/v1", Model: "gpt-test",
		Options: []option.RequestOption{option.WithMaxRetries(0)}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Complete(context.Background(), question, nil)
	assertError(t, err, llm.ErrUnreachable,
		"openai: cannot reach http://"+addr+"/v1/: dial tcp "+addr+": connect: connection refused")
}

func TestNew(t *testing.T) {
	t.Setenv(EnvAPIKey, "")
	t.Setenv(EnvBaseURL, "")
	t.Setenv(EnvModel, "")
	_, err := New(Config{Model: "gpt-test"})
	assertError(t, err, llm.ErrMissingKey, "openai: no API key for https://api.openai.com/v1/: set OPENAI_API_KEY or Config.APIKey")

	if _, err := New(Config{APIKey: "sk-test"}); err == nil || err.Error() != "openai: no model named: set OPENAI_MODEL or Config.Model (such as gpt-4o-mini)" {
		t.Errorf("New without a model: %v", err)
	}
	for _, base := range []string{"localhost:11434/v1", "ftp://example.com/v1", "http://", "http://[::1"} {
		if _, err := New(Config{Model: "m", BaseURL: base}); err == nil || !strings.Contains(err.Error(), "is not an http or https URL") {
			t.Errorf("New with base URL %q: %v", base, err)
		}
	}
	local, err := New(Config{Model: "qwen2.5:7b", BaseURL: "http://localhost:11434/v1"})
	if err != nil {
		t.Fatalf("a local server needs no key: %v", err)
	}
	if got := local.String(); got != "qwen2.5:7b at http://localhost:11434/v1/" {
		t.Errorf("String = %q", got)
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

	t.Setenv(EnvModel, "gpt-test")
	_, err := FromEnv(offline)
	assertError(t, err, llm.ErrMissingKey, "openai: no API key for https://api.openai.com/v1/: set OPENAI_API_KEY or Config.APIKey")

	srv := newServer(t, sse(t, "text.sse"))
	t.Setenv(EnvBaseURL, srv.URL+"/v1")
	t.Setenv(EnvAPIKey, "sk-env")
	m, err := FromEnv(offline)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Complete(context.Background(), question, nil)
	if err != nil || resp.Text != "Hello! How can I help you today?" {
		t.Fatalf("Complete = %+v, %v", resp, err)
	}
	got := srv.received()[0]
	if a := got.header.Get("Authorization"); a != "Bearer sk-env" {
		t.Errorf("Authorization = %q, want the key of the environment", a)
	}
	var body struct{ Model string }
	json.Unmarshal(got.body, &body)
	if body.Model != "gpt-test" {
		t.Errorf("model = %q, want the environment's gpt-test", body.Model)
	}
}

// Cancelling the ctx while the server holds the stream open (it sent one
// chunk and sends nothing more, so that only cancellation can end the call)
// returns at once, and the server sees its connection closed.
func TestCancelMidStream(t *testing.T) {
	first := strings.SplitAfter(sse(t, "text.sse").body, "\n\n")
	serverDone := make(chan struct{})
	release := make(chan struct{}) // closed when the test ends, in case cancellation does not work
	t.Cleanup(func() { close(release) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(serverDone)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, first[0]+first[1]+first[2]) // a comment, the role, "Hello"
		http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done(): // the client closed the connection
		case <-release:
			t.Error("the server's request did not end: the connection stayed open")
		}
	}))
	t.Cleanup(srv.Close)
	m, err := New(Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "gpt-test"})
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
	latency := res.at.Sub(cancelled)
	t.Logf("returned %v after the cancellation", latency)
	if latency > 100*time.Millisecond {
		t.Errorf("returned %v after the cancellation, want within 100ms", latency)
	}
	select {
	case <-serverDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the server's request did not end 30s after the cancellation")
	}
}

// A job whose call fails reports an EffectFailed event with the error, and
// the machine goes on: whether the server refused the call, or the call went
// past a limit, the job dispatched nothing, so that no part of the reply
// reaches the state (or a durable machine's journal).
func TestFailingJobIsAnEffectFailedEvent(t *testing.T) {
	refusing := newServer(t, reply{status: 401, body: `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","code":"invalid_api_key"}}`})
	endless := hostiletest.New(t, http.StatusOK, false, forever(event(`{"content":"word "}`)))
	tests := []struct {
		name   string
		model  *Model
		kind   error
		header func() http.Header // of the request the server received
	}{
		{"unauthorized", refusing.model(t), llm.ErrUnauthorized, func() http.Header { return refusing.received()[0].header }},
		{"past a limit", hostileModel(t, endless, Config{MaxResponseBytes: 1 << 10}), llm.ErrResponseTooLarge, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type state struct{ Asked, Answered bool }
			failed := make(chan automata.Event[state, bool], 1)
			jobs := func(s state) map[string]automata.Job[bool] {
				if !s.Asked {
					return nil
				}
				return map[string]automata.Job[bool]{"ask": func(ctx context.Context, dispatch automata.Dispatch[bool]) error {
					req := question
					req.IdempotencyKey = automata.JobKey(ctx)
					if _, err := tt.model.Complete(ctx, req, nil); err != nil {
						return err
					}
					dispatch(true)
					return nil
				}}
			}
			m := automata.NewMoore(automata.Definition[state, bool]{
				Initial: func() state { return state{} },
				Transition: func(s state, answered bool) state {
					if answered {
						return state{Asked: s.Asked, Answered: true}
					}
					return state{Asked: !s.Asked, Answered: s.Answered}
				},
			}, func(s state) state { return s }, automata.WithJobs(jobs), automata.WithEvents(func(e automata.Event[state, bool]) {
				if e.Kind == automata.EffectFailed {
					failed <- e
				}
			}))
			defer m.Close(context.Background())
			if err := m.Dispatch(false); err != nil {
				t.Fatal(err)
			}
			select {
			case e := <-failed:
				if e.Key != "ask" || !errors.Is(e.Err, tt.kind) {
					t.Errorf("event %v: key %q, error %v; want ask and %v", e.Kind, e.Key, e.Err, tt.kind)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no EffectFailed event in 30s")
			}
			if tt.header != nil {
				if k := tt.header().Get("Idempotency-Key"); k != "ask" {
					t.Errorf("Idempotency-Key = %q, want the job's key", k)
				}
			}
			if err := m.DispatchWait(context.Background(), false); err != nil || m.Current() != (state{}) {
				t.Errorf("the machine did not go on, or a reply reached the state: %+v, %v", m.Current(), err)
			}
		})
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
