package jetstream_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/internal/frame"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// The hosts' model: notes, and requests that a job answers after WorkMS.
// Every input carries By, the host that journaled it, stamped on admission.
type hstate struct {
	Notes    []string `json:"notes"`
	Pending  []hreq   `json:"pending"`
	Answered []int    `json:"answered"`
}

type hreq struct {
	ID     int `json:"id"`
	WorkMS int `json:"work_ms"`
}

type hinput struct {
	Note    string `json:"note,omitempty"`
	Request *hreq  `json:"request,omitempty"`
	Answer  int    `json:"answer,omitempty"`
	By      string `json:"by"`
}

var hmodel = automata.Definition[hstate, hinput]{
	Initial: func() hstate { return hstate{} },
	Transition: func(s hstate, in hinput) hstate {
		switch {
		case in.Note != "":
			s.Notes = automata.Append(s.Notes, in.Note)
		case in.Request != nil:
			if !slices.ContainsFunc(s.Pending, func(r hreq) bool { return r.ID == in.Request.ID }) && !slices.Contains(s.Answered, in.Request.ID) {
				s.Pending = automata.Append(s.Pending, *in.Request)
			}
		case in.Answer != 0:
			if i := slices.IndexFunc(s.Pending, func(r hreq) bool { return r.ID == in.Answer }); i >= 0 {
				s.Pending = slices.Delete(slices.Clone(s.Pending), i, i+1)
				s.Answered = automata.Append(s.Answered, in.Answer)
			}
		}
		return s
	},
}

// testTTL is the leases' TTL in the process tests: short, so that a
// failover takes about a second.
const testTTL = time.Second

// failoverMargin is what a failover may take beyond the TTL: the lease
// expires at most TTL after the owner's last renewal; then the expiry
// marker reaches the other hosts, one claims the agent, fences the journal,
// replays it and starts the job. Generous, for a loaded 2-core machine
// running the race detector.
const failoverMargin = 5 * time.Second

func testConfig() jetstream.Config { return jetstream.Config{TTL: testTTL, Timeout: 5 * time.Second} }

const hostChildEnv = "JETSTREAM_HOST_CHILD"

// TestHostChild is a host process of the failover and fencing tests, which
// run this test binary again with hostChildEnv set to the server's URL and
// the host's id. It runs a Host over agent "a1" and reads commands on
// stdin:
//
//	note <text>         dispatch a note
//	req <id> <ms>       dispatch a request whose job works <ms> ms
//
// and reports on stdout, one line per fact:
//
//	claimed <agent> / dropped <agent> <why>
//	started <key> / answered <key> / ended <key>    a job's life
//	ack <what> / nack <what> <err>                  a command's Dispatch
func TestHostChild(t *testing.T) {
	env := os.Getenv(hostChildEnv)
	if env == "" {
		t.Skip("a child process of the failover tests")
	}
	url, id, _ := strings.Cut(env, " ")
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
		out.Unlock()
	}
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		say("connect failed: %v", err)
		os.Exit(3)
	}
	jobs := func(s hstate) map[string]automata.Job[hinput] {
		jobs := map[string]automata.Job[hinput]{}
		for _, r := range s.Pending {
			jobs[fmt.Sprintf("req-%d", r.ID)] = func(ctx context.Context, dispatch automata.Dispatch[hinput]) error {
				key := automata.JobKey(ctx)
				say("started %s", key)
				defer say("ended %s", key)
				select {
				case <-time.After(time.Duration(r.WorkMS) * time.Millisecond):
				case <-ctx.Done():
					return ctx.Err()
				}
				dispatch(hinput{Answer: r.ID})
				say("answered %s", key)
				return nil
			}
		}
		return jobs
	}
	h, err := jetstream.StartHost(context.Background(), nc, jetstream.HostOptions[hstate, hinput]{
		ID:         id,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Config:     testConfig(),
		Definition: hmodel,
		Journal:    journal.Options[hstate, hinput]{Codec: journal.JSON[hstate, hinput](nil), SnapshotEvery: 20},
		Options: func(string) []automata.Option[hstate, hinput] {
			return []automata.Option[hstate, hinput]{
				automata.WithJobs(jobs),
				automata.WithAdmission(func(_ hstate, in hinput) (hinput, error) {
					in.By = id
					return in, nil
				}),
			}
		},
		OnChange: func(agent string, owned bool, err error) {
			if owned {
				say("claimed %s", agent)
			} else {
				say("dropped %s %v", agent, err)
			}
		},
	})
	if err != nil {
		say("start failed: %v", err)
		os.Exit(3)
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		var in hinput
		switch {
		case len(f) == 2 && f[0] == "note":
			in.Note = f[1]
		case len(f) == 3 && f[0] == "req":
			idn, _ := strconv.Atoi(f[1])
			ms, _ := strconv.Atoi(f[2])
			in.Request = &hreq{ID: idn, WorkMS: ms}
		default:
			say("bad command %q", sc.Text())
			continue
		}
		what := strings.Join(f[:2], " ")
		if err := h.Dispatch(context.Background(), "a1", in); err != nil {
			say("nack %s %v", what, err)
		} else {
			seq := uint64(0)
			if m, ok := h.Machine("a1"); ok {
				seq = m.Seq()
			}
			say("ack %s at %d", what, seq)
		}
	}
	h.Close(context.Background())
}

// cluster is the hosts of a process test and what they said.
type cluster struct {
	t     testing.TB
	url   string
	next  int
	mu    sync.Mutex
	lines []hostLine
	wake  chan struct{}
	procs map[string]*hostProc
}

type hostLine struct {
	at   time.Time
	host string
	text string
}

type hostProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
}

func newCluster(t testing.TB, url string) *cluster {
	c := &cluster{t: t, url: url, wake: make(chan struct{}), procs: map[string]*hostProc{}}
	t.Cleanup(func() {
		for _, p := range c.procs {
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return c
}

// start starts a host process.
func (c *cluster) start() string {
	c.next++
	id := fmt.Sprintf("host-%d", c.next)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), hostChildEnv+"="+c.url+" "+id)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	p := &hostProc{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	c.procs[id] = p
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.mu.Lock()
			c.lines = append(c.lines, hostLine{time.Now(), id, sc.Text()})
			close(c.wake)
			c.wake = make(chan struct{})
			c.mu.Unlock()
		}
		cmd.Wait()
	}()
	return id
}

func (c *cluster) send(host, format string, args ...any) {
	fmt.Fprintf(c.procs[host].stdin, format+"\n", args...)
}

// kill ends a host with SIGKILL and waits for its end.
func (c *cluster) kill(host string) {
	p := c.procs[host]
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	delete(c.procs, host)
}

// wait waits for the first line from index from on that match accepts, and
// returns its index. The bound only catches a hang.
func (c *cluster) wait(from int, what string, match func(hostLine) bool) (int, hostLine) {
	c.t.Helper()
	timeout := time.After(90 * time.Second)
	for {
		c.mu.Lock()
		for i := from; i < len(c.lines); i++ {
			if match(c.lines[i]) {
				l := c.lines[i]
				c.mu.Unlock()
				return i, l
			}
		}
		from = len(c.lines)
		wake := c.wake
		c.mu.Unlock()
		select {
		case <-wake:
		case <-timeout:
			c.mu.Lock()
			var tail []string
			for _, l := range c.lines[max(0, len(c.lines)-40):] {
				tail = append(tail, l.host+": "+l.text)
			}
			c.mu.Unlock()
			c.t.Fatalf("waited 90s for %s; the hosts said last:\n%s", what, strings.Join(tail, "\n"))
		}
	}
}

func (c *cluster) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.lines)
}

// owner waits until some live host runs a1, and returns it.
func (c *cluster) owner() string {
	c.t.Helper()
	for {
		c.mu.Lock()
		owner := ""
		for _, l := range c.lines {
			switch {
			case l.text == "claimed a1":
				owner = l.host
			case strings.HasPrefix(l.text, "dropped a1") && owner == l.host:
				owner = ""
			}
		}
		c.mu.Unlock()
		if _, alive := c.procs[owner]; owner != "" && alive {
			return owner
		}
		c.wait(c.mark(), "an owner of a1", func(l hostLine) bool { return l.text == "claimed a1" })
	}
}

// command sends a command to host and waits for its ack or nack.
func (c *cluster) command(host, cmd string) (acked bool, reply string) {
	c.t.Helper()
	from := c.mark()
	c.send(host, "%s", cmd)
	what := strings.Join(strings.Fields(cmd)[:2], " ")
	_, l := c.wait(from, "the reply to "+cmd, func(l hostLine) bool {
		return l.host == host && (strings.HasPrefix(l.text, "ack "+what+" ") || strings.HasPrefix(l.text, "nack "+what+" "))
	})
	return strings.HasPrefix(l.text, "ack "), l.text
}

// commandOwner sends cmd to the owner of a1 and waits for its ack. A nack
// of a host that no longer holds a1 (a stall of the machine longer than
// what is left of its lease makes it give the agent up: fencing, as it
// must be) is not an answer of the owner's: cmd, which nothing applied,
// is sent to the owner found again, a few times. It returns the host that
// acked, or the last refusal.
func (c *cluster) commandOwner(cmd string) (owner string, acked bool, reply string) {
	c.t.Helper()
	for attempt := 1; ; attempt++ {
		owner = c.owner()
		if acked, reply = c.command(owner, cmd); acked || attempt == 5 || !gaveUp(reply) {
			return owner, acked, reply
		}
		c.t.Logf("%s: %s no longer holds a1 (%s): sent again", cmd, owner, reply)
		time.Sleep(200 * time.Millisecond)
	}
}

// gaveUp says whether a nack is a host's that does not, or no longer,
// hold the agent.
func gaveUp(reply string) bool {
	return strings.Contains(reply, "not here") || strings.Contains(reply, "fenced") || strings.Contains(reply, "lost the lease")
}

func rounds() int {
	if testing.Short() {
		return 3
	}
	return 20
}

// TestFailoverAcrossProcesses: three host processes on one server; the
// owner of an agent is killed with SIGKILL in the middle of a job, at a
// random moment; another host takes the agent over within TTL + margin,
// the job runs again under the same key, and every acknowledged input is
// in the journal exactly once. Repeated, with a fresh host replacing the
// killed one each round.
func TestFailoverAcrossProcesses(t *testing.T) {
	f := newFailovers(t)
	for round := range rounds() {
		took := f.round(round)
		if took > testTTL+failoverMargin {
			t.Errorf("round %d: the job restarted %v after its owner was killed, more than the TTL %v + %v", round, took, testTTL, failoverMargin)
		}
	}
	f.check()
	p50, p99 := percentiles(f.took)
	t.Logf("failover, owner killed to job restarted, over %d runs: p50 %v, p99 %v", len(f.took), p50.Round(time.Millisecond), p99.Round(time.Millisecond))
}

// BenchmarkFailover: the rounds of TestFailoverAcrossProcesses, b.N of
// them; reports the time from the owner's SIGKILL to the job's restart on
// another host, p50 and p99 over the rounds. (ns/op is a whole round:
// inputs, the job, the kill, the takeover, the job's end, a new host.)
func BenchmarkFailover(b *testing.B) {
	f := newFailovers(b)
	f.c.owner() // the first claim is not a failover
	b.ResetTimer()
	for round := range b.N {
		f.round(round)
	}
	b.StopTimer()
	f.check()
	p50, p99 := percentiles(f.took)
	b.ReportMetric(float64(p50)/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(p99)/float64(time.Millisecond), "p99-ms")
}

// failovers runs rounds of failover on three host processes and keeps
// what they took.
type failovers struct {
	t     testing.TB
	c     *cluster
	nc    *nats.Conn
	rng   *rand.Rand
	acked map[string]int // note or request -> acks
	took  []time.Duration
}

func newFailovers(t testing.TB) *failovers {
	srv, nc := startServer(t, true)
	c := newCluster(t, srv.URL())
	setupAgent(t, nc)
	for range 3 {
		c.start()
	}
	return &failovers{t: t, c: c, nc: nc, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 14)), acked: map[string]int{}}
}

// round sends the owner of a1 three notes and a request whose job works
// 800 ms, kills the owner with SIGKILL at a random moment of the job,
// waits until another host has restarted the job and it has answered, and
// starts a host to replace the killed one. It returns the time from the
// kill to the job's restart.
func (f *failovers) round(round int) time.Duration {
	t, c := f.t, f.c
	t.Helper()
	owner := c.owner()
	for i := range 3 {
		note := fmt.Sprintf("r%d-n%d", round, i)
		if ok, reply := c.command(owner, "note "+note); ok {
			f.acked["note "+note]++
		} else {
			t.Logf("round %d: %s", round, reply)
		}
	}
	id := 1000 + round
	key := fmt.Sprintf("req-%d", id)
	from := c.mark()
	owner, ok, reply := c.commandOwner(fmt.Sprintf("req %d 800", id))
	if !ok {
		t.Fatalf("round %d: the owner %s refused the request: %s", round, owner, reply)
	}
	f.acked[fmt.Sprintf("req %d", id)]++
	c.wait(from, key+" started", func(l hostLine) bool { return l.host == owner && l.text == "started "+key })
	time.Sleep(time.Duration(f.rng.IntN(300)) * time.Millisecond) // a random moment of the job
	from = c.mark()
	killed := time.Now()
	c.kill(owner)
	_, l := c.wait(from, key+" restarted elsewhere", func(l hostLine) bool { return l.host != owner && l.text == "started "+key })
	took := l.at.Sub(killed)
	f.took = append(f.took, took)
	c.wait(from, key+" answered", func(m hostLine) bool { return m.host != owner && m.text == "answered "+key })
	c.start()
	t.Logf("round %d: %s killed, %s restarted %s after %v", round, owner, l.host, key, took.Round(time.Millisecond))
	return took
}

// check checks the journal: every acknowledged input in it exactly once.
func (f *failovers) check() { checkJournal(f.t, f.nc, f.acked, nil) }

// TestFencingAcrossProcesses: the owner is stopped with SIGSTOP in the
// middle of a job; another host takes over; SIGCONT: the old owner's
// appends are refused, it drops the agent and its jobs end, and not one
// input of its is journaled after the new owner's epoch record.
func TestFencingAcrossProcesses(t *testing.T) {
	srv, nc := startServer(t, true)
	c := newCluster(t, srv.URL())
	setupAgent(t, nc)
	for range 3 {
		c.start()
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 15))
	acked := map[string]int{}
	refused := map[string]bool{}
	for round := range rounds() {
		id := 2000 + round
		key := fmt.Sprintf("req-%d", id)
		from := c.mark()
		owner, ok, refusal := c.commandOwner(fmt.Sprintf("req %d %d", id, 600+rng.IntN(900)))
		if !ok {
			t.Fatalf("round %d: the owner %s refused the request: %s", round, owner, refusal)
		}
		acked[fmt.Sprintf("req %d", id)]++
		c.wait(from, key+" started", func(l hostLine) bool { return l.host == owner && l.text == "started "+key })
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		p := c.procs[owner]
		p.cmd.Process.Signal(syscall.SIGSTOP)
		waitStopped(t, p.cmd.Process.Pid)
		late := fmt.Sprintf("late-%d", round)
		c.send(owner, "note %s", late) // read once it runs again
		_, l := c.wait(from, key+" taken over", func(l hostLine) bool { return l.host != owner && l.text == "started "+key })
		time.Sleep(time.Duration(rng.IntN(700)) * time.Millisecond)
		stopped := from
		from = c.mark()
		p.cmd.Process.Signal(syscall.SIGCONT)
		c.wait(from, owner+" dropping a1", func(m hostLine) bool { return m.host == owner && strings.HasPrefix(m.text, "dropped a1") })
		_, reply := c.wait(stopped, owner+"'s reply to the late note", func(m hostLine) bool {
			return m.host == owner && strings.Contains(m.text, "note "+late)
		})
		// The note may have been journaled before the stop took hold, and
		// be acknowledged as the owner runs again: then it is in the
		// journal once, before the new owner's epoch record; refused, it
		// is not in the journal at all.
		if strings.HasPrefix(reply.text, "ack ") {
			acked["note "+late]++
		} else {
			refused["note "+late] = true
		}
		// Answered by the new owner, or by a later one if a loaded
		// machine made it miss a renewal.
		c.wait(stopped, key+" answered", func(m hostLine) bool { return m.host != owner && m.text == "answered "+key })
		t.Logf("round %d: %s stopped, %s took over; after SIGCONT: %s", round, owner, l.host, reply.text)
	}
	// The stopped owner's jobs ended once it dropped the agent: after
	// each "dropped a1", nothing of its jobs until it claims a1 again
	// (whose jobs start as the machine opens, before "claimed a1").
	c.mu.Lock()
	dropped := map[string]bool{}
	suspect := map[string][]string{}
	for _, l := range c.lines {
		switch {
		case strings.HasPrefix(l.text, "dropped a1"):
			dropped[l.host] = true
		case l.text == "claimed a1":
			dropped[l.host], suspect[l.host] = false, nil
		case dropped[l.host] && (strings.HasPrefix(l.text, "started ") || strings.HasPrefix(l.text, "answered ")):
			suspect[l.host] = append(suspect[l.host], l.text)
		}
	}
	for host, lines := range suspect {
		if len(lines) > 0 {
			t.Errorf("%s after it dropped a1, without claiming it again: %v", host, lines)
		}
	}
	c.mu.Unlock()
	checkJournal(t, nc, acked, refused)
}

// waitStopped waits until every thread of process pid is stopped: kill
// returns before a busy process has stopped.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(tasks) == 0 {
			t.Fatalf("reading the threads of %d: %v", pid, err)
		}
		stopped := true
		for _, task := range tasks {
			data, err := os.ReadFile(task)
			if err != nil {
				stopped = false
				break
			}
			// pid (comm) state ...: the state follows the last ')'.
			i := strings.LastIndexByte(string(data), ')')
			if i < 0 || i+2 >= len(data) || (data[i+2] != 'T' && data[i+2] != 't') {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop within 30s of SIGSTOP", pid)
		}
		time.Sleep(time.Millisecond)
	}
}

func setupAgent(t testing.TB, nc *nats.Conn) {
	t.Helper()
	ctx := context.Background()
	j, err := js.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jetstream.Open(ctx, nc, testConfig(), "a1") // creates the stream and buckets
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	kv, err := j.KeyValue(ctx, "MOORA_AGENTS")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "a1", nil); err != nil {
		t.Fatal(err)
	}
}

// checkJournal reads a1's journal message by message: every input must
// carry, as By, the owner of the latest owner-epoch record before it (no
// input of a fenced owner after the fence), every acknowledged command must
// be in it exactly once, and no refused one.
func checkJournal(t testing.TB, nc *nats.Conn, acked map[string]int, refused map[string]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	j, err := js.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := j.OrderedConsumer(ctx, "MOORA_JOURNAL", js.OrderedConsumerConfig{FilterSubjects: []string{"moora.journal.in.a1"}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	found := map[string]int{}
	owner, epochs, inputs := "", 0, 0
	for {
		msg, err := it.Next(js.NextContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		if e := msg.Headers().Get("Moora-Epoch"); e != "" {
			owner = msg.Headers().Get("Moora-Owner")
			epochs++
		} else {
			for f, in := range messageInputs[hinput](t, msg) {
				inputs++
				if testing.Verbose() {
					t.Logf("journal: %d %s (epoch of %s)", f.Seq, f.Payload, owner)
				}
				if in.By != owner {
					t.Errorf("input %d (%s) journaled by %s after %s's epoch record", f.Seq, f.Payload, in.By, owner)
				}
				switch {
				case in.Note != "":
					found["note "+in.Note]++
				case in.Request != nil:
					found[fmt.Sprintf("req %d", in.Request.ID)]++
				case in.Answer != 0:
					found[fmt.Sprintf("answer %d", in.Answer)]++
				}
			}
		}
		meta, err := msg.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		if meta.NumPending == 0 {
			break
		}
	}
	for what := range refused {
		if found[what] != 0 {
			t.Errorf("refused %q is in the journal %d times", what, found[what])
		}
	}
	for what, n := range acked {
		if found[what] != 1 {
			t.Errorf("acknowledged %q is in the journal %d times, want once", what, found[what])
		}
		if id, ok := strings.CutPrefix(what, "req "); ok && found["answer "+id] != 1 {
			t.Errorf("request %s is answered %d times in the journal, want once", id, found["answer "+id])
		}
		_ = n
	}
	t.Logf("journal of a1: %d inputs, %d owner-epoch records", inputs, epochs)
}

func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.5), at(0.99)
}

// messageInputs yields the frames of the records a journal message holds
// (one, a group commit's several, or none for an epoch record), each with
// its input decoded from JSON; anything else fails t.
func messageInputs[I any](t testing.TB, msg js.Msg) iter.Seq2[frame.Frame, I] {
	return func(yield func(frame.Frame, I) bool) {
		records, err := jetstream.MessageRecords(msg.Headers(), msg.Data())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range records {
			f, err := frame.Decode(r.Data)
			if err != nil {
				t.Fatal(err)
			}
			var in I
			if err := json.Unmarshal(f.Payload, &in); err != nil {
				t.Fatal(err)
			}
			if !yield(f, in) {
				return
			}
		}
	}
}
