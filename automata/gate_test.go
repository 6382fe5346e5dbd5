package automata_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/moora-go/moora/automata"
)

// TestJobGateHoldsJobsButNotInputs: a job waits at the gate, started but
// not run, while inputs are still applied; the gate's release runs it; a
// job whose key vanishes while held is cancelled without running; a gate's
// error fails the job without running it.
func TestJobGateHoldsJobsButNotInputs(t *testing.T) {
	log := newEventLog()
	var mu sync.Mutex
	var ran []string
	release := map[string]chan error{"a": make(chan error, 1), "b": make(chan error, 1), "c": make(chan error, 1)}
	entered := make(chan string, 3)
	gate := func(ctx context.Context) error {
		key := automata.JobKey(ctx)
		entered <- key
		select {
		case err := <-release[key]:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	jobsAt := func(s keys) map[string]automata.Job[keyInput] {
		m := map[string]automata.Job[keyInput]{}
		for _, k := range s.want {
			m[k] = func(ctx context.Context, dispatch automata.Dispatch[keyInput]) error {
				mu.Lock()
				ran = append(ran, k)
				mu.Unlock()
				dispatch(keyInput{result: k})
				return nil
			}
		}
		return m
	}
	m := automata.NewMoore(keySet, func(s keys) keys { return s },
		automata.WithJobs(jobsAt), automata.WithEvents(log.handle), automata.WithJobGate[keys, keyInput](gate))
	m.Dispatch(keyInput{add: "a"})
	m.Dispatch(keyInput{add: "b"})
	m.Dispatch(keyInput{add: "c"})
	for range 3 {
		<-entered
	}
	if got := m.Current().want; !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("inputs were held too: %v", got)
	}
	mu.Lock()
	if len(ran) != 0 {
		t.Fatalf("held jobs ran: %v", ran)
	}
	mu.Unlock()

	release["a"] <- nil
	log.waitFor(t, automata.EffectCompleted, "a")
	m.Dispatch(keyInput{remove: "b"})
	log.waitFor(t, automata.EffectCancelled, "b")
	refused := errors.New("refused")
	release["c"] <- refused
	failed := log.waitFor(t, automata.EffectFailed, "c")
	if !errors.Is(failed.Err, refused) {
		t.Errorf("c failed with %v, want the gate's error", failed.Err)
	}
	closeOrFail(t, m)
	if !slices.Equal(ran, []string{"a"}) {
		t.Errorf("ran %v, want only a", ran)
	}
	if got := m.Current().results; !slices.Equal(got, []string{"a"}) {
		t.Errorf("results %v", got)
	}
}
