// Package mcp mounts the tools of a Model Context Protocol server in a
// toolkit (package automata/toolkit): over stdio, a program the Server
// starts and supervises, or over Streamable HTTP, a URL. The server's
// tools become the kit's tools, under every guard a Go tool has — the
// time of each try, retries, the concurrency limits, the circuit breaker,
// the permission checks, the filters and the bound on what the model is
// told, telemetry — because they are toolkit tools (toolkit.Remote) in a
// toolkit.Mount that follows the server's tool list.
//
//	kit, err := toolkit.New(toolkit.Config{}, weather)
//	everything, err := mcp.Mount(kit, mcp.Config{
//		Name:    "everything",
//		Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"},
//		Prefix:  "everything_",
//		Policy:  toolkit.Policy{Timeout: 10 * time.Second},
//	})
//	defer everything.Close()
//	docs, err := mcp.Mount(kit, mcp.Config{
//		Name:   "docs",
//		URL:    "https://mcp.example.com/mcp",
//		Header: http.Header{"Authorization": {"Bearer " + token}},
//	})
//	defer docs.Close()
//	err = everything.Ready(ctx) // optional: wait until its tools are listed
//
// Mount returns at once: the server is started or reached in the
// background, and its tools join the kit when they are listed, so that an
// agent starts whether its servers are up or not. kit.LLMTools() is the
// tools as they are now: an agent that renders them for each model request
// shows the model what its servers offer at that time.
//
// It is a package of its own, not a part of the toolkit, so that an agent
// that mounts no MCP server does not depend on the MCP SDK (the official
// one, github.com/modelcontextprotocol/go-sdk): the toolkit gives any set
// of tools that changes (toolkit.Kit.Mount) what this package needs.
//
// # Tools
//
// Each of the server's tools is a tool of the kit of the same name, each
// character a chat API refuses ('.', '/', …) made '_'; one whose name
// another tool of the kit has — a Go tool, or a tool of a server mounted
// before — gets Config.Prefix (see toolkit.Mount for the rule). Its
// description is the server's (its title when it has none). Its input
// schema is shown to the model as the server gave it — decoded and encoded
// again by the SDK, so its keys are sorted and its numbers are float64s,
// but nothing is added or taken away — and a call's arguments are
// validated against it (package github.com/santhosh-tekuri/jsonschema/v5,
// as a Go tool's; the draft its $schema names, 2020-12 when it names none)
// before the server sees them: arguments that do not match are the
// toolkit's KindInvalid, said to the model with where and what.
//
// When the server sends notifications/tools/list_changed, its tools are
// listed again and the kit's follow: a tool that is gone is no longer
// offered (a call of it running ends as it would have), a new one is, and
// one unchanged keeps its circuit breaker.
//
// # Results
//
// What the model is told of a call (toolkit.Result.Content) is text, each
// content block of the result on lines of its own:
//
//   - text: as it is;
//   - an image: "[image: image/png, 4033 bytes, not shown]" — a tool
//     result is text, which cannot show an image, and its base64 would
//     only spend the model's context; audio is said the same way;
//   - an embedded resource: "[resource: URI, MIME type]" then, for a text
//     resource, its text on the next lines; for a blob, "[resource: URI,
//     MIME type, N bytes of binary data, not shown]";
//   - a resource link: "[resource link: URI (name), MIME type:
//     description]";
//   - a result with structured content only: that content, as JSON.
//
// Then the toolkit's filters apply and the text is cut to the tool's
// MaxResultBytes, as a Go tool's output is.
//
// A result with isError is a tool error: the call is the toolkit's
// KindFailure, the model told "error: NAME failed: " and the result's text
// — as a Go tool that returns an error (tried again under Policy.Retries,
// counted by the circuit breaker), never a crash. A JSON-RPC error answer
// is one too ("mcp server NAME answered the call of TOOL with an error"),
// but Invalid Params (-32602) is KindInvalid, not tried again.
//
// # Supervision
//
// A server over stdio is a program started with Command and Args (no
// shell), in a process group of its own (so that what it starts, such as
// npx's node, ends with it). Its stdin and stdout are the session; its
// stderr is logged (Config.Logger, at Info, key "stderr"), each line cut to
// MaxStderrLineBytes and at most StderrLinesPerSecond lines a second, and
// its last lines are quoted in the error that says why it died. Close, and
// a session that ended while the program runs, end it the way the MCP spec
// says: its stdin closed, then SIGTERM, then SIGKILL, 2 s apart.
//
// A server over Streamable HTTP is reached at URL, with Header on every
// request. A broken stream is resumed as the spec says — a GET with
// Last-Event-ID, after the wait the server's retry field asks for — at most
// twice; then the session ends and a new one is made (a call is bounded by
// its try's Timeout throughout). A session the server forgot (it
// restarted: 404, or 400 as the TypeScript SDK's servers say) ends too.
//
// Whenever a session ends — the program exited or was killed, the
// connection broke, a message was malformed or too long, a ping (every
// KeepAlive, and after a call that got no answer) went unanswered — the
// Server starts the program again, or reaches the URL again, after a
// backoff (MinBackoff, doubled at each failure in a row up to MaxBackoff),
// and lists the tools again. Meanwhile the tools stay in the kit, and a
// call of one fails at once with an error that wraps ErrDown and says why
// and when the server is tried again:
//
//	error: mcp server "everything" is down: the session ended; the program ended: signal: killed; its stderr ended with: …; tried again in 200ms
//
// A call running when the session ends fails at once with such an error
// ("the call of TOOL got no answer"); a call that the server does not
// answer while its session lives is bounded by the try's Timeout
// (KindTimeout). No call waits for a server longer than its try's time.
// Status says whether the server is up, why not, and how many sessions
// were made.
//
// # Idempotency
//
// Each tools/call request carries the call's idempotency key
// (toolkit.Call.Key: in an agent, the job's key and the call's ID) in its
// _meta, under MetaKey ("io.github.moora-go/idempotency-key"), and the
// try's number under MetaAttempt ("io.github.moora-go/attempt"). The key is
// the same on every try and after the agent restarted, so that a server
// that honours it can answer a call it already ran (a retry, or a job
// started again after a crash) from what it did, instead of doing it
// twice. MCP has no standard for this: a server that does not know the key
// ignores _meta, as the spec has it ignore keys it does not know, and then
// a call tried again — by Policy.Retries after a failure or a timeout, or
// by a restarted job whose result was not journaled — runs again, and its
// side effect happens again. Give such a server's tools that have side
// effects no Retries, and make them safe to repeat where you can.
//
// # Limits
//
// Every limit has a default (Config; the zero value is the default):
//
//   - ConnectTimeout (30 s): starting or reaching the server, the
//     handshake, and each listing of its tools;
//   - MinBackoff (200 ms) and MaxBackoff (30 s): the waits before a
//     restart or a reconnection;
//   - KeepAlive (30 s): how often a session is pinged (protocol versions
//     before 2026-07-28, as the SDK does);
//   - MaxMessageBytes (4 MiB): one message from the server — a line over
//     stdio, a response or an event over HTTP; a longer one ends the
//     session (memory stays bounded: a result that never ends costs
//     MaxMessageBytes, then a restart);
//   - MaxTools (512): the tools of a server mounted; a longer list is not
//     read to its end;
//   - NotificationsPerSecond (100, bursts of as many; stdio): the
//     requests and notifications from the server that are handled; the
//     others are dropped and counted in the log (a tools/list_changed
//     among them still has the tools listed again);
//   - MaxStderrLineBytes (1 KiB) and StderrLinesPerSecond (20): what of a
//     program's stderr is logged;
//   - and the toolkit's, per tool (Config.Policy, as toolkit.Policy):
//     Timeout (30 s a try), Retries (0), MaxConcurrent (8),
//     MaxResultBytes (64 KiB), the breaker (5 failures, 30 s).
//
// # Cost
//
// A call through MCP over stdio costs a round trip to another process and
// two JSON encodings each way. BenchmarkCall measures a toolkit call of the
// same Go function (add two integers) as a Go tool and as a tool of a Go
// MCP server over stdio (this package's test binary, run again):
//
//	go test -run '^$' -bench . -benchmem -count 3 ./automata/toolkit/mcp
//
// On one machine (Go 1.26, linux/amd64, 2 CPUs, other work running), the
// Go tool took 19 to 30 µs a call (75 allocations, 3.7 KB) and the MCP
// tool 740 to 890 µs (140 allocations, 144 KB): 24× to 29× (the x-go
// metric), about 0.7 ms more per call, which is the price of a process
// boundary; a model's turn takes seconds.
//
// # Conformance
//
// The MCP conformance suite's client scenarios initialize, tools_call and
// sse-retry (npm @modelcontextprotocol/conformance) pass against a kit that
// mounts the suite's server: TestConformanceClient runs them, the test
// binary as the client command the suite starts.
//
// # What it is not
//
// It mounts tools only: not a server's prompts or resources (an embedded
// resource in a result is shown, as above), and it answers no sampling,
// elicitation or roots requests (it says it supports none). It does not
// serve an agent over MCP. It does not sandbox a program over stdio: the
// program runs as the agent's user, with its environment (plus Env).
package mcp
