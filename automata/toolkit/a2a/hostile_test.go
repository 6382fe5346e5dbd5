package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/automata/toolkit/a2a"
)

// peer is an A2A server that answers its card and each call as told.
func peer(t *testing.T, card func(base string) string, answer func(w http.ResponseWriter, r *http.Request)) string {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/agent-card.json" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, card(srv.URL))
			return
		}
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func goodCard(base string) string {
	return `{"name":"peer agent","description":"A peer.","supportedInterfaces":[{"url":"` + base + `/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"skills":[{"id":"s","name":"S","description":"Does s."}]}`
}

func mount(t *testing.T, base string, cfg a2a.Config) (*toolkit.Kit, *a2a.Agent) {
	t.Helper()
	kit, err := toolkit.New(toolkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.URL = base
	cfg.Logger = slog.New(slog.DiscardHandler)
	agent, err := a2a.Mount(kit, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Close() })
	return kit, agent
}

func ready(t *testing.T, agent *a2a.Agent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := agent.Ready(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestHostileAgents plays the hostile remote agent: an answer over
// MaxResponseBytes, one that is not JSON-RPC, a redirect, 401, a JSON-RPC
// error, an agent that does not answer within the tool's Timeout; each is
// the kind of failure the toolkit says, never a hang or a crash, and the
// breaker opens after the failures in a row.
func TestHostileAgents(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request)
		kind   toolkit.Kind
		says   string
	}{
		{"too long", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{"message":{"parts":[{"text":"`+strings.Repeat("x", 5000)+`"}]}}}`)
		}, toolkit.KindFailure, "over 4096 bytes"},
		{"not JSON-RPC", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"hello":1}`) }, toolkit.KindFailure, "not a JSON-RPC response"},
		{"a redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/", http.StatusFound)
		}, toolkit.KindFailure, "302"},
		{"unauthorized", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) }, toolkit.KindPermission, "401"},
		{"invalid params", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}`)
		}, toolkit.KindInvalid, "(-32602): no"},
		{"an internal error", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"oops"}}`)
		}, toolkit.KindFailure, "oops"},
		{"silent", func(w http.ResponseWriter, r *http.Request) {
			io.ReadAll(r.Body) // then the server hears the client go
			<-r.Context().Done()
		}, toolkit.KindTimeout, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := peer(t, goodCard, c.answer)
			kit, agent := mount(t, base, a2a.Config{MaxResponseBytes: 4096, Policy: toolkit.Policy{Timeout: 200 * time.Millisecond, BreakerFailures: 2}})
			ready(t, agent)
			r := kit.Run(context.Background(), toolkit.Call{ID: "c", Key: "k", Name: "peer_agent", Arguments: json.RawMessage(`{"message":"hi"}`)})
			if r.Kind != c.kind || !strings.Contains(r.Content(), c.says) {
				t.Fatalf("%+v: want %s saying %q", r, c.kind, c.says)
			}
		})
	}
	// Failures in a row open the breaker.
	base := peer(t, goodCard, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) })
	kit, agent := mount(t, base, a2a.Config{Policy: toolkit.Policy{BreakerFailures: 2}})
	ready(t, agent)
	var kinds []toolkit.Kind
	for range 3 {
		kinds = append(kinds, kit.Run(context.Background(), toolkit.Call{ID: "c", Name: "peer_agent", Arguments: json.RawMessage(`{"message":"hi"}`)}).Kind)
	}
	if kinds[0] != toolkit.KindFailure || kinds[2] != toolkit.KindUnavailable {
		t.Fatalf("kinds %v: want failures, then the breaker open", kinds)
	}
}

// TestHostileCards: a card over MaxCardBytes, one that sends calls to
// another origin (where the Header would go), one with no JSON-RPC
// interface, and one that is not JSON make no tool; Ready says why.
func TestHostileCards(t *testing.T) {
	for _, c := range []struct {
		name, says string
		card       func(base string) string
	}{
		{"too long", "over 1024 bytes", func(base string) string { return goodCard(base) + strings.Repeat(" ", 2000) }},
		{"another origin", "not at its card's origin", func(string) string {
			return `{"name":"x","supportedInterfaces":[{"url":"http://evil.example/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`
		}},
		{"no JSON-RPC", "no JSON-RPC interface", func(base string) string {
			return `{"name":"x","supportedInterfaces":[{"url":"` + base + `/grpc","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`
		}},
		{"not JSON", "not JSON", func(string) string { return `<html>` }},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := peer(t, c.card, func(w http.ResponseWriter, r *http.Request) {})
			kit, agent := mount(t, base, a2a.Config{MaxCardBytes: 1024, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
			// Ready fails once the card has been refused: wait for the
			// reason (the first fetch's) rather than for a time.
			for {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				err := agent.Ready(ctx)
				if err == nil {
					t.Fatalf("the tool was mounted: %v", kit.Names())
				}
				if !errors.Is(err, context.Canceled) {
					t.Fatal(err)
				}
				if strings.Contains(err.Error(), c.says) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			if len(kit.Names()) != 0 {
				t.Fatalf("tools %v", kit.Names())
			}
		})
	}
}
