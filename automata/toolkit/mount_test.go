package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/moora-go/moora/automata/toolkit"
)

func remote(name, answer string) toolkit.Tool {
	return toolkit.Remote(name, "Says "+answer+".", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
		func(_ context.Context, args json.RawMessage) (string, error) { return answer + " " + string(args), nil })
}

// A mount's tools join the kit's, are validated against their schemas as they are, and follow Set and Close.
func TestMountSetsAndCloses(t *testing.T) {
	local := toolkit.Func("echo", "", func(_ context.Context, a struct {
		S string `json:"s"`
	}) (string, error) {
		return a.S, nil
	})
	kit := newKit(t, toolkit.Config{}, local)
	m := kit.Mount("srv_")
	if got := kit.Names(); !slices.Equal(got, []string{"echo"}) {
		t.Fatalf("before Set: %v", got)
	}
	// echo clashes with the Go tool: it is prefixed.
	if err := m.Set(remote("sum", "sum"), remote("echo", "remote echo")); err != nil {
		t.Fatal(err)
	}
	if got, want := kit.Names(), []string{"echo", "sum", "srv_echo"}; !slices.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	if got, want := m.Names(), []string{"sum", "srv_echo"}; !slices.Equal(got, want) {
		t.Fatalf("mount names %v, want %v", got, want)
	}
	if p := kit.LLMTools()[1].Parameters; !strings.Contains(string(p), `"required":["n"]`) {
		t.Errorf("parameters not as given: %s", p)
	}
	ctx := context.Background()
	if r := kit.Run(ctx, toolkit.Call{Name: "srv_echo", Arguments: json.RawMessage(`{"n":1}`)}); r.Kind != toolkit.KindNone || r.Output != `remote echo {"n":1}` {
		t.Errorf("srv_echo: %s %q", r.Kind, r.Content())
	}
	if r := kit.Run(ctx, toolkit.Call{Name: "sum", Arguments: json.RawMessage(`{"n":"x"}`)}); r.Kind != toolkit.KindInvalid || !strings.Contains(r.Content(), "/n") {
		t.Errorf("sum with a string: %s %q", r.Kind, r.Content())
	}
	if r := kit.Run(ctx, toolkit.Call{Name: "echo", Arguments: json.RawMessage(`{"s":"go"}`)}); r.Output != "go" {
		t.Errorf("the Go echo: %s %q", r.Kind, r.Content())
	}
	// A second mount without a prefix: its clashing tool is left out, the other set.
	m2 := kit.Mount("")
	err := m2.Set(remote("sum", "other"), remote("ok", "ok"))
	if err == nil || !strings.Contains(err.Error(), `"sum" left out`) || !strings.Contains(err.Error(), "no prefix") {
		t.Errorf("clash without prefix: %v", err)
	}
	if got, want := kit.Names(), []string{"echo", "sum", "srv_echo", "ok"}; !slices.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	// The first mount drops sum: the second's takes the name.
	if err := m.Set(remote("echo", "remote echo")); err != nil {
		t.Fatal(err)
	}
	if got, want := kit.Names(), []string{"echo", "srv_echo", "sum", "ok"}; !slices.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	if r := kit.Run(ctx, toolkit.Call{Name: "sum", Arguments: json.RawMessage(`{"n":2}`)}); r.Output != `other {"n":2}` {
		t.Errorf("sum of the second mount: %s %q", r.Kind, r.Content())
	}
	// A wrong tool is left out, named; the others are set.
	err = m.Set(toolkit.Remote("bad name!", "", nil, func(context.Context, json.RawMessage) (string, error) { return "", nil }),
		toolkit.Remote("bad-schema", "", json.RawMessage(`[]`), func(context.Context, json.RawMessage) (string, error) { return "", nil }),
		remote("echo", "e"))
	if err == nil || !strings.Contains(err.Error(), `"bad name!" left out`) || !strings.Contains(err.Error(), `"bad-schema" left out`) {
		t.Errorf("wrong tools: %v", err)
	}
	m.Close()
	m.Close()
	if got, want := kit.Names(), []string{"echo", "sum", "ok"}; !slices.Equal(got, want) {
		t.Fatalf("after Close: %v, want %v", got, want)
	}
	if err := m.Set(remote("x", "x")); err == nil {
		t.Error("Set after Close: no error")
	}
	if r := kit.Run(ctx, toolkit.Call{Name: "srv_echo", Arguments: json.RawMessage(`{"n":1}`)}); r.Kind != toolkit.KindInvalid {
		t.Errorf("a closed mount's tool: %s %q", r.Kind, r.Content())
	}
}

// A tool Set again unchanged keeps its breaker; a changed one starts afresh.
func TestMountKeepsUnchangedTools(t *testing.T) {
	kit := newKit(t, toolkit.Config{})
	m := kit.Mount("p_")
	failing := func(desc string) toolkit.Tool {
		return toolkit.Remote("f", desc, nil, func(context.Context, json.RawMessage) (string, error) {
			return "", errors.New("down")
		}).With(toolkit.Policy{BreakerFailures: 1})
	}
	if err := m.Set(failing("one")); err != nil {
		t.Fatal(err)
	}
	kit.Run(context.Background(), toolkit.Call{Name: "f"})
	if s := kit.Breaker("f"); s != toolkit.Open {
		t.Fatalf("breaker %s after a failure", s)
	}
	if err := m.Set(failing("one")); err != nil {
		t.Fatal(err)
	}
	if s := kit.Breaker("f"); s != toolkit.Open {
		t.Errorf("breaker %s after the same tool was Set again", s)
	}
	if err := m.Set(failing("two")); err != nil {
		t.Fatal(err)
	}
	if s := kit.Breaker("f"); s != toolkit.Closed {
		t.Errorf("breaker %s after a changed tool was Set", s)
	}
}

// Calls and listings race with Set without a data race, and a call sees one tool throughout.
func TestMountRacesWithCalls(t *testing.T) {
	kit := newKit(t, toolkit.Config{})
	m := kit.Mount("p_")
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				r := kit.Run(ctx, toolkit.Call{Name: "a", Arguments: json.RawMessage(`{"n":1}`)})
				if r.Kind != toolkit.KindNone && r.Kind != toolkit.KindInvalid && r.Kind != toolkit.KindCancelled {
					t.Errorf("a: %s %q", r.Kind, r.Content())
					return
				}
				kit.LLMTools()
			}
		})
	}
	for i := range 200 {
		tools := []toolkit.Tool{remote("a", "a")}
		if i%2 == 0 {
			tools = append(tools, remote("b", "b"))
		}
		if i%3 == 0 {
			tools = tools[1:]
		}
		if err := m.Set(tools...); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
}
