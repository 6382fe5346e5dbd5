package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/examples/internal/calc"
	"github.com/moora-go/moora/examples/react/decl"
)

// testWorkspace is a workspace of two files, one with a secret.
var testWorkspace = fstest.MapFS{
	"a.txt":      {Data: []byte("one two three")},
	"config.txt": {Data: []byte("user = demo\napi_key = s3cret\nregion = local\n")},
}

// TestTools: each demo tool in the demo's kit, as a plan calls it (its
// parameters, strings, as the arguments): what it answers, or how it fails
// and why.
func TestTools(t *testing.T) {
	kit, err := NewKit(Tools(testWorkspace)...)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		tool   string
		params map[string]string
		kind   toolkit.Kind
		says   string // the output, or a part of the error
	}{
		{"calculator", "calculator", map[string]string{"expression": "(2+3)*4"}, toolkit.KindNone, "20"},
		{"an exact fraction", "calculator", map[string]string{"expression": "1/3"}, toolkit.KindNone, "1/3"},
		{"division by zero", "calculator", map[string]string{"expression": "1/0"}, toolkit.KindInvalid, "division by zero"},
		{"word_count", "word_count", map[string]string{"path": "a.txt"}, toolkit.KindNone, "3"},
		{"a path with spaces around", "word_count", map[string]string{"path": " a.txt "}, toolkit.KindNone, "3"},
		{"read_file, the secret redacted", "read_file", map[string]string{"path": "config.txt"}, toolkit.KindNone, "user = demo\n[redacted]\nregion = local\n"},
		{"grep", "grep", map[string]string{"term": "REGION"}, toolkit.KindNone, "config.txt:3: region = local"},
		{"grep, nothing found", "grep", map[string]string{"term": "nowhere"}, toolkit.KindNone, ""},
		{"wait", "wait", map[string]string{"ms": "1"}, toolkit.KindNone, "waited 1 ms"},
		{"a relative path out", "read_file", map[string]string{"path": "../etc/passwd"}, toolkit.KindPermission, "../etc/passwd is outside the workspace"},
		{"an absolute path", "read_file", map[string]string{"path": "/etc/passwd"}, toolkit.KindPermission, "outside the workspace"},
		{"a hidden file", "word_count", map[string]string{"path": ".env"}, toolkit.KindPermission, "outside the workspace"},
		{"a missing file", "read_file", map[string]string{"path": "missing.txt"}, toolkit.KindInvalid, "missing.txt"},
		{"no path", "read_file", map[string]string{}, toolkit.KindInvalid, "missing properties: 'path'"},
		{"an empty path", "read_file", map[string]string{"path": "  "}, toolkit.KindInvalid, "/path: does not match pattern"},
		{"a parameter the tool has not", "grep", map[string]string{"term": "x", "path": "a.txt"}, toolkit.KindInvalid, "additionalProperties 'path' not allowed"},
		{"ms not a number", "wait", map[string]string{"ms": "soon"}, toolkit.KindInvalid, "/ms: does not match pattern"},
		{"ms too long", "wait", map[string]string{"ms": "600001"}, toolkit.KindInvalid, "up to 600000"},
		{"no such tool", "shell", map[string]string{"command": "ls"}, toolkit.KindInvalid, `no tool "shell"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := kit.Run(context.Background(), toolkit.Call{ID: "c", Name: c.tool, Arguments: arguments(c.params), Key: "k"})
			if r.Kind != c.kind {
				t.Fatalf("%s: %q; want %q", r.Kind, r.Content(), c.kind)
			}
			if c.kind == toolkit.KindNone && r.Output != c.says || c.kind != toolkit.KindNone && !strings.Contains(r.Err.Error(), c.says) {
				t.Errorf("%q; want %q", r.Content(), c.says)
			}
		})
	}
}

// TestToolTimeoutKind: a wait longer than the call's timeout is a timeout.
func TestToolTimeoutKind(t *testing.T) {
	kit, err := NewKit(Tools(testWorkspace)...)
	if err != nil {
		t.Fatal(err)
	}
	r := kit.Run(context.Background(), toolkit.Call{Name: "wait", Arguments: arguments(map[string]string{"ms": "600000"}), Timeout: 50 * time.Millisecond})
	if r.Kind != toolkit.KindTimeout || r.Err.Error() != "wait timed out after 50ms" {
		t.Errorf("%s: %v", r.Kind, r.Err)
	}
}

// TestAllowList: a tool off the demo's allow-list is refused before it runs.
func TestAllowList(t *testing.T) {
	ran := false
	shell := toolkit.Func("shell", "Runs a command.", func(context.Context, struct{}) (string, error) {
		ran = true
		return "", nil
	})
	kit, err := NewKit(append(Tools(testWorkspace), shell)...)
	if err != nil {
		t.Fatal(err)
	}
	r := kit.Run(context.Background(), toolkit.Call{Name: "shell"})
	if r.Kind != toolkit.KindPermission || !errors.Is(r.Err, toolkit.ErrPermission) || !strings.Contains(r.Err.Error(), "shell is not on the allow-list") || ran {
		t.Errorf("%s: %v (ran: %v)", r.Kind, r.Err, ran)
	}
}

// TestSearchIndexKeys: whether search_index finds its index rebuilding is
// a function of the try's key: the call's, then with #1, #2 for its
// retries; the default function decides the same way for the same key.
func TestSearchIndexKeys(t *testing.T) {
	var keys []string
	rebuilding := func(key string) bool {
		keys = append(keys, key)
		return len(keys) < 3
	}
	tool := SearchIndex(testWorkspace, rebuilding).With(toolkit.Policy{Retries: 2, Backoff: time.Millisecond, BreakerFailures: -1})
	kit, err := NewKit(tool)
	if err != nil {
		t.Fatal(err)
	}
	r := kit.Run(context.Background(), toolkit.Call{Name: "search_index", Arguments: arguments(map[string]string{"term": "two"}), Key: "toolkit/call-1"})
	if r.Kind != toolkit.KindNone || r.Output != "a.txt:1: one two three" || r.Tries != 3 {
		t.Errorf("%+v", r)
	}
	if want := []string{"toolkit/call-1", "toolkit/call-1#1", "toolkit/call-1#2"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %q; want %q", keys, want)
	}

	outcomes := func() []toolkit.Kind {
		kit, err := NewKit(Tools(testWorkspace)...)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []toolkit.Kind
		for i := range 8 { // keys as the toolkit's call jobs have them
			key := fmt.Sprintf("toolkit/call-run-%d-c1", i+1)
			kinds = append(kinds, kit.Run(context.Background(), toolkit.Call{Name: "search_index", Arguments: arguments(map[string]string{"term": "two"}), Key: key}).Kind)
		}
		return kinds
	}
	first := outcomes()
	if !slices.Contains(first, toolkit.KindNone) || !slices.Contains(first, toolkit.KindFailure) {
		t.Errorf("the default search_index did not both fail and succeed: %q", first)
	}
	if again := outcomes(); !reflect.DeepEqual(again, first) {
		t.Errorf("the same keys went %q, then %q", first, again)
	}
}

// TestObservation: how the toolkit's result of a call becomes its
// observation, the error kind the reflector chooses by.
func TestObservation(t *testing.T) {
	call := decl.ToolCall{CallID: "c1", TaskID: "t2", Tool: "grep"}
	base := decl.Observation{CallID: "c1", Source: "grep", RelatedTaskID: "t2", LatencyMs: 1500}
	with := func(f func(o *decl.Observation)) decl.Observation {
		o := base
		f(&o)
		return o
	}
	boom := errors.New("boom")
	cases := []struct {
		name string
		r    toolkit.Result
		want decl.Observation
	}{
		{"success", toolkit.Result{Output: "found", Tries: 1},
			with(func(o *decl.Observation) { o.Success, o.Payload, o.ErrorKind = true, "found", decl.ErrorKindNone })},
		{"success after two retries", toolkit.Result{Output: "found", Tries: 3},
			with(func(o *decl.Observation) {
				o.Success, o.Payload, o.ErrorKind, o.Retries = true, "found", decl.ErrorKindNone, 2
			})},
		{"invalid arguments", toolkit.Result{Kind: toolkit.KindInvalid, Err: boom},
			with(func(o *decl.Observation) { o.ErrorKind, o.Error = decl.ErrorKindInvalid, "boom" })},
		{"refused", toolkit.Result{Kind: toolkit.KindPermission, Err: boom},
			with(func(o *decl.Observation) { o.ErrorKind, o.Error = decl.ErrorKindPermission, "boom" })},
		{"timed out", toolkit.Result{Kind: toolkit.KindTimeout, Err: boom, Tries: 2},
			with(func(o *decl.Observation) { o.ErrorKind, o.Error, o.Retries = decl.ErrorKindTimeout, "boom", 1 })},
		{"failed", toolkit.Result{Kind: toolkit.KindFailure, Err: boom, Tries: 1},
			with(func(o *decl.Observation) { o.ErrorKind, o.Error = decl.ErrorKindFailure, "boom" })},
		{"the breaker open: a failure, not tried", toolkit.Result{Kind: toolkit.KindUnavailable, Err: errors.New("grep is unavailable")},
			with(func(o *decl.Observation) { o.ErrorKind, o.Error = decl.ErrorKindFailure, "grep is unavailable" })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.r.CallID, c.r.Name, c.r.Duration = "c1", "grep", 1500*time.Millisecond
			if got := Observation(call, c.r); got != c.want {
				t.Errorf("%+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestCallJob: the toolkit's job runs the call with the step's parameters
// and timeout and hands in its observation; cancelled, it hands in
// nothing.
func TestCallJob(t *testing.T) {
	kit, err := NewKit(Tools(testWorkspace)...)
	if err != nil {
		t.Fatal(err)
	}
	w := Work{Toolkit: kit}
	// observe runs call and returns the observation it hands in.
	observe := func(call decl.ToolCall) decl.Observation {
		t.Helper()
		var got []decl.AgentInput
		err := w.call(call)(context.Background(), func(in decl.AgentInput) { got = append(got, in) })
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: %v, %v", call.CallID, got, err)
		}
		return got[0].(decl.ToolkitObserve).Observation
	}
	if o := observe(decl.ToolCall{CallID: "c1", TaskID: "t1", Tool: "word_count", Parameters: map[string]string{"path": "a.txt"}, TimeoutMs: 3000}); !o.Success || o.Payload != "3" || o.CallID != "c1" || o.Source != "word_count" || o.RelatedTaskID != "t1" {
		t.Errorf("%+v", o)
	}
	if o := observe(decl.ToolCall{CallID: "c2", Tool: "wait", Parameters: map[string]string{"ms": "600000"}, TimeoutMs: 20}); o.ErrorKind != decl.ErrorKindTimeout || o.Error != "wait timed out after 20ms" {
		t.Errorf("%+v", o)
	}
	if o := observe(decl.ToolCall{CallID: "c3", Tool: "calculator"}); o.ErrorKind != decl.ErrorKindInvalid || !strings.Contains(o.Error, "missing properties: 'expression'") {
		t.Errorf("no parameters: %+v", o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dispatched := false
	err = w.call(decl.ToolCall{CallID: "c4", Tool: "wait", Parameters: map[string]string{"ms": "1000"}, TimeoutMs: 5000})(ctx, func(decl.AgentInput) { dispatched = true })
	if !errors.Is(err, context.Canceled) || dispatched {
		t.Errorf("a cancelled call: %v, dispatched: %v", err, dispatched)
	}
}

// TestToolSchemas: the planner is shown each tool's arguments, strings
// all, as the plans write them.
func TestToolSchemas(t *testing.T) {
	kit, err := NewKit(Tools(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"calculator": "expression", "read_file": "path", "word_count": "path", "search_index": "term", "grep": "term", "wait": "ms"}
	for _, tool := range kit.LLMTools() {
		var s struct {
			Properties map[string]struct {
				Type    string `json:"type"`
				Pattern string `json:"pattern"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(tool.Parameters, &s); err != nil {
			t.Fatal(err)
		}
		p, ok := s.Properties[want[tool.Name]]
		if len(s.Properties) != 1 || !ok || p.Type != "string" || p.Pattern == "" || !reflect.DeepEqual(s.Required, []string{want[tool.Name]}) {
			t.Errorf("%s: %s", tool.Name, tool.Parameters)
		}
		delete(want, tool.Name)
	}
	if len(want) != 0 {
		t.Errorf("tools missing: %v", want)
	}
}

// FuzzCalculate: any expression is evaluated or refused with an error,
// never a panic.
func FuzzCalculate(f *testing.F) {
	for _, s := range []string{"1+2", "(2+3)*4.5", "1/0", "9e999*9e999", "x", "((", "-1/3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		if v, err := calc.Calculate(expr); err == nil && v == "" {
			t.Fatalf("%q: an empty value", expr)
		}
	})
}
