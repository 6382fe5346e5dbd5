// Package gemini is the llm.Model of Google's Gemini API, on the official
// Go SDK (google.golang.org/genai), with the same interface, limits and
// errors as package automata/llm/openai.
//
// # Configuration
//
// New takes a Config; what it leaves empty comes from the environment:
//
//	GEMINI_MODEL     the model's name, such as gemini-2.5-flash (required)
//	GEMINI_API_KEY   the key (the Gemini API needs one; a server on this machine may not)
//	GOOGLE_API_KEY   the key too, as the SDK documents; it wins when both are set
//	GEMINI_BASE_URL  the API's root, without /v1beta (default https://generativelanguage.googleapis.com/;
//	                 else GOOGLE_GEMINI_BASE_URL, the SDK's own variable)
//
// The SDK client is given the backend, the key and the base URL, so that it
// takes none of them from the environment itself: GOOGLE_GENAI_USE_VERTEXAI
// and the Google Cloud project variables are not obeyed (this is the Gemini
// API's provider, not Vertex AI's), and no application default credentials
// are looked for. (The SDK still logs a warning, with the standard log
// package, when both key variables are set.) A server on this machine
// given no key is sent none. Config.MaxTokens is the API's maxOutputTokens,
// the model's own bound unless set.
//
// The examples of this module run offline unless the environment names a
// model; package automata/llm/llmenv makes that choice, and takes this
// provider for LLM_PROVIDER=gemini only (never for a key or a model
// variable alone, which machines often set for other tools). To run one on
// Gemini:
//
//	LLM_PROVIDER=gemini GEMINI_API_KEY=AIza… GEMINI_MODEL=gemini-2.5-flash go run ./examples/persistent
//
// # The call
//
// Complete sends one streamed request (Models.GenerateContentStream: POST
// /v1beta/models/{model}:streamGenerateContent?alt=sse) with the system
// prompt as systemInstruction, the conversation as contents, the tools and
// the tool config, and puts the reply together as Google documents it: a
// stream of server-sent events, each a data: line with a
// GenerateContentResponse whose first candidate has the next parts of the
// reply, the last one with a finishReason (no event marks the end), and
// the usage so far in each usageMetadata. Text parts stream to onChunk as
// they arrive; thought parts (summaries of a thinking model, which only
// includeThoughts asks for) are left out. Each functionCall part is a tool
// call, which the API sends whole; the model may make several at once, and
// they are returned in its order. An error event ({"error": {…}}) ends the
// call. The SDK's automatic continuation is off: a stream that broke is
// not resumed by a second request.
//
// The conversation becomes the API's contents: a user message a user
// content with a text part; an assistant message a model content with a
// text part and a functionCall part per call (arguments that are not a
// JSON object, as a call cut off by FinishLength may have, go back as
// none); the tool messages that answer one assistant message one user
// content of functionResponse parts, each {"name": the tool, "response":
// {"output": the result}}, in the order of the calls, whatever the order of
// the messages: the API matches a response to its call by name and order.
// Empty texts are left out, and contents left empty with them. Each tool is
// a functionDeclaration whose parametersJsonSchema is Tool.Parameters, so
// that the JSON Schema reaches the model as it is (not translated to the
// API's OpenAPI subset). RequiredTool is toolConfig's
// functionCallingConfig {"mode": "ANY"} for llm.AnyTool, and with
// allowedFunctionNames [the tool] for a tool's name. ResponseFormat is
// generationConfig's responseMimeType "application/json" and
// responseJsonSchema, the schema as it is.
//
// # Tool calls
//
// The Gemini API gives a functionCall no id (the field exists, optional,
// and is left out), and llm needs one to pair a call with its result. The
// provider derives it: "gemini-" and 16 hex digits of the SHA-256 of the
// request (its JSON, the conversation and the idempotency key included),
// the reply's responseId, the call's place in the reply, its name and its
// arguments. The same reply to the same request has the same IDs, the
// calls of one reply have different IDs, and so do the calls of replies to
// two requests; a derived ID is not sent back to the API. A call the
// server did give an id keeps it, and sends it back with the call and its
// response.
//
// Thinking models (Gemini 2.5, 3) sign the calls they make with a
// thoughtSignature, and Gemini 3 refuses a conversation whose calls of the
// current turn come back without theirs. The signature is kept in the
// call's ID, after a "~", in unpadded base64url, so that the conversation
// (and a journal, through restarts) keeps it, and it goes back as the
// functionCall part's thoughtSignature. Such IDs are long: some hundreds
// of bytes. The arguments are the API's args object as JSON, its keys
// sorted (the SDK decodes it into a map).
//
// The finish reasons are llm's: STOP is FinishToolCalls when the reply has
// function calls (the API says STOP then too), else FinishStop; MAX_TOKENS
// FinishLength; SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII,
// IMAGE_SAFETY, IMAGE_PROHIBITED_CONTENT and IMAGE_RECITATION
// FinishContentFilter; others (MALFORMED_FUNCTION_CALL, LANGUAGE, OTHER,
// …) pass as they come. A prompt the API blocked (promptFeedback with a
// blockReason, and no candidate) is a reply with no text and
// FinishContentFilter, not an error, as Anthropic's refusal is.
//
// The usage is llm's: InputTokens is promptTokenCount (which counts the
// cached tokens too) plus toolUsePromptTokenCount; OutputTokens is
// candidatesTokenCount plus thoughtsTokenCount, since thinking tokens are
// paid as output and llm.Usage has no field of its own for them (as
// OpenAI's completion tokens count its reasoning tokens);
// CacheReadInputTokens is cachedContentTokenCount, the tokens the API read
// from its cache (implicit caching of a repeated prefix, on by default for
// Gemini 2.5 models, or an explicit cache), which llm.Traced records as
// gen_ai.usage.cache_read.input_tokens. CacheCreationInputTokens is zero:
// the API charges nothing for writing its implicit cache, and this
// provider creates no explicit one.
//
// # Images
//
// The images of a user message (llm.Message.Images) go as the API documents
// them, before the text part, as Google advises: an inlineData part for
// each, with the bytes in base64 (inline_data and mime_type in Google's
// REST examples: the API takes both spellings),
//
//	{"inlineData": {"mimeType": "image/png", "data": "…"}}
//
// A tool message's images go in the parts of its functionResponse, as
// inlineData too: the API's multimodal function responses, which Gemini 3
// models take, and older models may refuse with an HTTP 400 (Complete sends
// them rather than drop them). Before it sends anything, Complete refuses a
// GIF (the API takes PNG, JPEG and WebP of llm.ImageMediaTypes, and HEIC
// and HEIF, which package llm does not have), and a request whose images'
// base64 passes 20 MB in all, the API's bound on inline data (bigger files
// go through the Files API, which this provider does not use);
// llm.Request.Validate already bounds each image (5 MiB) and their number
// (20).
//
// # Idempotency
//
// The Gemini API has no idempotency key: a call made again is a new one,
// paid again. Request.IdempotencyKey is sent as the Idempotency-Key header
// all the same, the same on every retry, for gateways in front of the API
// that honour it, and so that the request is the other providers'.
//
// # Retries
//
// The SDK retries only when asked (HTTPRetryOptions), with a backoff that
// ignores the wait the server asks for; the provider retries itself, as
// the OpenAI and Anthropic SDKs do: a request that cannot connect or gets
// HTTP 408, 429, 500, 502, 503 or 504 (the SDK's own list) is sent again,
// twice by default (Config.MaxRetries), after the wait the server asks for
// (the retryDelay of the google.rpc.RetryInfo in the error's details, else
// a Retry-After header), or else half a second, doubled each time. It
// waits at most two minutes, and never past what is left of the call: a
// longer wait ends the call at once with the server's error and its wait
// in llm.Error.RetryAfter (the free tier's quotas ask for tens of seconds
// or more). A stream that has started is never retried. Cancelling the ctx
// closes the stream's connection, so the call returns at once and the
// server stops generating.
//
// # Limits
//
// A call takes from the server no more than the limits of its Config,
// which are the OpenAI provider's, with the same names, defaults and
// errors (see "Limits" in package automata/llm/openai): MaxResponseBytes
// (4 MiB: the text, the responseId, the tool calls' IDs, names and
// arguments, 1 KiB more for each call, and the body of an HTTP error; any
// one event at twice that plus 64 KiB, measured as the SDK's scanner splits
// events, at "\n\n" or "\r\n\r\n"), MaxBodyBytes (64 MiB of stream),
// MaxDuration (10 minutes for the whole call, the retries and their waits
// included), MaxFirstByteWait (5 minutes from each request to the first
// byte of its answer; a thinking model sends nothing while it thinks) and
// MaxIdle (1 minute of silence in the middle of a stream; the API sends no
// pings). Each ends the call with an *llm.Error of kind
// llm.ErrResponseTooLarge, llm.ErrResponseTimeout or llm.ErrStreamStalled
// whose Err is an *llm.LimitError naming it. The number of events is
// bounded by MaxBodyBytes, each event having some tens of bytes at least,
// and the number of calls by MaxResponseBytes. No text past
// MaxResponseBytes reaches onChunk. (The SDK logs, with the standard log
// package, the error that ended a stream it was reading: a limit, a
// cancellation.)
//
// # Errors
//
// New returns an *llm.Error of kind llm.ErrMissingKey for the Gemini API
// without a key. Complete returns an *llm.Error, one line each, classified
// as the other providers' are, from the HTTP status and the error's
// status:
//
//	gemini: cannot reach http://localhost:4000/: dial tcp [::1]:4000: connect: connection refused     (llm.ErrUnreachable)
//	gemini: unauthorized (HTTP 400): API key not valid. Please pass a valid API key.                  (llm.ErrUnauthorized: API_KEY_INVALID)
//	gemini: unauthorized (HTTP 403): Method doesn't allow unregistered callers …                       (llm.ErrUnauthorized: 401, 403, PERMISSION_DENIED)
//	gemini: rate limited (HTTP 429, retry after 37s): You exceeded your current quota, …               (llm.ErrRateLimited: RESOURCE_EXHAUSTED, RetryAfter)
//	gemini: overloaded (HTTP 503): The model is overloaded. Please try again later.                    (llm.ErrOverloaded: 503 UNAVAILABLE)
//	gemini: overloaded (in the stream): The model is overloaded. Please try again later.              (llm.ErrOverloaded: an error event)
//	gemini: context length exceeded (HTTP 400): The input token count (1048577) exceeds the maximum … (llm.ErrContextLength)
//	gemini: malformed stream from …: a chunk that is not JSON: unexpected end of JSON input            (llm.ErrMalformedStream: a stream cut mid-chunk)
//	gemini: malformed stream from …: the stream ended before the model finished (no finishReason), after tool call gemini-… (word-count)
//	gemini: response too large from …: the text and tool calls passed Config.MaxResponseBytes = 4194304 bytes   (llm.ErrResponseTooLarge)
//	gemini: response took too long from …: the call passed Config.MaxDuration = 10m0s                 (llm.ErrResponseTimeout)
//	gemini: stream stalled from …: nothing came for Config.MaxIdle = 1m0s in the middle of the stream (llm.ErrStreamStalled)
//	gemini: the server reported an error in the stream: An internal error has occurred.
//	gemini: HTTP 404: models/gemini-nonesuch is not found for API version v1beta
//
// errors.As reaches the SDK's genai.APIError (its code, status and
// details) through the *llm.Error, and the *llm.LimitError of a limit.
//
// # Speed
//
// BenchmarkStreamOverhead reads a stream of 1000 chunks of one token each
// (the API sends several tokens a chunk: this is the worst case per token)
// from memory, once raw (no parsing at all) and once through Complete, in
// the same run:
//
//	go test -run '^$' -bench . -benchmem ./automata/llm/gemini
//
//	BenchmarkStreamOverhead-2  44  23390178 ns/op  7.87 MB/s  23379 provider-ns/token  2201 ratio  10.62 raw-ns/token  5549534 B/op  105535 allocs/op
//
// (2 cores of an AMD EPYC, a machine doing other work): some 23 µs and 105
// allocations a token, about 2200 times reading the bytes, which is a
// memory copy. A CPU profile puts some 95% of it in the SDK's
// iterateResponseStream, which decodes each event into a map, converts the
// map, encodes it to JSON again and decodes that into its struct; putting
// the reply together is the rest. Against a model that writes some 100
// tokens a second, in chunks of several, that is some thousandths of the
// time of a call.
//
// # What it is not
//
// Not the whole SDK: images in, inline, but no files (the Files API, or
// by URI), no explicit caches, thinking configuration, grounding, code
// execution, Vertex AI, the Live API or sampling parameters. Use the SDK
// directly for those.
package gemini
