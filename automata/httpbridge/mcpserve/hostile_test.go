package mcpserve_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/moora-go/moora/automata/httpbridge/mcpserve"
)

func initialize(t *testing.T, url, host string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if host != "" {
		req.Host = host
		req.Header.Set("Origin", "http://"+host)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// TestDNSRebinding: a server on loopback answers no other Host, even one
// whose Origin matches it (what a rebound page sends); AllowHosts adds one.
func TestDNSRebinding(t *testing.T) {
	a := newSingle(t, func(c *mcpserve.Config[input, view]) { c.AllowHosts = []string{"agent.example"} })
	if resp, body := initialize(t, a.srv.URL+"/mcp", "evil.example:80"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("rebound Host: %d %s, want 403", resp.StatusCode, body)
	}
	if resp, body := initialize(t, a.srv.URL+"/mcp", "agent.example"); resp.StatusCode != http.StatusOK {
		t.Fatalf("allowed Host: %d %s, want 200", resp.StatusCode, body)
	}
	if resp, body := initialize(t, a.srv.URL+"/mcp", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("loopback Host: %d %s, want 200", resp.StatusCode, body)
	}
}

// TestSessionLimits: an initialize beyond MaxSessions gets 503; a session
// idle for IdleTimeout ends, and its place is free again.
func TestSessionLimits(t *testing.T) {
	a := newSingle(t, func(c *mcpserve.Config[input, view]) {
		c.MaxSessions = 3
		c.IdleTimeout = 200 * time.Millisecond
	})
	for i := range 3 {
		if resp, body := initialize(t, a.srv.URL+"/mcp", ""); resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("session %d: %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body := initialize(t, a.srv.URL+"/mcp", "")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "MaxSessions") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a fourth session: %d %s, want 503 naming the limit", resp.StatusCode, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, _ := initialize(t, a.srv.URL+"/mcp", "")
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("idle sessions were not ended")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSlowSubscriber: a subscriber whose stream is never read does not
// hold up the inputs nor another subscriber, and the server keeps no
// queue for it (its stream is dropped after WriteTimeout).
func TestSlowSubscriber(t *testing.T) {
	a := newSingle(t, func(c *mcpserve.Config[input, view]) { c.WriteTimeout = 200 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The slow one: subscribes, then its standalone stream is never read.
	slow := connect(t, a.srv.URL+"/mcp", token, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) {
			<-ctx.Done() // never returns while the test runs: the client stops reading
		},
	})
	if err := slow.Subscribe(ctx, &mcp.SubscribeParams{URI: "agent://self/state"}); err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{}, 1000)
	fast := connect(t, a.srv.URL+"/mcp", token, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) { got <- struct{}{} },
	})
	if err := fast.Subscribe(ctx, &mcp.SubscribeParams{URI: "agent://self/state"}); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 32<<10)
	const n = 100
	for i := range n {
		res, err := fast.CallTool(ctx, &mcp.CallToolParams{Name: "send-user-message", Arguments: map[string]any{"id": fmt.Sprint("m", i), "content": big, "timestamp": 0}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
	}
	for i := 0; i < n; i++ { // at least one per input (each also has a reply)
		select {
		case <-got:
		case <-ctx.Done():
			t.Fatalf("the fast subscriber got %d updates of %d", i, n)
		}
	}
}
