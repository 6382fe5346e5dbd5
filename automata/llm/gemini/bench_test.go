package gemini

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// roundTrip is an http.RoundTripper of a function.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// benchTokens is how many chunks the benchmark's stream has, one token
// each (the Gemini API streams several tokens a chunk: this is the worst
// case for the provider's overhead per token).
const benchTokens = 1000

// benchStream is a whole message of benchTokens text deltas, in the
// documented format.
func benchStream() []byte {
	var b strings.Builder
	for range benchTokens - 1 {
		b.WriteString(textChunk(" word"))
	}
	b.WriteString(`data: {"candidates": [{"content": {"parts": [{"text": " word"}], "role": "model"}, "finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1000, "totalTokenCount": 1010}, "responseId": "r1"}` + "\n\n")
	return []byte(b.String())
}

// BenchmarkStreamOverhead measures, in one run, the provider's cost per
// streamed token against reading the same bytes of server-sent events with
// no parsing at all: each iteration reads the stream once raw (io.Copy to
// io.Discard of the response body) and once through Complete (the SDK
// builds and sends the request, decodes each event, the provider puts the
// reply together and hands each token to onChunk), both from an
// http.RoundTripper that answers from memory, so that no network is
// measured. It reports ns/token of each and their ratio, provider/raw.
//
//	go test -run '^$' -bench StreamOverhead -benchmem ./automata/llm/gemini
func BenchmarkStreamOverhead(b *testing.B) {
	stream := benchStream()
	answer := func(r *http.Request) *http.Response {
		if r.Body != nil {
			io.Copy(io.Discard, r.Body)
		}
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: io.NopCloser(bytes.NewReader(stream)), Request: r}
	}
	client := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) { return answer(r), nil })}
	m, err := New(Config{APIKey: "AIza-bench", BaseURL: "http://model.test", Model: testModel, HTTPClient: client, MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	raw, err := http.NewRequest(http.MethodPost, "http://model.test"+streamPath+"?alt=sse", nil)
	if err != nil {
		b.Fatal(err)
	}
	var rawTime, providerTime time.Duration
	tokens := 0
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		start := time.Now()
		res, err := client.Do(raw)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, res.Body); err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		mid := time.Now()
		resp, err := m.Complete(context.Background(), question, func(string) { tokens++ })
		if err != nil {
			b.Fatal(err)
		}
		providerTime += time.Since(mid)
		rawTime += mid.Sub(start)
		if len(resp.Text) != benchTokens*len(" word") {
			b.Fatalf("text of %d bytes", len(resp.Text))
		}
	}
	n := float64(b.N * benchTokens)
	b.ReportMetric(float64(rawTime.Nanoseconds())/n, "raw-ns/token")
	b.ReportMetric(float64(providerTime.Nanoseconds())/n, "provider-ns/token")
	b.ReportMetric(float64(providerTime)/float64(rawTime), "ratio")
	if tokens != b.N*benchTokens {
		b.Fatalf("%d chunks, want %d", tokens, b.N*benchTokens)
	}
}
