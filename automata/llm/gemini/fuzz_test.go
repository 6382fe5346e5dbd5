package gemini

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

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/hostiletest"
	"github.com/moora-go/moora/automata/llm/internal/provider"
)

var fuzzStatuses = []int{200, 400, 403, 404, 429, 503}

// FuzzResponse feeds Complete any response a server could send: a status,
// a Retry-After header and a body, a stream or an error, under a limit on
// the reply's size (MaxResponseBytes, with MaxBodyBytes 16 times that; 0
// for the defaults). Whatever it is, Complete must not panic, and returns
// either a response whose chunks put together are its text, whose tool
// calls have IDs, names and JSON arguments, and which fits the limit, or an
// *llm.Error on one line; a *llm.LimitError only for a limit the body went
// past, as the SDK's scanner splits it into events.
func FuzzResponse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(0), "", uint16(0), b)
		f.Add(uint8(0), "", uint16(60), b)
	}
	f.Add(uint8(0), "", uint16(0), []byte("data: {\"candidates\": [{\"content\": {\"parts\": [{\"functionCall\": {\"name\": \"f\", \"args\": {\"a\": [1, {\"b\": null}]}}, \"thoughtSignature\": \"!!\"}]}, \"finishReason\": \"STOP\"}]}\r\n\r\n"))
	f.Add(uint8(0), "", uint16(0), []byte("data: {\"candidates\": [null, {\"index\": 1}], \"promptFeedback\": {\"blockReason\": \"OTHER\"}}\n\n"))
	f.Add(uint8(0), "", uint16(10), []byte("data: x\ndata: y\n\r\ndata: z\r\r\n\n"))
	f.Add(uint8(1), "", uint16(0), []byte(`{"error": {"code": 400, "message": "The input token count (5) exceeds the maximum number of tokens allowed (4).", "status": "INVALID_ARGUMENT"}}`))
	f.Add(uint8(4), "1e400", uint16(0), []byte(`{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1e300s"}]}}`))
	f.Add(uint8(5), "2", uint16(0), []byte(`not json`))
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
		m, err := New(Config{APIKey: "AIza-fuzz", BaseURL: "http://model.test", Model: "m", HTTPClient: client, MaxRetries: -1,
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
			if le, ok := e.Err.(*llm.LimitError); ok {
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
		ids := map[string]bool{}
		for _, c := range resp.ToolCalls {
			if c.ID == "" || c.Name == "" || !isObject(c.Arguments) || ids[c.ID] {
				t.Fatalf("tool call without ID or name, with arguments that are not JSON, or a second one of its ID: %+v", c)
			}
			ids[c.ID] = true
			kept += int64(len(c.Name) + len(c.Arguments))
		}
		if kept > lim.ResponseBytes {
			t.Fatalf("a response of %d bytes of text and tool calls passed MaxResponseBytes = %d", kept, lim.ResponseBytes)
		}
	})
}

func isObject(b []byte) bool { return len(b) > 0 && b[0] == '{' }

// checkLimit checks the error e of a limit le that Complete returned for
// body, with status, under lim: a limit of size that body went past, as
// the SDK's scanner splits it into events.
func checkLimit(t *testing.T, e *llm.Error, le *llm.LimitError, lim *provider.Limits, status int, body []byte) {
	t.Helper()
	if e.Kind != provider.Kind(le) || le.Error() == "" {
		t.Fatalf("limit %+v in an error of kind %v: %s", le, e.Kind, e.Message)
	}
	var meter provider.BlankLineMeter
	biggest := meter.Write(body)
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
