// Package devpanel is a development panel for any durable agent: an
// http.Handler with an embedded page that shows the agent's timeline, one
// row per journaled input with the state diff it caused and the jobs it
// started or cancelled; the jobs as they run; the state after any earlier
// input, with the jobs that state calls for, without running them; a form
// for each input made from the input JSON Schemas; and a hold on the jobs,
// released one at a time or all at once.
//
// It relies on what every agent of this module already is: transitions are
// pure and inputs are journaled (package journal), so the state after input
// n is the fold of inputs 1..n, and time travel is journal.Machine.StateAt —
// no model call or tool call is made again, unlike panels that re-execute
// nodes to show the past. Jobs are a function of state, so the jobs a past
// state calls for are computed (Config.Jobs), not run.
//
// # Wiring
//
// A panel is off unless it is mounted. Mounting it takes the panel's options
// when the agent is opened, and the handler:
//
//	panel, err := devpanel.New(devpanel.Config[decl.AgentState, decl.AgentInput]{
//		Definition:  agent.Definition(),
//		Decode:      decl.DecodeInput,
//		InputSchema: model.InputSchema, // modelgen.Load("agent.yaml")
//		Auth:        httpbridge.Bearer(token),
//		Jobs:        jobKeys,           // optional: keys a state calls for
//	})
//	m, err := journal.Open(store, agent.Definition(), opts, agent.WithJobs(jobs), panel.Options())
//	err = panel.Attach(m)
//	mux.Handle("/devpanel/", http.StripPrefix("/devpanel", panel))
//
// and, on shutdown, panel.Close (it ends the event streams, as
// http.Server.Shutdown does not). Options adds an event handler
// (automata.WithEvents) and a job gate (automata.WithJobGate), which let
// every job through unless the hold is on.
//
// # Routes
//
// The page (GET /, /app.js, /form.js, /style.css) needs no auth; it reads
// the token from its URL (?token=...) and sends it as a bearer token.
// Everything else goes through Config.Auth (401 with its error):
//
//	GET  /health   {"status":"ok"}
//	GET  /config   {"extensions": [...]}, Config.Extensions
//	GET  /schema   the input JSON Schema document, Config.InputSchema
//	GET  /events   the event stream (below)
//	GET  /state    ?seq=N: {"seq", "state", "jobs"}, the state after input N
//	               (the latest without seq) and the keys of the jobs it calls
//	               for; 400 for a seq that is not a number, 404 past the journal
//	POST /inputs   an input as JSON with its "type"; decoded and validated by
//	               Config.Decode (400 with its message, naming the field),
//	               dispatched (422 when the agent refuses it): {"seq": n}
//	GET  /hold     {"held": bool, "waiting": [keys of the jobs held]}
//	POST /hold     hold the jobs that start from now on
//	POST /step     let the oldest held job run
//	POST /release  let every held job run, and hold no more
//
// While held, the agent goes on admitting, journaling and applying inputs
// (a POSTed task is accepted; the state moves) and reconciles its jobs as
// always — a job whose key vanishes is cancelled — but a job that starts
// waits at the gate until it is let through: human-in-the-loop without
// special nodes in the model.
//
// # The event stream
//
// GET /events is server-sent events. On connect: the timeline of the latest
// Config.History inputs, each followed by the events that came after it,
// then one "snapshot" of the state, then every event as it comes:
//
//	id: 42
//	event: input
//	data: {"seq":42,"time":1760000000000,"type":"user-run-task","actor":"user",
//	       "input":{...},"diff":[{"op":"add","path":"/requests/-","value":{...}}],
//	       "started":["agent/start-r1"],"cancelled":[],"notes":[{"type":"user.input","text":"..."}]}
//
//	id: 42.1
//	event: job
//	data: {"key":"agent/start-r1","kind":"started","at":1760000000001}
//
//	id: 42.2
//	event: job
//	data: {"key":"agent/start-r1","kind":"completed","at":1760000000005,"durationMs":4}
//
//	event: snapshot
//	data: {"seq":42,"state":{...},"hold":{"held":false,"waiting":[]}}
//
// An input's id is its journal sequence number; the events after it (job
// started, held, released, completed, failed, cancelled, with durations;
// "lifecycle" events: an input rejected, the agent failed, the hold changed)
// are numbered after it, 42.1, 42.2, .... The diff is a JSON Patch (RFC 6902)
// of the whole state, computed by folding the journal with
// Config.Definition; "started" and "cancelled" compare Config.Jobs before
// and after the input: the jobs the input made the state call for, or no
// longer call for. Config.Notes adds an agent's own labels (seed 002's
// tool.request, agent.transition, ...), Config.Actor the dispatching actor.
//
// A reconnect names its last id in Last-Event-ID (or the lastEventId query
// parameter), as the bridge's state stream does (package httpbridge), and
// gets what followed it: from the panel's memory (8 × History events),
// and inputs older than that from the journal, without the job events of
// their time (the journal keeps inputs, not jobs). An id from the future
// (another journal) gets a "reset" event and the stream from the start; so
// does a client that falls behind what the panel keeps, whose stream then
// ends. Job events live in memory: after a restart, the timeline's inputs
// are all there, the jobs of before the restart are not.
//
// # Extensions
//
// An agent adds views of its own with ES modules (Config.Extensions, URLs
// the program serves): each exports mount(element, panel), where panel
// offers onState(fn) (fn(state, seq) on connect and after every input),
// onEvent(fn) (fn(event, data) for every stream event), state() and
// api(path, options) (an authorized fetch of the panel's routes).
// examples/react's status, task tree and tool monitor are one.
//
// # What it is not
//
// Not a production console: every authorized client sees the whole state,
// and may send any input the decoder accepts. Not a debugger of
// transitions: it shows what they did, from the journal; stepping happens
// at the level of jobs. Not for an in-memory agent: the timeline is the
// journal's.
package devpanel
