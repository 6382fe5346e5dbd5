package main

import (
	"bufio"
	"context"
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

	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/examples/internal/longrun"
	"github.com/moora-go/moora/examples/react/decl"
)

// The files of the long runs' workspace, besides the demo's: big.txt is
// lines of words, tok.txt one token, each of fileSize bytes.
const fileSize = 60_000

// longRuns is a ReAct agent as main serves it (a bbolt journal, the
// rule-based planner and reflector, the real tools on a workspace that
// holds two files of 60 KB), with its devpanel or without, that a test or
// a benchmark gives one task after another.
type longRuns struct {
	dir   string
	agent *journal.Machine[decl.AgentState, decl.AgentInput]
	ended chan int    // the number of runs ended, each time the agent is idle
	shown chan uint64 // with the panel: the newest input its event stream has shown
	stop  func()
}

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
	work := Work{Planner: RulePlanner{}, Reflector: RuleReflector{}, Toolkit: &Toolkit{Tools: Tools(ws), Allow: Allow, Filter: Filter}, RetryLimit: 1}
	store, err := journal.OpenBolt(filepath.Join(dir, "agent.db"))
	if err != nil {
		tb.Fatal(err)
	}
	r := &longRuns{dir: dir, ended: make(chan int, 1)}
	var closePanel func()
	if panel {
		const token = "long-runs"
		auth := httpbridge.Bearer(token)
		cfg, _, err := panelConfig(work, auth)
		if err != nil {
			tb.Fatal(err)
		}
		jopts, opts := agentOptions(work, time.Now)
		a, p, err := devpanel.Open(store, cfg, jopts, opts...)
		if err != nil {
			tb.Fatal(err)
		}
		r.agent, r.shown = a, make(chan uint64, 1)
		srv := httptest.NewServer(p)
		req, err := http.NewRequest("GET", srv.URL+"/events", nil)
		if err != nil {
			tb.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		if resp.StatusCode != 200 {
			tb.Fatalf("GET /events: %d", resp.StatusCode)
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
					latest(r.shown, seq)
				}
			}
		}()
		closePanel = func() {
			resp.Body.Close()
			srv.CloseClientConnections()
			srv.Close()
			<-read
		}
	} else {
		a, err := Open(store, work, time.Now)
		if err != nil {
			store.Close()
			tb.Fatal(err)
		}
		r.agent = a
	}
	r.agent.Subscribe(func(s decl.AgentState) {
		if Idle(s) {
			latest(r.ended, len(s.Runs))
		}
	})
	r.stop = sync.OnceFunc(func() {
		if closePanel != nil {
			closePanel()
		}
		r.agent.Close(context.Background())
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

// run asks for the n-th task and waits until the agent is idle again with
// the run ended, and, with the panel, until its event stream has shown the
// run's every input.
func (r *longRuns) run(tb testing.TB, n int, goal string) {
	tb.Helper()
	if err := r.agent.Dispatch(context.Background(), decl.UserRunTask{RunID: fmt.Sprintf("run-%d", n), Goal: goal}); err != nil {
		tb.Fatal(err)
	}
	timeout := time.After(hangGuard)
	for {
		select {
		case runs := <-r.ended:
			if runs < n {
				continue
			}
		case <-timeout:
			tb.Fatalf("hung: run %d never ended; %+v", n, r.agent.Current().StateOfAgent())
		}
		break
	}
	if r.shown == nil {
		return // no panel
	}
	for seq := r.agent.Seq(); ; {
		select {
		case shown := <-r.shown:
			if shown >= seq {
				return
			}
		case <-timeout:
			tb.Fatalf("hung: the panel never showed input %d", seq)
		}
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
// a goal may be and each reading a file of 60 KB (see longGoal): each is
// asked for and waited for until the agent is idle again, with the run
// ended. It reports the time of the last 10 runs over that of runs 1 to 10
// (the ratio the cost of a run grows by over the agent's history), the
// resident memory and live heap at the end, and the journal's size.
// panel=true serves the agent with its devpanel, as main does, and waits
// after each run until a page following the panel's event stream has been
// shown the run's every input; REACT_LONG_RUNS sets the number of runs
// (the panel's cost grows with the state: see the package documentation).
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
					inputs := r.agent.Seq()
					r.stop()
					longrun.Report(b, took[1:11], took[runs-9:], startRSS, end, filepath.Join(r.dir, "agent.db"))
					b.ReportMetric(float64(inputs)/float64(runs), "inputs/run")
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
