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

// TestJobDispatchRoute: what a job dispatches goes through the route, which
// may hold it (the job waits, the input is not applied), deliver it and
// learn when it is applied, or drop it; deliver reports an input that
// admission rejects, and one whose job's key vanished, as never applied.
func TestJobDispatchRoute(t *testing.T) {
	type routed struct {
		key     string
		in      keyInput
		deliver func(keyInput) <-chan error
		done    chan struct{} // closed: the route returns
	}
	arrived := make(chan routed, 4)
	route := func(ctx context.Context, in keyInput, deliver func(keyInput) <-chan error) {
		r := routed{automata.JobKey(ctx), in, deliver, make(chan struct{})}
		arrived <- r
		select {
		case <-r.done:
		case <-ctx.Done():
		}
	}
	refused := errors.New("refused")
	admit := func(_ keys, in keyInput) (keyInput, error) {
		if in.result == "b" {
			return in, refused
		}
		return in, nil
	}
	jobsAt := func(s keys) map[string]automata.Job[keyInput] {
		m := map[string]automata.Job[keyInput]{}
		for _, k := range s.want {
			m[k] = func(ctx context.Context, dispatch automata.Dispatch[keyInput]) error {
				dispatch(keyInput{result: k})
				return nil
			}
		}
		return m
	}
	log := newEventLog()
	m := automata.NewMoore(keySet, func(s keys) keys { return s }, automata.WithJobs(jobsAt),
		automata.WithEvents(log.handle), automata.WithAdmission(admit), automata.WithJobDispatch[keys, keyInput](route))
	defer closeOrFail(t, m)
	if err := m.DispatchWait(context.Background(), keyInput{add: "a"}); err != nil {
		t.Fatal(err)
	}
	a := <-arrived
	if a.key != "a" || a.in.result != "a" {
		t.Fatalf("routed %q %+v", a.key, a.in)
	}
	if got := m.Current().results; len(got) != 0 {
		t.Fatalf("a held input was applied: %v", got)
	}
	if err := <-a.deliver(a.in); err != nil {
		t.Fatalf("delivering a: %v", err)
	}
	if got := m.Current().results; !slices.Equal(got, []string{"a"}) {
		t.Fatalf("after deliver's nil, results %v", got)
	}
	close(a.done)
	log.waitFor(t, automata.EffectCompleted, "a")

	// Rejected by admission: the channel says so.
	m.Dispatch(keyInput{add: "b"})
	b := <-arrived
	if err := <-b.deliver(b.in); !errors.Is(err, refused) {
		t.Errorf("delivering a rejected input: %v", err)
	}
	close(b.done)
	// (A job whose input was rejected starts again at the next reconcile:
	// not wanted any more, it does not.)
	if err := m.DispatchWait(context.Background(), keyInput{remove: "b"}); err != nil {
		t.Fatal(err)
	}

	// Held while its key vanishes: the route returns on ctx, and a late
	// delivery is dropped.
	m.Dispatch(keyInput{add: "c"})
	c := <-arrived
	if err := m.DispatchWait(context.Background(), keyInput{remove: "c"}); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, automata.EffectCancelled, "c")
	if err := <-c.deliver(c.in); !errors.Is(err, context.Canceled) {
		t.Errorf("delivering the input of a cancelled job: %v", err)
	}
	if got := m.Current().results; !slices.Equal(got, []string{"a"}) {
		t.Errorf("results %v, want only a", got)
	}
}
