// Package mcpserve serves an agent as a Model Context Protocol server, on
// the official Go SDK (github.com/modelcontextprotocol/go-sdk): MCP
// clients — Claude Desktop, IDEs, other agents — dispatch the agent's
// client inputs as tools and follow its state as a resource.
//
// It is a protocol front-end of automata/httpbridge, not a second bridge:
// it mounts on the per-agent handler (httpbridge.Config.Fronts), so that
// the bridge's front applies to it as to every route (the CORS allow-list,
// Auth, Config.MaxBody), and under a Fleet the fleet's (Identify, the owner
// rules, the agent activated and held active while a request lasts). A
// tool call goes through the bridge's own path for POST /inputs
// (Bridge.Dispatch: decoding and validation, ClientActors, the dedup
// window, the admission step, the journal); the resource reads the same
// view and the same deltas as GET /state. httpbridge does not import the
// SDK: an agent that serves no MCP does not link it.
//
//	bridge, err := httpbridge.New(m, httpbridge.Config[decl.AgentState, decl.AgentInput, decl.ContextOfUser]{
//		Decode: decl.DecodeClientInput,
//		View:   decl.AgentState.ContextOfUser,
//		Auth:   httpbridge.Bearer(token),
//		Fronts: map[string]httpbridge.Front[decl.AgentState, decl.AgentInput, decl.ContextOfUser]{
//			"/mcp": mcpserve.Front[decl.AgentState](mcpserve.Config[decl.AgentInput, decl.ContextOfUser]{Schema: decl.InputSchema()}),
//		},
//	})
//
// serves the agent over MCP Streamable HTTP at /mcp (under a Fleet whose
// FleetConfig.Bridge has it, at /agents/{id}/mcp). For a single local agent
// that a client starts as a program, ServeStdio serves it on standard input
// and output instead.
//
// # Tools
//
// Each input type of the bridge's client actors (httpbridge.Config.
// ClientActors; the user's by default) is a tool named by the input's type
// ("send-user-message"). Its description is the spec's description of the
// input, and its input schema the spec's schema of it as a client sends it:
// the "type" discriminator is the tool's name, and the properties the spec
// marks readOnly (which the admission step assigns) are left out, as
// decl.DecodeClientInput accepts them absent; the $defs it refers to come
// with it. Both come from decl.InputSchema(), which agentgen generates with
// the spec's descriptions and each actor's inputs.
//
// A call's arguments are the input. It is decoded and validated as POST
// /inputs does (an invalid input is a tool error with the decoder's words,
// naming the field), refused if it is not a client actor's (403, as a tool
// error), applied once within the dedup window of its id
// (httpbridge.Config.InputID) or, without one, of the idempotency key in
// the call's _meta (MetaIdempotencyKey, the key automata/toolkit/mcp sends
// a job's calls with), and answered once it is journaled: structured
// content {"seq": n, "journaled": true} (n the journal position; an
// in-memory agent's inputs are numbered from the bridge's start, and
// "journaled" is false), "duplicate": true for an id applied before. An
// input refused by the admission step, or not taken up in time, is a tool
// error with the status POST /inputs would have had.
//
// With Config.Conditions, a call may also wait: "waitFor" names a
// condition of the view (such as "replied": the reply to the message sent
// is in the state), and the call answers once its input is journaled and
// the condition holds, or at "timeoutMs" (default DefaultWait, at most
// MaxWait), whichever comes first, with "held" and the view then ("view",
// at "viewSeq"). A condition that does not hold in time is not an error:
// the input is journaled, and sending it again would be a duplicate.
//
// # The state resource
//
// The view clients see (httpbridge.Config.View) is the resource
// agent://self/state (agent://{id}/state under a Fleet), application/json,
// its position in _meta (MetaSeq). It is subscribable: each change of the
// view sends notifications/resources/updated with the change as the state
// stream's delta event has it (_meta MetaDelta: {"base", "seq", "patch"},
// a JSON Patch), so a client may patch its copy instead of reading it
// again; a notification without a delta (the server no longer had the
// deltas since the last one) says only that the view changed.
//
// # A Fleet
//
// FleetFront (httpbridge.FleetConfig.Fronts, at /mcp) serves a Fleet as one
// MCP server: the tool create-agent ({"id"} optional, as PUT /agents/{id}
// and POST /agents: an id of the caller's that exists is found, not created
// again), each input's tool with an "agent" argument (the agent's id), and
// the resource template agent://{id}/state, readable and subscribable. The
// owner rules hold unchanged: a caller sees only its own agents; another's
// is "not found" (a read or a subscription: -32602 Resource not found; a
// call: a tool error "no agent"), word for word as one that does not exist.
// Each MCP session belongs to the identity that opened it: another
// identity's request with its id is answered 404, as an unknown session.
// Under a Fleet, an agent's own endpoint (/agents/{id}/mcp) holds its
// sessions while the agent is active; an agent deactivated when idle ends
// them, and the client's next request is a 404, upon which an MCP client
// opens a new session (the protocol's rule). A subscription of the fleet's
// server holds its agent active while it is followed, as a state stream
// does. An agent active in another process (FleetConfig.Peers) is not
// reached through the fleet's /mcp (503, retry): its own endpoint is
// routed there.
//
// # Limits and DNS rebinding
//
// Each has a default, and a test that plays the hostile peer:
//
//	Config.AllowHosts   a server reached on a loopback address answers only
//	                    a loopback Host (localhost, 127.0.0.1, [::1]) or one
//	                    listed: 403 otherwise, against DNS rebinding (a page
//	                    of evil.example rebound to 127.0.0.1 sends Host and
//	                    Origin evil.example, which pass an Origin check);
//	                    with AllowHosts set, a Host neither loopback nor
//	                    listed is refused on any address
//	httpbridge MaxBody  the body of every request, by the bridge's front
//	                    (default 64 KiB: a tool call carries one input)
//	MaxSessions         sessions open at once across the agents one Front
//	                    serves: 503 with Retry-After beyond (default 1,000)
//	IdleTimeout         a session with no request for that long ends (an
//	                    open stream is a request) (default 10 minutes)
//	WriteTimeout        each write to a session's stream; a client that does
//	                    not take its bytes loses the stream (default 10 s)
//	MaxSubscriptions    agents one session of a fleet's server follows
//	                    (default 100)
//	MaxWait             a call's wait (default 5 minutes)
//
// A session has no queue of its own: notifications are written to its open
// stream as they come, each write within WriteTimeout, from one goroutine
// per agent that reads the bridge's ring of deltas through its own cursor
// (the ring is the bridge's, bounded by Config.Ring and RingBytes). A slow
// subscriber therefore costs its socket's buffers and delays the others by
// at most WriteTimeout once, and then has no stream to write to; what it
// missed it reads again (a delta whose base is not its position says so).
//
// # Conformance
//
// The MCP conformance suite (npm @modelcontextprotocol/conformance 0.1.16)
// runs in TestConformance against an agent's server. server-initialize,
// ping, tools-list, resources-list, dns-rebinding-protection and
// server-sse-polling pass (server-sse-polling with two warnings: the server
// sends no priming event and no retry field on a POST's stream, which only
// a server that keeps its streams' events for replay does, and this one
// keeps none, by the bound above). Two fail, for a reason of the suite's:
// resources-subscribe and resources-unsubscribe subscribe to
// test://watched-resource, a resource of the suite's own reference
// server, and an agent answers a subscription to a resource it does not
// have "Resource not found" — as a fleet's server answers another owner's
// agent://{id}/state, so that a subscription neither tells which agents
// exist nor grows a session's memory by one entry per URI a client makes
// up. The test fails if either starts to pass, so that this list stays
// true.
//
// # What it is not
//
// It serves no prompts, and does not ask the client anything (sampling,
// elicitation): an agent's questions to a person are inputs of a human
// actor that its state waits for. It keeps no events for a stream's replay
// (Last-Event-ID on an MCP stream): the state resource is the durable
// thing to come back to.
package mcpserve
