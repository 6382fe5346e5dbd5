package mcp_test

// Against a server nobody here wrote: the reference MCP server,
// @modelcontextprotocol/server-everything from npm (package.json at the
// root; npm ci installs it), over stdio and over Streamable HTTP.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/automata/toolkit/mcp"
)

// everything returns the path of server-everything's program. Without
// it, the test fails when CI is set and is skipped otherwise (as
// internal/tsctest does with tsc).
func everything(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(file), "..", "..", "..", "node_modules", ".bin", "mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no mcp-server-everything at %s (CI is set): run npm ci at the root of the repository", bin)
		}
		t.Skipf("no mcp-server-everything at %s: run npm ci at the root of the repository", bin)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("mcp-server-everything needs node: %v", err)
	}
	return bin
}

// checkEverything lists server-everything's tools through kit and calls
// three of them, with typed results.
func checkEverything(t *testing.T, kit *toolkit.Kit) {
	t.Helper()
	names := kit.Names()
	for _, want := range []string{"echo", "get-sum", "get-tiny-image", "get-resource-reference", "trigger-long-running-operation"} {
		if !slices.Contains(names, want) {
			t.Fatalf("no %s among %v", want, names)
		}
	}
	for _, tool := range kit.LLMTools() {
		if tool.Name == "get-sum" && !strings.Contains(string(tool.Parameters), `"required":["a","b"]`) {
			t.Errorf("get-sum's schema is not the server's: %s", tool.Parameters)
		}
	}
	for _, c := range []struct {
		name, args string
		kind       toolkit.Kind
		content    []string
	}{
		{"echo", `{"message":"hello"}`, toolkit.KindNone, []string{"Echo: hello"}},
		{"get-sum", `{"a":2,"b":40}`, toolkit.KindNone, []string{"42"}},
		// Checked against the server's schema before the call.
		{"get-sum", `{"a":"two","b":40}`, toolkit.KindInvalid, []string{"get-sum do not match its schema", "/a"}},
		{"get-tiny-image", `{}`, toolkit.KindNone, []string{"[image: image/png, ", " bytes, not shown]"}},
		{"get-resource-reference", `{"resourceType":"Text","resourceId":2}`, toolkit.KindNone, []string{"[resource: demo://resource/dynamic/text/2, text/plain]"}},
		{"get-resource-reference", `{"resourceType":"Blob","resourceId":3}`, toolkit.KindNone, []string{"[resource: demo://resource/dynamic/blob/3", "bytes of binary data, not shown]"}},
	} {
		r := run(kit, c.name, c.args)
		for _, w := range c.content {
			if r.Kind != c.kind || !strings.Contains(r.Content(), w) {
				t.Errorf("%s %s: %s %q; want %s and %q", c.name, c.args, r.Kind, r.Content(), c.kind, w)
			}
		}
		t.Logf("%s %s: %q", c.name, c.args, clipped(r.Content()))
	}
}

func clipped(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// killMidCall kills the server with kill while it runs a slow tool: the
// call fails at once with a clear error; restart makes it up again; the
// next call succeeds.
func killMidCall(t *testing.T, kit *toolkit.Kit, s *mcp.Server, kill func(), restart func()) {
	t.Helper()
	before := s.Status().Sessions
	done := make(chan toolkit.Result)
	go func() { done <- run(kit, "trigger-long-running-operation", `{"duration":30,"steps":3}`) }()
	time.Sleep(500 * time.Millisecond)
	kill()
	start := time.Now()
	r := <-done
	t.Logf("the call of a killed server, after %s: %s %q", time.Since(start).Round(time.Millisecond), r.Kind, r.Content())
	if r.Kind != toolkit.KindFailure || !errors.Is(r.Err, mcp.ErrDown) || time.Since(start) > 10*time.Second {
		t.Fatalf("the call of a killed server: %s %q after %s", r.Kind, r.Content(), time.Since(start))
	}
	if restart != nil {
		restart()
	}
	eventually(t, "up again", func() bool { st := s.Status(); return st.Up && st.Sessions > before })
	if r := run(kit, "echo", `{"message":"again"}`); r.Kind != toolkit.KindNone || !strings.Contains(r.Output, "again") {
		t.Errorf("after the restart: %s %q", r.Kind, r.Content())
	}
}

// The reference server over stdio: its tools, three calls, a kill mid-call.
func TestEverythingStdio(t *testing.T) {
	bin := everything(t)
	kit, _ := toolkit.New(toolkit.Config{})
	s := mount(t, kit, mcp.Config{Name: "everything", Command: bin, Args: []string{"stdio"}, Logger: testLogger(t), Policy: toolkit.Policy{Timeout: hang}})
	checkEverything(t, kit)
	// get-roots-list is registered once the session is initialized, with a
	// tools/list_changed; the client says it has no roots, so it is not.
	killMidCall(t, kit, s, func() {
		if err := syscall.Kill(mcp.PID(s), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}, nil)
}

// The reference server over Streamable HTTP: the same, the server killed and started again on the same port.
func TestEverythingHTTP(t *testing.T) {
	bin := everything(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var cmd *exec.Cmd
	start := func() {
		cmd = exec.Command(bin, "streamableHttp")
		cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
		cmd.Stdout, cmd.Stderr = testWriter{t}, testWriter{t}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		eventually(t, "listening", func() bool {
			c, err := net.Dial("tcp", l.Addr().String())
			if err == nil {
				c.Close()
			}
			return err == nil
		})
	}
	start()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	kit, _ := toolkit.New(toolkit.Config{})
	s := mount(t, kit, mcp.Config{Name: "everything", URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port),
		Header: http.Header{"Authorization": {"Bearer a-token"}}, Logger: testLogger(t), Policy: toolkit.Policy{Timeout: hang},
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond})
	checkEverything(t, kit)
	killMidCall(t, kit, s, func() {
		cmd.Process.Kill()
		cmd.Wait()
	}, func() {
		// Meanwhile a call fails at once, saying the server is down.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for s.Status().Up && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		r := run(kit, "echo", `{"message":"x"}`)
		if r.Kind != toolkit.KindFailure || !errors.Is(r.Err, mcp.ErrDown) {
			t.Errorf("while down: %s %q", r.Kind, r.Content())
		}
		t.Logf("while down: %q", r.Content())
		start()
	})
}
