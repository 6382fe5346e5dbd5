package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/automata/toolkit/mcp"
)

func run(kit *toolkit.Kit, name, args string) toolkit.Result {
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	return kit.Run(ctx, toolkit.Call{ID: "c1", Name: name, Arguments: json.RawMessage(args), Key: "job-1/c1"})
}

// A Go server's tools become the kit's: schemas as given, arguments validated, results rendered, errors of their kinds.
func TestGoServer(t *testing.T) {
	local := toolkit.Func("echo", "The local echo.", func(_ context.Context, a EchoArgs) (string, error) { return "local " + a.Message, nil })
	kit, err := toolkit.New(toolkit.Config{}, local)
	if err != nil {
		t.Fatal(err)
	}
	cfg := self(t, "go")
	cfg.Prefix = "go_"
	s := mount(t, kit, cfg)
	want := []string{"echo", "add", "go_echo", "fail", "grow", "key", "media", "slow"}
	got := kit.Names()
	if !slices.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	for _, tool := range kit.LLMTools() {
		if tool.Name == "add" && !strings.Contains(string(tool.Parameters), `"required":["a","b"]`) {
			t.Errorf("add's schema: %s", tool.Parameters)
		}
	}
	for _, c := range []struct {
		name, args string
		kind       toolkit.Kind
		content    string
	}{
		{"go_echo", `{"message":"hi"}`, toolkit.KindNone, "hi"},
		{"echo", `{"message":"hi"}`, toolkit.KindNone, "local hi"},
		{"add", `{"a":2,"b":40}`, toolkit.KindNone, "42"},
		{"add", `{"a":"2","b":40}`, toolkit.KindInvalid, "/a"},
		{"media", `{}`, toolkit.KindNone, "here:\n[image: image/png, 68 bytes, not shown]\n[resource: file:///notes.txt, text/plain]\nthe notes\n[resource: file:///data.bin, application/octet-stream, 1000 bytes of binary data, not shown]\n[resource link: https://example.invalid/doc (doc): A document.]"},
		{"fail", `{}`, toolkit.KindFailure, "error: fail failed: the disk is full"},
		{"key", `{}`, toolkit.KindNone, "job-1/c1 1"},
	} {
		r := run(kit, c.name, c.args)
		if r.Kind != c.kind || !strings.Contains(r.Content(), c.content) {
			t.Errorf("%s %s: %s %q; want %s %q", c.name, c.args, r.Kind, r.Content(), c.kind, c.content)
		}
	}
	// list_changed: grow adds "added" and removes echo.
	if r := run(kit, "grow", `{}`); r.Kind != toolkit.KindNone {
		t.Fatalf("grow: %s", r.Content())
	}
	eventually(t, "added listed", func() bool { return slices.Contains(kit.Names(), "added") && !slices.Contains(kit.Names(), "go_echo") })
	if r := run(kit, "added", `{}`); r.Output != "I was added" {
		t.Errorf("added: %s %q", r.Kind, r.Content())
	}
	if st := s.Status(); !st.Up || st.Sessions != 1 || !slices.Contains(st.Tools, "added") {
		t.Errorf("status %+v", st)
	}
}

// A server killed mid-call: the call fails at once with a clear error, the server is started again, the next call succeeds.
func TestGoServerKilledMidCall(t *testing.T) {
	kit, _ := toolkit.New(toolkit.Config{})
	cfg := self(t, "go")
	cfg.Policy = toolkit.Policy{Timeout: hang}
	s := mount(t, kit, cfg)
	pid := mcp.PID(s)
	done := make(chan toolkit.Result)
	go func() { done <- run(kit, "slow", `{"seconds":50}`) }()
	time.Sleep(300 * time.Millisecond)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := <-done
	if r.Kind != toolkit.KindFailure || !errors.Is(r.Err, mcp.ErrDown) || !strings.Contains(r.Content(), "the call of slow got no answer") || time.Since(start) > 10*time.Second {
		t.Fatalf("the call of a killed server: %s %q after %s", r.Kind, r.Content(), time.Since(start))
	}
	t.Logf("the call: %s", r.Content())
	// Meanwhile a call fails at once, saying the server is down.
	if r := run(kit, "echo", `{"message":"x"}`); r.Kind != toolkit.KindFailure || !errors.Is(r.Err, mcp.ErrDown) {
		t.Errorf("while down: %q does not wrap ErrDown", r.Content())
	} else {
		t.Logf("while down: %s %q", r.Kind, r.Content())
	}
	eventually(t, "restarted", func() bool { st := s.Status(); return st.Up && st.Sessions == 2 })
	if mcp.PID(s) == pid {
		t.Error("the same process")
	}
	if r := run(kit, "echo", `{"message":"again"}`); r.Output != "again" {
		t.Errorf("after the restart: %s %q", r.Kind, r.Content())
	}
	if st := s.Status(); st.Err != nil {
		t.Errorf("status err %v", st.Err)
	}
}

// The toolkit's guards hold for a server's tools: the permission check, the result bytes, the breaker (here, of a server down).
func TestGuardsHold(t *testing.T) {
	kit, err := toolkit.New(toolkit.Config{Allow: func(_ context.Context, c toolkit.Call) error {
		if c.Name == "fail" {
			return errors.New("not this one")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := self(t, "go")
	cfg.Policy = toolkit.Policy{MaxResultBytes: 100, BreakerFailures: 2, BreakerCooldown: time.Hour}
	cfg.MinBackoff = time.Hour // down it stays
	s := mount(t, kit, cfg)
	if r := run(kit, "fail", `{}`); r.Kind != toolkit.KindPermission || !strings.Contains(r.Content(), "not this one") {
		t.Errorf("refused: %s %q", r.Kind, r.Content())
	}
	long := strings.Repeat("é", 200)
	if r := run(kit, "echo", `{"message":"`+long+`"}`); r.Kind != toolkit.KindNone || !r.Truncated || len(r.Content()) > 100 {
		t.Errorf("a long result: %s truncated %v, %d bytes", r.Kind, r.Truncated, len(r.Content()))
	}
	if err := syscall.Kill(mcp.PID(s), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Calls while down are failures; two open the breaker, which then refuses at once.
	eventually(t, "the breaker open", func() bool {
		run(kit, "add", `{"a":1,"b":2}`)
		return kit.Breaker("add") == toolkit.Open
	})
	if r := run(kit, "add", `{"a":1,"b":2}`); r.Kind != toolkit.KindUnavailable {
		t.Errorf("with the breaker open: %s %q", r.Kind, r.Content())
	}
}
