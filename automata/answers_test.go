package automata_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/moora-go/moora/automata"
)

// TestJobAnswersStandInForJobs: a job WithJobAnswers answers does not run;
// its inputs are applied, as the job's, past the admission steps, which
// still see every other input; a key it does not answer runs its job.
func TestJobAnswersStandInForJobs(t *testing.T) {
	var ran atomic.Int64
	var admitted []keyInput // on the goroutine applying inputs
	log := newEventLog()
	m := automata.NewMoore(keySet, func(s keys) keys { return s },
		automata.WithJobs(func(s keys) map[string]automata.Job[keyInput] {
			jobs := map[string]automata.Job[keyInput]{}
			for _, k := range s.want {
				jobs[k] = func(ctx context.Context, dispatch automata.Dispatch[keyInput]) error {
					ran.Add(1)
					dispatch(keyInput{result: "ran " + automata.JobKey(ctx)})
					return nil
				}
			}
			return jobs
		}),
		automata.WithAdmission(func(_ keys, in keyInput) (keyInput, error) {
			admitted = append(admitted, in)
			if in.result == "refused" {
				return in, errors.New("refused")
			}
			return in, nil
		}),
		automata.WithJobAnswers[keys](func(key string) ([]keyInput, bool) {
			if key != "recorded" {
				return nil, false
			}
			return []keyInput{{result: "refused"}, {result: "answer"}}, true
		}),
		automata.WithEvents(log.handle))
	defer m.Close(context.Background())
	ctx := context.Background()
	if err := m.DispatchWait(ctx, keyInput{add: "recorded"}); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, automata.EffectCompleted, "recorded")
	if err := m.DispatchWait(ctx, keyInput{add: "live"}); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, automata.EffectCompleted, "live")
	if err := m.DispatchWait(ctx, keyInput{remove: "live"}); err != nil {
		t.Fatal(err)
	}
	if n := ran.Load(); n != 1 {
		t.Fatalf("the jobs ran %d times, want once (live's)", n)
	}
	if got := m.Current().results; !slices.Equal(got, []string{"refused", "answer", "ran live"}) {
		t.Fatalf("results %q, want the recorded answers (the one admission would refuse too), then the live job's", got)
	}
	for _, in := range admitted {
		if in.result == "refused" || in.result == "answer" {
			t.Fatalf("admission saw the recorded answer %+v", in)
		}
	}
	if !slices.ContainsFunc(admitted, func(in keyInput) bool { return in.result == "ran live" }) {
		t.Fatalf("admission did not see the live job's input: %+v", admitted)
	}
}

// TestJobCancelCause: a job cancelled because its key vanished is told so;
// one cancelled by Close is told the machine closed; a context that is not
// a job's has no cause.
func TestJobCancelCause(t *testing.T) {
	causes := make(chan error, 2)
	running := make(chan string, 2)
	log := newEventLog()
	m := newKeyMachine(func(key string) automata.Job[keyInput] {
		return func(ctx context.Context, _ automata.Dispatch[keyInput]) error {
			if err := automata.JobCancelCause(ctx); err != nil {
				t.Errorf("running job %s: its cause is %v", automata.JobKey(ctx), err)
			}
			running <- automata.JobKey(ctx)
			<-ctx.Done()
			causes <- automata.JobCancelCause(ctx)
			return ctx.Err()
		}
	}, log)
	ctx := context.Background()
	if err := m.DispatchWait(ctx, keyInput{add: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := m.DispatchWait(ctx, keyInput{add: "b"}); err != nil {
		t.Fatal(err)
	}
	<-running
	<-running
	if err := m.DispatchWait(ctx, keyInput{remove: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := <-causes; !errors.Is(err, automata.ErrJobKeyVanished) {
		t.Fatalf("the cause of a job whose key vanished: %v", err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-causes; !errors.Is(err, automata.ErrClosed) {
		t.Fatalf("the cause of a job cancelled by Close: %v", err)
	}
	if err := automata.JobCancelCause(ctx); err != nil {
		t.Fatalf("the cause of a context that is no job's: %v", err)
	}
}
