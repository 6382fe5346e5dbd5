package journal_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
	"github.com/moora-go/moora/automata/journal/pebble"
)

const forkChildEnv = "JOURNAL_FORK_CHILD"

// TestForkChild is the agent process of TestForkSurvivesKill, which runs
// this test binary again with forkChildEnv set to the fleet file's path and
// kills it: see storetest.ForkCrashChild.
func TestForkChild(t *testing.T) {
	path := os.Getenv(forkChildEnv)
	if path == "" {
		t.Skip("the child process of TestForkSurvivesKill")
	}
	round, _ := strconv.Atoi(os.Getenv(forkChildEnv + "_ROUND"))
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
		out.Unlock()
	}
	f, err := openFleet(path)
	if err != nil {
		say("fail OpenFleet: %v", err)
		os.Exit(3)
	}
	storetest.ForkCrashChild(t, f, round, say)
}

// TestForkSurvivesKill: agent processes on a fleet (a bbolt file, a pebble
// directory), killed with
// SIGKILL, five rounds. Round 0 has a conversation with an agent (requests
// its jobs answer, notes), forks it at N into a new agent of the fleet and
// is killed before the fork ever runs; round 1 opens the fork, which gets
// the answers its record holds without a model call, and each round from
// then on dispatches to the fork until it is killed, both agents open with
// their jobs. After each kill the fleet is opened as the next process would
// open it (storetest.CheckForkCrash): the parent's store is byte for byte
// what it was before the fork, the fork has every acknowledged input, its
// record's two answers (journaled as Recorded) and after them only its own
// inputs, and its state, now and at every seq its snapshots reach, is the
// fold of the parent's inputs up to N and its own.
func TestForkSurvivesKill(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) { testForkSurvivesKill(t, filepath.Join(t.TempDir(), "fleet"+be.suffix)) })
	}
}

// openFleet opens the fleet at path: a pebble directory if path ends in
// ".pebble", a bbolt file otherwise.
func openFleet(path string) (journal.Fleet, error) {
	if strings.HasSuffix(path, ".pebble") {
		return pebble.OpenFleet(path)
	}
	return bolt.OpenFleet(path)
}

func testForkSurvivesKill(t *testing.T, path string) {
	const rounds = 5
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	acked := map[int]bool{}
	var digest string
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestForkChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), forkChildEnv+"="+path, fmt.Sprintf("%s_ROUND=%d", forkChildEnv, round))
		run := storetest.KillForkChild(t, cmd, round, rng)
		if round == 0 {
			digest = run.Digest
			if want := fmt.Sprintf("%d 2", storetest.ForkAt); run.Forked != want {
				t.Fatalf("Fork wrote %q (seq, answers), want %q", run.Forked, want)
			}
		}
		if round == 1 {
			if run.Recorded != "0 false" {
				t.Fatalf("the fork's answers from its record: %q (model calls, departed), want no call and not departed", run.Recorded)
			}
		}
		for _, id := range run.Acked {
			acked[id] = true
		}
		f, err := openFleet(path)
		if err != nil {
			t.Fatalf("round %d: OpenFleet after the kill: %v", round, err)
		}
		seq := storetest.CheckForkCrash(t, f, digest, acked, round%2 == 1)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: %d acked, the fork at %d", round, len(run.Acked), seq)
	}
}
