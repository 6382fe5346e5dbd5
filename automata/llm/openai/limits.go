package openai

import (
	sdk "github.com/openai/openai-go/v3"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/provider"
)

// The limits a Config leaves at zero. See "Limits" in the package
// documentation.
const (
	// DefaultMaxResponseBytes bounds the reply's text and tool calls: 4 MiB,
	// some eight times the longest reply a model writes (128,000 tokens of
	// some 4 bytes).
	DefaultMaxResponseBytes = provider.DefaultMaxResponseBytes
	// DefaultMaxBodyBytes bounds the bytes of the stream, envelopes
	// included: 64 MiB, some 250,000 chunks of OpenAI's 250 bytes or so.
	DefaultMaxBodyBytes = provider.DefaultMaxBodyBytes
	// DefaultMaxDuration bounds a whole call: 10 minutes.
	DefaultMaxDuration = provider.DefaultMaxDuration
	// DefaultMaxFirstByteWait bounds the wait for the first byte of the
	// answer: 5 minutes, for a reasoning model, which OpenAI's API streams
	// nothing of while it thinks, or a long prompt on a slow local server.
	DefaultMaxFirstByteWait = provider.DefaultMaxFirstByteWait
	// DefaultMaxIdle bounds the silences of a stream that has begun:
	// 1 minute.
	DefaultMaxIdle = provider.DefaultMaxIdle
)

// toolCallBytes is what each tool call of a reply counts on top of its
// bytes: the memory of its place in the SDK's accumulator and in the
// response (some 500 bytes), and a margin.
const toolCallBytes = 1 << 10

// maxToolCallGrowth bounds the new tool calls one chunk may open, as the
// SDK's accumulator does (128), with a margin: what a chunk that opens more
// counts is not computed, since AddChunk refuses it.
const maxToolCallGrowth = 1 << 10

// LimitError says which of Config's limits ended a call. It is the Err of
// the *llm.Error that Complete returns, whose Kind is
// llm.ErrResponseTooLarge, llm.ErrResponseTimeout or llm.ErrStreamStalled;
// errors.As reaches it. It is llm.LimitError, which every provider of this
// module returns: its Limit is the field of Config (MaxResponseBytes,
// MaxBodyBytes, MaxDuration, MaxFirstByteWait or MaxIdle), its Bytes or
// Duration what the limit allowed, and its message says what went past it,
// such as "the text and tool calls passed Config.MaxResponseBytes = 4194304
// bytes".
type LimitError = llm.LimitError

// newLimits reads c's limits: zero is the default, a negative value an
// error.
func newLimits(c Config) (*provider.Limits, error) {
	return provider.NewLimits("openai", provider.Config{MaxResponseBytes: c.MaxResponseBytes, MaxBodyBytes: c.MaxBodyBytes,
		MaxDuration: c.MaxDuration, MaxFirstByteWait: c.MaxFirstByteWait, MaxIdle: c.MaxIdle})
}

// keptBytes returns what chunk adds to what Complete keeps of a reply: the
// bytes of its text and of its tool calls' IDs, types, names and
// arguments, and, for each tool call it opens, toolCallBytes and idBytes
// (the ID Complete makes of the completion's if the server gives none).
// calls is the number of tool calls before chunk; chunk holds the first
// choice only.
func keptBytes(chunk *sdk.ChatCompletionChunk, calls int64, idBytes int) int64 {
	var n int64
	for _, c := range chunk.Choices {
		n += int64(len(c.Delta.Content)) + int64(len(c.Delta.Refusal))
		for _, t := range c.Delta.ToolCalls {
			n += int64(len(t.ID)) + int64(len(t.Type)) + int64(len(t.Function.Name)) + int64(len(t.Function.Arguments))
			i := max(t.Index, 0) // -1 is the first call, for some servers (AWS Bedrock), as for the SDK
			if i >= calls {
				opened := min(i+1-calls, maxToolCallGrowth)
				n += opened * (toolCallBytes + int64(idBytes))
				calls = i + 1
			}
		}
	}
	return n
}
