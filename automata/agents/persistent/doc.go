// Package persistent is the persistent agent, ready to use: a chat with an
// llm that calls tools, whose every input is journaled (package
// automata/journal), so that the agent outlives its process. Opened again
// on the same store after a crash — a kill -9 in the middle of a tool call —
// it continues the conversation where it stopped, and redoes the llm or
// tool calls that were in flight, under the same idempotency keys.
//
//	kit, err := toolkit.New(toolkit.Config{}, wordCount) // package automata/toolkit
//	store, err := bolt.Open(filepath.Join(dir, "agent.db"))
//	a, err := persistent.New(persistent.Config{
//		System: "Count words.",
//		Tools:  kit,
//		Model:  model, // llm.Scripted, or openai.FromEnv(…)
//		Store:  store,
//		Token:  token, // what Handler's clients present; "" for none
//	})
//	defer a.Close(ctx)
//	err = a.Send(ctx, "terminal", text)
//	err = a.Wait(ctx) // the llm asks for the tool, reads its result, answers
//	s := a.State()
//	for _, m := range persistent.Conversation(s.UserMessages, s.AssistantMessages, s.ToolMessages) { … }
//
// examples/persistent is a program of a few lines over it: the terminal
// types messages, and a printer prints the conversation as it grows.
//
// # The agent
//
// The agent is three actors, specified in agent.yaml and generated into
// decl/ and impl/ by agentgen: the user, who sets the system prompt and
// sends messages; the llm, which answers them and may ask for tool calls;
// and the toolkit, which answers each call with its result. Its state is
// the conversation (decl.AgentState: user, assistant and tool messages,
// each list in order of time) and lastSentToLLMAt, up to where the llm has
// answered.
//
// The work that state calls for runs as jobs (automata.WithJobs), keyed so
// that a state restored after a crash calls for the same work under the
// same keys:
//
//   - toolkit/tool-{assistantMessageId}-{toolCallId}: each tool call of the
//     newest assistant message that has no result yet. The calls a model
//     makes at once are jobs at once, run in parallel within the limits of
//     the kit (Config.Tools: its MaxConcurrent, each tool's Policy). The
//     job's key is the call's idempotency key (toolkit.Key inside a tool);
//     the kit validates the arguments, runs the tool under its timeout,
//     retries and breaker, and the llm is told its output or why it failed
//     (toolkit.Result.Content), so that it can correct itself.
//   - llm/llm-{messageId}: once every call has its result, a call of the llm
//     when a user or tool message is newer than lastSentToLLMAt, with the job's
//     key as the request's idempotency key. The results go after the message
//     that asked for them, in the order of its calls, whatever order they
//     came in. A call that fails (a wrong key, no server, a limit of the
//     provider, an HTTP error, a timeout, a reply the provider's content
//     filter withheld) is logged (Config.Logger) and answered with a
//     failed reply: an assistant message whose Error says why, with no
//     content, which the llm is not sent. The user sees it at once, and
//     the next message is answered as any other. A call that a crash or
//     Close cuts short is made again by the next New.
//
// When neither is called for, the agent is Idle: it has answered everything.
//
// Every message is stamped as it is admitted (automata.WithAdmission):
// with a time after the newest message of the conversation, so that no two
// share a time, and a user message without an id with user-{time}. Two
// messages sent in one millisecond are two messages, each answered.
//
// Each call of the llm is sent the newest part of the conversation, from a
// user message on, that takes up to Config.PromptBytes (128 KiB by
// default; see Prompt), so that what a message costs follows the message,
// not the length of the conversation.
//
// # Versions of the spec
//
// The spec is at version 3 (agent.history.json): version 2 added the
// required property channel to UserMessage (where it was typed: terminal,
// or api), version 3 the optional property error to AssistantMessage (a
// failed reply), and impl/migrations brings the records of earlier
// versions up to it as a journal is opened. testdata/v1 holds a journal written before versions
// existed, cut by kill -9 during a tool call; the tests open it, and the
// conversation goes on.
//
// # Over HTTP
//
// Handler serves the agent over HTTP with package automata/httpbridge, to be
// mounted under any prefix:
//
//	mux.Handle("/chat/", http.StripPrefix("/chat", a.Handler()))
//
//	POST /chat/inputs     an input of the user's, as JSON: {"seq": n} once it is journaled
//	GET  /chat/state      the user's view of the state (decl.ContextOfUser) as server-sent
//	                      events: a snapshot, then a JSON Patch per input
//	GET  /chat/client.js  the client module, for a page of one's own
//
// A client plays the user: it may post set-system-prompt and
// send-user-message, and the llm's and the toolkit's inputs are refused
// (403). It sends every required property; the agent stamps the message's
// time, and its id if it is empty, and refuses an id a user message of the
// conversation has already; a retry of a message with an id is answered as
// the first was:
//
//	curl -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
//		-d '{"type":"send-user-message","message":{"id":"m1","content":"count these words","timestamp":0,"channel":"api"}}' \
//		http://localhost:8080/chat/inputs
//	curl -N -H "Authorization: Bearer $TOKEN" http://localhost:8080/chat/state
//
// # What it is not
//
// Not a page: Handler is the bridge alone (see automata/agents/reflexor for an
// agent with a page). Not many conversations: an Agent is one conversation,
// on one store, and every client of its Handler takes part in it; serve
// many with package automata/registry and httpbridge.Fleet. Its replies are
// not streamed: a reply enters the state whole, when the llm has finished.
package persistent
