package toolkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/moora-go/moora/automata/internal/schemaerr"
	"github.com/moora-go/moora/automata/llm"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// The errors a tool returns to say why it failed. A Func's error that wraps
// one of them, and an HTTP tool's 400/422 and 401/403, are of that kind and
// not tried again.
var (
	// ErrInvalid: the arguments are wrong; calling again will not help.
	ErrInvalid = errors.New("invalid arguments")
	// ErrPermission: the call is not allowed.
	ErrPermission = errors.New("permission denied")
)

// Kind says how a call ended.
type Kind string

// The kinds of Result.
const (
	KindNone        Kind = ""            // it succeeded
	KindInvalid     Kind = "invalid"     // no such tool, or arguments that are not valid JSON, do not match the schema or that the tool refused (ErrInvalid)
	KindPermission  Kind = "permission"  // refused by an Allow check or by the tool (ErrPermission)
	KindTimeout     Kind = "timeout"     // the last try ran out of its Timeout
	KindUnavailable Kind = "unavailable" // the tool's circuit breaker is open: not called (or, before a retry, not called again)
	KindFailure     Kind = "failure"     // the tool failed (or panicked, or called runtime.Goexit)
	KindCancelled   Kind = "cancelled"   // the caller's context ended: report nothing
)

// Call is one call of a tool, as a model asked for it.
type Call struct {
	// ID identifies the call (llm.ToolCall.ID); Result.CallID is it.
	ID string
	// Name is the tool's name.
	Name string
	// Arguments are the arguments as the model wrote them, a JSON object;
	// empty is {}.
	Arguments json.RawMessage
	// Key is the call's idempotency key, the same on every try and after
	// a restart: a job passes automata.JobKey(ctx). A tool reads it with
	// Key; an HTTP tool sends it as the Idempotency-Key header.
	Key string
	// Timeout replaces the tool's Policy.Timeout for this call's tries
	// (0: the tool's).
	Timeout time.Duration
}

// Result is how a call ended.
type Result struct {
	CallID, Name string
	// Output is the tool's output, when Kind is KindNone: filtered and
	// cut to at most MaxResultBytes bytes, the note saying it was cut
	// included (Truncated).
	Output string
	// Err says why the call failed, when Kind is not KindNone: what the
	// model is told. Its message is cut so that Content is at most the
	// tool's MaxResultBytes bytes (DefaultMaxResultBytes when there is no
	// such tool); errors.Is and errors.As still see what it wraps.
	Err  error
	Kind Kind
	// Tries is how many times the tool was run (0 when it was not).
	Tries int
	// Duration is how long the call took, from Run to its end, waits
	// included, by Config.Clock.
	Duration time.Duration
	// Truncated says Output was cut to MaxResultBytes.
	Truncated bool
}

// Content is what the model is told of the call: the output, or "error: "
// and why it failed. Of a Result of Run, it is at most the tool's
// MaxResultBytes bytes (DefaultMaxResultBytes when there is no such tool).
func (r Result) Content() string {
	if r.Kind == KindNone {
		return r.Output
	}
	if r.Err == nil {
		return errorPrefix + string(r.Kind)
	}
	s := errorPrefix + r.Err.Error()
	if ce, ok := r.Err.(*cutError); ok {
		s = clip(s, ce.limit)
	}
	return s
}

// errorPrefix starts the Content of a call that failed.
const errorPrefix = "error: "

// cutError is an error whose message is cut so that the Content it makes
// is at most limit bytes.
type cutError struct {
	err   error
	msg   string
	limit int
}

func (e *cutError) Error() string { return e.msg }
func (e *cutError) Unwrap() error { return e.err }

// bound returns err, or err with its message cut, so that the Content it
// makes is at most limit bytes.
func bound(err error, limit int) error {
	msg := err.Error()
	if len(errorPrefix)+len(msg) <= limit {
		return err
	}
	return &cutError{err: err, msg: clip(msg, max(limit-len(errorPrefix), 0)), limit: limit}
}

// Config is what guards every call of a Kit, before each tool's own Policy.
type Config struct {
	// Allow is the check before every call, before the tool's
	// Policy.Allow: its error refuses the call with KindPermission. Nil
	// allows.
	Allow func(ctx context.Context, c Call) error
	// Filter is applied to every successful output, before the tool's
	// Policy.Filter. Nil keeps it.
	Filter func(c Call, output string) string
	// MaxConcurrent is how many calls of all the tools run at once
	// (default 16).
	MaxConcurrent int
	// MaxArgumentBytes bounds a call's arguments (default 1 MiB): longer
	// ones are KindInvalid, not parsed.
	MaxArgumentBytes int
	// Clock tells the time, for the breakers' cooldowns and
	// Result.Duration (default time.Now).
	Clock func() time.Time
	// HTTPClient sends the HTTP tools' requests (default a client of its
	// own, with no timeout of its own: each try has the tool's Timeout).
	// The kit uses a copy of it that does not follow redirects: a tool
	// that answers one failed (New does not change the client given).
	HTTPClient *http.Client
	// TracerProvider traces each call of Run as a span "execute_tool
	// {tool}" after the OpenTelemetry GenAI conventions, a child of the
	// span in the call's context (in an agent, the job's) and the parent
	// of what the tool does with its own; each try is an event of it
	// (see the package doc, "Telemetry"). Nil: no traces.
	TracerProvider trace.TracerProvider
	// MeterProvider measures the calls: moora.tool.calls,
	// gen_ai.execute_tool.duration, moora.tool.tries and
	// moora.tool.breaker.refused (see the package doc, "Telemetry").
	// Nil: no metrics. With both providers nil a kit records nothing, at
	// no cost.
	MeterProvider metric.MeterProvider
	// TraceContent records in each call's span its arguments
	// (gen_ai.tool.call.arguments), as the model wrote them, and a
	// successful call's output (gen_ai.tool.call.result), as the model is
	// told it (filtered, cut to MaxResultBytes), each cut to 4 KiB. Off
	// by default: they are what users, models and tools wrote, secrets
	// and personal data included, and the conventions leave them out
	// unless asked for.
	TraceContent bool
}

// Kit is a set of tools and what guards their calls: render its tools for
// a model with LLMTools, run the calls the model makes with Run or RunAll.
// A Kit is safe for concurrent use, and its limits hold across all its
// callers.
//
// Its tools are those given to New, then those of its mounts (Mount), in
// the order they were mounted. The set a call or a listing sees is one
// immutable toolset, swapped whole when a mount changes: set is only
// stored under mu, which also guards mounts; Run reads set once, so that
// a call sees one tool from start to end, however the set changes
// meanwhile.
type Kit struct {
	cfg   Config
	fixed []*entry      // the tools given to New, in that order
	slots chan struct{} // the kit's MaxConcurrent
	tel   *telemetry    // nil: none

	mu     sync.Mutex
	mounts []*Mount // in the order mounted; closed ones removed
	set    atomic.Pointer[toolset]
}

// toolset is the kit's tools at one time: never changed once stored.
type toolset struct {
	tools  []*entry // in order: New's, then each mount's
	byName map[string]*entry
}

// toolset returns the kit's tools as they are now.
func (k *Kit) toolset() *toolset { return k.set.Load() }

// entry is one tool of a kit and its running state.
type entry struct {
	Tool
	slots chan struct{} // MaxConcurrent
	mu    sync.Mutex
	br    breaker
	tel   *toolTelemetry // nil without telemetry
	given *entry         // of a mount's tool renamed with its prefix: the entry under its given name, whose slots it shares
}

// New makes a kit of tools, or says which tool or setting is wrong: a
// name a chat API would refuse (1 to 64 letters, digits, '_' or '-') or
// given twice, a schema that is not a JSON object or does not compile, a
// type Func cannot describe (naming the field: a chan, a func, a complex
// number…), a negative limit.
func New(cfg Config, tools ...Tool) (*Kit, error) {
	if cfg.MaxConcurrent < 0 || cfg.MaxArgumentBytes < 0 {
		return nil, errors.New("toolkit: MaxConcurrent and MaxArgumentBytes must not be negative")
	}
	cfg.MaxConcurrent = or(cfg.MaxConcurrent, DefaultKitConcurrent)
	cfg.MaxArgumentBytes = or(cfg.MaxArgumentBytes, DefaultMaxArgBytes)
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	client := http.Client{}
	if cfg.HTTPClient != nil {
		client = *cfg.HTTPClient
	}
	// A redirect could lead the request, or its arguments turned into a
	// GET, anywhere, such as to a server inside the network: it is an
	// answer, which post reports.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cfg.HTTPClient = &client
	k := &Kit{cfg: cfg, slots: make(chan struct{}, cfg.MaxConcurrent), tel: newTelemetry(cfg)}
	set := &toolset{byName: make(map[string]*entry, len(tools))}
	for i, t := range tools {
		e, err := k.entry(t, set.byName)
		if err != nil {
			return nil, fmt.Errorf("toolkit: tool %d (%q): %w", i, t.name, err)
		}
		set.tools = append(set.tools, e)
		set.byName[t.name] = e
	}
	k.fixed = set.tools
	k.set.Store(set)
	return k, nil
}

// entry checks t, whose name must not be one of taken's, and makes the
// kit's entry of it.
func (k *Kit) entry(t Tool, taken map[string]*entry) (*entry, error) {
	if t.err != nil {
		return nil, t.err
	}
	if t.run == nil && t.url == "" {
		return nil, errors.New("not made by Func, HTTP or Remote")
	}
	if !validName(t.name) {
		return nil, fmt.Errorf("name %q is not 1 to 64 letters, digits, '_' or '-'", t.name)
	}
	if taken[t.name] != nil {
		return nil, errors.New("a second tool of that name")
	}
	p, err := t.policy.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	t.policy = p
	if err := t.compile(); err != nil {
		return nil, err
	}
	e := &entry{Tool: t, slots: make(chan struct{}, p.MaxConcurrent)}
	if k.tel != nil {
		e.tel = k.tel.of(e)
	}
	return e, nil
}

// validName says whether a chat API takes name as a tool's.
func validName(name string) bool {
	return (llm.Request{System: "-", Tools: []llm.Tool{{Name: name}}}).Validate() == nil
}

// LLMTools renders the kit's tools for a model, in the order given to New
// and then its mounts' (Mount), as they are now: what goes in
// llm.Request.Tools.
func (k *Kit) LLMTools() []llm.Tool {
	set := k.toolset()
	out := make([]llm.Tool, len(set.tools))
	for i, e := range set.tools {
		out[i] = llm.Tool{Name: e.name, Description: e.description, Parameters: bytes.Clone(e.parameters)}
	}
	return out
}

// Names returns the kit's tools' names, in the order of LLMTools.
func (k *Kit) Names() []string {
	set := k.toolset()
	out := make([]string, len(set.tools))
	for i, e := range set.tools {
		out[i] = e.name
	}
	return out
}

// Tool returns the kit's tool named name, with its policy's defaults
// filled in.
func (k *Kit) Tool(name string) (Tool, bool) {
	e, ok := k.toolset().byName[name]
	if !ok {
		return Tool{}, false
	}
	return e.Tool, true
}

// NeedsApproval says whether a call of tool name with arguments waits for a
// person's approval (Policy.Approval), and how long it may wait
// (Policy.ApprovalDeadline); a tool the kit does not have needs none (its
// call fails as it runs).
func (k *Kit) NeedsApproval(name string, arguments json.RawMessage) (bool, time.Duration) {
	e, ok := k.toolset().byName[name]
	if !ok || e.policy.Approval == nil || !e.policy.Approval(arguments) {
		return false, 0
	}
	if d := e.policy.ApprovalDeadline; d > 0 {
		return true, d
	}
	return true, DefaultApprovalDeadline
}

// Calls turns a model's tool calls into Calls under the job's key key:
// each call's key is key and the call's ID.
func Calls(key string, calls []llm.ToolCall) []Call {
	out := make([]Call, len(calls))
	for i, c := range calls {
		out[i] = Call{ID: c.ID, Name: c.Name, Arguments: c.Arguments, Key: key + "/" + c.ID}
	}
	return out
}

// RunAll runs calls in parallel, as many at once as the kit's and each
// tool's MaxConcurrent let, and returns their results in the calls' order.
// Each call waits for its own turn (Run), so that a call of a busy tool
// does not hold up the calls of the others.
func (k *Kit) RunAll(ctx context.Context, calls []Call) []Result {
	out := make([]Result, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { out[i] = k.Run(ctx, c) })
	}
	wg.Wait()
	return out
}

// Run runs one call and says how it ended; it never panics on what the
// model wrote, and a tool that panics or calls runtime.Goexit is a
// KindFailure. In order: a call whose ctx is already done ends at once
// (KindCancelled); the tool is looked up and the arguments validated
// against its schema (KindInvalid), Config.Allow and Policy.Allow are
// asked (KindPermission), the breaker is asked (KindUnavailable). Then
// each try waits for a slot of the tool, then for one of the kit (a call
// waiting for a busy tool holds none of the kit's), asks the breaker again
// (it may have opened meanwhile) and runs, on a goroutine of its own that
// Run waits for, under its Timeout; Retries follow failures and timeouts,
// Backoff apart. The output is filtered (Config.Filter, then
// Policy.Filter) and cut to MaxResultBytes; so is an error (Content).
// When ctx ends, the call ends with KindCancelled.
//
// With Config.TracerProvider, the call is a span, a child of the span in
// ctx, and the tool runs under it; with Config.MeterProvider, it is
// measured (see the package doc, "Telemetry").
func (k *Kit) Run(ctx context.Context, c Call) (r Result) {
	begin := k.cfg.Clock()
	r = Result{CallID: c.ID, Name: c.Name}
	set := k.toolset()
	var span trace.Span // nil without traces
	if k.tel != nil {
		e := set.byName[c.Name]
		ctx, span = k.tel.start(ctx, e, c)
		// Deferred first, so run last: it sees r as Run returns it.
		defer func() { k.tel.end(ctx, span, e, r) }()
	}
	limit := DefaultMaxResultBytes
	defer func() {
		r.Duration = k.cfg.Clock().Sub(begin)
		if r.Kind != KindNone && r.Err != nil {
			r.Err = bound(r.Err, limit)
		}
	}()
	fail := func(kind Kind, err error) Result {
		r.Kind, r.Err = kind, err
		return r
	}
	if err := ctx.Err(); err != nil {
		return fail(KindCancelled, err)
	}
	e, ok := set.byName[c.Name]
	if !ok {
		return fail(KindInvalid, fmt.Errorf("there is no tool %q; the tools are %s", clip(c.Name, maxNameBytes), set.names()))
	}
	limit = e.policy.MaxResultBytes
	args, err := k.arguments(e, c.Arguments)
	if err != nil {
		return fail(KindInvalid, err)
	}
	c.Arguments = args
	for _, allow := range []func(context.Context, Call) error{k.cfg.Allow, e.policy.Allow} {
		if allow == nil {
			continue
		}
		if err := allow(ctx, c); err != nil {
			if !errors.Is(err, ErrPermission) {
				err = fmt.Errorf("%w: %w", ErrPermission, err)
			}
			return fail(KindPermission, err)
		}
	}
	tk, err := e.admit(k.cfg.Clock())
	if err != nil {
		return fail(KindUnavailable, err)
	}
	out, kind, err := k.tries(ctx, e, c, tk, &r.Tries, span)
	if kind != KindNone {
		return fail(kind, err)
	}
	for _, filter := range []func(Call, string) string{k.cfg.Filter, e.policy.Filter} {
		if filter != nil {
			out = filter(c, out)
		}
	}
	r.Output, r.Truncated = truncate(out, e.policy.MaxResultBytes)
	return r
}

// arguments validates raw against e's schema and returns it as it is ({}
// when empty).
func (k *Kit) arguments(e *entry, raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if len(raw) > k.cfg.MaxArgumentBytes {
		return nil, fmt.Errorf("%w: the arguments of %s are %d bytes, over the limit of %d", ErrInvalid, e.name, len(raw), k.cfg.MaxArgumentBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		if err == nil {
			err = errors.New("more after the JSON value")
		}
		return nil, fmt.Errorf("%w: the arguments of %s are not JSON: %v", ErrInvalid, e.name, err)
	}
	if err := e.schema.Validate(v); err != nil {
		return nil, fmt.Errorf("%w: the arguments of %s do not match its schema: %s", ErrInvalid, e.name, leaves(err))
	}
	if e.decodes != nil {
		// What the schema allows and Go cannot hold, such as an integer
		// past int64.
		if err := e.decodes(raw); err != nil {
			return nil, fmt.Errorf("%w: the arguments of %s: %v", ErrInvalid, e.name, err)
		}
	}
	return raw, nil
}

// maxNameBytes bounds a name an error quotes: a tool's name is at most 64
// bytes.
const maxNameBytes = 64

// maxProblems and maxProblemBytes bound what leaves lists.
const (
	maxProblems     = 10
	maxProblemBytes = 256
)

// leaves lists the leaves of a schema violation, sorted, with their
// location in the arguments: the first maxProblems of them, each cut to
// maxProblemBytes, and how many more there are.
func leaves(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	problems := schemaerr.Leaves(ve)
	more := len(problems) - maxProblems
	if more > 0 {
		problems = problems[:maxProblems]
	}
	for i, p := range problems {
		problems[i] = clip(p, maxProblemBytes)
	}
	s := strings.Join(problems, "; ")
	if more > 0 {
		s += fmt.Sprintf("; and %d more", more)
	}
	return s
}

// callKey carries a call's key and try number to the tool.
type callKey struct{}

type callInfo struct {
	key     string
	attempt int
}

// Key returns the idempotency key of the call a tool is running for (its
// Call.Key), the same on every try; "" outside a tool.
func Key(ctx context.Context) string {
	ci, _ := ctx.Value(callKey{}).(callInfo)
	return ci.key
}

// Attempt returns which try of its call a tool is running: 1 for the
// first, 2 for the first retry; 0 outside a tool.
func Attempt(ctx context.Context) int {
	ci, _ := ctx.Value(callKey{}).(callInfo)
	return ci.attempt
}

// tries runs the call under e's policy, the breaker having let it through
// with tk: each try with a slot of the tool and of the kit and its
// timeout, retried after failures and timeouts. It tells the breaker how
// the call ended. span is the call's, which each try is an event of (nil
// without traces).
func (k *Kit) tries(ctx context.Context, e *entry, c Call, tk ticket, tries *int, span trace.Span) (out string, kind Kind, err error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = e.policy.Timeout
	}
	// Should this goroutine end with no result (a tool's runtime.Goexit
	// is contained by try, but still), the breaker hears of a failure.
	kind, err = KindFailure, fmt.Errorf("%s: the call ended without a result", e.name)
	defer func() { e.record(tk, kind, err, k.cfg.Clock()) }()
	backoff := e.policy.Backoff
	for attempt := 1; ; attempt++ {
		out, kind, err = k.attempt(ctx, e, c, &tk, attempt, timeout, tries, span)
		if kind != KindFailure && kind != KindTimeout || attempt > e.policy.Retries {
			return out, kind, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return "", KindCancelled, ctx.Err()
		}
		backoff = min(2*backoff, MaxBackoff)
	}
}

// attempt runs try n of the call, unless ctx is done: it waits for a slot
// of the tool, then for one of the kit, so that a call waiting for a busy
// tool holds none of the kit's; then it asks the breaker again, which let
// the call through with *tk, as it may have opened meanwhile. The slots
// are given back however the try ends. A try that runs is an event of
// span, the call's (nil without traces).
func (k *Kit) attempt(ctx context.Context, e *entry, c Call, tk *ticket, n int, timeout time.Duration, tries *int, span trace.Span) (string, Kind, error) {
	if err := ctx.Err(); err != nil {
		return "", KindCancelled, err
	}
	release, err := acquire(ctx, e.slots, k.slots)
	if err != nil {
		return "", KindCancelled, err
	}
	defer release()
	if err := ctx.Err(); err != nil {
		return "", KindCancelled, err
	}
	t, err := e.check(*tk, k.cfg.Clock())
	if err != nil {
		return "", KindUnavailable, err
	}
	*tk = t
	*tries = n
	if span == nil {
		return k.try(ctx, e, c, n, timeout)
	}
	start := time.Now()
	out, kind, err := k.try(ctx, e, c, n, timeout)
	k.tel.try(span, n, time.Since(start), kind, err)
	return out, kind, err
}

// acquire takes a slot of each of slots, in order, and returns what gives
// them back; or it takes none, when ctx ends first.
func acquire(ctx context.Context, slots ...chan struct{}) (release func(), err error) {
	taken := 0
	release = func() {
		for i := taken - 1; i >= 0; i-- {
			<-slots[i]
		}
	}
	for _, s := range slots {
		select {
		case s <- struct{}{}:
			taken++
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		}
	}
	return release, nil
}

// try runs the call once, on a goroutine of its own, so that a tool that
// panics or calls runtime.Goexit fails the try and nothing else; it waits
// for the tool to return.
func (k *Kit) try(ctx context.Context, e *entry, c Call, attempt int, timeout time.Duration) (string, Kind, error) {
	tctx, cancel := context.WithTimeout(context.WithValue(ctx, callKey{}, callInfo{c.Key, attempt}), timeout)
	defer cancel()
	var out string
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		returned := false
		defer func() {
			if p := recover(); p != nil {
				out, err = "", fmt.Errorf("%s panicked: %v", e.name, p)
			} else if !returned {
				out, err = "", fmt.Errorf("%s called runtime.Goexit instead of returning", e.name)
			}
		}()
		if e.url != "" {
			out, err = k.post(tctx, e, c)
		} else {
			out, err = e.run(tctx, c.Arguments)
		}
		returned = true
	}()
	<-done
	switch {
	case ctx.Err() != nil:
		return "", KindCancelled, ctx.Err()
	case err == nil:
		return out, KindNone, nil
	case errors.Is(err, ErrInvalid):
		return "", KindInvalid, err
	case errors.Is(err, ErrPermission):
		return "", KindPermission, err
	case tctx.Err() != nil:
		return "", KindTimeout, fmt.Errorf("%s timed out after %s", e.name, timeout)
	default:
		return "", KindFailure, err
	}
}

// truncate cuts s to at most limit bytes, at a character boundary, and
// says whether it did. A cut s ends with a note saying so, within the
// limit, unless the note would take more than half of it.
func truncate(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	note := fmt.Sprintf("\n[truncated: the output is longer than %d bytes]", limit)
	if len(note) > limit/2 {
		note = ""
	}
	return cutAt(s, limit-len(note)) + note, true
}

// clip cuts s to at most limit bytes, at a character boundary, ending
// with "…" when it cut it and there is room.
func clip(s string, limit int) string {
	const ellipsis = "…"
	switch {
	case len(s) <= limit:
		return s
	case limit > len(ellipsis):
		return cutAt(s, limit-len(ellipsis)) + ellipsis
	default:
		return cutAt(s, limit)
	}
}

// cutAt returns the start of s, of at most n < len(s) bytes, cut at a
// character boundary.
func cutAt(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
