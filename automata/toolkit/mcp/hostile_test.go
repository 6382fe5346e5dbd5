package mcp_test

// Hostile servers (rawServer): what each does, and that the kit stays
// bounded in memory and time, says clearly what went wrong, and keeps
// running its other tools.

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/automata/toolkit/mcp"
)

// hostileKit is a kit with a Go tool, local, beside the server kind.
func hostileKit(t *testing.T, kind string, edit func(*mcp.Config)) (*toolkit.Kit, *mcp.Server) {
	t.Helper()
	local := toolkit.Func("local", "", func(context.Context, struct{}) (string, error) { return "still here", nil })
	kit, err := toolkit.New(toolkit.Config{}, local)
	if err != nil {
		t.Fatal(err)
	}
	cfg := self(t, kind)
	cfg.MinBackoff, cfg.MaxBackoff = 50*time.Millisecond, 200*time.Millisecond
	if edit != nil {
		edit(&cfg)
	}
	s, err := mcp.Mount(kit, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return kit, s
}

func ready(t *testing.T, s *mcp.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
}

// stillWorks checks the kit's other tool.
func stillWorks(t *testing.T, kit *toolkit.Kit) {
	t.Helper()
	if r := run(kit, "local", `{}`); r.Output != "still here" {
		t.Errorf("the Go tool: %s %q", r.Kind, r.Content())
	}
}

// heap is the live heap after a collection.
func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A result that never ends: the session ends at MaxMessageBytes, the call fails at once, memory stays bounded.
func TestHostileEndlessResult(t *testing.T) {
	const limit = 1 << 20
	kit, s := hostileKit(t, "endless", func(c *mcp.Config) { c.MaxMessageBytes = limit })
	ready(t, s)
	before := heap()
	done := make(chan toolkit.Result)
	go func() { done <- run(kit, "bad", `{}`) }()
	var r toolkit.Result
	select {
	case r = <-done:
	case <-time.After(hang):
		t.Fatal("the call of an endless result did not end")
	}
	if r.Kind != toolkit.KindFailure || !errors.Is(r.Err, mcp.ErrDown) {
		t.Errorf("endless: %s %q", r.Kind, r.Content())
	}
	t.Logf("endless: %q", r.Content())
	if after := heap(); after > before+8*limit {
		t.Errorf("the heap grew from %d to %d bytes, with MaxMessageBytes %d", before, after, limit)
	}
	stillWorks(t, kit)
	// It is started again, and its other tool answers.
	eventually(t, "started again", func() bool { st := s.Status(); return st.Up && st.Sessions > 1 })
	if r := run(kit, "ok", `{}`); r.Output != "ok" {
		t.Errorf("ok after the restart: %s %q", r.Kind, r.Content())
	}
}

// A server that never answers a call: the try times out, the kit runs on, the server's other tool still answers.
func TestHostileSilent(t *testing.T) {
	kit, s := hostileKit(t, "silent", func(c *mcp.Config) { c.Policy = toolkit.Policy{Timeout: 300 * time.Millisecond} })
	ready(t, s)
	r := run(kit, "bad", `{}`)
	if r.Kind != toolkit.KindTimeout || !strings.Contains(r.Content(), "bad timed out after 300ms") {
		t.Errorf("silent: %s %q", r.Kind, r.Content())
	}
	stillWorks(t, kit)
	if r := run(kit, "ok", `{}`); r.Output != "ok" {
		t.Errorf("ok: %s %q", r.Kind, r.Content())
	}
}

// A server that never answers the handshake: it is restarted after ConnectTimeout; its tools are not listed; the kit runs on.
func TestHostileMute(t *testing.T) {
	kit, s := hostileKit(t, "mute", func(c *mcp.Config) { c.ConnectTimeout = 200 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.Ready(ctx)
	if err == nil || !errors.Is(err, mcp.ErrDown) {
		t.Fatalf("Ready of a mute server: %v", err)
	}
	t.Logf("Ready: %v", err)
	eventually(t, "restarted", func() bool { return s.Status().Sessions > 2 })
	if st := s.Status(); st.Up || !strings.Contains(st.Err.Error(), "ConnectTimeout") {
		t.Errorf("status %+v", st)
	}
	stillWorks(t, kit)
}

// A line that is not JSON: the session ends, the call fails at once saying so, the server is started again.
func TestHostileMalformed(t *testing.T) {
	kit, s := hostileKit(t, "malformed", nil)
	ready(t, s)
	r := run(kit, "bad", `{}`)
	if r.Kind != toolkit.KindFailure || !errors.Is(r.Err, mcp.ErrDown) {
		t.Errorf("malformed: %s %q", r.Kind, r.Content())
	}
	t.Logf("malformed: %q", r.Content())
	stillWorks(t, kit)
	eventually(t, "started again", func() bool { st := s.Status(); return st.Up && st.Sessions > 1 })
	if r := run(kit, "ok", `{}`); r.Output != "ok" {
		t.Errorf("ok after the restart: %s %q", r.Kind, r.Content())
	}
}

// A flood of notifications (and of tools/list_changed): memory stays bounded, calls are answered, the tools stay listed.
func TestHostileFlood(t *testing.T) {
	kit, s := hostileKit(t, "flood", nil)
	ready(t, s)
	before := heap()
	deadline := time.Now().Add(2 * time.Second)
	calls := 0
	for time.Now().Before(deadline) {
		if r := run(kit, "ok", `{}`); r.Output != "ok" {
			t.Fatalf("ok under a flood: %s %q", r.Kind, r.Content())
		}
		calls++
		stillWorks(t, kit)
	}
	after := heap()
	t.Logf("%d calls in 2 s under a flood; heap %d → %d bytes", calls, before, after)
	if after > before+64<<20 {
		t.Errorf("the heap grew from %d to %d bytes", before, after)
	}
	if st := s.Status(); !st.Up || st.Sessions != 1 || len(st.Tools) != 2 {
		t.Errorf("status %+v", st)
	}
}

// Over HTTP, an answer that never ends: the body is cut at MaxMessageBytes, the session is not made, memory stays bounded, the kit runs on.
func TestHostileHTTPEndlessBody(t *testing.T) {
	const limit = 1 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if r.Header.Get("Authorization") != "Bearer t" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"x":"`))
		chunk := []byte(strings.Repeat("x", 1<<16))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	local := toolkit.Func("local", "", func(context.Context, struct{}) (string, error) { return "still here", nil })
	kit, _ := toolkit.New(toolkit.Config{}, local)
	before := heap()
	s, err := mcp.Mount(kit, mcp.Config{Name: "endless-http", URL: srv.URL + "/mcp?token=secret", Header: http.Header{"Authorization": {"Bearer t"}},
		MaxMessageBytes: limit, ConnectTimeout: 5 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	eventually(t, "tried twice", func() bool { return s.Status().Sessions > 2 })
	st := s.Status()
	if st.Up || st.Err == nil || !strings.Contains(st.Err.Error(), "MaxMessageBytes") || strings.Contains(st.Err.Error(), "secret") {
		t.Errorf("status %+v", st)
	}
	t.Logf("status: %v", st.Err)
	if after := heap(); after > before+8*limit {
		t.Errorf("the heap grew from %d to %d bytes, with MaxMessageBytes %d", before, after, limit)
	}
	stillWorks(t, kit)
}
