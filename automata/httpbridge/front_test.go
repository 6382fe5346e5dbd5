package httpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
)

const allowedOrigin = "https://app.example"

// TestFleetFrontOnce: a request for an agent by id crosses the fleet's front
// once, as one agent's request crosses its bridge's. The CORS headers are
// set once (one "Origin" in Vary, one Access-Control-Allow-Origin), the
// caller is identified once and by the fleet only (the agent's bridge has no
// Auth hook to run), a preflight identifies no one, and a body over MaxBody
// is refused with 413 and applies nothing.
func TestFleetFrontOnce(t *testing.T) {
	var identified atomic.Int64
	f := newFleetFixture(t, func(c *FleetConfig[state, input, view]) {
		identify := c.Identify
		c.Identify = func(r *http.Request) (Identity, error) {
			identified.Add(1)
			return identify(r)
		}
		c.Bridge.AllowOrigins = []string{allowedOrigin}
		c.Bridge.MaxBody = 1 << 10
	})
	ann := f.person()
	id := f.create(ann)

	identified.Store(0)
	res := originRequest(t, "POST", f.srv.URL+"/agents/"+id+"/inputs", ann, sendUserMessage("once", "hello"))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST by id: %d", res.StatusCode)
	}
	checkCORSOnce(t, "POST by id", res.Header)
	if n := identified.Load(); n != 1 {
		t.Errorf("POST by id identified the caller %d times, want once", n)
	}
	f.fleet.mu.Lock()
	for a, fb := range f.fleet.bridges {
		if fb.b.cfg.Auth != nil {
			t.Errorf("the bridge of agent %s has an Auth hook of its own: a request by id would be authorized twice", a.ID())
		}
	}
	f.fleet.mu.Unlock()

	identified.Store(0)
	res = originRequest(t, "OPTIONS", f.srv.URL+"/agents/"+id+"/inputs", "", nil)
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("preflight by id: %d", res.StatusCode)
	}
	checkCORSOnce(t, "preflight by id", res.Header)
	if n := identified.Load(); n != 0 {
		t.Errorf("a preflight identified the caller %d times, want never", n)
	}

	res = originRequest(t, "POST", f.srv.URL+"/agents/"+id+"/inputs", ann, sendUserMessage("big", strings.Repeat("x", 2<<10)))
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "over 1024 bytes (Config.MaxBody)") {
		t.Fatalf("a POST over MaxBody by id: %d %s, want 413 naming the limit", res.StatusCode, body)
	}
	// The llm's reply to "once" may be journaled meanwhile; the refused
	// input never is.
	a, release, err := f.reg.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	entries, err := a.Machine().Inputs(1, a.Machine().Seq())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if m, ok := e.Input.(decl.SendUserMessage); ok && m.ID == "big" {
			t.Fatalf("the refused input is in the journal at %d", e.Seq)
		}
	}
}

// TestBridgeFrontOnce: one agent's bridge sets the CORS headers of a POST
// once, as the fleet does.
func TestBridgeFrontOnce(t *testing.T) {
	fx := newFixture(t, func(c *Config[state, input, view]) { c.AllowOrigins = []string{allowedOrigin} })
	res := originRequest(t, "POST", fx.srv.URL+"/inputs", testToken, sendUserMessage("once", "hello"))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST: %d", res.StatusCode)
	}
	checkCORSOnce(t, "POST", res.Header)
}

// sendUserMessage is the body of a client's send-user-message.
func sendUserMessage(id, content string) []byte {
	data, _ := json.Marshal(userMessage(id, content))
	return data
}

// originRequest makes a request from allowedOrigin, with token as bearer
// token (if any) and body as JSON (if any).
func originRequest(t *testing.T, method, url, token string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", allowedOrigin)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method == "OPTIONS" {
		req.Header.Set("Access-Control-Request-Method", "POST")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// checkCORSOnce fails t unless h has the CORS headers of one pass through
// the allow-list.
func checkCORSOnce(t *testing.T, what string, h http.Header) {
	t.Helper()
	var vary []string
	for _, v := range h.Values("Vary") {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f == "Origin" {
				vary = append(vary, f)
			}
		}
	}
	if len(vary) != 1 {
		t.Errorf("%s: Vary names Origin %d times (%q), want once", what, len(vary), h.Values("Vary"))
	}
	if got := h.Values("Access-Control-Allow-Origin"); len(got) != 1 || got[0] != allowedOrigin {
		t.Errorf("%s: Access-Control-Allow-Origin %q, want once %q", what, got, allowedOrigin)
	}
}
