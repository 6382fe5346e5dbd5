// Package httpbridge serves any agent to browsers over HTTP, on net/http:
// validated inputs in, resumable state and token streams out. It is seed
// 000's server architecture — the browser turns UI events into inputs and
// POSTs them, the server applies the transition (and stamps the time), the
// new state goes back to every browser over server-sent events, and streamed
// message text goes over a separate route and never enters the state — with
// event ids taken from the journal, so that a reconnect neither loses nor
// duplicates anything.
//
//	b, err := httpbridge.New[decl.AgentState, decl.AgentInput, decl.ContextOfUser](m, httpbridge.Config[decl.AgentState, decl.AgentInput, decl.ContextOfUser]{
//		Decode:  decl.DecodeClientInput,
//		View:    decl.AgentState.ContextOfUser,
//		Auth:    httpbridge.Bearer(token),
//		InputID: func(in decl.AgentInput) string { ... the message id ... },
//		Streams: streams, // written by the llm's jobs
//	})
//	srv := &http.Server{Addr: addr, Handler: http.StripPrefix("/agent", b),
//		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
//	srv.RegisterOnShutdown(b.Close)
//	... srv.Serve(l) until it is time to stop, then:
//	srv.Shutdown(ctx)
//	b.Close() // returns once every stream has had its close event
//
// m is a *journal.Machine (durable: event ids are journal sequence numbers)
// or httpbridge.Memory(agent.Create(...)) (in memory: ids from the bridge's
// start, tagged with an epoch). Server-side timestamps are the agent's
// automata.WithAdmission step, which every input goes through, POSTed or
// dispatched by a job. decl.DecodeClientInput decodes what a client POSTs:
// it accepts absent the properties the spec marks readOnly (the ones that
// step assigns, such as a timestamp) and drops what a client sends for
// them, so a client sends an input without them.
//
// # Routes
//
// POST /inputs — one input, as JSON with its "type" discriminator
// (Content-Type: application/json). The body is read through
// http.MaxBytesReader (Config.MaxBody: 413 beyond), decoded and validated by
// Config.Decode (400, with the decoder's message, which names the field path
// and the rule: `decoding input "send-user-message": /content: expected
// string, but got number`), checked against the actors clients play
// (Config.ClientActors: 403 for another actor's input, see Guards), and
// dispatched to the agent, through its admission steps. The answer comes once the input is applied — for a
// durable agent, once it is on disk — as {"seq": n}: the input's sequence
// number in the journal (the state stream's event id of the state after
// it), which the state stream reaches before the answer is sent. An input the agent rejects gets 422 with the
// admission step's error; a closed agent 503, a failed one 500; an agent
// whose journal another process took meanwhile (journal.ErrInUse: a
// JetStream store fenced), or whose journal's server did not answer
// (journal.ErrUnavailable), 503 with Retry-After, for the client to send it
// again. Behind a Fleet with peers (FleetConfig.Peers), an input with an id
// (Config.InputID) that the agent's journal refused because another process
// took the agent over is not answered 503: the Fleet sends it to that
// process, which applies it once. Nothing is journaled unless the answer is 200, with one exception:
// an append whose server did not answer in time (that 503) may have landed;
// sent again with its id, the input is applied once.
//
// Retries are idempotent within a window: with Config.InputID, the id inside
// the input (a message's id, chosen by the client) is the key; without it,
// the Idempotency-Key header. A POST whose key was applied among the last
// Config.DedupWindow keyed inputs (default 4096) is answered
// {"seq": n, "duplicate": true} and applies nothing; one whose key is in
// flight waits for it. For a durable agent with InputID the window survives
// restarts: New reads the ids of the last DedupWindow journaled inputs back.
// The Idempotency-Key window is in memory only.
//
// GET /state — the state stream (text/event-stream). Browsers see a
// projection of the state, Config.View (such as the user actor's
// ContextOfUser: what the user observes, not the whole agent). Events:
//
//	id: 42
//	event: snapshot
//	data: {"seq":42,"view":{...}}
//
//	id: 43
//	event: delta
//	data: {"base":42,"seq":43,"patch":[{"op":"add","path":"/userMessages/-","value":{...}}]}
//
// The first event is a snapshot of the view; then one delta per applied input
// that changed the view, as a JSON Patch (RFC 6902: add, remove, replace),
// chosen over JSON Merge Patch because a growing array is one "add
// /messages/-" instead of the whole array: a delta's size follows the change,
// not the state. A delta applies to a view at any seq from base up to, not
// including, seq (inputs in between did not change the view); a client at
// another seq has missed something and must reconnect. The id is the seq:
// for a durable agent the journal's sequence number, so it stays valid across
// restarts; for an in-memory one "seq-epoch", the epoch changing with every
// bridge.
//
// A reconnect names its last id in Last-Event-ID (or the lastEventId query
// parameter). The bridge answers with exactly the deltas after it from a ring
// of recent deltas (Config.Ring, 4096, and Config.RingBytes, 16 MiB); for a
// durable agent an id older than the ring gets one delta computed from the
// journal (StateAt) to now; when neither is possible — an id from another
// epoch, from the future, or past what the journal keeps — a "resync" event
// with a fresh snapshot. Comment lines (": heartbeat") come every
// Config.Heartbeat. There is no per-connection queue: every client reads the
// shared ring through its own cursor, so a slow client costs no memory beyond
// its socket; one that falls behind the ring gets a resync in place, and one
// that stops reading is dropped when a write takes longer than
// Config.WriteTimeout, and resumes when it returns.
//
// An HTTP/1 state stream holds no goroutine: once its first events are
// written, the bridge takes the connection over from net/http (Hijack) and
// its response goes on as a body that ends when the connection closes
// (Connection: close, no chunked encoding). One goroutine writes every new
// delta to every client that is behind, with writes that never wait; a
// client whose socket is full gets a goroutine of its own for as long as
// the rest takes (at most WriteTimeout). Clients that close their end are
// found within a second. An idle stream costs its socket and about a
// hundred bytes of the bridge's; an update costs one write per client, from
// that one goroutine, so that the inputs that make the updates are not
// kept waiting by them. A stream that cannot be taken over (HTTP/2, or a
// ResponseWriter that cannot Hijack) is served by its handler's goroutine,
// with chunked writes, as before.
//
// A journal kept across changes of the agent's spec holds records of
// earlier versions (see package automata/migrate): the bridge reads them as
// the agent does, brought up to the current version, and an input that a
// migration dropped, not applied, changes nothing (nor is it handed to
// Config.InputID when New reads the recent ids back). A page whose last id
// is an input journaled under an earlier version than the agent's (or 0,
// once the spec has had more than one version) may hold a view that a
// binary of that version made, of another shape than this one makes: it
// gets a "resync", never a delta against a view it may not hold. Pages
// left open across a deploy that changed the spec resync once.
//
// GET /streams/{name} — a token stream (see Streams): the text written so far
// as one "chunk" event, then each new chunk, then an "end" event with the
// whole text, after which the response ends; or, when the stream failed
// (Streams.Fail: the LLM's call did), an "error" event whose data is the
// reason, a JSON string, instead of the end event. (A page that reads it
// with EventSource tells it from a connection error by its data, which a
// connection error has none of.) A chunk's id is the byte offset
// of its end; Last-Event-ID resumes from such an offset. A stream that nobody
// has written to yet is waited for, so a page may follow a reply before the
// job that writes it has started. Names are 1 to 128 of A-Z a-z 0-9 . _ ~ : -.
//
// GET /token — a query token, {"token": "...", "expires": unix-seconds},
// for pages that use EventSource, which cannot send an Authorization header:
// GET /state?access_token=... and GET /streams/{name}?access_token=... accept
// it for one minute after it is issued (checked when the stream opens, so an
// EventSource must fetch a new token before it reconnects: close it on error
// and open another). Tokens are HMAC-signed with a key that lives as long as
// the bridge. A cookie works through a custom Auth hook.
//
// GET /client.js — the ES module client (no build step, served from an
// embed.FS): connect(base, {token}) follows the state stream with fetch (which
// can send Authorization and Last-Event-ID), applies the snapshot and deltas,
// checks each delta's base against its seq and reconnects from its last id on
// a gap or any error; post(input) posts an input; until(seq) waits for the
// state to include it; follow(name, fn) follows a token stream, resuming by
// offset, fn(text, done) after each chunk and at the end, fn(text, true,
// reason) when it failed; onState(fn) hands the view to the page. Its types
// are client.d.ts, in this directory, generic over the types agentgen
// generates from the spec as TypeScript (typescript: web/agent.ts):
// connect<ContextOfUser, ClientInputFromUser>(base) posts only the user's
// inputs, as a client sends them, and hands the page the user's context;
// a page built with a bundler imports a copy of client.js with it.
//
// # Guards
//
// Config.Auth is required: Bearer(token) (constant-time compare), AllowAll, or
// a hook of the program's own; /client.js needs none. CORS: a request whose
// Origin is neither the bridge's own (scheme and Host of the request) nor in
// Config.AllowOrigins is refused with 403, preflights included; a listed one
// gets the CORS headers, with credentials. Behind a proxy that changes Host,
// list the public origin.
//
// Actors: a client plays an actor of the agent, the user unless
// Config.ClientActors names others, and may dispatch that actor's inputs
// only. An input names its actor with a method InputActor() string: every
// input of a generated decl package has it, returning its actor's name in
// the spec. A POSTed input of an actor that ClientActors does not name is
// refused with 403, and a message that names the input, its actor and the
// actors clients play, before it reaches the agent: it is neither admitted
// nor journaled, and its id is not looked up among the recent ones. An
// input that names no actor (its type, a hand-written agent's, has no
// InputActor) is refused too, unless ClientActors is []string{"*"}: then
// clients may dispatch any input, of any actor or of none, which is for an
// operator's tool on a trusted network (automata/devpanel, the operator's
// panel, dispatches any), never for the pages of users. A page speaks for
// the user; the other actors' inputs (an llm's reply, a tool's result) come
// from the agent's own jobs, or from the clients of a bridge of their own,
// with its own Auth and ClientActors, mounted on the same agent. New
// refuses an empty ClientActors (leave it nil for the default), an empty
// name or one with spaces or control characters, a name given twice, and
// "*" beside names.
//
// Streams: at most Config.MaxStreams (default 10,000) state and token
// streams are open at once, and Config.MaxStreamsPerClient (default 100)
// from one client, told apart by Config.ClientID (default: the remote IP
// address; behind a reverse proxy every client is the proxy, so name
// clients from what the proxy adds); a stream beyond either is refused with
// 503, Retry-After: 5 and a message naming the limit, and its connection is
// closed. Token streams hold at most StreamOptions.MaxBytes (1 MiB) each,
// StreamOptions.MaxStreams (1,024) of them and StreamOptions.MaxTotalBytes
// (64 MiB) in all; ended ones are kept for StreamOptions.Keep (a minute),
// or less when a Write needs their room.
//
// Timeouts: the http.Server's ReadTimeout and WriteTimeout bound ordinary
// requests; SSE responses extend their own write deadline before every
// write (http.ResponseController), so a stream outlives WriteTimeout for as
// long as its client reads. Shutdown: Server.Shutdown waits for handlers to
// return, SSE handlers do not return on their own, and it does not know of
// the state streams taken over; register Close with RegisterOnShutdown, and
// call it again once Shutdown has returned, which waits until every stream
// has had its "close" event. (Server.Close does not end the streams taken
// over either: Close does.) A state stream over TLS is found closed by its
// client at the next heartbeat, not within a second.
//
// # Telemetry
//
// With Config.TracerProvider (OpenTelemetry's API; the SDK and exporters
// are the program's choice), each POST /inputs is a server span, as the
// OpenTelemetry HTTP conventions describe one: named "POST /inputs", of
// kind server, with http.request.method, http.route, url.path, url.scheme,
// network.protocol.version, user_agent.original and
// http.response.status_code. Its parent is the span the caller names in
// its headers (Config.Propagator: W3C traceparent and tracestate by
// default, which a CORS preflight allows), so a POST continues its
// caller's trace. Once known, the span gets the input's type
// (moora.input.type) and its sequence number in the journal
// (moora.journal.seq, with moora.input.duplicate on a retry answered from
// the window of recent ids). The input is dispatched with the request's
// context, span and all: an agent traced with the same provider
// (automata.WithTelemetry) makes the input's span, "moora.input {type}", a
// child of the request's, and the spans of the jobs it calls for children
// of that. A POST that is refused (400 to 422) or fails (5xx) has
// error.type, its status code as a string; as the conventions say of
// server spans, only a 5xx sets the span's status to Error, a refusal
// being the client's mistake (an input the agent's admission step
// rejects has an error status on the agent's span for it). The span
// covers the whole request, authentication included; under a Fleet it is
// "POST /agents/{id}/inputs", and starts once the agent is active.
//
// With Config.MeterProvider the bridge measures:
//
//   - http.server.request.duration (histogram, seconds, with the
//     conventions' buckets and attributes): the POSTs of inputs;
//   - moora.sse.clients (up-down counter): the streams being served, from
//     the start of their response to their end (a state stream over HTTP/1
//     whose client left is found within a second, or at the next heartbeat
//     over TLS);
//   - moora.sse.bytes (counter, bytes): what is written to the streams:
//     events, heartbeats and retry lines, not the response head nor
//     HTTP's framing;
//   - moora.sse.events (counter): the events written whole, close events
//     included;
//
// the last three by moora.sse.stream, "state" or "token". A stream has no
// span: it lasts as long as a page stays open, for hours, and a span that
// long is exported only when it ends (lost with the process), keeps a tail
// sampler's trace open, and would tell nothing the metrics do not; what a
// stream carries is traced where it is made, in the inputs' spans.
//
// Without either provider (the default) the bridge records nothing, at
// the cost of a nil check. A bridge behind a tracing middleware (otelhttp)
// may leave TracerProvider nil: the request's context holds the
// middleware's span, which the inputs' spans are then children of. With
// the default propagator a client chooses the trace its POST joins and,
// under a parent-based sampler, whether it is sampled: a bridge open to
// clients it does not trust sets an empty
// propagation.NewCompositeTextMapPropagator(), and each POST starts a
// trace of its own.
//
// # Many agents
//
// Fleet serves the agents of a registry (package automata/registry) by id,
// one conversation per agent, to many people at once:
//
//	POST   /agents                     create an agent owned by the caller: 201 {"id", "owner", "created"}
//	PUT    /agents/{id}                create the agent of that id for the caller (201, as POST), or answer it if it exists (200, the same body)
//	GET    /agents                     the caller's agents, a page at a time (?after=id&limit=n, at most 1,000)
//	GET    /agents/{id}                one agent's id, owner and creation time
//	DELETE /agents/{id}                delete it, journal and all: 204; its streams end
//	POST   /agents/{id}/inputs         as a Bridge's routes, for that agent …
//	GET    /agents/{id}/state          … (Last-Event-ID per agent: the agent's journal seq)
//	GET    /agents/{id}/streams/{name}
//	POST   /sessions                   (with FleetConfig.Sessions) the operator (its bearer token) obtains a new identity: {"token", "identity"}; 403 to anyone else
//	GET    /client.js                  the client module; connect("/agents/" + id, {token})
//
// PUT /agents/{id} is for a client that names its agents, one per
// expense report, ticket or thread: it may send it again, after an answer
// it lost or on a page that opens the thread, and gets the same agent, 200
// with the body of the 201 that created it. An id journal.CheckAgentID
// refuses is 400, the message naming the byte and its position. The ids of
// a fleet are one space for all identities: an id another identity's agent
// has is 404, word for word as its GET answers, which tells the caller no
// more than that the id is not free (a program that wants a space of ids
// per identity puts the identity in the id). Of the PUTs of one id sent at once, to one process or to several
// over one fleet, one creates the agent (201) and the others answer it.
//
// A Bridge's GET /token is no route of a Fleet (404): its query tokens are
// signed with a key of the bridge's own, which no other activation, and no
// other process, could check; every route of a Fleet takes the caller from
// FleetConfig.Identify (a cookie, for a page that must use EventSource).
//
// Every request says who it comes from (FleetConfig.Identify; Identities
// takes the operator's bearer token and the tokens Sessions issued). Every
// agent has an owner, the identity that created it; a caller sees and
// touches only its own agents, and the operator every agent. Another
// identity's agent answers 404 on every route, with the message an agent
// that does not exist gets, so that ids cannot be probed. A client plays
// the actors of FleetConfig.Bridge.ClientActors, as on one agent.
//
// A request for an agent activates it if it is not active, and holds it
// active while the request lasts: a state or token stream, for as long as it
// is followed, so that an agent is never deactivated under its followers.
// When nobody has used an agent for the registry's IdleTimeout it is
// deactivated, with its bridge (its ring of recent deltas, its window of
// recent input ids); a client that comes back with its Last-Event-ID is
// brought up to date from the journal by the next activation's bridge, with
// one delta, and the window of recent ids is read back from the journal too.
// Deleting an agent ends its streams; they answer 404 when they reconnect.
//
// Bounds: FleetConfig.MaxStreams (default 10,000) state and token streams
// across all agents, and MaxStreamsPerIdentity (default 100) of one
// identity's, each agent's bridge keeping its own Bridge.MaxStreams and
// MaxStreamsPerClient within them (503 with Retry-After beyond);
// FleetConfig.MaxAgentsPerOwner (default 1,000) agents per identity (429,
// counted and created one at a time per owner, so it holds under concurrent
// POSTs and PUTs; a PUT of an agent that exists is answered at the bound;
// an identity without a name creates none: 403);
// the registry's MaxActive agents active at once (503 with Retry-After when
// all are in use). Listing and the count of an owner's agents walk the
// fleet's metadata: their cost follows the number of agents in the fleet.
//
// Sessions issue tokens that each name a new identity ("s1.<name>.<HMAC>"),
// signed with a key the program keeps: they outlive a restart, and nothing is
// stored per identity. A page opened with the operator's URL obtains one
// (POST /sessions) and keeps it, so that two browsers opened with the same
// URL are two people; examples/reflexor's -users does exactly that.
//
// # One front, and an input's path
//
// Each concern of HTTP is applied once, by the handler the program mounts:
// a Bridge's ServeHTTP for one agent, a Fleet's for agents by id. That
// front checks the origin against the allow-list and answers a preflight,
// authenticates (a Bridge: Config.Auth or a query token; a Fleet:
// FleetConfig.Identify, then the owner of the agent a route names) and
// bounds the body (Config.MaxBody). Behind it the agent's routes are the
// same code for one agent and for an agent by id, and check none of it
// again: a Fleet's bridges have no Auth hook of their own.
//
// An input POSTed to /agents/{id}/inputs takes these hops before its answer:
//
//  1. the Fleet's front: origin, body bound, identity, ownership
//     (FleetConfig.Identify, the registry's Owned), then the agent activated
//     or found active (registry.Get; with Peers, the request is sent to the
//     process that has it, whose own front takes it as its first hop);
//  2. the agent's bridge: Config.Decode (the JSON Schema of the inputs),
//     the client's actors, the input's id against the window of recent ids
//     (a duplicate is answered here, with the seq it had);
//  3. journal.Machine.DispatchSeq, which hands the input to the automata
//     machine's queue and waits: the machine admits it (admission steps,
//     such as the server's timestamp), the journal's committer encodes it,
//     decodes it back (what is journaled must read back the same), appends
//     it with the inputs queued beside it in one Store.Append (one fsync for
//     the group), and only then is the transition applied;
//  4. the bridge waits until it has observed the state after the input's seq
//     (the delta its state streams send), so that a client reading the
//     stream next finds it, and answers {"seq": n}.
//
// An error before step 3 is the client's (400, 403, 413, 415); an error from
// step 3 means the input is not in the journal (422, or 503 when the agent
// is closed, did not take the input in time, or its journal is another
// process's now).
//
// # Many hosts
//
// A registry whose fleet several processes share (automata/journal/
// jetstream's Fleet, whose Open claims an agent for one process at a time)
// activates each agent in one process. With FleetConfig.Peers (that Fleet)
// every process's Fleet serves every agent:
//
//   - A request for an agent that another process has active is proxied to
//     it (httputil.ReverseProxy, streams included: a stream's events pass as
//     they come, each write bounded by Bridge.WriteTimeout), marked with a
//     Moora-Routed header, signed with the secret the peers share
//     (Peers.Secret: HMAC-SHA256 of the sender and the time, good for five
//     minutes either way); a process that receives a routed request for an
//     agent it does not have answers 421, and the sender locates the agent
//     again rather than the receiver routing it on. A Moora-Routed header
//     no peer signed (a client's) is stripped at the front: the request is
//     routed as any other.
//   - A process whose address refuses connections, and that has not said
//     it is leaving, is dead: the agent is taken from it (Peers.Evict) and
//     activated here. One that advertises no address, or is leaving, is
//     waited for: its lease is released or expires. One that takes the
//     request and stops holding the agent before it answers (paused until
//     its lease expired) is given up on: the holder is checked every half
//     second until the answer comes.
//   - A request for an agent that is not active here is located first, so
//     that a process whose registry is full routes it without deactivating
//     an agent of its own.
//   - The Origin header is checked by the process the request reached
//     (Bridge.AllowOrigins), and not sent on.
//   - A request whose answer is lost so is sent again where that is safe: a
//     GET, or a POST /inputs of an input with an id (Bridge.InputID), which
//     the next owner finds among the journaled ids if the last one applied
//     it. Any other is answered 502, its outcome unknown.
//   - While the journal's server cannot answer (journal.ErrUnavailable: a
//     cluster electing a leader) the activation is tried again.
//
// All of a request's attempts together wait until the answer's headers
// come for at most FleetConfig.RouteTimeout (default 30 s) without a sign
// of progress: each time the request finds the process that has the agent
// still holding its lease (alive, renewing it; checked every half second
// while a peer has the request), the deadline moves on to RouteTimeout from
// then, never past FleetConfig.MaxRouteWait from the start (default four
// RouteTimeouts). A fleet under load so waits for a slow owner rather than
// gives up on it. Then 503 with Retry-After, or 504 for a request a peer
// took and did not answer in time and that may not be sent again (it may
// or may not have been applied). The processes must share the identities: the same
// Identify, and for Sessions the same key. They trust each other: a
// request is forwarded with its Authorization header to the URL a peer
// advertises, so whoever may write the advertisements (the JetStream
// account) may point requests anywhere. Connections to one peer are
// bounded by FleetConfig.MaxPeerConns (default 10,000; a stream routed
// there holds one). The package automata/journal/
// jetstream documents the failure model, with the figures of a chaos test
// of three processes killed 20 times; examples/reflexor's -users -cluster
// runs three processes on one machine.
//
// # Speed
//
// Measured with
//
//	go test -run XXX -bench FanOut -benchtime 200x ./automata/httpbridge/
//	go test -run XXX -bench BytesPerUpdate -benchtime 1x ./automata/httpbridge/
//
// on this project's 2-core machine (AMD EPYC, Go 1.26), shared and loaded:
//
//	BenchmarkFanOut         1,000 SSE clients of one agent, on loopback:
//	                        dispatch-to-client latency p50 8.3 ms, p99 20.7 ms;
//	                        9.4 KiB per connection, client and server sides
//	                        together (36.6 KiB when each stream held a
//	                        goroutine on the server)
//	BenchmarkBytesPerUpdate a conversation of 1,000 messages and 1,000 replies:
//	                        194 bytes per delta event, against 75,856 for the
//	                        whole view each time (its mean size): 392 times fewer
//
// The fan-out costs one diff and one encoding per update, whatever the
// number of clients, and one write per client, from one goroutine. A
// delta's size follows the change: the last of the 2,000 updates is as
// small as the first, while the whole view grows to 150 KB. For 10,000
// idle streams on a real agent (POST latency, memory per stream and after
// they close), see the Reflexor example's BenchmarkIdleConnections.
//
// # The AI SDK's UI message stream
//
// With Config.Chat, the bridge also speaks the UI message stream protocol
// of the Vercel AI SDK (version 5 on; the npm package ai), so that a page
// built on its useChat, or any client of that protocol, talks to a
// chat-shaped agent unchanged:
//
//	const chat = useChat({ id, transport: new DefaultChatTransport({ api: "/agents/report-19/chat", headers }) });
//
// Chat says what the protocol's messages are in the agent's terms: Input
// makes the agent's input of a user's message, Reply reads the reply to a
// user's message out of the state (its texts, its tool calls with their
// results, grouped in steps, the calls of the model), Active names the
// reply under way. Nothing is kept beside the journal: a reply is read from
// the state each time, and its text, while it streams, from Config.Streams.
//
// POST /chat — the AI SDK's request, {"id", "messages", "trigger"}: the
// last message is the user's new one (text parts only), which goes the way
// of a POST /inputs — Chat.Input, Config.ClientActors (403), the dedup of
// Config.InputID (a message sent again is not applied again), the
// admission step, the journal — and is answered, once journaled, with the
// reply's stream (text/event-stream, x-vercel-ai-ui-message-stream: v1):
//
//	id: 0.0.0.0:u1
//	data: {"type":"start","messageId":"m-1796164392372"}
//
//	data: {"type":"start-step"} … {"type":"text-start","id":…} {"type":"text-delta","id":…,"delta":"Let me"} …
//	data: {"type":"tool-input-available","toolCallId":…,"toolName":"calculator","input":{…}}
//	data: {"type":"tool-output-available","toolCallId":…,"output":"42"} {"type":"finish-step"} …
//	data: {"type":"finish","finishReason":"stop"}
//
//	data: [DONE]
//
// A failed reply (Chat.Reply's Error) ends with an error chunk and the
// finish reason "error". The body is bounded by Chat.MaxBody (default 4
// MiB, 413 beyond), not Config.MaxBody: the AI SDK sends the whole
// conversation each time, and only its last message is read. Since the
// conversation is durable, a reply given is never taken back: the
// triggers that regenerate or edit a message get 400, as do a last message
// that is not the user's or that has a part that is not text.
//
// GET /chat/{chat}/stream — the reply under way, or 204 when none is: what
// the AI SDK's resumeStream asks for (useChat's resume, or a reconnect
// after a network error). Without Last-Event-ID it is the reply from its
// start, which the AI SDK's client expects (it starts the message over at
// the replayed start chunk: nothing lost, nothing twice), and it goes on
// live to the end. The chat's name in the path is not read: the agent is
// the conversation. Each event's id is a position in the reply (how many
// of its parts are written, how much of the text of the one being written,
// how many tool results) and the user's message it answers; a reply only
// grows, so a client that sends Last-Event-ID, such as EventSource, gets
// exactly what came after that event, in that reply, even once it is over.
//
// GET /chat — the conversation as the AI SDK's UI messages (Chat.History):
// what a page starts useChat with, before it resumes a reply under way.
//
// The streams count toward Config.MaxStreams and MaxStreamsPerClient (a
// Fleet's toward its own), with the same write timeout and heartbeats as
// the state stream, and end when the bridge closes; under a Fleet the
// routes are /agents/{id}/chat…, with its owner rules.
//
// # What it is not
//
// Not a framework: the bridge is an http.Handler for one agent, and Fleet one
// for the agents of a registry, by id. Not a WebSocket server: inputs go up
// as POSTs, state comes down as SSE. Not a user database: who may connect is
// the Auth (or Identify) hook's business, and Sessions only mints identities
// that a token carries; every authorized client of an agent plays the same
// actors (Config.ClientActors) and sees the same view; clients that play
// different actors are served by a bridge each.
package httpbridge
