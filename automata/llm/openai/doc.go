// Package openai is the llm.Model of OpenAI's chat completions API, on the
// official Go SDK (github.com/openai/openai-go/v3), and of every server that
// speaks the same API: llama.cpp's llama-server, vLLM, Ollama, LM Studio,
// and the gateways in front of other providers.
//
// # Configuration
//
// New takes a Config; what it leaves empty comes from the environment:
//
//	OPENAI_API_KEY    the key, sent as a bearer token (OpenAI's API needs one; a local server may not)
//	OPENAI_BASE_URL   the API's root, up to /v1 (default https://api.openai.com/v1/)
//	OPENAI_MODEL      the model's name, such as gpt-4o-mini (required)
//
// The examples of this module run on llm.Scripted, offline, unless
// OPENAI_MODEL is set (or LLM_PROVIDER names a provider): package
// automata/llm/llmenv makes that choice, as FromEnv does for this provider
// alone. To run one on OpenAI, or on a model served on this machine:
//
//	OPENAI_API_KEY=sk-… OPENAI_MODEL=gpt-4o-mini go run ./examples/persistent
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5:7b go run ./examples/persistent
//
// # The call
//
// Complete sends one streamed chat completion (Chat.Completions.NewStreaming,
// with the conversation, the tools as functions, tool_choice for
// RequiredTool, response_format {"type": "json_schema", "json_schema":
// {name, description, schema, strict}} for ResponseFormat, and
// stream_options.include_usage so that the last chunk counts the tokens) and puts the chunks together with the SDK's
// ChatCompletionAccumulator: the text streams to the caller's onChunk as it
// arrives, and tool calls, whose arguments arrive in pieces, are returned
// whole. Request.IdempotencyKey is sent as the Idempotency-Key header. The
// usage counts the prompt's cached tokens (prompt_tokens_details.cached_tokens)
// as llm.Usage.CacheReadInputTokens, within InputTokens, and the tokens
// written to the cache, where a server reports them (cache_write_tokens), as
// CacheCreationInputTokens.
//
// The SDK retries a request that cannot connect or gets HTTP 408, 409, 429 or
// a 5xx, twice by default, waiting as the server's Retry-After says (up to
// two minutes) or backing off; option.WithMaxRetries in Config.Options
// changes that. A stream that has started is never retried: its job fails,
// and the state decides.
//
// Cancelling the ctx closes the stream's connection, so the call returns at
// once and the server stops generating.
//
// # Images
//
// A user message's images (llm.Message.Images) go as the API documents
// them: the message's content becomes an array of parts, an image_url part
// for each image, whose url is a data URL of its bytes in base64
// (data:image/png;base64,…), with no detail (the API's default, auto), then
// a text part (none when the text is empty), as the other providers put
// them: images before the text. A tool message of this API is text only:
// Complete refuses a tool's result with images, before it sends anything,
// rather than drop them (put them in a user message after the results). It
// refuses too an animated GIF (one of more than one frame: the API takes
// still GIFs only), and a request whose images pass 50 MB in all, the API's
// bound; llm.Request.Validate already bounds each image (5 MiB, within the
// API's 20 MB) and their number (20, within its 500). Whether a model sees
// images is the model's: one that does not answers with an HTTP error, and
// a server that imitates the API may not take them at all.
//
// # Limits
//
// A call takes from the server no more than the limits of its Config, so
// that a server that never ends its stream, answers without end, drips
// forever or stalls can neither fill the memory nor hold a job for ever.
// Each has a default, which a Config field of zero leaves in place (a
// negative value is an error of New), and ends the call with an *llm.Error
// whose Err is a *LimitError naming it:
//
//	Config field       default   bounds                                                        error (Kind)
//	MaxResponseBytes   4 MiB     the text and the tool calls' IDs, types, names and            llm.ErrResponseTooLarge
//	                             arguments (and 1 KiB, with the completion's ID, for each
//	                             tool call); the body of an HTTP error; any one event of
//	                             the stream, at twice as many bytes plus 64 KiB
//	MaxBodyBytes       64 MiB    the bytes of the stream, comments and envelopes included      llm.ErrResponseTooLarge
//	MaxDuration        10 min    the whole call, the SDK's retries and waits included,         llm.ErrResponseTimeout
//	                             whatever the ctx's deadline
//	MaxFirstByteWait   5 min     the wait for the first byte of the answer, from the           llm.ErrStreamStalled
//	                             request (each attempt): the prompt's processing, and a
//	                             reasoning model's thinking, which the API streams nothing of
//	MaxIdle            1 min     every silence after that: how long one read of the stream     llm.ErrStreamStalled
//	                             waits (the time onChunk takes is not the server's)
//
// Whatever the server sends, the memory of a call stays within a small
// multiple of MaxResponseBytes: the reply is kept twice (the text as it
// streamed, and the SDK's accumulation), and one event at a time is decoded
// (the tests measure a heap at most some 12 times MaxResponseBytes larger,
// garbage not yet collected included).
// Only the first choice is kept, without log probabilities, which are not
// asked for.
//
// The client retries none of these: the SDK never retries a stream that
// has started, and a server stalled before its answer may still be working
// on the request, which a retry would make it start again. What a program
// makes of them: a stalled stream (llm.ErrStreamStalled) or a call that took
// too long (llm.ErrResponseTimeout) is a slow server's, and asking again may
// well succeed; a reply too large (llm.ErrResponseTooLarge) is the model's,
// which asked again tends to write as much: raise the limit, or ask for
// less. In a job, a limit is an error like any other: the job returns it,
// which is an EffectFailed event; it has dispatched nothing, so that no
// part of the reply reaches the state or a durable machine's journal (the
// chunks already passed to onChunk were for the screen), and the call is
// made again when the state calls for it again (see package automata/llm).
//
// # Errors
//
// New returns an *llm.Error of kind llm.ErrMissingKey for OpenAI's API
// without a key. Complete returns an *llm.Error, one line each:
//
//	openai: cannot reach http://localhost:11434/v1/: dial tcp [::1]:11434: connect: connection refused   (llm.ErrUnreachable)
//	openai: unauthorized (HTTP 401): Incorrect API key provided: sk-…                                   (llm.ErrUnauthorized)
//	openai: rate limited (HTTP 429, retry after 20s): Rate limit reached for gpt-4o-mini …             (llm.ErrRateLimited, RetryAfter)
//	openai: context length exceeded (HTTP 400): This model's maximum context length is …              (llm.ErrContextLength)
//	openai: overloaded (HTTP 503): The engine is currently overloaded, please try again later.        (llm.ErrOverloaded)
//	openai: malformed stream from …: the stream ended before the model finished (no finish reason)     (llm.ErrMalformedStream)
//	openai: response too large from …: the text and tool calls passed Config.MaxResponseBytes = 4194304 bytes   (llm.ErrResponseTooLarge)
//	openai: response too large from …: one event of the stream passed 8454144 bytes (twice Config.MaxResponseBytes = 4194304, plus 64 KiB)
//	openai: response too large from …: the error body passed Config.MaxResponseBytes = 4194304 bytes
//	openai: response too large from …: the stream passed Config.MaxBodyBytes = 67108864 bytes
//	openai: response took too long from …: the call passed Config.MaxDuration = 10m0s                 (llm.ErrResponseTimeout)
//	openai: stream stalled from …: nothing came for Config.MaxFirstByteWait = 5m0s after the request  (llm.ErrStreamStalled)
//	openai: stream stalled from …: nothing came for Config.MaxIdle = 1m0s in the middle of the stream
//	openai: the server reported an error in the stream: The server had an error …
//	openai: HTTP 404: The model `gpt-5-nano` does not exist or you do not have access to it.
//
// errors.As reaches the SDK's *openai.Error, with the whole response, through
// the *llm.Error, and the *LimitError of a limit.
//
// # Speed
//
// BenchmarkStreamOverhead reads a stream of 1000 chunks of one token each
// from memory, once raw (no parsing at all) and once through Complete, in
// the same run; the three providers' benchmarks run together:
//
//	go test -run '^$' -bench StreamOverhead -benchmem ./automata/llm/openai ./automata/llm/anthropic ./automata/llm/gemini
//
//	openai     BenchmarkStreamOverhead-2   44  26252224 ns/op  26238 provider-ns/token  2071 ratio  12.67 raw-ns/token  6803719 B/op   50485 allocs/op
//	anthropic  BenchmarkStreamOverhead-2  122   9192893 ns/op   9178 provider-ns/token   654 ratio  14.03 raw-ns/token  2690638 B/op   24445 allocs/op
//	gemini     BenchmarkStreamOverhead-2   60  21895799 ns/op  21879 provider-ns/token  1421 ratio  15.40 raw-ns/token  5547466 B/op  105501 allocs/op
//
// (2 cores of an AMD EPYC, a machine doing other work): some 26 µs and 50
// allocations a token for this provider, about 2,000 times reading the
// bytes (a memory copy), most of it the SDK decoding each chunk; against a
// model that writes some 100 tokens a second, a few thousandths of the
// time of a call. Of the three in one run, Anthropic's costs 0.35 and
// Gemini's 0.83 of this one's per token.
//
// # What it is not
//
// Not the whole SDK: one chat completion with one choice, function tools
// only; images in, as data URLs, but none by URL and none out; no audio,
// sampling parameters or the Responses API. Use the SDK directly for those.
package openai
