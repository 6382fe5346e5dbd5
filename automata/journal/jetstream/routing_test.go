package jetstream_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/internal/frame"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/moora-go/moora/automata/registry"
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

// TestRoutedRequestToANonOwnerIs421: a request a peer routed (its header
// signed with the fleet's secret) to a process that does not have the
// agent is answered 421, for the peer to look again, not routed on; the
// answer does not say which process has it. A routed header no peer signed
// (a client's) is stripped: the request is routed to the owner and served.
func TestRoutedRequestToANonOwnerIs421(t *testing.T) {
	hs := startPeers(t, "host-a", "host-b")
	a, b := hs[0], hs[1]
	a.reg.Create("agent-1", "")
	mustPost(t, a.url, "agent-1", "first")
	if !bytes.Equal(a.fleet.Secret(), b.fleet.Secret()) || len(a.fleet.Secret()) != 32 {
		t.Fatalf("the hosts' secrets differ, or are not 32 bytes: %x, %x", a.fleet.Secret(), b.fleet.Secret())
	}
	routed := func(value string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, b.url+"/agents/agent-1/inputs", strings.NewReader(`{"text":"x"}`))
		req.Header.Set("Authorization", "Bearer "+peerToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Moora-Routed", value)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	code, body := routed(signedRouted(b.fleet.Secret(), "host-c", time.Now()))
	if code != http.StatusMisdirectedRequest {
		t.Errorf("a routed request to a non-owner: %d %s, want 421", code, body)
	}
	if strings.Contains(body, "host-a") {
		t.Errorf("the 421 names the owner: %s", body)
	}
	for _, forged := range []string{
		"host-c",
		signedRouted([]byte("not the fleet's secret, 32 bytes"), "host-c", time.Now()),
		signedRouted(b.fleet.Secret(), "host-c", time.Now().Add(-time.Hour)),
	} {
		if code, body := routed(forged); code != http.StatusOK {
			t.Errorf("a client's Moora-Routed %q: %d %s, want the input served by the owner", forged, code, body)
		}
	}
	if st := b.reg.Stats(); st.Activations != 0 {
		t.Errorf("b activated %d agents; the agent is a's", st.Activations)
	}
}

// putAgent sends PUT /agents/{id} through the front at base, and returns
// the status and the agent the answer names.
func putAgent(t *testing.T, base, id string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, base+"/agents/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+peerToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	var a struct {
		ID, Owner string
		Created   time.Time
	}
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &a); err != nil || a.ID == "" {
		return resp.StatusCode, string(body)
	}
	return resp.StatusCode, fmt.Sprintf("%s of %s, created %s", a.ID, a.Owner, a.Created.Format(time.RFC3339Nano))
}

// TestPutOnTwoHostsCreatesOne: PUTs of one id sent at once to two hosts
// create one agent: one answers 201, the other 200, both naming the same
// agent (the hosts' fleet decides, as no lock is shared between them). Once the agent is active on one host, a PUT on the other answers
// it without activating it there.
func TestPutOnTwoHostsCreatesOne(t *testing.T) {
	hs := startPeers(t, "host-a", "host-b")
	a, b := hs[0], hs[1]
	for i := range 16 {
		id := fmt.Sprintf("report-%d", i)
		var codes [2]int
		var agents [2]string
		var wg sync.WaitGroup
		start := make(chan struct{})
		for j, h := range hs {
			wg.Go(func() {
				<-start
				codes[j], agents[j] = putAgent(t, h.url, id)
			})
		}
		close(start)
		wg.Wait()
		created := codes[0] == http.StatusCreated && codes[1] == http.StatusOK || codes[0] == http.StatusOK && codes[1] == http.StatusCreated
		if !created || agents[0] != agents[1] || !strings.HasPrefix(agents[0], id+" of operator,") {
			t.Errorf("PUT /agents/%s on both hosts at once: a %d %s; b %d %s; want one 201 and one 200 naming the same agent, the operator's", id, codes[0], agents[0], codes[1], agents[1])
		}
	}
	var ids []string
	if err := a.reg.List("", func(id string, _ journal.AgentInfo) error {
		ids = append(ids, id)
		return nil
	}); err != nil || len(ids) != 16 {
		t.Fatalf("the fleet has %v %v, want report-0 to report-15", ids, err)
	}
	mustPost(t, a.url, "report-0", "first") // activates it on a
	_, onA := putAgent(t, a.url, "report-0")
	if code, onB := putAgent(t, b.url, "report-0"); code != http.StatusOK || onB != onA {
		t.Errorf("PUT /agents/report-0 on b while a has it: %d %s, want 200 and %s", code, onB, onA)
	}
	if st := b.reg.Stats(); st.Activations != 0 {
		t.Errorf("b activated %d agents; a has the agent", st.Activations)
	}
}

// signedRouted is a Moora-Routed header as a peer signs it: the sender's
// id (base64url) and the time (Unix seconds), and their HMAC-SHA256 under
// the fleet's secret.
func signedRouted(secret []byte, owner string, at time.Time) string {
	owner64 := base64.RawURLEncoding.EncodeToString([]byte(owner))
	unix := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, secret)
	io.WriteString(mac, "moora-routed\n"+owner64+"\n"+unix)
	return owner64 + "." + unix + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// TestLeavingOwnerIsWaitedFor: an owner that said it is leaving, and no
// longer takes connections, is not evicted: a request for its agent waits
// until the owner has released it, and is then served where it came in.
// The owner's registry never finds its agent fenced.
func TestLeavingOwnerIsWaitedFor(t *testing.T) {
	_, nc := startServer(t, false)
	a, err := startPeerHost(nc, peerConfig(), "host-a", quietLog(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err := startPeerHost(nc, peerConfig(), "host-b", quietLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.close() })
	a.reg.Create("agent-1", "")
	mustPost(t, a.url, "agent-1", "first")
	if err := a.fleet.Leave(); err != nil {
		t.Fatal(err)
	}
	a.front.Close()
	a.srv.Close()
	done := make(chan string, 1)
	go func() {
		code, body, err := post(http.DefaultClient, b.url, "agent-1", "second")
		done <- fmt.Sprint(code, body, err)
	}()
	select {
	case got := <-done:
		t.Fatalf("served while the leaving owner still had the agent: %s", got)
	case <-time.After(3 * ownerCheckEvery):
	}
	if err := a.reg.Close(context.Background()); err != nil { // releases the lease
		t.Fatal(err)
	}
	if got := <-done; !strings.HasPrefix(got, "200") {
		t.Fatalf("through b once a released the agent: %s", got)
	}
	if st := a.reg.Stats(); st.Fenced != 0 {
		t.Errorf("a's agent was fenced %d times: taken from a process that was leaving", st.Fenced)
	}
	a.fleet.Close()
}

// ownerCheckEvery is the httpbridge's own, for the test above to give a
// request time to be (wrongly) served.
const ownerCheckEvery = 500 * time.Millisecond

// TestUnreachableOwnerIsEvicted: an owner whose advertised address refuses
// connections, and which did not say it is leaving, is dead: the agent is
// taken over at once, and the owner, alive after all, is fenced: its
// registry deactivates the agent by itself.
func TestUnreachableOwnerIsEvicted(t *testing.T) {
	hs := startPeers(t, "host-a", "host-b")
	a, b := hs[0], hs[1]
	a.reg.Create("agent-1", "")
	mustPost(t, a.url, "agent-1", "first")
	a.srv.Close() // a no longer listens; still advertised, still the owner
	mustPost(t, b.url, "agent-1", "second")
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
	go fol.follow(ctx, http.DefaultClient, b.url, "agent-1", func(string) { cancel() })
	<-ctx.Done()
	notes, _ := notesOf(fol.view)
	if len(notes) != 2 || notes[0].By != "host-a" || notes[1].By != "host-b" {
		t.Errorf("the agent's notes: %+v", notes)
	}
}

// TestRoutedBrowserPost: a browser's POST (with an Origin header naming
// the host it was sent to) routed to the owner is not refused there for an
// origin the owner does not know.
func TestRoutedBrowserPost(t *testing.T) {
	hs := startPeers(t, "host-a", "host-b")
	a, b := hs[0], hs[1]
	a.reg.Create("agent-1", "")
	mustPost(t, a.url, "agent-1", "first")
	req, _ := http.NewRequest(http.MethodPost, b.url+"/agents/agent-1/inputs", strings.NewReader(`{"text":"from a page"}`))
	req.Header.Set("Authorization", "Bearer "+peerToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", b.url)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a page's POST through b: %s %s", resp.Status, body)
	}
}

// TestRoutedRequestLeavesLocalAgentsAlone: a process at its MaxActive
// routes a request for an agent another process has, without deactivating
// one of its own to make room for an activation that cannot succeed.
func TestRoutedRequestLeavesLocalAgentsAlone(t *testing.T) {
	_, nc := startServer(t, false)
	a, err := startPeerHost(nc, peerConfig(), "host-a", quietLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.close() })
	b, err := startPeerHost(nc, peerConfig(), "host-b", quietLog(t), func(c *registry.Config[pstate, pnote]) { c.MaxActive = 1 })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.close() })
	a.reg.Create("agent-1", "")
	b.reg.Create("agent-2", "")
	mustPost(t, a.url, "agent-1", "first")
	mustPost(t, b.url, "agent-2", "b's own") // b is full
	mustPost(t, b.url, "agent-1", "routed")
	if !b.reg.IsActive("agent-2") || b.reg.Stats().Deactivations != 0 {
		t.Errorf("b: agent-2 active %v, %+v; want it left alone", b.reg.IsActive("agent-2"), b.reg.Stats())
	}
}

// jobsOf is the jobs of the orphan test: a note "job:X" calls for job X
// until a note "done:X" follows, which the job dispatches; on a host where
// block is set, the job starts (and says so on started) and never ends.
func jobsOf(block bool, started chan<- string) func(pstate) map[string]automata.Job[pnote] {
	return func(s pstate) map[string]automata.Job[pnote] {
		done := map[string]bool{}
		for _, n := range s.Notes {
			if x, ok := strings.CutPrefix(n.Text, "done:"); ok {
				done[x] = true
			}
		}
		jobs := map[string]automata.Job[pnote]{}
		for _, n := range s.Notes {
			x, ok := strings.CutPrefix(n.Text, "job:")
			if !ok || done[x] {
				continue
			}
			jobs[x] = func(ctx context.Context, dispatch automata.Dispatch[pnote]) error {
				if block {
					started <- x
					<-ctx.Done()
					return ctx.Err()
				}
				dispatch(pnote{Text: "done:" + x})
				return nil
			}
		}
		return jobs
	}
}

// withJobs opens the hosts' agents with jobs.
func withJobs(owner string, jobs func(pstate) map[string]automata.Job[pnote]) func(*registry.Config[pstate, pnote]) {
	return func(c *registry.Config[pstate, pnote]) {
		c.Open = func(id string, s journal.Store) (*journal.Machine[pstate, pnote], error) {
			return journal.Open(s, pmodel, journal.Options[pstate, pnote]{Codec: journal.JSON[pstate, pnote](nil), Logger: c.Logger},
				automata.WithJobs(jobs), automata.WithAdmission(func(_ pstate, in pnote) (pnote, error) {
					in.By = owner
					return in, nil
				}))
		}
	}
}

// TestOrphanWithAJobIsActivatedElsewhere: a process that loses JetStream
// while a job of one of its agents runs stops renewing the agent's lease;
// once the lease expires another process, watching for orphans, activates
// the agent without any request for it, and the job runs there.
func TestOrphanWithAJobIsActivatedElsewhere(t *testing.T) {
	srv, _ := startServer(t, false)
	ncA, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	ncB, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer ncB.Close()
	started := make(chan string, 1)
	a, err := startPeerHost(ncA, peerConfig(), "host-a", quietLog(t), withJobs("host-a", jobsOf(true, started)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := startPeerHost(ncB, peerConfig(), "host-b", quietLog(t), withJobs("host-b", jobsOf(false, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.close() })
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	if err := b.fleet.WatchOrphans(ctx, func(id string) {
		go func() {
			if _, release, err := b.reg.Get(ctx, id); err == nil {
				release()
			}
		}()
	}); err != nil {
		t.Fatal(err)
	}
	a.reg.Create("agent-j", "")
	mustPost(t, a.url, "agent-j", "job:1")
	<-started
	ncA.Close() // a can no longer renew the agent's lease
	defer a.close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b.reg.IsActive("agent-j") {
			ag, release, err := b.reg.Get(ctx, "agent-j")
			if err == nil {
				notes := ag.Machine().Current().Notes
				release()
				if n := len(notes); n == 2 && notes[1] == (pnote{Text: "done:1", By: "host-b"}) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("b has not finished a's job 30s after a lost JetStream: active %v, %+v", b.reg.IsActive("agent-j"), b.reg.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHungOwnerIsBounded: an owner whose address takes connections and
// answers nothing, while it holds the agent's lease (alive, renewing), holds
// a request routed to it no longer than the RouteTimeout: an input with an
// id, which may be sent again, is tried again until then and answered 503
// with Retry-After; the agent stays the owner's.
func TestHungOwnerIsBounded(t *testing.T) {
	peerRouteTimeout = 1500 * time.Millisecond
	defer func() { peerRouteTimeout = 0 }()
	hs := startPeers(t, "host-a", "host-b")
	a, b := hs[0], hs[1]
	a.reg.Create("agent-1", "")
	mustPost(t, a.url, "agent-1", "first")
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	go func() {
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	if err := a.fleet.Advertise("http://" + hung.Addr().String()); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, b.url+"/agents/agent-1/inputs", strings.NewReader(`{"text":"second"}`))
	req.Header.Set("Authorization", "Bearer "+peerToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "RouteTimeout") {
		t.Errorf("through b to a hung owner: %s %s (Retry-After %q)", resp.Status, body, resp.Header.Get("Retry-After"))
	}
	if owner, _, _, _ := b.fleet.Locate(context.Background(), "agent-1"); owner != "host-a" {
		t.Errorf("the agent is %q's after a request to its hung owner, want still host-a's", owner)
	}
}

// TestSlowOwnerIsWaitedFor: an owner that takes longer than the
// RouteTimeout to answer, while it holds the agent's lease (alive,
// renewing), is waited for, up to MaxRouteWait: the input routed to it is
// applied there and answered 200, not given up on with 503.
func TestSlowOwnerIsWaitedFor(t *testing.T) {
	peerRouteTimeout = time.Second // MaxRouteWait: 4 s
	defer func() { peerRouteTimeout = 0 }()
	_, nc := startServer(t, false)
	slow := func(c *registry.Config[pstate, pnote]) {
		c.Open = func(id string, s journal.Store) (*journal.Machine[pstate, pnote], error) {
			return journal.Open(s, pmodel, journal.Options[pstate, pnote]{Codec: journal.JSON[pstate, pnote](nil), Logger: c.Logger},
				automata.WithAdmission(func(_ pstate, in pnote) (pnote, error) {
					if in.Text == "slow" {
						time.Sleep(2500 * time.Millisecond) // 2.5 RouteTimeouts
					}
					in.By = "host-a"
					return in, nil
				}))
		}
	}
	a, err := startPeerHost(nc, peerConfig(), "host-a", quietLog(t), slow)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.close() })
	b, err := startPeerHost(nc, peerConfig(), "host-b", quietLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.close() })
	a.reg.Create("agent-1", "")
	mustPost(t, a.url, "agent-1", "first")
	if body := mustPost(t, b.url, "agent-1", "slow"); !strings.Contains(body, `"seq":2`) {
		t.Errorf("the slow input through b: %s, want seq 2", body)
	}
	ag, release, err := a.reg.Get(context.Background(), "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if notes := ag.Machine().Current().Notes; len(notes) != 2 || notes[1] != (pnote{Text: "slow", By: "host-a"}) {
		t.Errorf("a's notes: %+v, want the slow one applied once, by a", notes)
	}
}

// TestRoutedBodyIsBounded: a request routed to a peer is read once, to be
// sent again where safe, and no more of it than the bridge takes
// (Bridge.MaxBody, 64 KiB by default): a larger one is refused 413 where
// it came in, and nothing reaches the owner.
func TestRoutedBodyIsBounded(t *testing.T) {
	hs := startPeers(t, "host-a", "host-b")
	a, b := hs[0], hs[1]
	a.reg.Create("agent-1", "")
	mustPost(t, a.url, "agent-1", "first")
	big := `{"text":"` + strings.Repeat("x", 1<<20) + `"}`
	req, _ := http.NewRequest(http.MethodPost, b.url+"/agents/agent-1/inputs", strings.NewReader(big))
	req.Header.Set("Authorization", "Bearer "+peerToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "65536") {
		t.Errorf("a 1 MiB input through b: %s %s", resp.Status, body)
	}
	ag, release, err := a.reg.Get(context.Background(), "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if n := len(ag.Machine().Current().Notes); n != 1 {
		t.Errorf("the owner's agent has %d notes, want the first only", n)
	}
}

// TestAdvertiseRefusesBadURLs: what a process advertises, which its peers
// send requests to, is an http or https URL with a host, of at most 2,048
// bytes.
func TestAdvertiseRefusesBadURLs(t *testing.T) {
	_, nc := startServer(t, false)
	f, err := jetstream.OpenFleet(context.Background(), nc, peerConfig(), "host-a")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, u := range []string{"", "ftp://h/", "http://", "/api", "http://h/" + strings.Repeat("a", 2048), "http://h\x00/"} {
		if err := f.Advertise(u); err == nil {
			t.Errorf("Advertise(%.40q) succeeded", u)
		}
	}
	if err := f.Advertise("http://127.0.0.1:8081/api"); err != nil {
		t.Fatal(err)
	}
}

// TestFencedOwnerAnswers503: an input without an id (no Config.InputID)
// that reaches an owner whose journal another process took meanwhile (its
// store fenced at the append) is answered 503 with Retry-After, for the
// client to send it again: not 422, which would tell it the input itself
// was at fault, and not sent on to the new owner, which could apply it a
// second time if the append's outcome was unknown.
func TestFencedOwnerAnswers503(t *testing.T) {
	_, nc := startServer(t, false)
	peerInputID = nil
	defer func() { peerInputID = func(n pnote) string { return n.Text } }()
	// A long TTL: the owner renews its lease seldom, so that it learns of
	// the theft from its append, not from a renewal.
	cfg := jetstream.Config{TTL: 30 * time.Second, Timeout: 5 * time.Second}
	a, err := startPeerHost(nc, cfg, "host-a", quietLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.close() })
	a.reg.Create("agent-1", "")
	mustPost(t, a.url, "agent-1", "first")
	thief := openFleet(t, nc, cfg, "thief")
	ctx := context.Background()
	if err := thief.Evict(ctx, "agent-1", "host-a"); err != nil {
		t.Fatal(err)
	}
	s, err := thief.Open("agent-1")
	if err != nil {
		t.Fatalf("the thief's claim: %v", err)
	}
	defer s.Close()
	code, h, body, err := postWithHeader(http.DefaultClient, a.url, "agent-1", "second")
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || !strings.Contains(body, "fenced") {
		t.Errorf("an input to the fenced owner: %d (Retry-After %q) %s, want 503 with Retry-After naming the fence", code, h.Get("Retry-After"), body)
	}
	var texts []string
	if err := s.Scan(1, func(r journal.Record) error {
		f, err := frame.Decode(r.Data)
		if err != nil {
			return err
		}
		var n pnote
		if err := json.Unmarshal(f.Payload, &n); err != nil {
			return err
		}
		texts = append(texts, n.Text)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(texts) != 1 || texts[0] != "first" {
		t.Errorf("the journal holds %q, want only the first note", texts)
	}
}

// TestFencedOwnerSendsAnInputOn: an input with an id that reaches an owner
// whose journal another process took meanwhile is not answered 503 by the
// fenced owner: it goes to the process that has the agent now, which
// applies it, once; the fenced owner journals nothing.
func TestFencedOwnerSendsAnInputOn(t *testing.T) {
	_, nc := startServer(t, false)
	// A long TTL: the owner renews its lease seldom, so that it learns of
	// the theft from its append, not from a renewal.
	cfg := jetstream.Config{TTL: 30 * time.Second, Timeout: 5 * time.Second}
	a, err := startPeerHost(nc, cfg, "host-a", quietLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.close() })
	b, err := startPeerHost(nc, cfg, "host-b", quietLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.close() })
	a.reg.Create("agent-1", "")
	mustPost(t, a.url, "agent-1", "first")
	ctx := context.Background()
	if err := b.fleet.Evict(ctx, "agent-1", "host-a"); err != nil {
		t.Fatal(err)
	}
	_, release, err := b.reg.Get(ctx, "agent-1")
	if err != nil {
		t.Fatalf("host-b's claim: %v", err)
	}
	release()
	code, body, err := post(http.DefaultClient, a.url, "agent-1", "second")
	if err != nil || code != http.StatusOK {
		t.Fatalf("an input to the fenced owner: %d %s %v, want 200 from the new owner", code, body, err)
	}
	// Sent again: the new owner finds its id among the journaled ones.
	code, body, err = post(http.DefaultClient, a.url, "agent-1", "second")
	if err != nil || code != http.StatusOK || !strings.Contains(body, `"duplicate":true`) {
		t.Errorf("the input sent again: %d %s %v, want 200, a duplicate", code, body, err)
	}
	got, release, err := b.reg.Get(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	st := got.Machine().Current()
	if len(st.Notes) != 2 || st.Notes[0].Text != "first" || st.Notes[1].Text != "second" || st.Notes[1].By != "host-b" {
		t.Errorf("the agent's notes: %+v, want first (host-a's), then second, host-b's", st.Notes)
	}
}
