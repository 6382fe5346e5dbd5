package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/moora-go/moora/examples/internal/calc"
	"github.com/moora-go/moora/examples/react/decl"
)

// flaky fails until its nth try.
type flaky struct {
	n     int
	tries *int
}

func (flaky) ID() string          { return "flaky" }
func (flaky) Description() string { return "fails, then works" }
func (f flaky) Execute(_ context.Context, key string, _ map[string]string) (string, error) {
	*f.tries++
	if *f.tries < f.n {
		return "", errors.New("not yet")
	}
	return "token = s3cret\nfine after " + key, nil
}

// TestToolkit: the security checks before and after a call, the retries
// within a call, the timeout, and how each failure is classified.
func TestToolkit(t *testing.T) {
	ws := fstest.MapFS{"a.txt": {Data: []byte("one two three")}}
	tries := 0
	k := &Toolkit{Tools: append(Tools(ws), flaky{3, &tries}), Retries: 2, Allow: func(tool string, p map[string]string) error {
		if tool == "flaky" {
			return nil
		}
		return Allow(tool, p)
	}, Filter: Filter}
	call := func(tool string, params map[string]string) decl.Observation {
		t.Helper()
		o, err := k.Run(context.Background(), "key", decl.ToolCall{CallID: "c", TaskID: "t", Tool: tool, Parameters: params, TimeoutMs: 50})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	if o := call("word_count", map[string]string{"path": "a.txt"}); !o.Success || o.Payload != "3" || o.Source != "word_count" || o.RelatedTaskID != "t" {
		t.Errorf("word_count: %+v", o)
	}
	if o := call("flaky", nil); !o.Success || o.Retries != 2 || !strings.Contains(o.Payload, "key#2") || strings.Contains(o.Payload, "s3cret") || !strings.Contains(o.Payload, "[redacted]") {
		t.Errorf("flaky: %+v", o)
	}
	cases := []struct {
		tool   string
		params map[string]string
		kind   decl.ErrorKind
		says   string
	}{
		{"read_file", map[string]string{"path": "../etc/passwd"}, decl.ErrorKindPermission, "outside the workspace"},
		{"read_file", map[string]string{"path": "/etc/passwd"}, decl.ErrorKindPermission, "outside the workspace"},
		{"read_file", map[string]string{"path": "missing.txt"}, decl.ErrorKindInvalid, "missing.txt"},
		{"read_file", map[string]string{}, decl.ErrorKindInvalid, `"path" is missing`},
		{"calculator", map[string]string{"expression": "1/0"}, decl.ErrorKindInvalid, "division by zero"},
		{"wait", map[string]string{"ms": "5000"}, decl.ErrorKindTimeout, "timed out after 50 ms"},
		{"wait", map[string]string{"ms": "soon"}, decl.ErrorKindInvalid, "not a number"},
		{"shell", nil, decl.ErrorKindInvalid, `no tool "shell"`},
	}
	for _, c := range cases {
		o := call(c.tool, c.params)
		if o.Success || o.ErrorKind != c.kind || !strings.Contains(o.Error, c.says) {
			t.Errorf("%s %v: %+v, want %s saying %q", c.tool, c.params, o, c.kind, c.says)
		}
	}
	k.Allow = Allow
	if o := call("flaky", nil); o.ErrorKind != decl.ErrorKindPermission || !strings.Contains(o.Error, "allow-list") {
		t.Errorf("a tool off the allow-list: %+v", o)
	}
}

// TestToolkitCancelled: a call whose job is cancelled reports nothing.
func TestToolkitCancelled(t *testing.T) {
	k := &Toolkit{Tools: Tools(fstest.MapFS{})}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := k.Run(ctx, "key", decl.ToolCall{Tool: "wait", Parameters: map[string]string{"ms": "1000"}, TimeoutMs: 5000}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled call: %v", err)
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
