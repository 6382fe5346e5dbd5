package jetstream_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal/jetstream"
)

// peerConfig is the configuration of the routing tests: a short TTL, so
// that a lease that is not released expires within the test.
func peerConfig() jetstream.Config {
	return jetstream.Config{TTL: 2 * time.Second, Timeout: 5 * time.Second}
}

func startPeers(t *testing.T, owners ...string) []*peerHost {
	t.Helper()
	_, nc := startServer(t, false)
	var hosts []*peerHost
	for _, o := range owners {
		h, err := startPeerHost(nc, peerConfig(), o, quietLog(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.close() })
		hosts = append(hosts, h)
	}
	return hosts
}

func mustPost(t *testing.T, base, id, text string) string {
	t.Helper()
	code, body, err := post(http.DefaultClient, base, id, text)
	if err != nil || code != http.StatusOK {
		t.Fatalf("POST %s to %s via %s: %d %s %v", text, id, base, code, body, err)
	}
	return body
}

// TestRoutedToTheOwner: a request for an agent another process has active
// is served by that process, through the one it was sent to: an input, and
// a state stream that follows it.
func TestRoutedToTheOwner(t *testing.T) {
	hs := startPeers(t, "host-a", "host-b")
	a, b := hs[0], hs[1]
	if _, err := a.reg.Create("agent-1", ""); err != nil {
		t.Fatal(err)
	}
	mustPost(t, a.url, "agent-1", "first") // activates it on a
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A stream through b, which does not have the agent.
	var fol follower
	events := make(chan string, 16)
	done := make(chan error, 1)
	go func() { done <- fol.follow(ctx, http.DefaultClient, b.url, "agent-1", func(k string) { events <- k }) }()
	if k := <-events; k != "snapshot" {
		t.Fatalf("first event %q", k)
	}
	body := mustPost(t, b.url, "agent-1", "second") // through b
	if !strings.Contains(body, `"seq"`) {
		t.Errorf("the answer %s has no seq", body)
	}
	if k := <-events; k != "delta" {
		t.Fatalf("then %q", k)
	}
	cancel()
	<-done
	notes, err := notesOf(fol.view)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 2 || notes[0].By != "host-a" || notes[1].By != "host-a" || notes[1].Text != "second" {
		t.Errorf("the view followed through b: %+v, want both notes journaled by host-a", notes)
	}
	if st := b.reg.Stats(); st.Activations != 0 {
		t.Errorf("b activated %d agents; the agent is a's", st.Activations)
	}
}

// TestRoutedRequestToANonOwnerIs421: a request a peer routed to a process
// that does not have the agent is answered 421, for the peer to look again,
// not routed on.
func TestRoutedRequestToANonOwnerIs421(t *testing.T) {
	hs := startPeers(t, "host-a", "host-b")
	a, b := hs[0], hs[1]
	a.reg.Create("agent-1", "")
	mustPost(t, a.url, "agent-1", "first")
	req, _ := http.NewRequest(http.MethodPost, b.url+"/agents/agent-1/inputs", strings.NewReader(`{"text":"x"}`))
	req.Header.Set("Authorization", "Bearer "+peerToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Moora-Routed", "host-c")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a routed request to a non-owner: %s, want 421", resp.Status)
	}
}

// TestDeadOwnerIsEvicted: an owner that advertises no address (it died, or
// withdrew) is evicted at once, the agent activated where the request came
// in, and the old owner, alive after all, fenced: its registry deactivates
// the agent by itself.
func TestDeadOwnerIsEvicted(t *testing.T) {
	hs := startPeers(t, "host-a", "host-b")
	a, b := hs[0], hs[1]
	a.reg.Create("agent-1", "")
	mustPost(t, a.url, "agent-1", "first")
	if err := a.withdraw(); err != nil {
		t.Fatal(err)
	}
	mustPost(t, b.url, "agent-1", "second") // well within the TTL
	if st := b.reg.Stats(); st.Active != 1 {
		t.Errorf("b has %d agents active, want the one taken over", st.Active)
	}
	deadline := time.Now().Add(30 * time.Second)
	for a.reg.Stats().Fenced != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("a's registry: %+v; want the fenced agent deactivated", a.reg.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	var fol follower
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go fol.follow(ctx, http.DefaultClient, a.url, "agent-1", func(string) { cancel() }) // routed to b now
	<-ctx.Done()
	notes, _ := notesOf(fol.view)
	if len(notes) != 2 || notes[0].By != "host-a" || notes[1].By != "host-b" {
		t.Errorf("the agent's notes: %+v", notes)
	}
}

// TestUnreachableOwnerIsEvicted: an owner whose advertised address takes no
// connection is dead: the agent is taken over at once.
func TestUnreachableOwnerIsEvicted(t *testing.T) {
	hs := startPeers(t, "host-a", "host-b")
	a, b := hs[0], hs[1]
	a.reg.Create("agent-1", "")
	mustPost(t, a.url, "agent-1", "first")
	a.srv.Close() // a no longer listens; still advertised, still the owner
	start := time.Now()
	mustPost(t, b.url, "agent-1", "second")
	if took := time.Since(start); took > peerConfig().TTL {
		t.Logf("the takeover took %v, longer than the TTL: it waited for the lease", took)
	}
	if st := b.reg.Stats(); st.Active != 1 {
		t.Errorf("b has %d agents active, want the one taken over", st.Active)
	}
}
