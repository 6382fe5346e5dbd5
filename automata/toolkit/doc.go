// Package toolkit runs the tools an agent's model calls: one typed toolkit
// every agent shares, with the guards a tool that talks to the world needs.
//
// A tool is a Go function over a typed argument struct (Func), or a URL
// its arguments are POSTed to (HTTP). Its JSON Schema, which the model is
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
// # What it is not
//
// The toolkit does not decide when tools are called, nor keep their
// results: the agent's state does, as inputs of its journal, so that a
// restarted agent calls again only what had no result. A retried call (a
// job restarted after a crash) carries the same key: a tool with side
// effects should honour it. The toolkit's own state — the breakers, the
// slots — lives in the process and starts afresh with it.
package toolkit
