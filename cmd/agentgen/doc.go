// Agentgen keeps the Go code of an agent in step with its spec.
//
// An agent spec (agent.yaml by default) names the actors of an agent, what
// each actor observes of the others, and the inputs each actor dispatches;
// see package github.com/moora-go/moora/modelgen for the format, the type
// mapping and the checks. agentgen validates the spec, derives each actor's
// state (the union of the observations of it) and context (the union of its
// observations), and generates in the spec's directory the Go package decl/
// and the glue of impl/, with a stub for each initial state and transition
// you write by hand. agentgen init creates a new agent that runs.
//
// Usage:
//
//	agentgen init     [DIR] [--spec FILE] [--module PATH] [--toolkit DIR]
//	agentgen validate [-f spec] [--strict]
//	agentgen generate [-f spec] [--strict] [--prune] [--amend]
//	agentgen check    [-f spec] [--strict] [--json] [--against file|revision] [--typecheck=false]
//	agentgen graph    [-f spec] [--format mermaid|dot]
//	agentgen replay   [-f spec] [--accept] [--json] [--codec jsongob|json] JOURNAL...
//	agentgen schema
//	agentgen version
//	agentgen completion bash|zsh|fish|powershell
//
// -f names the spec file; it is read as JSON when its name ends in .json and
// as YAML otherwise. Without -f, agentgen uses the agent.yaml of the working
// directory or, as go finds go.mod, of the nearest directory above it, and
// then says which ("agentgen: using spec ../../agent.yaml", on stderr; check
// --json says it in "spec" instead). Problems are printed one per line as
//
//	file:line:col: [warning: ]element: message[; hint]
//
// for example
//
//	agent.yaml:5:24: observations.usr.llm.reply.type: unknown type "strng"; did you mean "string"?
//
// On a terminal, each is followed by its line of the spec with a caret
// under the column:
//
//	5 |     llm: {reply: {type: strng}}
//	  |                        ^
//
// Warnings are the modelling checks of the methodology (an actor with state
// but no inputs, with inputs but no state, or connected to nobody); --strict
// turns them into errors.
//
// # The modelling loop
//
// Edit the spec, run agentgen generate (main.go of a new agent carries a
// //go:generate line for it), write the bodies of the stubs it created, and
// let continuous integration run agentgen check. Which files are generated
// and which are yours, what generate reports of your code (orphans, wrong
// signatures, files that do not parse, stubs left) and what --prune moves
// are in the documentation of package modelgen ("Hand-written code").
//
// # Versions of the spec
//
// A durable agent (package github.com/moora-go/moora/automata/journal)
// keeps its inputs, and snapshots of its state, in the shapes the spec gave
// them when they were written. So generate records the spec's data shapes
// in a history file beside the spec (agent.history.json beside agent.yaml;
// commit it with the code), numbered from 1, and prints each change from
// one version to the next as compatible or breaking for replay:
//
//	agent.yaml:17:16: breaking: input send-user-message /message/channel: new required property (old: absent; new: {"type":"string"})
//
// A breaking step gets the conversion of the state and of each changed
// input, field by field, in impl/migrations/conversions.go, and a stub in
// impl/migrations/v<N>_to_v<N+1>.go for each property the conversion
// cannot make (a new required property, a changed type), which check wants
// written; a rename is offered written, for review. What is
// compatible and what is breaking, the files a new version brings, a
// history that is lost, and --amend (a spec changed while no agent ran it)
// are in the documentation of package modelgen ("Versions and
// migrations").
//
// # init
//
// init creates a ready-to-run agent in DIR (default: the current
// directory): the starter spec agent.yaml (a user and an llm that chat)
// with a "# yaml-language-server: $schema=./agent.schema.json" line and the
// spec schema beside it, so that editors check the spec offline; decl/ and
// impl/ as generate makes them, with the starter's initial states and
// transitions written out, not stubs; and a main.go that runs the agent as
// a terminal chat: each line of standard input is a user message, the llm
// actor's jobs (injected at agent.Create with agent.WithJobs) echo it, the
// user actor's effect prints the replies, and the program ends at the end
// of input once every message has its reply. Try
//
//	agentgen init hello && cd hello && echo hi | go run .
//
// With --spec FILE, init makes the agent of a spec of your own instead:
// FILE becomes DIR/agent.yaml (it may already be that file), decl/ and
// impl/ are generated from it with a stub for every actor's initial state
// and every input's transition (each panics "not implemented" until you
// write its body; check lists them), and main.go runs the agent durable and
// served over HTTP: its journal in -data (default data; a bbolt file,
// automata/journal), automata/httpbridge on -addr (default localhost:8080),
// inputs decoded with decl.DecodeClientInput (the properties the spec marks
// readOnly may be absent), only those of the spec's first actor allowed
// from clients (httpbridge's Config.ClientActors; -client-actors names
// others, comma-separated, or "*" for any input: another actor's input is
// refused with 403), and an admission step that stamps the time of arrival
// on every input with a timestamp. On a loopback address it needs no
// token; on any other (-addr :8080, say) it refuses to start unless -token
// or the AGENT_TOKEN environment variable gives the bearer token every
// request must then carry. main.go is yours from then on: inject the
// actors' effects and jobs where it opens the agent. The README's "Your
// first agent" walks through it. An invalid spec writes nothing and exits 2.
//
// When DIR is in no Go module, init also writes go.mod (module --module,
// default DIR's name) and go.sum. github.com/moora-go/moora is not
// published, so go.mod replaces it with its source: the directory --toolkit
// names, by default the source agentgen was built from (found through the
// file paths the compiler records; an agentgen built with -trimpath needs
// --toolkit), and init says so. go.sum starts as the toolkit's, and init
// runs go mod tidy, first with GOPROXY=off, which succeeds offline when the
// module cache holds the toolkit's dependencies (it does where agentgen was
// built), then with the environment's proxy. go.mod is tidied as if the
// agent imported every public package of the runtime too (automata,
// automata/journal/..., automata/httpbridge, automata/devpanel,
// automata/llm/openai, ...), so that code importing any of them builds
// offline, without another go mod tidy (which would look up, on the
// network, the modules that only the tests of some dependencies import).
// When DIR is inside a module,
// the agent is a package of it: no go.mod is written, and init says so if
// that module does not require github.com/moora-go/moora.
//
// init refuses to overwrite a spec, and writes nothing when DIR already has
// agent.yaml, main.go, decl or impl. Exit status: 0 on success, 1 on a
// failure (nothing is written unless go mod tidy is what failed), 2 on a
// usage error, such as --module in a directory inside a module, or an
// invalid --spec.
//
// # validate
//
// validate checks the spec and prints its problems on stderr. It needs no
// go.mod. Exit status: 0 when the spec is valid (warnings may be printed),
// 1 when it is not.
//
// # generate
//
// generate writes the generated files and the missing stubs beside the spec
// and prints one line per change: "created PATH", "updated PATH" or
// "deleted PATH", or that the files are up to date. Only files whose bytes
// change are written. Generated files (those with the header) directly in
// decl/, impl/agent/, impl/initials/ or impl/transitions/ that are no longer
// generated are deleted; other files there and everything in their
// subdirectories are left alone, and a file at the path of a generated one
// that lacks the header is never overwritten: generate fails and says so.
// Writing is all or nothing: the new contents go to temporary files beside
// their targets first, and on any failure the previous tree is restored. What the scan of your code
// found is printed on stderr. With --prune, orphans are then moved to
// impl/_pruned, all or none, one "moved PATH to PATH" line each; an orphan
// whose file declares something the rest of its package uses stays, and
// generate says so and exits 1. Exit status: 0 on success, 1 on an invalid
// spec or a failure, and 1 when, the files written, what the scan found in
// impl/ will stop the build (an orphan, a function declared wrongly, a file
// that does not parse): go generate stops there, and says why. Stubs still
// to write are warnings, and leave the status 0.
//
// When the spec's data shapes changed since the newest version of its
// history, generate records it as a new version (with --amend, as the
// newest version instead), prints the changes of shapes, and, for breaking
// ones, writes the stubs of the migrations they need and says where.
// Migrations still to write are warnings.
//
// generate needs the Go import path of the spec's directory: the spec's
// package key, or else the nearest enclosing go.mod's module path joined
// with the directory's path inside the module. Without either it fails and
// says so.
//
// # check
//
// check generates in memory and compares with the files on disk, without
// writing. It first prints the changes of data shapes since the newest
// version of the spec's history (see "Versions of the spec"): a breaking
// one fails the check, as no migration reads its records yet. Then it
// prints a unified diff (from disk to generated) for each file
// that differs, "missing PATH" for each file generate would create (stubs
// included) and "extra PATH" for each one it would delete, then the
// orphans, wrong signatures and unparsable files of impl/, and the
// migrations of impl/migrations that are missing or still stubs (errors,
// whatever --strict says: a journal of the earlier version would not open),
// on stdout; stubs of initial states and transitions still panicking "not
// implemented", and input properties that their transitions never read,
//
//	impl/transitions/customer_open-ticket.go:10:6: warning: property priority of input open-ticket (agent.yaml:19:72) is never read by func OpenTicket: ...
//
// are warnings, on stderr, and with --strict errors, on stdout. The history file's diff is not printed ("modified
// agent.history.json"): the changes of shapes say what it is.
//
// When the generated files are up to date, check then type-checks decl/ and
// impl/ with the go command (golang.org/x/tools/go/packages, as go build
// ./decl/... ./impl/... would in the spec's directory, with the
// environment's GOFLAGS and GOPROXY) and prints what the build would refuse,
// each at its "file:line:col: message" (at most 100), an error: a body that
// uses a field the spec no longer has says which version of the spec
// removed it, and what that version added beside it,
//
//	impl/transitions/desk_acknowledge-ticket.go:11:37: state.Acks undefined (type decl.StateOfDesk has no field or method Acks): version 2 of the spec removed state property acks and added acknowledgements
//
// and a module the go command cannot load (a requirement missing from
// go.mod, a go.sum without an entry) is reported with the go command's
// message. Errors in the files already reported as orphans, wrong
// signatures or unparsable, and in generated files while there are such,
// are left out: they follow from those. So check passes only a tree that
// builds. The type check runs the go command and takes what go build takes
// (about 0.3 s with a warm build cache); without a go command on PATH, or
// with the spec in no Go module, check says on stderr that it did not
// type-check (an error with --strict). While generated files are not up to
// date it does not type-check: run generate first. --typecheck=false skips
// it, for a spec whose packages are built elsewhere (test fixtures).
//
// --against names an earlier spec, a file or a git revision of the spec's
// file (main, HEAD~1, v1.2.0: git show REV:./agent.yaml in the spec's
// directory), and check also prints the changes of shapes since it, each
// line ending "[since NAME]". They pass when the history records that
// spec's shapes (its breaking changes then have their migrations, or check
// says which are missing), and a breaking one fails when it does not: a
// journal of that spec could not be read. Exit status: 0 when everything is up to date
// (warnings may be printed), 1 when something is not (with --strict, a stub
// still panicking or an input property never read is not), 2 when the spec is invalid (or has warnings and
// --strict is given) or another error stops the check. Continuous integration runs it for
// every spec.
//
// With --json, check prints one JSON object on stdout instead (and nothing
// on stderr), with the same exit status:
//
//	{
//	  "spec": "agent.yaml",
//	  "status": "drift",
//	  "files": [
//	    {"path": "decl/helpers.go", "status": "missing"},
//	    {"path": "decl/stale.go", "status": "extra"},
//	    {"path": "decl/states.go", "status": "modified", "diff": "diff a/decl/states.go b/decl/states.go\n..."}
//	  ],
//	  "impl": [
//	    {"path": "impl/transitions/user_ask.go", "line": 10, "column": 1,
//	     "kind": "orphan", "severity": "error", "message": "orphan: func Ask(...) ..."},
//	    {"path": "impl/initials/user.go", "line": 10, "column": 2,
//	     "kind": "not-implemented", "severity": "warning", "message": "func User is still a stub: ..."}
//	  ],
//	  "changes": [
//	    {"file": "agent.yaml", "line": 17, "column": 16, "breaking": true,
//	     "input": "send-user-message", "path": "/message/channel",
//	     "what": "new required property", "new": "{\"type\":\"string\"}"}
//	  ],
//	  "migrations": [
//	    {"path": "impl/migrations/v1_to_v2.go", "line": 20, "column": 1,
//	     "kind": "migration", "severity": "error", "message": "func SendUserMessageFromV1 is still a stub: ..."}
//	  ],
//	  "typeCheck": "skipped: the generated files are not up to date; run agentgen generate",
//	  "diagnostics": [
//	    {"file": "agent.yaml", "line": 2, "column": 16, "severity": "warning",
//	     "element": "actors[1]", "message": "...", "hint": "..."}
//	  ],
//	  "error": "agent.yaml: 3 generated files not up to date; run agentgen generate; 1 orphan in impl/; ..."
//	}
//
// status is "up-to-date" (exit 0), "drift" (exit 1), "invalid" (exit 2; the
// diagnostics say why) or "error" (exit 2; error says why). files lists the
// differing files, sorted by path, with status "modified", "missing" or
// "extra"; diff is present for "modified" only. impl lists the findings of
// the scan of impl/, sorted by path and position, with kind "orphan",
// "signature", "syntax", "build" (severity "error"; a build error without
// a position, such as the go command's refusal of go.mod, has path "" and
// line 0) or "not-implemented" and "unread" (severity "warning", or
// "error" with --strict). typeCheck is "done", or "skipped: " and why; it is absent when
// the check stopped before it (an invalid spec). Paths are slash-separated and relative to the working
// directory. diagnostics holds the errors of an invalid spec and the
// warnings of a valid one; element and hint may be absent. error is absent
// when status is "up-to-date". changes lists the changes of data shapes
// (input is absent for the state's; old and new are absent where the shape
// is; since names the --against spec of a change since it), migrations the
// migrations missing or still stubs. files, impl,
// changes, migrations and diagnostics are always present, possibly empty.
//
// # graph
//
// graph prints the actor graph: one node per actor, labelled with its
// derived state and context, and one edge per observation from observer to
// target, labelled with the observed properties. --format is mermaid (the
// default, a flowchart) or dot (Graphviz). Exit status: 0, 1 on an invalid
// spec, 2 on an unknown format.
//
// # replay
//
// replay runs journals through the agent's transitions as they are today
// and compares the states with those the journal recorded (its snapshots,
// and the digests of the state its records carry: see "Replay against new
// code" in package github.com/moora-go/moora/automata/journal). A JOURNAL
// is a bbolt file of one agent, a fleet's file (each agent, named
// file#id), or a directory, whose .db files are replayed one at a time.
// For each it prints the counts compared and, for one that diverged, the
// first input found to differ (its position, time, version and JSON), the
// JSON Patch of what today's transition did with it, and the JSON Patch
// from the recorded state to the replayed one; then a summary:
//
//	agents 4, inputs 54, identical 4, diverged 0
//
// --json writes it all as one JSON object ({"journals": [...], "summary":
// {...}}). Exit status: 0 when every journal is identical, 1 when one
// diverged, 2 on an error (a journal that does not read, a build that
// fails).
//
// --accept records a deliberate change, as a golden file's update switch
// does: each journal that diverged, or lacks digests, is written again with
// today's states and their digests (the same inputs and times), into a file
// beside it renamed over it; a fleet's file is written again whole.
//
// agentgen cannot load a transition, which is Go code, by itself: replay
// writes, in a temporary directory of the agent's module (the module of
// the spec's package, found by its go.mod), a program that imports the
// spec's decl and impl/agent and calls package
// github.com/moora-go/moora/automata/journal/replay, builds it with go build
// (GOFLAGS apply: an -overlay runs a changed copy of a file, as the tests
// do), runs it in the working directory, and removes it. --codec names the
// journal codec the agent opens its journal with (journal.JSONGob, the
// default, or journal.JSON). An agent's own binary can offer the same as a
// subcommand with replay.Main.
//
// cmd/agentgen/testdata/replay holds a corpus of the seed agents' journals
// that a test replays (identical) on every run.
//
// # schema
//
// schema prints the JSON Schema of the spec format. Editors that speak the
// YAML language server protocol validate and complete a spec that starts
// with
//
//	# yaml-language-server: $schema=./agent.schema.json
//
// beside a copy saved with agentgen schema > agent.schema.json (init writes
// both for a new agent).
//
// # version and completion
//
// version prints the module version agentgen was built from and the Go
// version. completion prints a shell completion script (from cobra); the -f
// flag completes spec files and --format the graph formats.
//
// Usage errors (an unknown command or flag) exit with status 2.
//
// agentgen is not a runtime: it does not run agents (package
// github.com/moora-go/moora/automata does), and what it generates holds no
// behaviour beyond JSON encoding, input validation and routing inputs to
// their actors. The behaviour lives in hand-written initial and transition
// functions and in the effects and jobs injected when the agent is created.
package main
