package jetstream_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal/internal/storetest"
	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/nats-io/nats.go"
)

const forkChildEnv = "JETSTREAM_FORK_CHILD"

// forkConfig is the fleet's config in the fork crash test: a short TTL, so
// that the lease of a killed agent process is waited out in a second.
func forkConfig() jetstream.Config {
	return jetstream.Config{TTL: time.Second, Timeout: 5 * time.Second}
}

// TestForkChild is the agent process of TestForkSurvivesKill, which runs
// this test binary again with forkChildEnv set to the server's URL and the
// round, and kills it: see storetest.ForkCrashChild.
func TestForkChild(t *testing.T) {
	env := os.Getenv(forkChildEnv)
	if env == "" {
		t.Skip("the child process of TestForkSurvivesKill")
	}
	url, r, _ := strings.Cut(env, " ")
	round, _ := strconv.Atoi(r)
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
		out.Unlock()
	}
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		say("fail connect: %v", err)
		os.Exit(3)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := jetstream.OpenFleet(ctx, nc, forkConfig(), fmt.Sprintf("fork-child-%d", round))
	if err != nil {
		say("fail OpenFleet: %v", err)
		os.Exit(3)
	}
	storetest.ForkCrashChild(t, f, round, say)
}

// TestForkSurvivesKill: the bbolt fork crash test (see it in package
// journal) on a JetStream fleet, on an embedded server of the test
// process: five agent processes in turn, each killed with SIGKILL holding
// the leases of the agents it has open. Round 0 has the conversation, forks
// it at N and is killed; round 1 opens the fork, answered from its record;
// every round from 1 on dispatches to the fork until it is killed. After
// each kill the test process opens both agents, once the killed process's
// leases have expired, and checks them (storetest.CheckForkCrash).
func TestForkSurvivesKill(t *testing.T) {
	const rounds = 5
	srv, _ := startServer(t, true)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := jetstream.OpenFleet(ctx, nc, forkConfig(), "fork-checker")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 13))
	acked := map[int]bool{}
	var digest string
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestForkChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", forkChildEnv, srv.URL(), round))
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
		seq := storetest.CheckForkCrash(t, f, digest, acked, round%2 == 1)
		t.Logf("round %d: %d acked, the fork at %d", round, len(run.Acked), seq)
	}
}
