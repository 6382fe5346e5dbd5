package openai

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/hostiletest"
)

// benchTokens is how many chunks the benchmark's stream has, one token
// each, as the API streams them.
const benchTokens = 1000

// benchStream is a whole completion of benchTokens chunks of one token, in
// the API's streaming format.
func benchStream() []byte {
	var b strings.Builder
	b.WriteString(event(`{"role":"assistant","content":""}`))
	for range benchTokens {
		b.WriteString(event(`{"content":" word"}`))
	}
	b.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// BenchmarkStreamOverhead measures, in one run, the provider's cost per
// streamed token against reading the same bytes of server-sent events with
// no parsing at all (see hostiletest.StreamOverhead).
//
//	go test -run '^$' -bench StreamOverhead -benchmem ./automata/llm/openai
func BenchmarkStreamOverhead(b *testing.B) {
	hostiletest.StreamOverhead(b, benchStream(), benchTokens, benchTokens*len(" word"), func(client *http.Client) (llm.Model, error) {
		return New(Config{APIKey: "sk-bench", BaseURL: "http://model.test/v1", Model: "gpt-test",
			Options: []option.RequestOption{option.WithHTTPClient(client), option.WithMaxRetries(0)}})
	}, question)
}
