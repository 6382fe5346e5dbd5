package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/examples/internal/longrun"
	"github.com/moora-go/moora/examples/react/decl"
)

// The files of the long runs' workspace, besides the demo's: big.txt is
// lines of words, tok.txt one token, each of fileSize bytes.
const fileSize = 60_000

// longRuns are ReAct runs as main serves them (each an agent of its own in
// a bbolt fleet, the rule-based planner and reflector, the real tools on a
// workspace that holds two files of 60 KB), with the devpanel or without,
// that a test or a benchmark asks for one after another.
type longRuns struct {
	dir    string
	fleet  *bolt.Fleet
	runs   *runs
	srv    *httptest.Server // with the panel: the command's handler
	inputs uint64           // journaled, in every run's agent
	stop   func()
}

const longRunsToken = "long-runs"

func startLongRuns(tb testing.TB, panel bool) *longRuns {
	tb.Helper()
	dir := tb.TempDir()
	ws, err := Workspace(filepath.Join(dir, "workspace"))
	if err != nil {
		tb.Fatal(err)
	}
	for name, content := range map[string]string{"big.txt": wordFile(fileSize), "tok.txt": strings.Repeat("a", fileSize)} {
		if err := os.WriteFile(filepath.Join(dir, "workspace", name), []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	// The work of newWork offline, whatever the environment says.
	kit, err := NewKit(Tools(ws)...)
	if err != nil {
		tb.Fatal(err)
	}
	work := Work{Planner: RulePlanner{}, Reflector: RuleReflector{}, Toolkit: kit, RetryLimit: 1}
	fleet, err := bolt.OpenFleet(filepath.Join(dir, "agents.db"))
	if err != nil {
		tb.Fatal(err)
	}
	r := &longRuns{dir: dir, fleet: fleet}
	rc := runsConfig{Fleet: fleet, Work: work, MaxRuns: defaultMaxRuns}
	if panel {
		srv, err := openServer(rc, longRunsToken, nil)
		if err != nil {
			tb.Fatal(err)
		}
		r.runs, r.srv = srv.runs, httptest.NewServer(srv.http.Handler)
	} else if r.runs, err = openRuns(rc); err != nil {
		tb.Fatal(err)
	}
	r.stop = sync.OnceFunc(func() {
		if r.srv != nil {
			r.srv.CloseClientConnections()
			r.srv.Close()
		}
		if err := errors.Join(r.runs.close(context.Background()), fleet.Close()); err != nil {
			tb.Error(err)
		}
	})
	tb.Cleanup(r.stop)
	return r
}

// latest puts v in c, a channel of one, in place of what it held.
func latest[T any](c chan T, v T) {
	select {
	case <-c:
	default:
	}
	c <- v
}

// run asks for the n-th task, a run of its own, and waits until its agent
// is idle with the run ended, and, with the panel, until a page following
// the run's panel's event stream (opened before the task is asked for) has
// been shown its every input.
func (r *longRuns) run(tb testing.TB, n int, goal string) {
	tb.Helper()
	ctx := context.Background()
	runID := fmt.Sprintf("run-%d", n)
	a, release, err := r.runs.open(ctx, runID)
	if err != nil {
		tb.Fatal(err)
	}
	defer release()
	m := a.Machine()
	ended := make(chan struct{})
	var once sync.Once
	unsubscribe := m.Subscribe(func(s decl.AgentState) {
		if Idle(s) && record(s, runID).RunID != "" {
			once.Do(func() { close(ended) })
		}
	})
	defer unsubscribe()
	var shown chan uint64 // the newest input the page has been shown
	if r.srv != nil {
		shown = make(chan uint64, 1)
		stop := r.follow(tb, runID, shown)
		defer stop()
	}
	if err := m.Dispatch(ctx, decl.UserRunTask{RunID: runID, Goal: goal}); err != nil {
		tb.Fatal(err)
	}
	timeout := time.After(hangGuard)
	select {
	case <-ended:
	case <-timeout:
		tb.Fatalf("hung: run %d never ended; %+v", n, m.Current().StateOfAgent())
	}
	seq := m.Seq()
	r.inputs += seq
	if shown == nil {
		return // no panel
	}
	for {
		select {
		case got := <-shown:
			if got >= seq {
				return
			}
		case <-timeout:
			tb.Fatalf("hung: the panel never showed input %d", seq)
		}
	}
}

// follow opens the event stream of run runID's panel, as its page does,
// and puts the sequence number of each input it shows in shown; stop
// closes it.
func (r *longRuns) follow(tb testing.TB, runID string, shown chan uint64) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", r.srv.URL+"/devpanel/agents/"+runID+"/events", nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+longRunsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	if resp.StatusCode != 200 {
		tb.Fatalf("GET /devpanel/agents/%s/events: %d", runID, resp.StatusCode)
	}
	read := make(chan struct{})
	go func() { // a page following the timeline
		defer close(read)
		lines := bufio.NewScanner(resp.Body)
		lines.Buffer(nil, 1<<30)
		for lines.Scan() {
			id, ok := strings.CutPrefix(lines.Text(), "id: ")
			if !ok {
				continue
			}
			id, _, _ = strings.Cut(id, ".")
			if seq, err := strconv.ParseUint(id, 10, 64); err == nil {
				latest(shown, seq)
			}
		}
	}()
	return func() {
		cancel()
		resp.Body.Close()
		<-read
	}
}

// wordFile is size bytes of lines of words.
func wordFile(size int) string {
	var b strings.Builder
	for n := 0; b.Len() < size; n++ {
		fmt.Fprintf(&b, "line %d of the big file says nothing in particular\n", n)
	}
	return b.String()[:size]
}

// longGoal is the n-th task: as long as a goal may be (2,000 bytes), it
// reads a file of 60 KB, counts its words, and computes a sum of many
// terms (words), or looks up a term that is one long token (one token),
// which is found when its letter is tok.txt's.
func longGoal(n int, words bool) string {
	const size = 2000
	if words {
		var b strings.Builder
		fmt.Fprintf(&b, "read big.txt and count words in big.txt and compute %d", n)
		for i := 1; b.Len() < size-8; i++ {
			fmt.Fprintf(&b, "+%d", i)
		}
		return b.String()
	}
	goal := "read tok.txt and count words in tok.txt and find "
	return goal + strings.Repeat(string(rune('a'+n%26)), size-len(goal))
}

// BenchmarkLongRuns is 1,000 tasks run one after another, each as long as
// a goal may be and each reading a file of 60 KB (see longGoal), each a run
// of its own, an agent in one bbolt fleet: each is asked for and waited for
// until its agent is idle, with the run ended. It reports the time of the
// last 10 runs over that of runs 1 to 10 (the ratio the cost of a run grows
// by over the runs before it), the resident memory and live heap at the end
// (the agents still active: none has been idle for the registry's
// IdleTimeout), the fleet file's size and the agents active at the end.
// panel=true serves the runs with the devpanel fleet, as main does, and
// waits after each run until a page following the run's panel's event
// stream has been shown the run's every input; REACT_LONG_RUNS sets the
// number of runs.
//
//	go test -run XXX -bench 'LongRuns/panel=false' -benchtime 1x ./examples/react/
//	REACT_LONG_RUNS=200 go test -run XXX -bench 'LongRuns/panel=true' -benchtime 1x ./examples/react/
func BenchmarkLongRuns(b *testing.B) {
	runs := 1000
	if s := os.Getenv("REACT_LONG_RUNS"); s != "" {
		var err error
		if runs, err = strconv.Atoi(s); err != nil || runs < 20 {
			b.Fatalf("REACT_LONG_RUNS=%q: want a number of runs, 20 or more", s)
		}
	}
	for _, panel := range []bool{false, true} {
		for _, words := range []bool{true, false} {
			name := "one-token"
			if words {
				name = "words"
			}
			b.Run(fmt.Sprintf("panel=%v/%s", panel, name), func(b *testing.B) {
				for range b.N {
					r := startLongRuns(b, panel)
					startRSS := longrun.ProcStatus(b, "self", "VmRSS")
					took := make([]time.Duration, runs+1)
					for n := 1; n <= runs; n++ {
						goal := longGoal(n, words)
						start := time.Now()
						r.run(b, n, goal)
						took[n] = time.Since(start)
					}
					end := longrun.Measure(b)
					active := r.runs.reg.Stats().Active
					r.stop()
					info, err := os.Stat(filepath.Join(r.dir, "agents.db"))
					if err != nil {
						b.Fatal(err)
					}
					first, last := longrun.Median(took[1:11]), longrun.Median(took[runs-9:])
					mib := func(n int64) float64 { return float64(n) / (1 << 20) }
					b.ReportMetric(float64(last)/float64(first), "last/first")
					b.ReportMetric(float64(first)/1e6, "first-ms")
					b.ReportMetric(float64(last)/1e6, "last-ms")
					b.ReportMetric(mib(startRSS), "rss-start-MiB")
					b.ReportMetric(mib(end.RSS), "rss-MiB")
					b.ReportMetric(mib(int64(end.Heap)), "heap-MiB")
					b.ReportMetric(mib(info.Size()), "fleet-MiB")
					b.ReportMetric(float64(active), "active")
					b.ReportMetric(float64(r.inputs)/float64(runs), "inputs/run")
				}
			})
		}
	}
}

// TestNextRequestFollowsTheHistory: finding the next task to run compares
// each request and each run that ended once or twice, not each request
// with every run: the agent's jobs and Idle look for it on every state,
// which made a state of an agent with a long history cost the square of
// its length (at 1,000 runs, 40% of the agent's time went to it).
func TestNextRequestFollowsTheHistory(t *testing.T) {
	const n = 2000
	c := decl.ContextOfAgent{Phase: decl.PhasePlan, RunID: "run-1999"}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("run-%d", i)
		c.Requests = append(c.Requests, decl.TaskRequest{RunID: id})
		if i < n-1 {
			c.Runs = append(c.Runs, decl.RunRecord{RunID: id})
		}
	}
	next, ok, compared := nextRequest(c)
	if !ok || next.RunID != "run-2000" {
		t.Fatalf("next request %q, %v; want run-2000", next.RunID, ok)
	}
	if limit := 2*len(c.Requests) + len(c.Runs); compared > limit {
		t.Errorf("compared %d run ids for %d requests and %d runs, want at most %d", compared, len(c.Requests), len(c.Runs), limit)
	}
}

// TestNextRequestAsItWas: on requests and runs in any order (runs started
// by hand, of tasks never asked for, twice), the next task to run is the
// oldest request that is neither the current run nor among the runs, as
// when each request was looked for among every run.
func TestNextRequestAsItWas(t *testing.T) {
	byScan := func(c decl.ContextOfAgent) (decl.TaskRequest, bool) {
		for _, r := range c.Requests {
			if r.RunID != c.RunID && !slices.ContainsFunc(c.Runs, func(x decl.RunRecord) bool { return x.RunID == r.RunID }) {
				return r, true
			}
		}
		return decl.TaskRequest{}, false
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		var c decl.ContextOfAgent
		ids := rng.Perm(12)
		for _, i := range ids[:rng.IntN(10)] {
			c.Requests = append(c.Requests, decl.TaskRequest{RunID: strconv.Itoa(i)})
		}
		for range rng.IntN(12) {
			id := strconv.Itoa(rng.IntN(12))
			if len(c.Requests) > 0 && rng.IntN(3) > 0 { // mostly in order
				id = c.Requests[min(len(c.Runs), len(c.Requests)-1)].RunID
			}
			c.Runs = append(c.Runs, decl.RunRecord{RunID: id})
		}
		c.RunID = strconv.Itoa(rng.IntN(12))
		want, wantOK := byScan(c)
		got, ok, _ := nextRequest(c)
		if got != want || ok != wantOK {
			t.Fatalf("requests %v, runs %v, current %s: next %q %v, want %q %v", c.Requests, c.Runs, c.RunID, got.RunID, ok, want.RunID, wantOK)
		}
	}
}
