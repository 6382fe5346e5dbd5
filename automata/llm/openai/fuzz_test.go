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
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/hostiletest"
	"github.com/moora-go/moora/automata/llm/internal/provider"
)

var fuzzStatuses = []int{200, 400, 401, 404, 429, 500}

// FuzzResponse feeds Complete any response a server could send: a status,
// a Retry-After header and a body, a stream or an error, under a limit on
// the reply's size (MaxResponseBytes, with MaxBodyBytes 16 times that; 0
// for the defaults). Whatever it is, Complete must not panic, and returns
// either a response whose chunks put together are its text, whose tool
// calls have IDs and arguments, and which fits the limit, or an *llm.Error
// on one line; a *LimitError only for a limit the body went past, as the
// SDK's decoder splits it into events.
func FuzzResponse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(0), "", uint16(0), b)
		f.Add(uint8(0), "", uint16(40), b)
	}
	f.Add(uint8(0), "", uint16(0), []byte("data: [DONE]\n\n"))
	f.Add(uint8(0), "", uint16(0), []byte(": keep-alive\n\ndata: {\"error\":\"model crashed\"}\n\n"))
	f.Add(uint8(0), "", uint16(0), []byte("data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3}]},\"finish_reason\":\"tool_calls\"}]}\n\n"))
	f.Add(uint8(0), "", uint16(3000), []byte("data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":-1},{\"index\":1}]},\"finish_reason\":\"tool_calls\"}]}\n\n"))
	f.Add(uint8(0), "", uint16(100), []byte("data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\r\r\ndata: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\n"))
	f.Add(uint8(0), "", uint16(10), []byte("data: x\ndata: y\ndata: z\r\rdata: w\n\n"))
	f.Add(uint8(1), "", uint16(0), []byte(`{"error":{"message":"This model's maximum context length is 8192 tokens.","code":"context_length_exceeded"}}`))
	f.Add(uint8(1), "", uint16(20), []byte(`{"error":{"message":"This model's maximum context length is 8192 tokens.","code":"context_length_exceeded"}}`))
	f.Add(uint8(2), "", uint16(0), []byte(`{"error":{"message":"bad key\nreally"}}`))
	f.Add(uint8(4), "Mon, 23 Nov 2026 12:01:00 GMT", uint16(0), []byte(`{"error":{"message":"slow down"}}`))
	f.Add(uint8(4), "1e400", uint16(0), []byte(`not json`))
	f.Add(uint8(5), "2", uint16(0), []byte(``))
	f.Fuzz(func(t *testing.T, sel uint8, retryAfter string, limit uint16, body []byte) {
		status := fuzzStatuses[int(sel)%len(fuzzStatuses)]
		client := &http.Client{Transport: hostiletest.RoundTrip(func(r *http.Request) (*http.Response, error) {
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
			Options:          []option.RequestOption{option.WithHTTPClient(client), option.WithMaxRetries(0)},
			MaxResponseBytes: int64(limit), MaxBodyBytes: 16 * int64(limit)})
		if err != nil {
			t.Fatal(err)
		}
		lim := m.limits
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
			if le, ok := e.Err.(*LimitError); ok {
				checkLimit(t, e, le, lim, status, body)
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
		kept := int64(len(resp.Text))
		for _, c := range resp.ToolCalls {
			if c.ID == "" || len(c.Arguments) == 0 {
				t.Fatalf("tool call without ID or arguments: %+v", c)
			}
			kept += int64(len(c.Name)+len(c.Arguments)) - 2 // the {} of a call without arguments
		}
		if kept > lim.ResponseBytes {
			t.Fatalf("a response of %d bytes of text and tool calls passed MaxResponseBytes = %d", kept, lim.ResponseBytes)
		}
	})
}

// checkLimit checks the error e of a limit le that Complete returned for
// body, with status, under lim: a limit of size that body went past, as the
// SDK's decoder splits it into events.
func checkLimit(t *testing.T, e *llm.Error, le *LimitError, lim *provider.Limits, status int, body []byte) {
	t.Helper()
	if e.Kind != provider.Kind(le) || le.Error() == "" {
		t.Fatalf("limit %+v in an error of kind %v: %s", le, e.Kind, e.Message)
	}
	var biggest int64 // of the events of body
	if status == http.StatusOK {
		var meter provider.EventMeter
		biggest = meter.Write(body)
		h := http.Header{"Content-Type": {"text/event-stream"}}
		d := ssestream.NewDecoder(&http.Response{Header: h, Body: io.NopCloser(bytes.NewReader(body))})
		for d.Next() {
			if n := int64(len(d.Event().Data)); n > biggest {
				t.Fatalf("the decoder's event of %d bytes of data is bigger than the biggest event the meter saw, %d bytes", n, biggest)
			}
		}
	}
	switch {
	case le.Limit == provider.LimitBodyBytes:
		if status != http.StatusOK || int64(len(body)) <= lim.BodyBytes {
			t.Fatalf("%s for a body of %d bytes (HTTP %d)", e.Message, len(body), status)
		}
	case le.Limit == provider.LimitResponseBytes && le.Bytes == lim.EventBytes:
		if status != http.StatusOK || biggest <= lim.EventBytes {
			t.Fatalf("%s for a body whose biggest event has %d bytes (HTTP %d)", e.Message, biggest, status)
		}
	case le.Limit == provider.LimitResponseBytes && le.Bytes == lim.ResponseBytes:
		if status != http.StatusOK && int64(len(body)) <= lim.ResponseBytes {
			t.Fatalf("%s for an error body of %d bytes", e.Message, len(body))
		}
	default: // the limits of time are minutes away
		t.Fatalf("limit %+v: %s", le, e.Message)
	}
}
