package toolkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/moora-go/moora/automata/llm"
	"github.com/santhosh-tekuri/jsonschema/v5"
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
	KindUnavailable Kind = "unavailable" // the tool's circuit breaker is open: not called
	KindFailure     Kind = "failure"     // the tool failed (or panicked)
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
	// Output is the tool's output, filtered and cut to MaxResultBytes,
	// when Kind is KindNone.
	Output string
	// Err says why the call failed, when Kind is not KindNone: what the
	// model is told.
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
// and why it failed.
func (r Result) Content() string {
	if r.Kind == KindNone {
		return r.Output
	}
	return "error: " + r.Err.Error()
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
	HTTPClient *http.Client
}

// Kit is a set of tools and what guards their calls: render its tools for
// a model with LLMTools, run the calls the model makes with Run or RunAll.
// A Kit is safe for concurrent use, and its limits hold across all its
// callers.
type Kit struct {
	cfg    Config
	tools  []*entry // in the order given
	byName map[string]*entry
	slots  chan struct{} // the kit's MaxConcurrent
}

// entry is one tool of a kit and its running state.
type entry struct {
	Tool
	slots chan struct{} // MaxConcurrent
	mu    sync.Mutex
	br    breaker
}

// New makes a kit of tools, or says which tool or setting is wrong: a
// name a chat API would refuse (1 to 64 letters, digits, '_' or '-') or
// given twice, a schema that is not a JSON object or does not compile, a
// type Func cannot describe, a negative limit.
func New(cfg Config, tools ...Tool) (*Kit, error) {
	if cfg.MaxConcurrent < 0 || cfg.MaxArgumentBytes < 0 {
		return nil, errors.New("toolkit: MaxConcurrent and MaxArgumentBytes must not be negative")
	}
	cfg.MaxConcurrent = or(cfg.MaxConcurrent, DefaultKitConcurrent)
	cfg.MaxArgumentBytes = or(cfg.MaxArgumentBytes, DefaultMaxArgBytes)
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	k := &Kit{cfg: cfg, byName: make(map[string]*entry, len(tools)), slots: make(chan struct{}, cfg.MaxConcurrent)}
	for i, t := range tools {
		fail := func(err error) (*Kit, error) {
			return nil, fmt.Errorf("toolkit: tool %d (%q): %w", i, t.name, err)
		}
		if t.err != nil {
			return fail(t.err)
		}
		if t.run == nil && t.url == "" {
			return fail(errors.New("not made by Func or HTTP"))
		}
		if err := (llm.Request{System: "-", Tools: []llm.Tool{{Name: t.name}}}).Validate(); err != nil {
			return fail(fmt.Errorf("name %q is not 1 to 64 letters, digits, '_' or '-'", t.name))
		}
		if k.byName[t.name] != nil {
			return fail(errors.New("a second tool of that name"))
		}
		p, err := t.policy.withDefaults()
		if err != nil {
			return fail(fmt.Errorf("policy: %w", err))
		}
		t.policy = p
		if err := t.compile(); err != nil {
			return fail(err)
		}
		e := &entry{Tool: t, slots: make(chan struct{}, p.MaxConcurrent)}
		k.tools = append(k.tools, e)
		k.byName[t.name] = e
	}
	return k, nil
}

// LLMTools renders the kit's tools for a model, in the order given to New:
// what goes in llm.Request.Tools.
func (k *Kit) LLMTools() []llm.Tool {
	out := make([]llm.Tool, len(k.tools))
	for i, e := range k.tools {
		out[i] = llm.Tool{Name: e.name, Description: e.description, Parameters: bytes.Clone(e.parameters)}
	}
	return out
}

// Names returns the kit's tools' names, in the order given to New.
func (k *Kit) Names() []string {
	out := make([]string, len(k.tools))
	for i, e := range k.tools {
		out[i] = e.name
	}
	return out
}

// Tool returns the kit's tool named name, with its policy's defaults
// filled in.
func (k *Kit) Tool(name string) (Tool, bool) {
	e, ok := k.byName[name]
	if !ok {
		return Tool{}, false
	}
	return e.Tool, true
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
func (k *Kit) RunAll(ctx context.Context, calls []Call) []Result {
	out := make([]Result, len(calls))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(len(calls), k.cfg.MaxConcurrent) {
		wg.Go(func() {
			for i := range next {
				out[i] = k.Run(ctx, calls[i])
			}
		})
	}
	for i := range calls {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// Run runs one call and says how it ended; it never panics on what the
// model wrote, and a panicking tool is a KindFailure. In order: the tool
// is looked up and the arguments validated against its schema
// (KindInvalid), Config.Allow and Policy.Allow are asked
// (KindPermission), the breaker is asked (KindUnavailable); the call waits
// for a free slot of the kit and of the tool, then runs, each try under
// its Timeout, with Retries after failures and timeouts, Backoff apart;
// its output is filtered (Config.Filter, then Policy.Filter) and cut to
// MaxResultBytes. When ctx ends, the call ends with KindCancelled.
func (k *Kit) Run(ctx context.Context, c Call) (r Result) {
	begin := k.cfg.Clock()
	r = Result{CallID: c.ID, Name: c.Name}
	defer func() { r.Duration = k.cfg.Clock().Sub(begin) }()
	fail := func(kind Kind, err error) Result {
		r.Kind, r.Err = kind, err
		return r
	}
	e, ok := k.byName[c.Name]
	if !ok {
		return fail(KindInvalid, fmt.Errorf("there is no tool %q; the tools are %s", c.Name, strings.Join(k.Names(), ", ")))
	}
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
	trial, err := e.admit(k.cfg.Clock())
	if err != nil {
		return fail(KindUnavailable, err)
	}
	out, kind, err := k.tries(ctx, e, c, &r.Tries)
	e.record(trial, kind, err, k.cfg.Clock())
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

// leaves lists every leaf of a schema violation, sorted, with its
// location in the arguments.
func leaves(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var problems []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := e.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			problems = append(problems, loc+": "+e.Message)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(problems)
	return strings.Join(slices.Compact(problems), "; ")
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

// tries runs the call under e's policy: each try with a slot of the kit and
// of the tool and its timeout, retried after failures and timeouts.
func (k *Kit) tries(ctx context.Context, e *entry, c Call, tries *int) (string, Kind, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = e.policy.Timeout
	}
	backoff := e.policy.Backoff
	for attempt := 1; ; attempt++ {
		if err := acquire(ctx, k.slots, e.slots); err != nil {
			return "", KindCancelled, err
		}
		*tries = attempt
		out, kind, err := k.try(ctx, e, c, attempt, timeout)
		<-e.slots
		<-k.slots
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

// acquire takes a slot of each of slots, in order, or none when ctx ends
// first.
func acquire(ctx context.Context, slots ...chan struct{}) error {
	for i, s := range slots {
		select {
		case s <- struct{}{}:
		case <-ctx.Done():
			for _, taken := range slots[:i] {
				<-taken
			}
			return ctx.Err()
		}
	}
	return nil
}

// try runs the call once.
func (k *Kit) try(ctx context.Context, e *entry, c Call, attempt int, timeout time.Duration) (out string, kind Kind, err error) {
	tctx, cancel := context.WithTimeout(context.WithValue(ctx, callKey{}, callInfo{c.Key, attempt}), timeout)
	defer cancel()
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("%s panicked: %v", e.name, p)
			}
		}()
		if e.url != "" {
			out, err = k.post(tctx, e, c)
		} else {
			out, err = e.run(tctx, c.Arguments)
		}
	}()
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
// says so.
func truncate(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[truncated: the output is longer than %d bytes]", limit), true
}
