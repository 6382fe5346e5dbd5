// Package devpanel is a development panel for any durable agent: an
// http.Handler with an embedded page that shows the agent's timeline, one
// row per journaled input with the state diff it caused and the jobs it
// started or cancelled; the jobs as they run; the state after any earlier
// input, with the jobs that state calls for, without running them; a form
// for each input made from the input JSON Schemas; and a hold on the jobs
// and what they hand in, stepped one input at a time or released.
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
// One call wires a panel into any agent: Open opens the agent's journal as
// journal.Open does, with the panel's options added to the agent's, and
// attaches the panel. For a generated agent:
//
//	m, panel, err := devpanel.Open(store, devpanel.Config[decl.AgentState, decl.AgentInput]{
//		Definition:  agent.Definition(),
//		Decode:      decl.DecodeClientInput,
//		InputSchema: decl.InputSchema(),
//		Auth:        httpbridge.Bearer(token),
//		Jobs:        jobKeys,           // optional: keys a state calls for
//	}, journal.Options[decl.AgentState, decl.AgentInput]{Codec: codec}, agent.WithJobs(jobs))
//
// m is the agent (*journal.Machine), panel an http.Handler. A panel is off
// unless it is mounted, and everything but its page's files is behind
// Config.Auth:
//
//	mux.Handle("/devpanel/", http.StripPrefix("/devpanel", panel))
//	srv.RegisterOnShutdown(panel.Close) // Shutdown does not end event streams
//
// The panel closes by itself when the agent closes. Open is New, Options
// and Attach in one: a program that opens its agent some other way passes
// panel.Options() when it opens it, then calls panel.Attach. Options adds an
// event handler (automata.WithEvents), a job gate (automata.WithJobGate) and
// a route for what jobs dispatch (automata.WithJobDispatch), which let
// everything through unless the hold is on.
//
// # Routes
//
// The page (GET /, /app.js, /form.js, /token.js, /style.css) needs no auth:
// it holds no data. It takes the token from its address, #token=... (a
// fragment, which no request carries) or ?token=..., keeps it for the tab
// (sessionStorage) and takes it out of the address at once
// (history.replaceState), and sends it as a bearer token. Its scripts are
// TypeScript (page/*.ts, with the types of the events and answers below),
// built into web/ by go generate with esbuild and committed.
// Everything else goes through Config.Auth (401 with its error):
//
//	GET  /health   {"status":"ok"}
//	GET  /config   {"extensions": [...]}, Config.Extensions; a Fleet's panel
//	               adds "forkable": true and, for a fork, "forkedFrom":
//	               {"agent", "seq"} (see Fleet.Handler)
//	GET  /schema   the input JSON Schema document, Config.InputSchema
//	GET  /events   the event stream (below)
//	GET  /state    ?seq=N: {"seq", "state", "jobs"}, the state after input N
//	               (the latest without seq) and the keys of the jobs it calls
//	               for; 400 for a seq that is not a number, or before a
//	               fork's position (its state is the conversation forked's),
//	               404 past the journal
//	POST /inputs   an input as JSON with its "type"; decoded and validated by
//	               Config.Decode (400 with its message, naming the field),
//	               dispatched (422 when the agent refuses it): {"seq": n}
//	GET  /hold     {"held", "waiting", "running", "stepping"}: the jobs and
//	               inputs held, oldest first ({"key", "kind": "job"} at the
//	               gate, {"key", "kind": "input", "type", "input"} at the
//	               route), the keys of the jobs that run, and whether a
//	               step waits for its input
//	POST /hold     hold what jobs do from now on
//	POST /step     apply exactly one input (below); answers, once it is
//	               applied, the hold and "step": {"applied", "key", "type",
//	               "seq"} (the job that dispatched it, its type, and the
//	               journal's last sequence number once it was applied), or
//	               "error" when none was; 409 when not held,
//	               when nothing waits or runs, or while a step is pending
//	POST /release  let everything held go, and hold no more
//	GET  /trace    ?seq=N: the trace of input N (below); 400 without a
//	               seq, 404 when no span of that input is recorded
//
// The panel is the operator's tool: its POST /inputs dispatches an input of
// any actor, where an automata/httpbridge client may dispatch only the
// inputs of the actors its Config.ClientActors names (the user's, by
// default).
//
// # Hold, step, release
//
// The hold has two doors, both on the jobs' goroutines: the gate, where a
// job that starts waits before it runs, and the route, where an input a job
// dispatches waits before it is handed to the agent. While held, the agent
// goes on admitting, journaling and applying the inputs that come from
// outside (a POSTed task is accepted; the state moves) and reconciles its
// jobs as always — a job whose key vanishes is cancelled, and its held
// input dropped — but no job runs and no job's input is applied unless a
// step or the release lets it: human-in-the-loop without special nodes in
// the model.
//
// A step applies exactly one input. If inputs wait at the route, the
// oldest is applied, and the step answers once it is; its job then runs on
// to its next dispatch, which waits in turn, or to its end. If none waits,
// the step lets every job at the gate run, and the first input any running
// job dispatches is the step's: it is applied and the step answers; the
// others' inputs wait at the route for the next steps. (Letting only the
// oldest job run would wait on a job that dispatches late, such as a
// watchdog that sleeps until a deadline.) A step applies nothing, and says
// why, when its input is rejected (by admission or the journal), or when
// every job it could get one from ends without dispatching, or when the
// job whose input it let go is cancelled first. A client that goes away
// does not stop a step. The step's "seq" is the journal's last position
// right after its input was applied: the input's own, unless an input from
// outside was journaled at the same moment.
//
// So the side effects that run while held are those of the jobs a step
// lets through: a job let through at the gate runs to its first dispatch,
// and a job whose input a step applies runs from there to its next. The
// hold cannot stop code that runs already: a job that was running when
// the hold began runs on to its next dispatch ("running" in GET /hold), and
// an agent's synchronous effects (automata.WithEffect), which are not jobs,
// are not held.
//
// # The event stream
//
// GET /events is server-sent events. On connect: the timeline of the latest
// Config.History inputs, each followed by the events that came after it,
// then one "snapshot" of the state, then every event as it comes:
//
//	id: 42
//	event: input
//	data: {"seq":42,"time":1760000000000,"version":1,"type":"user-run-task","actor":"user",
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
// started, held, completed, failed, cancelled, with durations; input-held,
// input-dropped and released, with the input's type; "lifecycle" events: an
// input rejected, the agent failed, hold, step (with what it applied),
// release, and waiting, when what waits at the hold changed, each of the
// last four with the hold as it is then)
// are numbered after it, 42.1, 42.2, .... The diff is a JSON Patch (RFC 6902)
// of the whole state, computed by folding the journal with
// Config.Definition; "started" and "cancelled" compare Config.Jobs before
// and after the input: the jobs the input made the state call for, or no
// longer call for. Config.Notes adds an agent's own labels (seed 002's
// tool.request, agent.transition, ...), Config.Actor the dispatching actor.
// "job" is the key of the job that dispatched the input, when the journal
// keeps it (journal.Options.JobKeys), and "recorded" (true, else absent)
// says that a fork's record answered that job, which did not run
// (journal.Machine.Fork): the page badges such a row "from the record", and
// the row of any other job's input "live", and marks the job so in its job
// monitor.
//
// # Forks
//
// The panel of a Fleet's agent forks it: "Fork here" in time travel starts
// a new agent from the state shown (POST /agents/{id}/fork, see
// Fleet.Handler), and the tab goes on to the fork's own panel, whose header
// says which agent it was forked from and where, with a link to that
// agent's panel. A single agent's panel, which has no registry to create
// agents in, has no fork.
//
// "version" is the version of the agent's spec the input was journaled
// under (see package automata/migrate): a journal kept across changes of
// the spec holds records of earlier versions, which the timeline and time
// travel (GET /state) read as the agent does, brought up to the current
// version by the migrations, and which the page marks with a small badge
// ("v1") when newer rows follow. An input that a migration dropped (its
// type was removed) stays in the journal and is not applied, by the agent
// nor by the panel: its row has "dropped", the journal's reason, the type
// named there, a null input and no diff, started or cancelled jobs, and
// Config.Actor, Notes and Jobs are not called for it; the page strikes it
// through.
//
// A reconnect names its last id in Last-Event-ID (or the lastEventId query
// parameter), as the bridge's state stream does (package httpbridge), and
// gets what followed it: from the panel's memory (8 × History events),
// and inputs older than that from the journal, without the job events of
// their time (the journal keeps inputs, not jobs). An id from the future
// (another journal) gets a "reset" event and the stream from the start; so
// does a client that falls behind what the panel keeps, whose stream then
// ends.
//
// # What a restart keeps
//
// The journal keeps inputs, not jobs, and the panel keeps nothing of its
// own on disk. After a restart, each input's row is rebuilt from the
// journal with everything in it that the journal determines: its sequence
// number, time, type, actor, notes, its state diff, and the keys of the
// jobs it started and cancelled (Config.Jobs of the states before and
// after it, which is what the agent reconciled then). What the journal
// does not record is lost: when each job of before the restart started and
// ended, how (completed, failed, cancelled), its duration and error, and
// what was held; a job's end cannot be derived either, as nothing records
// which job dispatched an input. The jobs the restored state calls for
// start again and show as new events, after the last input.
//
// # Traces
//
// With Config.Traces, a chosen input of the timeline shows its trace: the
// causal chain that package automata's telemetry records
// (automata.WithTelemetry), from the input to the job its state called
// for, that job's model and tool calls, the inputs the job dispatched, the
// jobs those called for, and so on, drawn as a waterfall (a bar per span,
// placed by its start and duration, indented by its depth; model calls,
// tool calls, inputs and jobs in their own colours, failed spans red), the
// chosen input's span highlighted. Traces is a span processor that keeps
// the latest spans in memory; the TracerProvider stays the program's (see
// Config.Traces and the example of NewTraces).
//
// GET /trace?seq=N finds the span of input N (its moora.input.seq, and the
// agent's id, Config.AgentID, when it has one) and answers its whole
// trace, from the spans recorded and the journal:
//
//	{"seq":1,"agent":"a1","traceId":"4bf9…","start":1760000000000,"omitted":0,"spans":[
//	  {"spanId":"00f0…","depth":0,"name":"moora.input send-user-message","kind":"internal",
//	   "category":"input","start":0,"end":0.41,"status":"unset",
//	   "attributes":{"moora.input.seq":1,"moora.input.type":"send-user-message",...},
//	   "events":[{"name":"admitted","at":0.02},...],
//	   "input":{"seq":1,"time":1760000000000,"type":"send-user-message","actor":"user"},"chosen":true},
//	  {"spanId":"53a1…","parentId":"00f0…","depth":1,"name":"moora.job","category":"job",...},
//	  {"spanId":"9c2e…","parentId":"53a1…","depth":2,"name":"chat gpt-4o-mini","kind":"client","category":"model",...},
//	  ...]}
//
// The spans come in the order of a walk of their tree, depth first, a
// span's children by start time; times are milliseconds since the
// trace's first span started; "end" is null while a span runs; "category"
// is input, job, model, tool (by the GenAI conventions'
// gen_ai.operation.name) or other; "input" is the journal's entry of an
// input span's input. What a view holds is bounded: 1000 spans (the chosen
// input's, its nearest ancestors and its descendants first; "omitted"
// counts the others), 32 attributes of a span (the first by key), 16
// events, 512 bytes of a value. A view shows the spans of the panel's agent and what they did: a
// span of another agent (another moora.agent.id, in a trace that crossed
// agents), and what it did, are left out.
//
// A trace is not durable: the spans are in memory, the latest of them
// only (NewTraces), and none of before a restart; an input whose span is
// not kept answers 404, and the page shows why in its place. A fleet's
// agents share one Traces, told apart by their ids: open them with
// Fleet.OpenAgent.
//
// # Extensions
//
// An agent adds views of its own with ES modules (Config.Extensions, URLs
// the program serves): each exports mount(element, panel), where panel
// offers onState(fn) (fn(state, seq) on connect and after every input),
// onEvent(fn) (fn(event, data) for every stream event), state(),
// api(path, options) (an authorized fetch of the panel's routes) and
// token() (the bearer token the page sends, for the program's own routes;
// the page has taken it out of its address before an extension loads).
// examples/react's status, task tree and tool monitor are one.
//
// # What it is not
//
// Not a production console: every authorized client sees the whole state,
// and may send any input the decoder accepts. Not a debugger of
// transitions: it shows what they did, from the journal; a step applies one
// input, and stops neither inside a transition nor inside a job's code. Not for an in-memory agent: the timeline is the
// journal's.
package devpanel
