// Package reflexor is Reflexor (seed 000) as an agent a program imports: a
// chat with a brain (a language model) that streams its replies, calls the
// tools of a toolkit, compresses the history when it grows long and loads
// old tool calls back when it needs their details, with its page, served to
// browsers under any prefix of the program's own server. Every input is
// journaled, so that after a crash the conversation goes on where it
// stopped: an answer cut short is asked for again, a tool call without a
// result runs again under the same idempotency key.
//
// One constructor makes it, over a model, a toolkit, a system prompt and a
// journal store:
//
//	kit, err := toolkit.New(toolkit.Config{}, wordCount) // package automata/toolkit
//	store, err := bolt.Open(filepath.Join(dir, "support.db"))
//	support, err := reflexor.New(reflexor.Config{
//		System: "You are the support desk of Example Inc.",
//		Tools:  kit,
//		Model:  model, // automata/llm/openai, or llm.Scripted offline
//		Store:  store,
//		Token:  token, // what the page presents; "" for none
//	})
//	defer support.Close(ctx)
//
//	mux := http.NewServeMux() // the program's own, with its own routes
//	mux.Handle("/support/", http.StripPrefix("/support", support.Handler()))
//	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
//	srv.RegisterOnShutdown(support.CloseStreams)
//
// and the conversation is at /support/?token=… (the token goes in the
// page's address once; the page then sends it as a bearer token).
//
// # What the handler serves
//
// Under whatever prefix it is mounted:
//
//   - / — the page (index.html, app.js, style.css, embedded in the
//     binary): the conversation the user sees, the brain's replies as they
//     stream, each tool call running and its result, where the history
//     was compressed, and an input box. It asks for everything by relative
//     URLs, so that the prefix is the server's business alone; it needs
//     the trailing slash (/support/, to which http.ServeMux redirects
//     /support).
//   - agent/ — the conversation's bridge (package automata/httpbridge):
//     POST agent/inputs takes the user's messages as JSON
//     (Content-Type: application/json;
//     {"type":"user-send-message","messageId":…,"content":…}, no
//     timestamp: the server stamps it), answering {"seq":n} once the
//     message is journaled, and a retry of a messageId as the first; a
//     page speaks for the user only, and the brain's and the toolkit's
//     inputs are refused with 403), GET agent/state streams what the user sees
//     of the state (decl.ContextOfUser) over server-sent events, GET
//     agent/streams/{message id} a reply's text as the brain writes it
//     (ending with an "error" event, its data the reason, when the
//     brain's call of the model failed), agent/chat the conversation in
//     the AI SDK's UI message stream protocol (a page on useChat: POST a
//     message and follow its reply, each ask of the brain a step, its
//     tool calls and their results parts; GET chat/{id}/stream resumes
//     the reply under way; GET chat lists the conversation; see
//     httpbridge.Chat), agent/mcp the conversation over MCP Streamable
//     HTTP for MCP clients (the tool user-send-message, which may wait
//     for the reply: "waitFor": "replied"; the resource
//     agent://self/state; see automata/httpbridge/mcpserve), agent/a2a
//     the conversation over A2A for other agents (the card at
//     agent/a2a/.well-known/agent-card.json, the conversation one task,
//     "self", a message the user's, the task input-required once the
//     brain has replied; see automata/httpbridge/a2aserve), and
//     agent/client.js is the client module the page uses. Every
//     agent/ route but client.js asks for Config.Token as the bearer
//     token; the page's own files are static and served to anyone (put
//     the handler behind the host's authentication to hide them).
//
// The server stamps every input with the time it arrives, always after the
// newest input applied, so that time never runs backwards whatever a
// browser's clock says. A server that shuts down calls CloseStreams (from
// http.Server.RegisterOnShutdown), since Shutdown does not end streams,
// then Close.
//
// # Configuration
//
// Config.Model and Config.Store are required; every other field has its
// default: System DefaultSystem, Tools none, CompressAfter
// DefaultCompressAfter (negative: never), Token none, Now time.Now, Prices
// none (every call costs 0), Budget no limit. The
// brain is told of the toolkit's tools (toolkit.Kit.LLMTools), beside its
// own compress_history and load_tool_call; each call it makes is a job of
// the agent that runs it with toolkit.Kit.Run, under the job's key as its
// idempotency key, and hands the result in, or the error (arguments that
// do not match the tool's schema, a tool that failed, timed out or whose
// breaker is open), which the brain reads and may correct. Config.Options
// takes more options of the machine (automata.WithEvents), and
// Agent.Machine is the machine itself, for a program that talks to the
// agent without a page (a terminal: Dispatch a decl.UserSendMessage,
// Subscribe to the state, wait until Idle).
//
// # When the model fails
//
// A call of the model that fails — a limit of the provider (the byte limit
// of a reply that does not end, a timeout), an HTTP error, a connection
// that broke, a reply the provider's content filter withheld — is a
// failed reply, not a reply that streams for ever: the reply's token
// stream ends with an "error" event, the message in the state is no
// longer streaming and has an Error, the reason (input
// brain-send-message-fail), Config.Logger gets a warning with the error,
// and the page shows the reply as failed, and why. The brain has answered
// that message: the call is not made again, not even after a restart, and
// the user's next message is answered as any other (the model is not sent
// the failed reply). A call that the agent's Close cuts short is not a
// failure: the reply is asked for again when the conversation is opened
// again.
//
// # Usage and budget
//
// Every call of the model hands in its tokens (input, output, read from and
// written to the prompt cache) and their cost with brain-record-usage, before
// the inputs of its answer: the job prices the call from Config.Prices (an
// llm.Prices table, by the name the model gives itself), so that the journal
// keeps what each call cost when it was made and the state stays a pure
// function of its inputs. The state's usage is the conversation's totals,
// which the user sees (the page shows a line of tokens and dollars under the
// input box). Config.Budget (llm.Budget: tokens, dollars, or both) bounds
// them: before each ask, the brain's job-deriving function checks the
// totals, and once they have reached the budget it asks no more; it stops
// instead (brain-stop-for-budget), and the state's budgetExhausted, in the
// user's view, has the limits it stopped at, which the page shows. So the
// call that crosses the budget is made (the totals were under it) and
// counted, and none after it; the user's next messages are answered by
// nothing, and a restart keeps it so. A Budget raised when the agent is made
// again lets the next message be answered, and the call clears
// budgetExhausted. (An ask may make a second call, to compress the history
// or after loading old tool calls back; a reply a crash cut short is asked
// for again even past the budget, since its ask was allowed.)
//
// # Many people
//
// NewFleet serves many people instead, each with conversations of their
// own, every conversation an agent by id in one journal.Fleet (one bbolt
// file), activated on first use and deactivated when idle: see Fleet.
//
// # The model
//
// The agent is automata/agents/reflexor/agent.yaml, generated into decl/
// and impl/ by agentgen (go doc ./cmd/agentgen); the transitions in
// impl/transitions are written by hand, and the jobs each actor calls for
// — the brain's asks, the toolkit's calls — are in this package. The
// package examples/reflexor is a command over it: the offline brain, three
// tools, a terminal mode and -users.
//
// What the package is not: a prompt library or a planner. The brain is the
// model it is given, with the system prompt it is given; the package keeps
// the conversation, its tools' calls and its context within the model's
// reach (the summary and the tool calls it can load back), durably.
package reflexor
