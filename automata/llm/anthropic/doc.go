// Package anthropic is the llm.Model of Anthropic's Messages API, on the
// official Go SDK (github.com/anthropics/anthropic-sdk-go/v2), with the
// same interface, limits and errors as package automata/llm/openai, and
// Anthropic's prompt caching.
//
// # Configuration
//
// New takes a Config; what it leaves empty comes from the environment:
//
//	ANTHROPIC_API_KEY    the key (Anthropic's API needs one; a gateway on this machine may not)
//	ANTHROPIC_BASE_URL   the API's root, without /v1 (default https://api.anthropic.com/)
//	ANTHROPIC_MODEL      the model's name, such as claude-sonnet-4-5 (required)
//
// The SDK client itself reads nothing from the environment: no
// ANTHROPIC_AUTH_TOKEN, no profile, no custom headers (Config.Options adds
// what a program needs). Config.MaxTokens is the API's max_tokens, which
// it requires: 8192 unless set.
//
// The examples of this module run offline unless the environment names a
// model; package automata/llm/llmenv makes that choice, and takes this
// provider for LLM_PROVIDER=anthropic only (never for a key or a model
// variable alone, which machines often set for other tools). To run one on
// Claude:
//
//	LLM_PROVIDER=anthropic ANTHROPIC_API_KEY=sk-ant-… ANTHROPIC_MODEL=claude-sonnet-4-5 go run ./examples/persistent
//
// # The call
//
// Complete sends one streamed message (Messages.NewStreaming, stream:
// true) with the system prompt, the conversation, the tools and
// tool_choice, and puts the events together as Anthropic documents them:
// message_start, then for each content block content_block_start, its
// content_block_delta events and content_block_stop, then message_delta
// (the stop reason, the usage) and message_stop; ping events and event
// types the API adds later are passed over, an error event ends the call.
// The text of text_delta events streams to onChunk as it arrives; the
// input_json_delta events of each tool_use block are put together, and
// every tool call of the reply (the model may make several at once) is
// returned whole, in its order. The provider does this itself rather than
// with the SDK's Message.Accumulate, which appends each delta to the text
// so far with + (a copy of the whole text per delta) and keeps each
// block's raw JSON besides.
//
// The conversation becomes the API's messages: a user message a text
// block; an assistant message a text block and a tool_use block per call
// (arguments that are not a JSON object, as a call cut off by FinishLength
// may have, go back as {}); a tool message a tool_result block. Messages
// of one role in a row are one message, as the API requires, so that the
// results of one turn's calls go back together in one user message, before
// the words of a user message that follows them. Empty texts are left out
// (the API refuses empty text blocks), and so are messages left empty.
// RequiredTool is tool_choice {"type": "any"} for llm.AnyTool and
// {"type": "tool", "name": …} for a tool's name. ResponseFormat is
// output_config {"format": {"type": "json_schema", "schema": …}},
// Anthropic's structured outputs, the schema with the keywords they refuse
// (bounds of numbers, lengths of strings, minItems above 1) moved into its
// description and additionalProperties false on every object; a model
// before them (Claude Sonnet 4.5, Opus 4.5, Haiku 4.5) refuses it, and
// Config.NoStructuredOutputs makes the provider say it has none.
//
// The stop reasons are llm's: end_turn and stop_sequence FinishStop,
// tool_use FinishToolCalls, max_tokens and model_context_window_exceeded
// FinishLength, refusal FinishContentFilter; others pass as they come.
// The usage is llm's: InputTokens counts the whole prompt, the API's
// input_tokens (the part after the last cache breakpoint) plus
// cache_read_input_tokens and cache_creation_input_tokens, which are
// CacheReadInputTokens and CacheCreationInputTokens.
//
// Request.IdempotencyKey is sent as the Idempotency-Key header, the same on
// every retry of the SDK. Anthropic does not document that header for the
// Messages API (nor has the SDK an option for it): as far as its
// documentation says, the API ignores it, and a call made again is a new
// one, paid again. It is sent for gateways in front of the API that honour
// it, and so that the request is the OpenAI provider's.
//
// The SDK retries a request that cannot connect or gets HTTP 408, 409,
// 429 or a 5xx (529, overloaded, included), twice by default, waiting as
// the server's retry-after says or backing off; option.WithMaxRetries in
// Config.Options changes that. It would wait any time the server asks: the
// provider lets it wait at most two minutes, as the OpenAI SDK does, and
// never past what is left of the call, and otherwise ends the call at once
// with the server's error and its wait in llm.Error.RetryAfter. A stream
// that has started is never retried. Cancelling the ctx closes the
// stream's connection, so the call returns at once and the server stops
// generating. The SDK's own OpenTelemetry spans are off (llm.Traced is
// this module's; option.WithOpenTelemetryTraces(true) turns them back on).
//
// # Prompt caching
//
// Anthropic caches the prefix of a request up to a block marked with
// cache_control {"type": "ephemeral"} (a breakpoint), for five minutes; a
// later request with the same prefix reads it at a tenth of the price of
// input tokens, and writing it costs a quarter more. The provider marks
// the prefix that stays the same from one call of an agent to the next:
//
//   - the system prompt;
//   - the last tool definition, which caches all of them (the API's prefix
//     is the tools, then the system prompt, then the messages);
//   - the last block before the newest user message: the history that the
//     next turns send again, unchanged.
//
// That is three breakpoints at most, within the API's four. A prefix
// shorter than the model's minimum (1024 tokens for most models) is not
// cached, which costs nothing. Config.NoPromptCache sends no
// cache_control. What the cache did comes back in the usage
// (CacheReadInputTokens, CacheCreationInputTokens), which llm.Traced
// records as gen_ai.usage.cache_read.input_tokens and
// gen_ai.usage.cache_creation.input_tokens.
//
// # Images
//
// The images of a user message (llm.Message.Images) go as the API documents
// them, before the message's text block, as Anthropic advises: an image
// block for each,
//
//	{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "…"}}
//
// The API takes images in a tool's result too: a tool message's images are
// image blocks of its tool_result's content, before its text. An image
// block may be the cache breakpoint before the newest user message, and
// images are cached with the rest of the prefix. Before it sends anything,
// Complete refuses an image whose base64 passes 5 MiB (3.75 MiB of bytes:
// the API bounds the base64, not the bytes), and a request whose images'
// base64 passes 32 MB in all (the API's bound on a request);
// llm.Request.Validate already bounds their number (20, within the API's
// 100). The API refuses on its side, with an HTTP 400, an image larger than
// 8000 pixels a side, which this provider does not measure.
//
// # Limits
//
// A call takes from the server no more than the limits of its Config,
// which are the OpenAI provider's, with the same names, defaults and
// errors (see "Limits" in package automata/llm/openai): MaxResponseBytes
// (4 MiB: the text, the tool calls' IDs, names and inputs, 1 KiB more for
// each content block, and the body of an HTTP error; any one event at
// twice that plus 64 KiB), MaxBodyBytes (64 MiB of stream, pings and
// envelopes included), MaxDuration (10 minutes for the whole call, the
// SDK's retries and their waits included), MaxFirstByteWait (5 minutes
// from each request to the first byte of its answer) and MaxIdle (1
// minute of silence in the middle of a stream; the API pings every few
// seconds). Each ends the call with an *llm.Error of kind
// llm.ErrResponseTooLarge, llm.ErrResponseTimeout or llm.ErrStreamStalled
// whose Err is an *llm.LimitError naming it. Neither provider bounds the
// number of events as such: MaxBodyBytes does, each event having some tens
// of bytes at least, and MaxResponseBytes bounds the blocks an endless
// stream may open. No text past MaxResponseBytes reaches onChunk.
//
// # Errors
//
// New returns an *llm.Error of kind llm.ErrMissingKey for Anthropic's API
// without a key. Complete returns an *llm.Error, one line each, classified
// as the OpenAI provider's are:
//
//	anthropic: cannot reach http://localhost:4000/: dial tcp [::1]:4000: connect: connection refused          (llm.ErrUnreachable)
//	anthropic: unauthorized (HTTP 401): invalid x-api-key                                                      (llm.ErrUnauthorized)
//	anthropic: rate limited (HTTP 429, retry after 20s): This request would exceed your organization's rate limit …   (llm.ErrRateLimited, RetryAfter)
//	anthropic: overloaded (HTTP 529, retry after 1s): Overloaded                                              (llm.ErrOverloaded)
//	anthropic: overloaded (in the stream): Overloaded                                                         (llm.ErrOverloaded: an overloaded_error event)
//	anthropic: context length exceeded (HTTP 400): prompt is too long: 208310 tokens > 200000 maximum         (llm.ErrContextLength)
//	anthropic: malformed stream from …: the stream ended in the middle of tool call toolu_01… (word-count)    (llm.ErrMalformedStream)
//	anthropic: malformed stream from …: the stream ended before the model finished (no message_stop)
//	anthropic: response too large from …: the text and tool calls passed Config.MaxResponseBytes = 4194304 bytes   (llm.ErrResponseTooLarge)
//	anthropic: response took too long from …: the call passed Config.MaxDuration = 10m0s                      (llm.ErrResponseTimeout)
//	anthropic: stream stalled from …: nothing came for Config.MaxIdle = 1m0s in the middle of the stream      (llm.ErrStreamStalled)
//	anthropic: the server reported an error in the stream: Internal server error
//	anthropic: HTTP 404: model: claude-nonesuch
//
// A refusal is not an error: the reply ends with FinishContentFilter. The
// kind comes from the HTTP status or, in the stream, from the error's type
// (authentication_error, rate_limit_error, overloaded_error). errors.As
// reaches the SDK's *anthropic.Error (its Type, its request ID, the whole
// response) through the *llm.Error, and the *llm.LimitError of a limit.
//
// # Speed
//
// BenchmarkStreamOverhead reads a stream of 1000 text_delta events from
// memory, once raw (no parsing at all) and once through Complete, in the
// same run:
//
//	go test -run '^$' -bench . -benchmem ./automata/llm/anthropic
//
//	BenchmarkStreamOverhead-2  186  6258960 ns/op  19.28 MB/s  6247 provider-ns/token  537.4 ratio  11.62 raw-ns/token  2689831 B/op  24434 allocs/op
//
// (2 cores of an AMD EPYC, a machine doing other work): some 6 µs and 24
// allocations a token, about 540 times reading the bytes, which is a
// memory copy. A CPU profile puts some 80% of it in the SDK's
// ssestream.Stream.Next, which decodes each event with the SDK's
// reflection-based JSON decoder; putting the message together is the
// rest. Against a model that writes some 100 tokens a second, that is
// less than a thousandth of the time of a call.
//
// # What it is not
//
// Not the whole SDK: images in, in base64, but none by URL or the Files
// API, no documents, extended thinking, server tools, citations, batches
// or sampling parameters. Use the SDK directly for those.
package anthropic
