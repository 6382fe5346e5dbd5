// Package llm is how an agent's jobs talk to a language model: one small
// interface, Model, shaped by what agents need, with an offline scripted
// model as the default and providers in sub-packages: package
// automata/llm/openai speaks to OpenAI and to any server with the same API
// (llama.cpp, vLLM, Ollama), package automata/llm/anthropic to Anthropic's
// Messages API, package automata/llm/gemini to Google's Gemini API, and
// package automata/llm/llmenv chooses one of them, or the offline model,
// from the environment. This package imports no SDK.
//
// # The call
//
// A Request carries the system prompt, the conversation (user messages,
// assistant messages with the tool calls they made, tool results), the
// tools the model may call (name, description, JSON Schema of the
// arguments), whether it must call one (RequiredTool, seed 000's
// requiredTool), whether the reply is to be JSON of a schema
// (ResponseFormat, in the provider's native mode, which a model that has
// one says it has: ResponseFormatter) and an idempotency key. Model.Complete sends it and returns
// the Response: the text, the tool calls (ID, name, arguments as JSON), why
// the model stopped and the tokens it used.
//
// While the reply streams in, Complete hands each piece of text to a
// callback (seed 000's onMessageChunk), in order, before it returns. Tool
// calls are not chunks: their arguments arrive in pieces and are put
// together, and only the whole call is returned. Chunks are for the screen;
// they never enter the state. A job streams them to whoever shows them, and
// dispatches the whole reply as one input:
//
//	func(ctx context.Context, dispatch automata.Dispatch[Input]) error {
//		resp, err := model.Complete(ctx, llm.Request{
//			System:         view.SystemPrompt,
//			Messages:       conversation(view),
//			Tools:          tools,
//			IdempotencyKey: automata.JobKey(ctx),
//		}, stream.Send)
//		if err != nil {
//			return err // an EffectFailed event; the state decides what next
//		}
//		dispatch(SendAssistantMessage{Content: resp.Text, ToolCalls: resp.ToolCalls})
//		return nil
//	}
//
// The Example below is a whole agent doing that, and runs offline.
//
// Cancellation is the context's: when the state no longer calls for the
// job, the machine cancels its ctx and Complete returns at once, closing the
// HTTP stream, so that the server stops generating too.
//
// # Images
//
// A user message, or a tool's result, may carry images (Message.Images):
// PNG, JPEG, GIF or WebP, each an Image of its media type and its bytes,
// which every provider sends in the request, in base64, before the
// message's text, as its API documents:
//
//	llm.Message{Role: llm.RoleUser, Content: "What is on this page?",
//		Images: []llm.Image{{MediaType: "image/png", Data: screenshot}}}
//
// Validate refuses an image in an assistant message, a media type of
// another kind, bytes that are not of the type declared (it sniffs them, as
// http.DetectContentType does), an image of no bytes or more than
// MaxImageBytes (5 MiB), and more than MaxImages (20) in a request, with an
// error that says which (messages[2].Images[0]) and why. A provider refuses
// too, before it sends anything, what its API would refuse past those
// bounds, rather than drop it: OpenAI's chat completions API takes no image
// in a tool's result and no animated GIF; Anthropic's takes 5 MiB of base64
// an image; the Gemini API takes no GIF; each bounds the images of a
// request. Their documentation says what. The scripted model takes images
// and hands them to its Reply; a recording keeps their digest, not their
// bytes (package automata/llm/record); Traced counts them, and never
// records their bytes.
//
// # Idempotency
//
// A job may run more than once for the same work: after a crash before its
// result was recorded, a restored agent calls for the same job, under the
// same key (see automata.JobKey). Request.IdempotencyKey carries that key to
// the provider (the OpenAI, Anthropic and Gemini providers send it as the
// Idempotency-Key header), so that a server that honours it does the work
// once; for one that does not (the Gemini API has no such key), the model
// is simply asked again.
//
// # Errors
//
// A provider returns an *Error with a one-line message for the failures a
// person can act on, each matched by errors.Is with a sentinel: no API key
// (ErrMissingKey), a server that cannot be reached (ErrUnreachable), a key
// refused (ErrUnauthorized), too many requests (ErrRateLimited, with the
// wait the server asked for in Error.RetryAfter), a conversation longer than
// the model's context (ErrContextLength), servers too busy to answer
// (ErrOverloaded), and a reply that cannot be read (ErrMalformedStream). A
// provider bounds what it takes from a server (each provider's Config has
// the same limits, under the same names): a reply past a limit of size is
// ErrResponseTooLarge, a call past its limit of time ErrResponseTimeout,
// and a server silent for too long ErrStreamStalled, each with a
// *LimitError that names the limit. The first is the
// model's, which asked again tends to write as much; the other two a slow
// server's, which asked again may answer. A cancelled call returns an error
// that wraps ctx.Err(). Nothing panics: in a job, the error becomes an
// EffectFailed event, the machine goes on, and the job's key must vanish
// and come back (a new input, a restart) for the call to be made again.
// The job has dispatched nothing, so that no part of a failed reply
// reaches the state, or a durable machine's journal.
//
// # The scripted model
//
// Scripted answers with a function of the request (Script plays a list of
// replies in turn), deterministically, and streams the text word by word
// with an optional delay. It checks requests as Validate does and its
// replies against them, so that a test that passes on it sends what a real
// model accepts. Every example of this module runs on it by default, and on
// a real model when the environment names one (see package
// automata/llm/llmenv).
//
// # Telemetry
//
// Traced wraps a Model to trace and measure its calls with OpenTelemetry,
// as the GenAI semantic conventions say: each Complete is a span "chat
// {model}" with the provider, the model, the finish reason, the tokens (the
// cached ones too), the time to the first chunk and the tool calls asked
// for, a child of the span in its context (in a machine with
// automata.WithTelemetry, the span of the job that made the call), and the
// metrics gen_ai.client.operation.duration, gen_ai.client.token.usage and
// the times of the chunks. A model names its provider and itself by
// implementing Named (the OpenAI, Anthropic and Gemini providers and
// Scripted do), or the options WithProviderName and WithModelName do.
// What the model is sent and answers is left out, unless WithContent asks
// for it (bounded: 4 KiB a text, 64 KiB an attribute). Without providers, Traced
// returns the model itself.
//
//	model = llm.Traced(model, tracerProvider, meterProvider)
//
// # What it is not
//
// Not a client for everything a provider offers: images in but not out, and
// no audio, embeddings, sampling knobs or several choices per call. Not a retry
// policy: providers retry as their SDK does, and a job that fails is retried
// when the state calls for it again. Not an agent loop: deciding when to
// call the model and what to do with the reply is the agent's transition and
// jobs functions.
package llm
