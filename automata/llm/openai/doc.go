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
// OPENAI_MODEL is set: FromEnv makes that choice. To run one on OpenAI, or
// on a model served on this machine:
//
//	OPENAI_API_KEY=sk-… OPENAI_MODEL=gpt-4o-mini go run ./examples/persistent
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5:7b go run ./examples/persistent
//
// # The call
//
// Complete sends one streamed chat completion (Chat.Completions.NewStreaming,
// with the conversation, the tools as functions, tool_choice for
// RequiredTool, and stream_options.include_usage so that the last chunk
// counts the tokens) and puts the chunks together with the SDK's
// ChatCompletionAccumulator: the text streams to the caller's onChunk as it
// arrives, and tool calls, whose arguments arrive in pieces, are returned
// whole. Request.IdempotencyKey is sent as the Idempotency-Key header.
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
// # Errors
//
// New returns an *llm.Error of kind llm.ErrMissingKey for OpenAI's API
// without a key. Complete returns an *llm.Error, one line each:
//
//	openai: cannot reach http://localhost:11434/v1/: dial tcp [::1]:11434: connect: connection refused   (llm.ErrUnreachable)
//	openai: unauthorized (HTTP 401): Incorrect API key provided: sk-…                                   (llm.ErrUnauthorized)
//	openai: rate limited (HTTP 429, retry after 20s): Rate limit reached for gpt-4o-mini …             (llm.ErrRateLimited, RetryAfter)
//	openai: context length exceeded (HTTP 400): This model's maximum context length is …              (llm.ErrContextLength)
//	openai: malformed stream from …: the stream ended before the model finished (no finish reason)     (llm.ErrMalformedStream)
//	openai: the server reported an error in the stream: The server had an error …
//	openai: HTTP 404: The model `gpt-5-nano` does not exist or you do not have access to it.
//
// errors.As reaches the SDK's *openai.Error, with the whole response, through
// the *llm.Error.
//
// # What it is not
//
// Not the whole SDK: one chat completion with one choice, function tools
// only; no images, audio, sampling parameters or the Responses API. Use the
// SDK directly for those.
package openai
