// Package a2aserve serves an agent over the Agent2Agent protocol (A2A,
// version 1.0: JSON-RPC 2.0 over HTTP, with Server-Sent Events for
// streams): another agent — one written with the official A2A SDKs, or any
// client of the protocol — fetches the agent's card, sends it messages,
// and follows its task as it works.
//
// It is a protocol front-end of automata/httpbridge, as mcpserve is, not a
// second bridge: it mounts on the per-agent handler (httpbridge.Config.
// Fronts), so that the bridge's front applies to it as to every route (the
// CORS allow-list, Auth, Config.MaxBody), and under a Fleet the fleet's
// (Identify, the owner rules, the agent activated and held active while a
// request lasts). A message goes through the bridge's own path for POST
// /inputs (Bridge.Dispatch: decoding and validation, ClientActors, the
// dedup window, the admission step, the journal); a task is read from the
// same view, and followed through the same changes, as GET /state.
//
//	Fronts: map[string]httpbridge.Front[decl.AgentState, decl.AgentInput, decl.ContextOfUser]{
//		"/a2a": a2aserve.Front[decl.AgentState](a2aserve.Config[decl.AgentInput, decl.ContextOfUser]{
//			Schema: decl.InputSchema(),
//			Name:   "support",
//			Task:   conversationTask, // what the task is at a view
//		}),
//	},
//
// serves the agent's card at /a2a/.well-known/agent-card.json and its
// JSON-RPC endpoint at /a2a (under a Fleet whose FleetConfig.Bridge has
// it, at /agents/{id}/a2a; FleetFront serves the whole fleet at /a2a).
// A client of the JavaScript SDK reaches it with
// ClientFactory.createFromUrl(".../a2a/").
//
// # The card
//
// The card's skills are the inputs of the bridge's client actors
// (httpbridge.Config.ClientActors; the user's by default), each by its
// type, described as the spec describes it, tagged with its actor: they
// come from decl.InputSchema(), which agentgen generates. A spec has no
// name or description of its own, so they are Config.Name and
// Config.Description. The card names one interface, JSONRPC 1.0, at the
// URL the card was asked for, less its path (Config.URL behind a proxy);
// it says streaming, and no push notifications.
//
// # Tasks
//
// A task is a conversation, and a conversation is an agent: the task's id
// and its contextId are the agent's id ("self" for a bridge served
// alone). A message with another taskId or contextId is "task not
// found". Under FleetFront a message without a taskId creates an agent
// owned by its caller (with a contextId, the caller's agent of that id,
// created if new), and the task's id is the new agent's; another owner's
// task is "task not found" (-32001), word for word as one that does not
// exist, for every method.
//
// A message (SendMessage, SendStreamingMessage) is made the agent's input
// by Config.Input — by default, for a chat-shaped agent, the one client
// input with a required string "content" or "text", its text the
// message's text parts and its "messageId" or "id" the message's id — and
// dispatched as POST /inputs does, the messageId its idempotency key (a
// message sent again is applied once). What a task is at a view of the
// agent is Config.Task's answer, a Status: its state (TASK_STATE_WORKING
// while the agent works on the message, TASK_STATE_INPUT_REQUIRED when its
// state waits for the user), the agent's message about it, its artifacts
// by id, its history. SendMessage answers once the task stops working (an
// interrupted or a terminal state), or at Config.MaxWait, with the task
// then; with returnImmediately, at once. A task in a terminal state takes
// no more messages (-32004).
//
// # Streams
//
// SendStreamingMessage and SubscribeToTask answer with an event stream.
// Its first event is the task (submitted, for a new message, with the
// artifacts it had before the message); then, at each change of the
// agent's view, an artifactUpdate for each artifact that is new or
// changed (whole: append false, lastChunk true), and a statusUpdate when
// the status changed; the stream ends after a status that waits for the
// client (input-required, auth-required) or ends the task. Each event's
// SSE id is the position of the view it was read at, the journal's
// sequence number: a client that lost the stream follows the task again
// with SubscribeToTask, whose first event is the task as it is.
//
// # Errors
//
// Bad JSON-RPC is answered with JSON-RPC's codes and words that say what
// is wrong: -32700 for a body that is not JSON, -32600 for JSON that is
// not one request (a batch, a notification, no method, "jsonrpc" not
// "2.0", an id that is not a string or a number or is over 256 bytes),
// -32601 for a method that is not A2A's, -32602 for params that are not
// what the method takes (which field, which limit). The protocol's own:
// -32001 task not found, -32002 not cancelable (CancelTask: a
// conversation is not cancelled, its client sends no more), -32003 push
// notifications, -32004 ListTasks and a message to a finished task,
// -32005 a part that is not text, -32007 the extended card, -32009 an
// A2A-Version other than 1.0. HTTP's: 401 (the bridge's Auth, the fleet's
// Identify), 405, 413 (the bridge's MaxBody), 415 (not application/json),
// 503 with Retry-After (streams at MaxStreams, an append that did not
// take).
//
// # Limits
//
// Each has a default, and a test that plays the hostile peer:
//
//	httpbridge MaxBody  the body of each request, by the bridge's front
//	MaxParts            the parts of a message (32)
//	MaxTextBytes        the text of a message (100,000 bytes)
//	MaxIDBytes          messageId, taskId, contextId, id (128 bytes,
//	                    printable ASCII)
//	MaxHistory          the messages of a task's history sent (100)
//	MaxStreams          streams open at once across the agents one
//	                    Front serves: 503 with Retry-After beyond (1,000)
//	MaxStreamTime       how long a stream lasts (30 minutes)
//	WriteTimeout        each write of a stream's events (10 s)
//	MaxWait             SendMessage's wait for the task (5 minutes)
//
// A stream keeps no queue: it reads the view when it changes, and sends
// what changed since it last sent, so that a slow client costs its
// socket's buffers and at most WriteTimeout, never memory per change.
//
// # What it is not
//
// It serves JSON-RPC only (not the protocol's HTTP+JSON or gRPC
// bindings), text parts only, no push notifications, no extended card,
// and no ListTasks; it checks no A2A security scheme of its own (the
// bridge's Auth and the fleet's Identify do, on every route, the card's
// too), and its card declares none. The v0.3 protocol (method
// "message/send") is not served: its methods are -32601.
package a2aserve
