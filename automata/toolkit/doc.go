// Package toolkit runs the tools an agent's model calls: one typed toolkit
// every agent shares, with the guards a tool that talks to the world needs.
//
// A tool is a Go function over a typed argument struct (Func), a URL its
// arguments are POSTed to (HTTP), or a function over arguments that a
// JSON Schema given as it is describes (Remote), such as a tool of an MCP
// server: package toolkit/mcp mounts a server's tools in a kit. Its JSON Schema, which the model is
// shown, is derived from the struct (package github.com/invopop/jsonschema),
// and a call's arguments are validated against it (package
// github.com/santhosh-tekuri/jsonschema/v5) before the function sees them:
// arguments a model got wrong come back to it as an error it can read and
// correct, never as a panic.
//
//	type WeatherArgs struct {
//		City  string `json:"city" jsonschema_description:"The city, such as Paris."`
//		Units string `json:"units,omitempty" jsonschema:"enum=metric,enum=imperial"`
//	}
//	weather := toolkit.Func("weather", "Tells the weather in a city.",
//		func(ctx context.Context, a WeatherArgs) (string, error) { … })
//	kit, err := toolkit.New(toolkit.Config{}, weather.With(toolkit.Policy{Timeout: 5 * time.Second, Retries: 2}))
//
// A Kit renders its tools for a model (LLMTools, for llm.Request.Tools)
// and runs the calls the model makes: Run runs one, RunAll runs a model's
// parallel calls in parallel and returns the results in order. A Result
// says how the call ended (its Kind) and what the model is to be told
// (Content). In an agent, each tool call is a job whose key is its
// idempotency key:
//
//	r := kit.Run(ctx, toolkit.Call{ID: call.ID, Name: call.Name, Arguments: call.Arguments, Key: automata.JobKey(ctx)})
//	if r.Kind == toolkit.KindCancelled {
//		return ctx.Err() // the job was cancelled: report nothing
//	}
//	dispatch(ToolResult{CallID: call.ID, Content: r.Content()})
//
// The tools given to New are the kit's for its life. A Mount (Kit.Mount)
// is a set of tools that changes while the kit runs — an MCP server's,
// kept in step with its tool list — under the same guards; a tool of it
// whose name is taken is given the mount's prefix (see Mount).
//
// # Guards
//
// Each tool has a Policy (zero fields are defaults); the Kit's Config
// applies to all of them. In the order a call meets them:
//
//   - the caller's context is not done: a call on a context that ended
//     is KindCancelled at once, whatever it says, and the tool is not run;
//   - the tool exists, and the arguments are at most
//     Config.MaxArgumentBytes (1 MiB), JSON, and match the schema:
//     KindInvalid otherwise;
//   - Config.Allow, then Policy.Allow, the permission checks: their error
//     is KindPermission;
//   - the circuit breaker: after Policy.BreakerFailures (5) calls in a
//     row failed or timed out, the breaker opens and calls fail at once
//     with KindUnavailable, saying why and for how long; after
//     Policy.BreakerCooldown (30 s) one call is let through (half-open),
//     and its success closes the breaker, its failure opens it again
//     (Kit.Breaker says which). A call belongs to the generation of the
//     breaker that let it through: its end moves the breaker only if the
//     breaker has not changed since (a call that started before the
//     breaker opened says nothing of the tool once a trial closed it);
//   - the concurrency limits: at most Config.MaxConcurrent (16) calls of
//     the kit and Policy.MaxConcurrent (8) of the tool run at once; the
//     others wait for their turn, which is flow control: a burst of calls
//     is served as fast as the limits allow, never faster. A call waits
//     for a slot of its tool first, then for one of the kit, so that a
//     call waiting for a busy tool holds none of the kit's and the other
//     tools' calls go on; RunAll waits for each call's turn apart;
//   - the circuit breaker again, once the call has its slots (and before
//     each retry): a call let through while the breaker was closed, that
//     waited while it opened, fails with KindUnavailable and does not run;
//   - each try is bounded by Policy.Timeout (30 s; Call.Timeout replaces
//     it): KindTimeout;
//   - a try that failed or timed out is tried again Policy.Retries times
//     (0), Policy.Backoff (200 ms) apart, doubling up to 10 s, with the
//     same idempotency key (Key; an HTTP tool's Idempotency-Key header)
//     and the try's number (Attempt);
//   - the output is filtered (Config.Filter, then Policy.Filter: redact
//     secrets, say) and cut to Policy.MaxResultBytes (64 KiB), the note
//     saying it was cut included (Result.Truncated).
//
// What the model is told (Result.Content) is bounded, whatever the model or
// the tool wrote: an error is cut to the tool's MaxResultBytes too
// (DefaultMaxResultBytes for a tool that does not exist), a schema
// violation lists its first problems and how many more there are, a name
// that is no tool's is quoted cut.
//
// A tool says why it failed by wrapping ErrInvalid (the arguments are wrong:
// not tried again) or ErrPermission; any other error is a failure, and a
// tool that panics or calls runtime.Goexit is one too: each try runs on a
// goroutine of its own, which Run waits for, and gives its slots back
// however it ends. When the caller's context ends — the job was cancelled —
// the call ends with KindCancelled, whatever the tool was doing, and its
// result is not for the model.
//
// An HTTP tool's requests do not follow redirects: a 3xx is a failure,
// which the model is told the tool answered, not where to. The errors the
// model is told name the tool, never its URL, whose query may hold a
// secret.
//
// # Telemetry
//
// With Config.TracerProvider or Config.MeterProvider (the API of
// go.opentelemetry.io/otel: the SDK and the exporters are the caller's
// choice), a kit traces or measures its calls; with neither (the default)
// it records nothing, at no cost.
//
// Each call of Run is a span after the OpenTelemetry GenAI conventions for
// tool execution (of status Development): named "execute_tool {tool}"
// ("execute_tool" for a name that is no tool's), of kind Internal, a child
// of the span in the call's context and the parent of the spans the tool
// makes with its own. In an agent that span is the job's
// (automata.WithTelemetry), so that a trace goes from an input to the job
// it called for to the job's tool calls and what they did; RunAll's calls
// are each a child of it. The span's attributes are:
//
//   - the conventions': gen_ai.operation.name "execute_tool",
//     gen_ai.tool.name, gen_ai.tool.type ("function" for a Func,
//     "extension" for an HTTP tool, which calls an API elsewhere),
//     gen_ai.tool.description, gen_ai.tool.call.id (Call.ID) and, when the
//     call failed, error.type (its Kind);
//   - ours: moora.tool.kind, how the call ended (none, invalid,
//     permission, timeout, unavailable, failure or cancelled: the Kinds,
//     "none" for KindNone), moora.tool.tries (Result.Tries),
//     moora.tool.key (Call.Key, the idempotency key) and
//     moora.tool.breaker.refused (the circuit breaker refused the call:
//     KindUnavailable).
//
// Each try is an event of the span, "moora.tool.try", with its number
// (moora.tool.try), how it ended (moora.tool.kind), how long it ran
// (moora.tool.try.duration, in seconds) and its error (moora.tool.error);
// the waits for slots and the backoffs are the gaps between them. Events,
// not spans of their own: the conventions make a tool execution one span,
// which backends count as one; a try has little more to say than how it
// ended; and what a try did is already under the call's span, as the spans
// the tool made (an instrumented HTTP client's, say), in the order of the
// tries.
//
// A call that failed (invalid, permission, timeout, unavailable, failure)
// has an error status, described by its error cut to 1 KiB. A cancelled
// call has not: its caller gave up on it (its job was cancelled, whose
// span has no error status either), which says nothing of the tool;
// moora.tool.kind says it. Errors are recorded, as the model is told them,
// cut: a tool's own error may quote what it was given. The arguments and
// the output are not, unless Config.TraceContent asks for them
// (gen_ai.tool.call.arguments, gen_ai.tool.call.result).
//
// Metrics, all with the attribute gen_ai.tool.name (_OTHER for a name that
// is no tool's, so that what a model writes adds no series):
//
//   - gen_ai.execute_tool.duration (histogram, seconds; the conventions'):
//     each call's Result.Duration, with gen_ai.tool.type, moora.tool.kind
//     and, when the call failed, error.type (a cancelled call's has none,
//     as its span has no error status);
//   - moora.tool.calls (counter): calls ended, by moora.tool.kind;
//   - moora.tool.tries (histogram): the tries of each call that ran its
//     tool, retries included;
//   - moora.tool.breaker.refused (counter): calls the circuit breaker
//     refused, before the first try or before a retry.
//
// # What it is not
//
// The toolkit does not decide when tools are called, nor keep their
// results: the agent's state does, as inputs of its journal, so that a
// restarted agent calls again only what had no result. A retried call (a
// job restarted after a crash) carries the same key: a tool with side
// effects should honour it. The toolkit's own state — the breakers, the
// slots — lives in the process and starts afresh with it.
package toolkit
