package openai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go/v3/option"

	"github.com/moora-go/moora/automata/llm"
)

// roundTrip answers every request with one response, in memory: the fuzz
// test exercises the SDK and this package on the bytes a server sends,
// without the cost of a socket per input.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var fuzzStatuses = []int{200, 400, 401, 404, 429, 500}

// FuzzResponse feeds Complete any response a server could send: a status,
// a Retry-After header and a body, a stream or an error. Whatever it is,
// Complete must not panic, and returns either a response whose chunks put
// together are its text and whose tool calls have IDs and arguments, or an
// *llm.Error on one line.
func FuzzResponse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(0), "", b)
	}
	f.Add(uint8(0), "", []byte("data: [DONE]\n\n"))
	f.Add(uint8(0), "", []byte(": keep-alive\n\ndata: {\"error\":\"model crashed\"}\n\n"))
	f.Add(uint8(0), "", []byte("data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3}]},\"finish_reason\":\"tool_calls\"}]}\n\n"))
	f.Add(uint8(1), "", []byte(`{"error":{"message":"This model's maximum context length is 8192 tokens.","code":"context_length_exceeded"}}`))
	f.Add(uint8(2), "", []byte(`{"error":{"message":"bad key\nreally"}}`))
	f.Add(uint8(4), "Mon, 23 Nov 2026 12:01:00 GMT", []byte(`{"error":{"message":"slow down"}}`))
	f.Add(uint8(4), "1e400", []byte(`not json`))
	f.Add(uint8(5), "2", []byte(``))
	f.Fuzz(func(t *testing.T, sel uint8, retryAfter string, body []byte) {
		status := fuzzStatuses[int(sel)%len(fuzzStatuses)]
		client := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			h := http.Header{}
			if status == 200 {
				h.Set("Content-Type", "text/event-stream")
			} else {
				h.Set("Content-Type", "application/json")
				h.Set("Retry-After", retryAfter)
			}
			return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
		})}
		m, err := New(Config{APIKey: "sk-fuzz", BaseURL: "http://model.test/v1", Model: "m",
			Options: []option.RequestOption{option.WithHTTPClient(client), option.WithMaxRetries(0)}})
		if err != nil {
			t.Fatal(err)
		}
		var chunks strings.Builder
		resp, err := m.Complete(context.Background(), question, func(c string) { chunks.WriteString(c) })
		if err != nil {
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want an *llm.Error", err, err)
			}
			if strings.ContainsAny(e.Message, "\r\n") || !utf8.ValidString(e.Message) {
				t.Fatalf("message not one line of UTF-8: %q", e.Message)
			}
			if e.RetryAfter < 0 {
				t.Fatalf("retry after %v", e.RetryAfter)
			}
			return
		}
		if status != 200 {
			t.Fatalf("HTTP %d gave a response: %+v", status, resp)
		}
		if chunks.String() != resp.Text {
			t.Fatalf("chunks put together = %q, text = %q", chunks.String(), resp.Text)
		}
		if resp.FinishReason == "" {
			t.Fatalf("a response without a finish reason: %+v", resp)
		}
		for _, c := range resp.ToolCalls {
			if c.ID == "" || len(c.Arguments) == 0 {
				t.Fatalf("tool call without ID or arguments: %+v", c)
			}
		}
	})
}
