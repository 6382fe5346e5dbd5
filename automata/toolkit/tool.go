package toolkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"time"

	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Tool is one tool: its name, what the model is told of it, the JSON Schema
// of its arguments, how to run it and its Policy. Make one with Func or
// HTTP, and give it its own Policy with With. A Tool is a value: With
// returns a copy. Mistakes in making it (a type whose schema cannot be
// derived, a schema that does not compile, a URL that is not http(s)) are
// reported by New.
type Tool struct {
	name, description string
	parameters        json.RawMessage
	schema            *jsonschema.Schema
	run               func(ctx context.Context, args json.RawMessage) (string, error)
	decodes           func(args json.RawMessage) error // a Func's check that args decode into its type
	url               string                           // an HTTP tool's; run is nil
	remote            bool                             // made by Remote: it runs elsewhere
	policy            Policy
	err               error
}

// Name is the tool's name, as the model calls it.
func (t Tool) Name() string { return t.name }

// Description is what the model is told the tool does.
func (t Tool) Description() string { return t.description }

// Parameters is the JSON Schema of the tool's arguments, a JSON object.
func (t Tool) Parameters() json.RawMessage { return bytes.Clone(t.parameters) }

// Policy is the tool's own policy, as With set it (zero fields are the
// defaults).
func (t Tool) Policy() Policy { return t.policy }

// With returns the tool with policy p in place of its own.
func (t Tool) With(p Policy) Tool {
	t.policy = p
	return t
}

// Func makes a tool of a Go function over a typed argument struct A. The
// schema the model is shown is derived from A (package
// github.com/invopop/jsonschema): a property per exported field, named by
// its json tag; a field is required unless its tag says omitempty or
// omitzero; nested structs, slices and maps are described in place; a
// jsonschema tag adds what the Go type cannot say (enum=…, minimum=…,
// pattern=…; its values are separated by commas, so a description with a
// comma goes in a jsonschema_description tag):
//
//	type Args struct {
//		City  string `json:"city" jsonschema_description:"The city, such as Paris."`
//		Units string `json:"units,omitempty" jsonschema:"enum=metric,enum=imperial"`
//	}
//
// A field JSON cannot hold (a chan, a func, a complex number, a uintptr,
// an unsafe.Pointer), unless a json:"-" tag leaves it out, is an error New
// reports, naming it.
//
// Properties not in A are refused. Before run is called, the model's
// arguments are validated against the schema and decoded into A: arguments
// that are not valid JSON or do not match come back to the model as a
// KindInvalid error that says where and what, and run is not called.
//
// run's error is what the call failed with: one that wraps ErrInvalid or
// ErrPermission is of that kind and not tried again; any other is a
// failure, tried again under the Policy's Retries. Key(ctx) is the call's
// idempotency key. run must return when ctx is done.
func Func[A any](name, description string, run func(ctx context.Context, args A) (string, error)) Tool {
	t := Tool{name: name, description: description}
	params, err := SchemaOf[A]()
	if err != nil {
		t.err = err
		return t
	}
	t.parameters = params
	t.decodes = func(raw json.RawMessage) error {
		var args A
		return json.Unmarshal(raw, &args)
	}
	t.run = func(ctx context.Context, raw json.RawMessage) (string, error) {
		var args A
		if err := json.Unmarshal(raw, &args); err != nil {
			return "", fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return run(ctx, args)
	}
	return t
}

// HTTP makes a tool that runs elsewhere: each try POSTs the arguments (a
// JSON object that parameters, a JSON Schema, describes; SchemaOf derives
// one from a Go type) to url, with the headers Content-Type:
// application/json and Idempotency-Key: the call's key, the same on every
// try. A 2xx response's body is the result, as it is (text, or JSON the
// model reads); 400 and 422 are KindInvalid and 401 and 403
// KindPermission, neither tried again; any other status, a redirect (3xx:
// redirects are not followed), a connection that fails and a server that
// does not answer within the Timeout are failures, tried again under the
// Policy's Retries. The errors the model is told name the tool, not its
// URL (whose query may hold a secret). At most MaxResultBytes of a body
// are read. Requests go through a copy of Config.HTTPClient that does not
// follow redirects.
func HTTP(name, description string, parameters json.RawMessage, url string) Tool {
	t := Tool{name: name, description: description, parameters: bytes.Clone(parameters), url: url}
	if err := checkURL(url); err != nil {
		t.err = err
	}
	return t
}

// Remote makes a tool that runs elsewhere through run, such as one of an
// MCP server's (package toolkit/mcp mounts them): parameters, a JSON
// Schema, is shown to the model as it is and the arguments are validated
// against it before run is given them, as they are (a JSON object). run
// is under the tool's Policy as a Func is: its error that wraps ErrInvalid
// or ErrPermission is of that kind and not tried again, any other is a
// failure; Key(ctx) is the call's idempotency key and Attempt(ctx) the
// try's number; run must return when ctx is done. Its telemetry says it is
// of type "extension", as an HTTP tool is.
func Remote(name, description string, parameters json.RawMessage, run func(ctx context.Context, args json.RawMessage) (string, error)) Tool {
	t := Tool{name: name, description: description, parameters: bytes.Clone(parameters), run: run, remote: true}
	if run == nil {
		t.err = errors.New("Remote with a nil run")
	}
	return t
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q is not an http or https URL", s)
	}
	return nil
}

// SchemaOf returns the JSON Schema of arguments of type A, as Func derives
// it: for a tool made with HTTP whose arguments are a Go type. A must be a
// struct (or a pointer to one) whose fields JSON can hold: a field that is
// a chan, a func, a complex number, a uintptr or an unsafe.Pointer (and
// not left out by a json:"-" tag) is an error that names it.
func SchemaOf[A any]() (_ json.RawMessage, err error) {
	typ := reflect.TypeFor[A]()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("arguments of type %s: not a struct, and a tool's arguments are a JSON object", typ)
	}
	if err := unsupported(typ, "", map[reflect.Type]bool{}); err != nil {
		return nil, fmt.Errorf("arguments of type %s: %w", typ, err)
	}
	defer func() {
		// What unsupported does not foresee: the reflector panics on a
		// type it cannot describe.
		if p := recover(); p != nil {
			err = fmt.Errorf("arguments of type %s: %v", typ, p)
		}
	}()
	r := &invopop.Reflector{ExpandedStruct: true, DoNotReference: true}
	s := r.ReflectFromType(typ)
	s.Version = ""
	s.ID = ""
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("arguments of type %s: %w", typ, err)
	}
	return b, nil
}

// customSchema is a type that describes itself to the reflector.
type customSchema interface{ JSONSchema() *invopop.Schema }

// unsupported says which field of typ (at path, a Go selector) JSON
// cannot hold, or nil.
func unsupported(typ reflect.Type, path string, seen map[reflect.Type]bool) error {
	if typ.Implements(reflect.TypeFor[customSchema]()) || reflect.PointerTo(typ).Implements(reflect.TypeFor[customSchema]()) {
		return nil
	}
	switch typ.Kind() {
	case reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128, reflect.Uintptr, reflect.UnsafePointer:
		if path == "" {
			return fmt.Errorf("a %s, which JSON cannot hold", typ)
		}
		return fmt.Errorf("field %s is a %s, which JSON cannot hold", path, typ)
	case reflect.Pointer:
		return unsupported(typ.Elem(), path, seen)
	case reflect.Slice, reflect.Array:
		return unsupported(typ.Elem(), path+"[]", seen)
	case reflect.Map:
		if err := unsupported(typ.Key(), path+"[key]", seen); err != nil {
			return err
		}
		return unsupported(typ.Elem(), path+"[]", seen)
	case reflect.Struct:
		if seen[typ] {
			return nil
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			if (!f.IsExported() && !f.Anonymous) || f.Tag.Get("json") == "-" || strings.Split(f.Tag.Get("jsonschema"), ",")[0] == "-" {
				continue
			}
			at := f.Name
			if path != "" {
				at = path + "." + f.Name
			}
			if err := unsupported(f.Type, at, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// noParameters is the schema of a tool given none: no arguments.
const noParameters = `{"type":"object","properties":{},"additionalProperties":false}`

// compile compiles the tool's schema, which must be a JSON object.
func (t *Tool) compile() error {
	if len(t.parameters) == 0 {
		t.parameters = json.RawMessage(noParameters)
	}
	var obj map[string]any
	if err := json.Unmarshal(t.parameters, &obj); err != nil || obj == nil {
		return errors.New("parameters are not a JSON object")
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	const resource = "https://moora-go.invalid/toolkit/parameters.json"
	if err := c.AddResource(resource, bytes.NewReader(t.parameters)); err != nil {
		return fmt.Errorf("parameters: %w", err)
	}
	s, err := c.Compile(resource)
	if err != nil {
		return fmt.Errorf("parameters: %w", err)
	}
	t.schema = s
	return nil
}

// Policy is what guards the calls of one tool. A zero field is its
// default.
type Policy struct {
	// Timeout bounds each try of a call (default 30 s). A call's own
	// Call.Timeout replaces it.
	Timeout time.Duration
	// Retries is how many times a call that failed (not for its
	// arguments, a permission or the breaker) is tried again (default 0:
	// once only).
	Retries int
	// Backoff is the wait before the first retry, doubled before each
	// next one up to 10 s (default 200 ms).
	Backoff time.Duration
	// MaxConcurrent is how many calls of the tool run at once (default
	// 8); more wait for their turn, until their context ends.
	MaxConcurrent int
	// MaxResultBytes bounds what the model is told of a call, in bytes
	// (default 64 KiB): a longer output is cut, at a character boundary,
	// to at most MaxResultBytes bytes, a note saying it was cut included
	// (left out when it would take more than half of them;
	// Result.Truncated says it was cut either way); an error's message is
	// cut so that Result.Content is at most MaxResultBytes bytes.
	MaxResultBytes int
	// BreakerFailures is how many calls in a row that fail open the
	// tool's circuit breaker (default 5; -1: no breaker). While it is
	// open, calls fail at once with KindUnavailable; after
	// BreakerCooldown one call is let through (half-open): its success
	// closes the breaker, its failure opens it again. Failures are
	// KindFailure and KindTimeout results, after their retries.
	BreakerFailures int
	// BreakerCooldown is how long the breaker stays open (default 30 s).
	BreakerCooldown time.Duration
	// Allow is the check before a call, after Config.Allow: its error
	// refuses the call with KindPermission. Nil allows.
	Allow func(ctx context.Context, c Call) error
	// Filter is applied to a successful output, after Config.Filter and
	// before the size limit, such as to redact secrets. Nil keeps it.
	Filter func(c Call, output string) string
	// Approval, if set, says which calls of the tool wait for a person's
	// approval before they run: a call for whose arguments it returns
	// true (ApproveAll: every call). The kit does not wait: an agent asks
	// Kit.NeedsApproval as the model asks for the call and keeps the call
	// pending in its state, which calls for it only once a person has
	// approved it (Reflexor's approver does).
	Approval func(arguments json.RawMessage) bool
	// ApprovalDeadline is how long a call waits for its approval before
	// it is denied (default 24 hours).
	ApprovalDeadline time.Duration
}

// ApproveAll is a Policy.Approval that holds every call for approval.
func ApproveAll(json.RawMessage) bool { return true }

// DefaultApprovalDeadline is Policy.ApprovalDeadline's default.
const DefaultApprovalDeadline = 24 * time.Hour

// The defaults of Policy and Config.
const (
	DefaultTimeout         = 30 * time.Second
	DefaultBackoff         = 200 * time.Millisecond
	MaxBackoff             = 10 * time.Second
	DefaultMaxConcurrent   = 8
	DefaultMaxResultBytes  = 64 << 10
	DefaultBreakerFailures = 5
	DefaultBreakerCooldown = 30 * time.Second
	DefaultKitConcurrent   = 16
	DefaultMaxArgBytes     = 1 << 20
)

// withDefaults returns p with its zero fields set, or an error naming a
// field that is out of range.
func (p Policy) withDefaults() (Policy, error) {
	switch {
	case p.Timeout < 0:
		return p, errors.New("Timeout is negative")
	case p.Retries < 0:
		return p, errors.New("Retries is negative")
	case p.Backoff < 0:
		return p, errors.New("Backoff is negative")
	case p.MaxConcurrent < 0:
		return p, errors.New("MaxConcurrent is negative")
	case p.MaxResultBytes < 0:
		return p, errors.New("MaxResultBytes is negative")
	case p.BreakerFailures < -1:
		return p, errors.New("BreakerFailures is below -1")
	case p.BreakerCooldown < 0:
		return p, errors.New("BreakerCooldown is negative")
	}
	p.Timeout = or(p.Timeout, DefaultTimeout)
	p.Backoff = or(p.Backoff, DefaultBackoff)
	p.MaxConcurrent = or(p.MaxConcurrent, DefaultMaxConcurrent)
	p.MaxResultBytes = or(p.MaxResultBytes, DefaultMaxResultBytes)
	p.BreakerFailures = or(p.BreakerFailures, DefaultBreakerFailures)
	p.BreakerCooldown = or(p.BreakerCooldown, DefaultBreakerCooldown)
	return p, nil
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
