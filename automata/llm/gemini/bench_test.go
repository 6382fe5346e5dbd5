package gemini

import (
	"net/http"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/hostiletest"
)

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
// no parsing at all (see hostiletest.StreamOverhead).
//
//	go test -run '^$' -bench StreamOverhead -benchmem ./automata/llm/gemini
func BenchmarkStreamOverhead(b *testing.B) {
	hostiletest.StreamOverhead(b, benchStream(), benchTokens, benchTokens*len(" word"), func(client *http.Client) (llm.Model, error) {
		return New(Config{APIKey: "AIza-bench", BaseURL: "http://model.test", Model: testModel, HTTPClient: client, MaxRetries: -1})
	}, question)
}
