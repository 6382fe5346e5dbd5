package storetest

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
)

// The fork crash test (ForkCrashChild, KillForkChild, CheckForkCrash): a
// fleet's agent "parent" holds a conversation of forkSteps steps, each a
// note and two requests (r and 100+r) that jobs answer; it is forked after
// the second request of step forkStep into agent "fork", whose record then
// holds the two answers of that step (the next input, the note of step
// forkStep+1, is the user's). The agent process dispatches requests and
// notes to the fork until it is killed with SIGKILL; the test process then
// opens both agents and checks them.
const (
	forkSteps = 12
	forkStep  = 6
	// ForkAt is where the crash test forks the parent.
	ForkAt = 5*forkStep - 2
	// forkSnapshotEvery makes the fork take snapshots, and prune them, while
	// the agent process runs.
	forkSnapshotEvery = 10
)

var (
	parentOptions = journal.Options[State, Input]{JobKeys: true}
	forkOptions   = journal.Options[State, Input]{JobKeys: true, SnapshotEvery: forkSnapshotEvery}
)

// answeringInPairs is Answering for the parent's conversation: request r
// (below 100) is answered only once its pair, 100+r, is pending too (or
// answered), so
// that a step's inputs are always its note, its two requests and then
// their answers, and ForkAt falls after the step's second request, both
// pending. (Answered at once, r's answer could be journaled before the
// producer's next Dispatch, 100+r, under load.)
func answeringInPairs(calls *atomic.Int64) automata.Option[State, Input] {
	return automata.WithJobs(func(s State) map[string]automata.Job[Input] {
		jobs := map[string]automata.Job[Input]{}
		for _, r := range s.Pending {
			if r < 100 && !slices.Contains(s.Pending, 100+r) && !slices.Contains(s.Answers, fmt.Sprintf("answer-%d", 100+r)) {
				continue
			}
			jobs[fmt.Sprintf("req-%d", r)] = func(ctx context.Context, dispatch automata.Dispatch[Input]) error {
				calls.Add(1)
				dispatch(Input{Answer: r})
				return nil
			}
		}
		return jobs
	})
}

// forkCrashIDs are the agents of the fork crash test.
const parentID, forkID = "parent", "fork"

// OpenAgentWaiting opens agent id of f, creating it if it is missing, and
// tries again while Open fails with ErrInUse: a killed process's lease
// (JetStream) is waited out. The bound only catches a hang.
func OpenAgentWaiting(t testing.TB, f journal.Fleet, id string) journal.Store {
	t.Helper()
	if err := f.Create(id, journal.AgentInfo{Owner: "fork-crash", Created: time.Unix(1, 0).UTC()}); err != nil && !errors.Is(err, journal.ErrAgentExists) {
		t.Fatalf("Create(%q): %v", id, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		s, err := f.Open(id)
		if err == nil {
			return s
		}
		if !errors.Is(err, journal.ErrInUse) || time.Now().After(deadline) {
			t.Fatalf("Open(%q): %v", id, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ForkCrashChild is the agent process of the fork crash test, in round
// round of it, on fleet f. It says on stdout, through say, one line per
// fact:
//
//	digest <hex>                 round 0: Digest of the parent's store, before the fork (and, checked here, after it)
//	forked <seq> <answers>       round 0: what Fork wrote
//	recorded <calls> <departed>  round 1: the fork has the answers of its record; the model calls it made for them
//	open <seq>                   the fork is open, at seq, and takes inputs
//	ack <id>                     Dispatch of request <id> to the fork returned nil
//	step <what>                  where it has got to, for a test that waits too long to say
//	fail <what>                  and exits
//
// In round 0 it has the conversation, forks it, and waits, the parent open,
// to be killed: the fork is first opened by the next round, after a kill,
// and must answer from its record. From round 1 on it keeps both agents
// open, with their jobs, and dispatches to the fork until it is killed.
func ForkCrashChild(t testing.TB, f journal.Fleet, round int, say func(format string, args ...any)) {
	fail := func(format string, args ...any) {
		say("fail "+format, args...)
		os.Exit(3)
	}
	var parentCalls, forkCalls atomic.Int64
	var parent, fork *journal.Machine[State, Input]
	var err error
	if round == 0 {
		parent, err = openMachine(t, OpenAgentWaiting(t, f, parentID), parentOptions, answeringInPairs(&parentCalls))
		if err != nil {
			fail("open the parent: %v", err)
		}
		for r := 1; r <= forkSteps; r++ {
			for _, in := range []Input{{Note: fmt.Sprintf("parent-note-%d", r)}, {Request: r}, {Request: 100 + r}} {
				if err := parent.Dispatch(context.Background(), in); err != nil {
					fail("dispatch %+v to the parent: %v", in, err)
				}
			}
			WaitFor(t, parent, "the parent's answers", func(s State) bool { return len(s.Answers) == 2*r })
		}
		// Closed, with its snapshot, and opened again: from here on the
		// parent's store holds what it will hold.
		MustClose(t, parent)
		ps := OpenAgentWaiting(t, f, parentID)
		before := Digest(t, ps)
		if parent, err = openMachine(t, ps, parentOptions, answeringInPairs(&parentCalls)); err != nil {
			fail("open the parent again: %v", err)
		}
		stats, err := parent.Fork(ForkAt, OpenAgentWaiting(t, f, forkID))
		if err != nil {
			fail("Fork(%d): %v", ForkAt, err)
		}
		if after := Digest(t, ps); after != before {
			fail("the parent's store changed with Fork: digest %x, was %x", after, before)
		}
		say("digest %x", before)
		say("forked %d %d", stats.Seq, stats.Answers)
		time.Sleep(time.Hour) // killed
	}
	// Open, with its jobs, when the process is killed.
	say("step opening the parent")
	if parent, err = openMachine(t, OpenAgentWaiting(t, f, parentID), parentOptions, Answering(&parentCalls)); err != nil {
		fail("open the parent: %v", err)
	}
	say("step opening the fork")
	if fork, err = openMachine(t, OpenAgentWaiting(t, f, forkID), forkOptions, Answering(&forkCalls)); err != nil {
		fail("open the fork: %v", err)
	}
	say("step opened")
	if round == 1 {
		WaitFor(t, fork, "the fork's answers from its record", func(s State) bool { return len(s.Answers) == 2*forkStep })
		say("recorded %d %v", forkCalls.Load(), fork.Departed())
	}
	say("open %d", fork.Seq())
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := (round+1)*1_000_000 + p*100_000 + i + 1
				if err := fork.Dispatch(context.Background(), Input{Request: id}); err != nil {
					fail("dispatch request %d to the fork: %v", id, err)
				}
				say("ack %d", id)
				if i%3 == 0 {
					if err := fork.Dispatch(context.Background(), Input{Note: fmt.Sprintf("fork-r%d-p%d-%d", round, p, i)}); err != nil {
						fail("dispatch a note to the fork: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
}

// ForkRun is what the agent process of a round said before it was killed.
type ForkRun struct {
	Digest   string // round 0
	Forked   string // round 0: "<seq> <answers>"
	Recorded string // round 1: "<calls> <departed>"
	Opened   bool
	Acked    []int
	Step     string // the last step the process said it took
}

// KillForkChild starts cmd, the agent process of round round, waits until
// it has forked (round 0), or opened the fork and acknowledged some inputs,
// lets it run a random while, and kills it with SIGKILL.
func KillForkChild(t testing.TB, cmd *exec.Cmd, round int, rng *rand.Rand) ForkRun {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var run ForkRun
	var mu sync.Mutex
	var failed []string
	ready := make(chan struct{})
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			verb, rest, _ := strings.Cut(line, " ")
			mu.Lock()
			switch verb {
			case "ack":
				id, err := strconv.Atoi(rest)
				if err != nil {
					failed = append(failed, line)
				}
				run.Acked = append(run.Acked, id)
			case "digest":
				run.Digest = rest
			case "forked":
				run.Forked = rest
			case "recorded":
				run.Recorded = rest
			case "open":
				run.Opened = true
			case "step":
				run.Step = rest
			default:
				failed = append(failed, line)
			}
			if !signalled && (len(failed) > 0 || round == 0 && run.Forked != "" || run.Opened && len(run.Acked) >= 20) {
				signalled = true
				close(ready)
			}
			mu.Unlock()
		}
	}()
	exited := make(chan struct{})
	go func() {
		<-lines
		close(exited)
	}()
	select {
	case <-ready:
	case <-exited:
	case <-time.After(2 * time.Minute): // a hang, not a measure (a loaded machine under -race is slow)
	}
	time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	<-lines
	cmd.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(failed) > 0 {
		t.Fatalf("round %d: the agent process said %q", round, failed)
	}
	switch {
	case round == 0 && (run.Digest == "" || run.Forked == ""):
		t.Fatalf("round 0: the agent process did not fork: %+v", run)
	case round > 0 && (!run.Opened || len(run.Acked) < 20):
		t.Fatalf("round %d: the agent process did not get going (opened %v, %d acks; its last step: %q)", round, run.Opened, len(run.Acked), run.Step)
	case round == 1 && run.Recorded == "":
		t.Fatalf("round 1: the fork did not get its record's answers: %+v", run)
	}
	return run
}

// CheckForkCrash opens the parent and the fork of the crash test in f, as
// the next process would, and checks them against what the killed agent
// processes said: the parent's store is what it was before the fork
// (digest, hex), its state the fold of its journal; the fork holds every
// acknowledged request once, its first two inputs are the answers of its
// record (journaled as Recorded, by their jobs' keys), every later one is
// its own, and its state, now and at each seq, is the fold of the parent's
// inputs up to ForkAt and its own after. With snapshot, the fork is closed
// with a snapshot, else as after a crash. It returns the fork's seq.
func CheckForkCrash(t testing.TB, f journal.Fleet, digest string, acked map[int]bool, snapshot bool) uint64 {
	t.Helper()
	ps := OpenAgentWaiting(t, f, parentID)
	if got := hex.EncodeToString(func() []byte { d := Digest(t, ps); return d[:] }()); got != digest {
		ps.Close()
		t.Fatalf("the parent's store changed: digest %s, it was %s before the fork", got, digest)
	}
	opts := parentOptions
	opts.SkipCloseSnapshot = true
	parent, err := openMachine(t, ps, opts)
	if err != nil {
		ps.Close()
		t.Fatalf("Open of the parent: %v", err)
	}
	defer MustClose(t, parent)
	pentries, err := parent.Inputs(1, parent.Seq())
	if err != nil {
		t.Fatal(err)
	}
	if parent.Seq() != 5*forkSteps || len(pentries) != 5*forkSteps {
		t.Fatalf("the parent is at %d with %d inputs, want %d", parent.Seq(), len(pentries), 5*forkSteps)
	}
	var pins []Input
	for _, e := range pentries {
		pins = append(pins, e.Input)
		if e.Recorded || (e.Input.Answer != 0) != (e.Job == fmt.Sprintf("req-%d", e.Input.Answer)) {
			t.Fatalf("the parent's input %d: %+v", e.Seq, e)
		}
	}
	if got, want := parent.Current(), Fold(pins); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the parent's state %+v, want the fold of its journal %+v", got, want)
	}

	fs := OpenAgentWaiting(t, f, forkID)
	fopts := forkOptions
	fopts.SkipCloseSnapshot = !snapshot
	fork, err := openMachine(t, fs, fopts)
	if err != nil {
		fs.Close()
		t.Fatalf("Open of the fork: %v", err)
	}
	defer MustClose(t, fork)
	entries, err := fork.Inputs(0, fork.Seq())
	if err != nil {
		t.Fatalf("the fork's inputs: %v", err)
	}
	if n := fork.Seq() - ForkAt; uint64(len(entries)) != n || n == 1 || n > 0 && entries[0].Seq != ForkAt+1 {
		t.Fatalf("the fork is at %d with inputs %+v, want %d from %d", fork.Seq(), entries, n, ForkAt+1)
	}
	if len(entries) > 0 {
		recorded := []string{entries[0].Job, entries[1].Job}
		slices.Sort(recorded)
		if want := []string{fmt.Sprintf("req-%d", 100+forkStep), fmt.Sprintf("req-%d", forkStep)}; !entries[0].Recorded || !entries[1].Recorded || !slices.Equal(recorded, want) {
			t.Fatalf("the fork's first inputs %+v, %+v: want the answers of %v, from its record", entries[0], entries[1], want)
		}
	}
	ins := slices.Clone(pins[:ForkAt])
	requests := map[int]int{}
	for i, e := range entries {
		if e.Seq != ForkAt+1+uint64(i) {
			t.Fatalf("the fork's input %d is numbered %d", ForkAt+1+i, e.Seq)
		}
		if i >= 2 && e.Recorded {
			t.Fatalf("the fork's input %d (%+v) is from the record, after it departed", e.Seq, e)
		}
		if (e.Input.Answer != 0) != (e.Job == fmt.Sprintf("req-%d", e.Input.Answer)) {
			t.Fatalf("the fork's input %d: %+v, journaled under job %q", e.Seq, e.Input, e.Job)
		}
		if e.Input.Request != 0 {
			requests[e.Input.Request]++
		}
		ins = append(ins, e.Input)
	}
	for id := range acked {
		if requests[id] != 1 {
			t.Fatalf("acknowledged request %d is in the fork's journal %d times, want once", id, requests[id])
		}
	}
	for id, n := range requests {
		if n != 1 {
			t.Fatalf("request %d is in the fork's journal %d times", id, n)
		}
	}
	if got, want := fork.Current(), Fold(ins); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the fork's state %+v, want the fold of the parent's inputs to %d and its own %+v", got, ForkAt, want)
	}
	// Time travel over the fork's whole history, from the fork on: the
	// snapshot Fork wrote is its base, which prune keeps.
	oldest := uint64(0)
	if err := fs.Snapshots(func(r journal.Record) error { oldest = r.Seq; return nil }); err != nil {
		t.Fatal(err)
	}
	t.Logf("the fork at %d, its oldest snapshot at %d (the fork's own at %d)", fork.Seq(), oldest, ForkAt)
	if oldest != uint64(ForkAt) {
		t.Fatalf("the fork's oldest snapshot is at %d, want the one it was forked from, at %d", oldest, ForkAt)
	}
	for seq := uint64(ForkAt); seq <= fork.Seq(); seq++ {
		got, err := fork.StateAt(seq)
		if want := Fold(ins[:seq]); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("the fork's StateAt(%d) = %+v, %v; want %+v", seq, got, err, want)
		}
	}
	if _, err := fork.StateAt(ForkAt - 1); !errors.Is(err, journal.ErrBeforeFork) {
		t.Fatalf("the fork's StateAt(%d), before the fork: %v, want ErrBeforeFork", ForkAt-1, err)
	}
	return fork.Seq()
}
