package journal_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
)

const crashChildEnv = "JOURNAL_CRASH_CHILD"

// TestCrashChild is the agent process of TestCrashRecovery, which runs this
// test binary again with crashChildEnv set and kills it. It reports on
// stdout, one line per fact:
//
//	pending <ids>     the requests the recovered state is waiting on
//	started <key>     a job started
//	ack <id>          Dispatch of request <id> returned nil: it is on disk
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("the child process of TestCrashRecovery")
	}
	round, _ := strconv.Atoi(os.Getenv(crashChildEnv + "_ROUND"))
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
		out.Unlock()
	}
	m, err := openAt(t, path, journal.Options[state, input]{SnapshotEvery: 50},
		automata.WithJobs(answering(2*time.Millisecond, nil)),
		automata.WithEvents(func(e automata.Event[state, input]) {
			if e.Kind == automata.EffectStarted {
				say("started %s", e.Key)
			}
		}))
	if err != nil {
		say("open failed: %v", err)
		os.Exit(3)
	}
	// Events for the recovered jobs are reported during Open: the pending
	// line may come after their "started" lines, which the parent allows.
	say("pending %s", strings.Trim(fmt.Sprint(m.Current().Pending), "[]"))
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := round*1_000_000 + p*100_000 + i + 1
				if err := m.Dispatch(context.Background(), input{Request: id}); err != nil {
					say("dispatch failed: %v", err)
					os.Exit(4)
				}
				say("ack %d", id)
				if i%3 == 0 {
					m.Dispatch(context.Background(), input{Note: fmt.Sprintf("r%d-p%d-%d", round, p, i)})
				}
			}
		})
	}
	wg.Wait()
}

type childRun struct {
	acked   []int
	pending []string // job keys the recovered state calls for
	started map[string]bool
}

// runChild starts the agent process, waits until it has restarted the jobs
// its recovered state calls for and acknowledged some inputs, lets it run a
// random while, and kills it with SIGKILL.
func runChild(t *testing.T, path string, round int, rng *rand.Rand) childRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path, fmt.Sprintf("%s_ROUND=%d", crashChildEnv, round))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	run := childRun{started: map[string]bool{}}
	var mu sync.Mutex
	ready := make(chan struct{}) // pending known, all pending jobs started, >= 10 acks
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		havePending, signalled := false, false
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			switch {
			case strings.HasPrefix(line, "ack "):
				id, _ := strconv.Atoi(strings.TrimPrefix(line, "ack "))
				run.acked = append(run.acked, id)
			case strings.HasPrefix(line, "started "):
				run.started[strings.TrimPrefix(line, "started ")] = true
			case strings.HasPrefix(line, "pending"):
				havePending = true
				for _, f := range strings.Fields(strings.TrimPrefix(line, "pending")) {
					id, _ := strconv.Atoi(f)
					run.pending = append(run.pending, jobKey(id))
				}
			default:
				t.Errorf("round %d: child says %q", round, line)
			}
			allStarted := havePending
			for _, k := range run.pending {
				allStarted = allStarted && run.started[k]
			}
			if !signalled && allStarted && len(run.acked) >= 10 {
				signalled = true
				close(ready)
			}
			mu.Unlock()
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("round %d: the child did not get going (pending %v, started %v, %d acks)", round, run.pending, run.started, len(run.acked))
	}
	time.Sleep(time.Duration(rng.IntN(80)) * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-lines
	cmd.Wait()
	return run
}

// TestCrashRecovery: an agent process with 4 producers and jobs, killed
// with SIGKILL at a random moment, 25 rounds, on each embedded backend.
// After each kill every acknowledged request is in the journal once, the
// state is the fold of the journal, and the next process restarts every job
// the recovered state calls for.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a child process 25 times on each backend")
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) { testCrashRecovery(t, filepath.Join(t.TempDir(), "agent"+be.suffix)) })
	}
}

func testCrashRecovery(t *testing.T, path string) {
	const rounds = 25
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	allAcked := map[int]bool{}
	for round := range rounds {
		run := runChild(t, path, round, rng)
		for _, k := range run.pending {
			if !run.started[k] {
				t.Fatalf("round %d: job %s of the recovered state was not restarted", round, k)
			}
		}
		for _, id := range run.acked {
			allAcked[id] = true
		}

		// Open the store as the next run would, without jobs, and check
		// it against what the killed child acknowledged.
		m := mustOpen(t, path, journal.Options[state, input]{SnapshotEvery: -1})
		entries := mustInputs(t, m)
		if len(entries) != int(m.Seq()) {
			t.Fatalf("round %d: journal has %d inputs, state reflects %d", round, len(entries), m.Seq())
		}
		journaled := map[int]int{}
		var ins []input
		for _, e := range entries {
			ins = append(ins, e.Input)
			if e.Input.Request != 0 {
				journaled[e.Input.Request]++
			}
		}
		for id := range allAcked {
			if journaled[id] != 1 {
				t.Fatalf("round %d: acknowledged request %d is in the journal %d times, want once", round, id, journaled[id])
			}
		}
		if got, want := m.Current(), fold(ins); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: recovered state differs from the fold of the journal", round)
		}
		// Close without a snapshot would be a crash; closing here takes
		// one, which the next child recovers from: both paths are run.
		if round%2 == 0 {
			mustClose(t, m)
		} else {
			if err := m.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			deleteSnapshots(t, path, m.Seq()) // as if it had crashed
		}
		t.Logf("round %d: %d acked this run, journal %d inputs, %d pending at restart", round, len(run.acked), len(entries), len(run.pending))
	}
}
