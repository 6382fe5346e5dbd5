package registry_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/registry"
)

// A chain agent works on its own: each step's job hands in the next step,
// whose job hands in the next, until the last; no lease is held meanwhile.
type chainState struct {
	Step int `json:"step"`
}

type chainInput struct {
	Step int `json:"step"`
}

// TestHostileEvictionSparesAutonomousWork: an agent working through a
// chain of jobs, each started by the input the one before hands in, with no
// lease held, is not evicted between two of them while another agent
// presses on the cap — which would stall its work, as nothing activates it
// again until someone uses it. (A job's dispatch, with the processing free,
// applies the input and starts the next job before the job returns, so
// Jobs() does not fall to 0 between steps.)
func TestHostileEvictionSparesAutonomousWork(t *testing.T) {
	const steps = 300
	var reached atomic.Int64
	fleet, err := bolt.OpenFleet(filepath.Join(t.TempDir(), "fleet.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	def := automata.Definition[chainState, chainInput]{
		Initial: func() chainState { return chainState{} },
		Transition: func(s chainState, in chainInput) chainState {
			if in.Step == s.Step+1 {
				s.Step = in.Step
			}
			return s
		},
	}
	reg, err := registry.New(registry.Config[chainState, chainInput]{
		Fleet:       fleet,
		MaxActive:   1,
		IdleTimeout: -1,
		Logger:      slog.New(slog.DiscardHandler),
		Open: func(id string, s journal.Store) (*journal.Machine[chainState, chainInput], error) {
			return journal.Open(s, def, journal.Options[chainState, chainInput]{Codec: journal.JSON[chainState, chainInput](nil), Logger: slog.New(slog.DiscardHandler), SnapshotEvery: -1},
				automata.WithJobs(func(s chainState) map[string]automata.Job[chainInput] {
					if id != "chain" || s.Step == 0 || s.Step >= steps {
						return nil
					}
					return map[string]automata.Job[chainInput]{fmt.Sprint("step", s.Step): func(ctx context.Context, dispatch automata.Dispatch[chainInput]) error {
						reached.Store(int64(s.Step))
						dispatch(chainInput{Step: s.Step + 1})
						return nil
					}}
				}))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	for _, id := range []string{"chain", "other"} {
		if _, err := reg.Create(id, "o"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := reg.Dispatch(context.Background(), "chain", chainInput{Step: 1}); err != nil {
		t.Fatal(err)
	}
	// Another agent is wanted all the while: at the cap, it evicts the
	// chain whenever the chain looks idle. Once it is in, nothing uses the
	// chain: it must have finished, or go on by itself.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		_, release, err := reg.Get(context.Background(), "other")
		if errors.Is(err, registry.ErrTooManyActive) {
			time.Sleep(50 * time.Microsecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		release()
		t.Logf("other got in with the chain at step %d", reached.Load())
		break
	}
	for deadline := time.Now().Add(time.Minute); reached.Load() < steps-1 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got := reached.Load(); got < steps-1 {
		t.Fatalf("the chain stalled at step %d of %d: evicted between two of its jobs, and nothing activates it again", got, steps)
	}
}
