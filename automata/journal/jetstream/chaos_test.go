package jetstream_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

const peerChildEnv = "JETSTREAM_PEER_CHILD"

// chaosConfig is the configuration of the chaos test's hosts: a replicated
// stream and buckets on the three-node cluster, a 2 s TTL.
func chaosConfig() jetstream.Config {
	return jetstream.Config{TTL: 2 * time.Second, Timeout: 5 * time.Second, Replicas: 3}
}

// TestPeerHostChild is a host process of TestChaosAcrossProcesses and
// TestPausedOwnerAcrossProcesses, which run this test binary again with
// peerChildEnv set to the servers' URLs, the host's owner id and the
// replicas of the stream and buckets. It serves the fleet's agents over HTTP on a
// loopback port, routing to its peers, activates the orphans it sees, and
// says on stdout "serving <url>". It runs until its stdin ends (then it
// closes as a deployment does) or it is killed.
func TestPeerHostChild(t *testing.T) {
	env := os.Getenv(peerChildEnv)
	if env == "" {
		t.Skip("a child process of the chaos test")
	}
	f := strings.Fields(env)
	if len(f) != 3 {
		fmt.Printf("%s=%q: want urls, owner, replicas\n", peerChildEnv, env)
		os.Exit(3)
	}
	urls, owner := f[0], f[1]
	cfg := chaosConfig()
	cfg.Replicas, _ = strconv.Atoi(f[2])
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		fmt.Printf("connect failed: %v\n", err)
		os.Exit(3)
	}
	log := quietLog(t)
	h, err := startPeerHost(nc, cfg, owner, log)
	if err != nil {
		fmt.Printf("start failed: %v\n", err)
		os.Exit(3)
	}
	ctx, stop := context.WithCancel(context.Background())
	err = h.fleet.WatchOrphans(ctx, func(id string) {
		go func() {
			_, release, err := h.reg.Get(ctx, id)
			if err == nil {
				release()
			}
		}()
	})
	if err != nil {
		fmt.Printf("watch failed: %v\n", err)
		os.Exit(3)
	}
	fmt.Printf("serving %s\n", h.url)
	io.Copy(io.Discard, os.Stdin)
	stop()
	if err := h.close(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: close: %v\n", owner, err)
	}
}

// chaosHangGuard bounds the chaos test's waits for a note or a probe to be
// acknowledged: a bound against a fleet that is stuck, never reached when
// the code is right. How long they take (the failovers, the slowest note)
// depends on the machine and its load, and is measured and reported, not
// asserted.
const chaosHangGuard = 5 * time.Minute

// busyChildEnv marks a busy process of the chaos test (CHAOS_BUSY).
const busyChildEnv = "JETSTREAM_BUSY_CHILD"

// TestBusyChild is a busy process of TestChaosAcrossProcesses run with
// CHAOS_BUSY: it keeps one core busy until its stdin ends or it is killed.
func TestBusyChild(t *testing.T) {
	if os.Getenv(busyChildEnv) == "" {
		t.Skip("a child process of the chaos test")
	}
	var done atomic.Bool
	go func() {
		io.Copy(io.Discard, os.Stdin)
		done.Store(true)
	}()
	for x := uint64(1); !done.Load(); x = x*6364136223846793005 + 1 {
	}
}

// oversubscribe starts n processes that keep a core busy each until the
// test ends: the chaos test run with CHAOS_BUSY=4 on two cores runs its
// hosts and servers on a machine that has less than a third of a core
// for each of its processes.
func oversubscribe(t *testing.T, n int) {
	for range n {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBusyChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), busyChildEnv+"=1")
		stdin, err := cmd.StdinPipe() // held open until the test ends
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			stdin.Close()
			cmd.Wait()
		})
	}
	t.Logf("%d busy processes beside the test (CHAOS_BUSY)", n)
}

// chaosHost is a host process of the chaos test.
type chaosHost struct {
	slot  int
	owner string
	url   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
}

// chaos is the chaos test's world: the hosts, and what the clients saw.
type chaos struct {
	t            *testing.T
	urls         string // the NATS servers'
	replicas     int
	mu           sync.Mutex
	hosts        []*chaosHost // by slot; nil while one restarts
	incarnations int
}

func (c *chaos) start(slot int) *chaosHost {
	c.mu.Lock()
	c.incarnations++
	owner := fmt.Sprintf("h%d-%d", slot, c.incarnations)
	c.mu.Unlock()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPeerHostChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d", peerChildEnv, c.urls, owner, c.replicas))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	h := &chaosHost{slot: slot, owner: owner, cmd: cmd, stdin: stdin, done: make(chan struct{})}
	serving := make(chan string, 1)
	go func() {
		defer close(h.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "serving "); ok {
				serving <- u
			} else {
				c.t.Logf("%s: %s", owner, sc.Text())
			}
		}
		cmd.Wait()
	}()
	select {
	case h.url = <-serving:
	case <-h.done:
		c.t.Fatalf("host %s ended before serving", owner)
	case <-time.After(chaosHangGuard):
		c.t.Fatalf("host %s did not serve within %v", owner, chaosHangGuard)
	}
	c.mu.Lock()
	c.hosts[slot] = h
	c.mu.Unlock()
	return h
}

// kill kills the host of slot with SIGKILL and waits for it to be gone.
func (c *chaos) kill(slot int) *chaosHost {
	c.mu.Lock()
	h := c.hosts[slot]
	c.hosts[slot] = nil
	c.mu.Unlock()
	h.cmd.Process.Kill()
	<-h.done
	return h
}

// slotOf returns the slot of the live host named owner, or -1.
func (c *chaos) slotOf(owner string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, h := range c.hosts {
		if h != nil && h.owner == owner {
			return i
		}
	}
	return -1
}

// pick returns a live host's URL at random, other than the one of slot
// not (-1: any).
func (c *chaos) pick(not int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var live []string
	for i, h := range c.hosts {
		if h != nil && i != not {
			live = append(live, h.url)
		}
	}
	if len(live) == 0 {
		return ""
	}
	return live[rand.IntN(len(live))]
}

// TestChaosAcrossProcesses: three host processes serve 200 agents over HTTP
// on a three-node JetStream cluster; each agent is activated by its first
// request, wherever it lands. 50 clients follow one agent each through the
// state stream of a host picked at random (again at each reconnect), and
// writers post notes to agents through hosts picked at random, each note
// until it is acknowledged. Every few seconds one host is killed with
// SIGKILL and restarted, 20 rounds. Then: every note was acknowledged
// (chaosHangGuard bounds the wait), every acknowledged note is in its
// agent's journal once, and no note is
// there twice; every note was journaled by the owner of the latest
// owner-epoch record before it (no append by a fenced owner, no agent
// active in two hosts at once); every client saw each delta start where
// the one before ended, and holds the view a fresh snapshot shows; no
// request was answered other than 200, or 503 with Retry-After (sent again
// then, as a client does). Each round also measures a failover: from the
// SIGKILL of an agent's owner to the next acknowledged input to that agent
// through another host. CHAOS_ROUNDS sets the rounds; CHAOS_BUSY=n runs it
// beside n processes that keep a core busy each (oversubscribe).
func TestChaosAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("three host processes killed 20 times")
	}
	rounds := 20
	if s := os.Getenv("CHAOS_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("CHAOS_BUSY"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 64 {
			t.Fatalf("CHAOS_BUSY=%q: want the number of busy processes, 0 to 64", s)
		}
		oversubscribe(t, n)
	}
	const agents, followers, writers = 200, 50, 6
	began := time.Now()
	nc, urls := startClusterServers(t)
	c := &chaos{t: t, urls: urls, replicas: 3, hosts: make([]*chaosHost, 3)}
	ctx := context.Background()
	admin, err := jetstream.OpenFleet(ctx, nc, chaosConfig(), "chaos-test")
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, agents)
	for i := range ids {
		ids[i] = fmt.Sprintf("agent-%03d", i)
		if err := admin.Create(ids[i], journal.AgentInfo{Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("cluster and agents ready at %v", time.Since(began).Round(time.Millisecond))
	for slot := range c.hosts {
		c.start(slot)
	}
	t.Logf("hosts serving at %v", time.Since(began).Round(time.Millisecond))
	defer func() {
		for slot := range c.hosts {
			c.mu.Lock()
			h := c.hosts[slot]
			c.mu.Unlock()
			if h != nil {
				h.stdin.Close() // closes as a deployment does
				select {
				case <-h.done:
				case <-time.After(30 * time.Second):
					h.cmd.Process.Kill()
					<-h.done
				}
			}
		}
	}()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	// The followers: each follows its agent until the test ends, picking
	// a host at random at each (re)connection.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stopOnce sync.Once
	stopClients := func() {
		stopOnce.Do(func() { close(stop) })
		wg.Wait()
	}
	defer stopClients() // a Fatal ends the test only once they are done
	fols := make([]*follower, followers)
	var folMu sync.Mutex // guards the followers' fields
	var broken atomic.Int64
	for i := range fols {
		fols[i] = &follower{}
		wg.Go(func() {
			f := fols[i]
			for {
				select {
				case <-stop:
					return
				default:
				}
				base := c.pick(-1)
				if base == "" {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				sctx, cancel := context.WithCancel(context.Background())
				go func() {
					select {
					case <-stop:
					case <-sctx.Done():
					}
					cancel()
				}()
				var mine follower
				folMu.Lock()
				mine = *f
				folMu.Unlock()
				err := mine.follow(sctx, client, base, ids[i], func(string) {})
				cancel()
				folMu.Lock()
				*f = mine
				folMu.Unlock()
				if pe := (*protocolError)(nil); errors.As(err, &pe) {
					t.Errorf("follower of %s: %v", ids[i], err)
					broken.Add(1)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}

	// The writers.
	var ackMu sync.Mutex
	acked := map[string]string{} // note -> agent
	whyNot := map[string]int{}   // what the writers got instead, by status
	var slowest time.Duration    // from a note's first POST to its acknowledgement
	var unacked, posts atomic.Int64
	for w := range writers {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-time.After(15 * time.Millisecond):
				}
				base := c.pick(-1)
				if base == "" {
					continue
				}
				id, text := ids[rand.IntN(agents)], fmt.Sprintf("w%d-%d", w, n)
				// Sent until acknowledged, through any host: its text is
				// its id, so that a note whose answer was lost is applied
				// once however often it is sent.
				sent := time.Now()
				for attempt := 0; ; attempt++ {
					if attempt > 0 {
						base = c.pick(-1)
						time.Sleep(10 * time.Millisecond)
					}
					code, h, body, err := postWithHeader(client, base, id, text)
					posts.Add(1)
					if err == nil && code == http.StatusOK {
						ackMu.Lock()
						acked[text] = id
						slowest = max(slowest, time.Since(sent))
						ackMu.Unlock()
						break
					}
					why := strconv.Itoa(code)
					switch {
					case err != nil:
						why = "no answer" // the host it was sent to was killed
					case code == http.StatusServiceUnavailable && h.Get("Retry-After") != "":
						why = "503, Retry-After"
					}
					ackMu.Lock()
					if whyNot[why]++; whyNot[why] <= 3 {
						t.Logf("a writer's POST %s to %s through %s: %d %s %v", text, id, base, code, body, err)
					}
					ackMu.Unlock()
					if time.Since(sent) > chaosHangGuard {
						t.Errorf("note %s to %s not acknowledged within %v", text, id, chaosHangGuard)
						unacked.Add(1)
						break
					}
				}
			}
		})
	}

	// The rounds.
	var failovers []time.Duration
	// On a slow machine the rounds end early rather than run into the
	// test binary's deadline (go test -timeout, 10 minutes by default):
	// what they must show is checked over the rounds that ran.
	deadline, bounded := t.Deadline()
	for r := range rounds {
		if r > 0 && bounded && time.Until(deadline) < chaosHangGuard/2 {
			t.Logf("%d of %d rounds: %v left before the test's deadline (go test -timeout)", r, rounds, time.Until(deadline).Round(time.Second))
			rounds = r
			break
		}
		time.Sleep(time.Duration(1500+rand.IntN(1500)) * time.Millisecond)
		slot := r % len(c.hosts)
		c.mu.Lock()
		victim := c.hosts[slot]
		c.mu.Unlock()
		// An agent of the victim's: a probe agent it activates.
		probe := fmt.Sprintf("probe-%02d", r)
		if err := admin.Create(probe, journal.AgentInfo{Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
		// Sent as the writers send: again after a 503 with Retry-After.
		for sent := time.Now(); ; time.Sleep(100 * time.Millisecond) {
			code, h, body, err := postWithHeader(client, victim.url, probe, probe+"-before")
			if err == nil && code == http.StatusOK {
				break
			}
			if err != nil || code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || time.Since(sent) > chaosHangGuard {
				t.Fatalf("round %d: the probe through %s: %d %s %v", r, victim.owner, code, body, err)
			}
		}
		// It is the victim's, as a rule; another host's if the victim's
		// lease ran out meanwhile (a host starved of CPU): the round
		// kills the one that has it.
		owner, _, _, err := admin.Locate(ctx, probe)
		if err != nil {
			t.Fatalf("round %d: locating the probe: %v", r, err)
		}
		if slot = c.slotOf(owner); slot < 0 {
			t.Fatalf("round %d: the probe is %q's, not a live host's", r, owner)
		}
		c.mu.Lock()
		victim = c.hosts[slot]
		c.mu.Unlock()
		killed := time.Now()
		c.kill(slot)
		var took time.Duration
		for k := 0; ; k++ {
			code, body, err := post(client, c.pick(slot), probe, fmt.Sprintf("%s-after-%d", probe, k))
			if err == nil && code == http.StatusOK {
				took = time.Since(killed)
				break
			}
			if time.Since(killed) > chaosHangGuard {
				t.Fatalf("round %d: no input to %s acknowledged within %v of killing %s: %d %s %v", r, probe, chaosHangGuard, victim.owner, code, body, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		failovers = append(failovers, took)
		c.start(slot)
		t.Logf("round %d: killed %s; failover %v", r+1, victim.owner, took.Round(time.Millisecond))
	}
	stopClients()
	t.Logf("rounds over at %v", time.Since(began).Round(time.Millisecond))

	// Every follower holds what a fresh snapshot shows.
	for i, f := range fols {
		var fresh follower
		fctx, cancel := context.WithCancel(context.Background())
		err := fresh.follow(fctx, client, c.pick(-1), ids[i], func(string) { cancel() })
		cancel()
		if fresh.view == nil {
			t.Fatalf("a snapshot of %s: %v", ids[i], err)
		}
		if f.seq != fresh.seq {
			// It ended between two events: catch it up.
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			f.follow(cctx, client, c.pick(-1), ids[i], func(string) {
				if f.seq >= fresh.seq {
					cancel()
				}
			})
			cancel()
		}
		if f.seq != fresh.seq || !reflect.DeepEqual(f.view, fresh.view) {
			t.Errorf("follower of %s at %d holds %v; a fresh snapshot at %d: %v", ids[i], f.seq, f.view, fresh.seq, fresh.view)
		}
	}
	t.Logf("followers checked at %v", time.Since(began).Round(time.Millisecond))
	deltas, resyncs := 0, 0
	for _, f := range fols {
		deltas += f.deltas
		resyncs += f.resyncs
	}

	// The journals.
	found := map[string]int{}
	notes, epochs, fencedAppends, owners := checkPeerJournals(t, nc, found)
	if testing.Verbose() {
		for _, id := range ids[:10] {
			t.Logf("%s: owners %v", id, owners[id])
		}
	}
	t.Logf("journals read at %v", time.Since(began).Round(time.Millisecond))
	lost := 0
	for text, id := range acked {
		if found[text] != 1 {
			lost++
			t.Errorf("acknowledged note %s to %s is in the journal %d times", text, id, found[text])
		}
	}
	twice := 0
	for text, n := range found {
		if n > 1 {
			twice++
			t.Errorf("note %s is in the journal %d times", text, n)
		}
	}
	p50, p99 := percentiles(failovers)
	t.Logf("%d rounds: %d posts, %d notes acknowledged, %d not; the posts not answered 200: %v; %d notes journaled, %d owner-epoch records; "+
		"%d acknowledged lost, %d journaled twice, %d appends by a fenced owner; followers: %d deltas, %d resyncs, %d broken; "+
		"failover p50 %v p99 %v (TTL %v); the slowest note acknowledged %v after its first POST",
		rounds, posts.Load(), len(acked), unacked.Load(), whyNot, notes, epochs, lost, twice, fencedAppends, deltas, resyncs, broken.Load(),
		p50.Round(time.Millisecond), p99.Round(time.Millisecond), chaosConfig().TTL, slowest.Round(time.Millisecond))
	if len(acked) == 0 {
		t.Error("no note was acknowledged")
	}
	// A writer may see its request cut off when the host it sent it to
	// is killed, or be told to send it again later (503 with
	// Retry-After: the agent is moving, or the journal's servers are
	// electing a leader); it is never refused, and nothing fails.
	for why, n := range whyNot {
		if why != "no answer" && why != "503, Retry-After" {
			t.Errorf("%d POSTs were answered %s", n, why)
		}
	}
}

// checkPeerJournals reads the journal stream once, message by message:
// in each agent's journal every note must carry, as By, the owner of the
// latest owner-epoch record before it, and the epochs must rise. It counts
// each note's text in found, and returns the notes, the epoch records and
// the notes appended by an owner that was not the latest, and each agent's
// owners in order.
func checkPeerJournals(t *testing.T, nc *nats.Conn, found map[string]int) (notes, epochs, bad int, owners map[string][]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	j, err := js.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "moora.journal.in."
	cons, err := j.OrderedConsumer(ctx, "MOORA_JOURNAL", js.OrderedConsumerConfig{FilterSubjects: []string{prefix + ">"}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	type agentAt struct {
		owner string
		epoch uint64
	}
	at := map[string]*agentAt{}
	owners = map[string][]string{}
	for {
		msg, err := it.Next(js.NextContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		id := strings.TrimPrefix(msg.Subject(), prefix)
		a := at[id]
		if a == nil {
			a = &agentAt{}
			at[id] = a
		}
		if e := msg.Headers().Get("Moora-Epoch"); e != "" {
			n, _ := strconv.ParseUint(e, 10, 64)
			if n <= a.epoch {
				t.Errorf("%s: epoch %d after %d", id, n, a.epoch)
			}
			a.owner, a.epoch = msg.Headers().Get("Moora-Owner"), n
			owners[id] = append(owners[id], a.owner)
			epochs++
		} else {
			for f, in := range messageInputs[pnote](t, msg) {
				notes++
				found[in.Text]++
				if in.By != a.owner {
					bad++
					t.Errorf("%s: note %d (%s) journaled by %s after %s's epoch record", id, f.Seq, in.Text, in.By, a.owner)
				}
			}
		}
		meta, err := msg.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		if meta.NumPending == 0 {
			return notes, epochs, bad, owners
		}
	}
}

// TestPausedOwnerAcrossProcesses: an owner that is paused (SIGSTOP) takes
// connections and answers nothing. A request for its agent through
// another host is served there once the paused owner's lease has expired:
// within the TTL and a check (ownerCheckEvery) or two, not the
// RouteTimeout. The owner, woken up, is fenced and drops the agent;
// requests through it are routed to the new owner, and the journal holds
// no note of the old owner's after the new owner's epoch record.
func TestPausedOwnerAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("host processes")
	}
	srv, nc := startServer(t, true)
	c := &chaos{t: t, urls: srv.URL(), replicas: 1, hosts: make([]*chaosHost, 2)}
	cfg := chaosConfig()
	cfg.Replicas = 1
	admin, err := jetstream.OpenFleet(context.Background(), nc, cfg, "pause-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Create("agent-p", journal.AgentInfo{Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	a, b := c.start(0), c.start(1)
	defer func() {
		for _, h := range []*chaosHost{a, b} {
			h.cmd.Process.Signal(syscall.SIGCONT)
			h.stdin.Close()
			<-h.done
		}
	}()
	if code, body, err := post(http.DefaultClient, a.url, "agent-p", "one"); err != nil || code != http.StatusOK {
		t.Fatalf("through a: %d %s %v", code, body, err)
	}
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, a.cmd.Process.Pid)
	paused := time.Now()
	code, body, err := post(http.DefaultClient, b.url, "agent-p", "two")
	took := time.Since(paused)
	if err != nil || code != http.StatusOK {
		t.Fatalf("through b while a is paused: %d %s %v (after %v)", code, body, err, took)
	}
	t.Logf("served through b %v after pausing the owner (TTL %v)", took.Round(time.Millisecond), cfg.TTL)
	if owner, _, _, _ := admin.Locate(context.Background(), "agent-p"); owner != b.owner {
		t.Errorf("the agent is %q's, want %s's", owner, b.owner)
	}
	a.cmd.Process.Signal(syscall.SIGCONT)
	if code, body, err := post(http.DefaultClient, a.url, "agent-p", "three"); err != nil || code != http.StatusOK {
		t.Fatalf("through a, woken up: %d %s %v", code, body, err)
	}
	found := map[string]int{}
	notes, epochs, bad, owners := checkPeerJournals(t, nc, found)
	if notes != 3 || bad != 0 || found["one"] != 1 || found["two"] != 1 || found["three"] != 1 {
		t.Errorf("the journal: %d notes %v, %d epochs of %v, %d appended by a fenced owner", notes, found, epochs, owners, bad)
	}
}
