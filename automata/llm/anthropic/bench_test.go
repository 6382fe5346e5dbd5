package anthropic

import (
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/hostiletest"
)

// benchTokens is how many text_delta events the benchmark's stream has,
// one token each, as the API streams them (a word or so an event).
const benchTokens = 1000

// benchStream is a whole message of benchTokens text deltas, in the
// documented format.
func benchStream() []byte {
	var b strings.Builder
	b.WriteString(messageStart + textStart + ping)
	for range benchTokens {
		b.WriteString(textDelta(" word"))
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":1000}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return []byte(b.String())
}

// BenchmarkStreamOverhead measures, in one run, the provider's cost per
// streamed token against reading the same bytes of server-sent events with
// no parsing at all (see hostiletest.StreamOverhead).
//
//	go test -run '^$' -bench StreamOverhead -benchmem ./automata/llm/anthropic
func BenchmarkStreamOverhead(b *testing.B) {
	hostiletest.StreamOverhead(b, benchStream(), benchTokens, benchTokens*len(" word"), func(client *http.Client) (llm.Model, error) {
		return New(Config{APIKey: "sk-ant-bench", BaseURL: "http://model.test", Model: "claude-test",
			Options: []option.RequestOption{option.WithHTTPClient(client), option.WithMaxRetries(0)}})
	}, question)
}
