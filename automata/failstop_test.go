package automata_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
)

// hangGuard bounds how long a test waits for something that must happen: a
// machine that hangs fails the test instead of blocking it forever. It is
// not a timing assertion; it is never reached when the code is right.
const hangGuard = 10 * time.Second

func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatalf("hung: %s", what)
	}
}

// derefTransition adds *in to the state: a nil input panics, as the
// generated Transition does on an input no actor dispatches.
func derefTransition(s int, in *int) int { return s + *in }

// TestPanicInTransitionOnAJobGoroutineStopsTheMachine is the regression test
// of a hang: a job dispatched nil while the machine was idle, so its own
// goroutine applied it, and the job's recover swallowed the transition's
// panic with the processing role still taken. Now the machine stops, says
// why, refuses later inputs, and Close returns the error. 200 runs.
func TestPanicInTransitionOnAJobGoroutineStopsTheMachine(t *testing.T) {
	for run := range 200 {
		release := make(chan struct{})
		failedEvents := make(chan automata.Event[int, *int], 1)
		def := automata.Definition[int, *int]{Initial: func() int { return 0 }, Transition: derefTransition}
		m := automata.NewMoore(def, func(s int) int { return s },
			automata.WithJobs(func(s int) map[string]automata.Job[*int] {
				if s != 0 {
					return nil
				}
				return map[string]automata.Job[*int]{"answer": func(ctx context.Context, dispatch automata.Dispatch[*int]) error {
					<-release // the machine is idle by now: this goroutine applies the input
					dispatch(nil)
					return nil
				}}
			}),
			automata.WithEvents(func(e automata.Event[int, *int]) {
				if e.Kind == automata.MachineFailed {
					failedEvents <- e
				}
			}))
		close(release)
		waitDone(t, m.Done(), fmt.Sprintf("run %d: the machine did not stop after the transition panicked", run))

		var f *automata.FailError
		if !errors.As(m.Err(), &f) {
			t.Fatalf("run %d: Err() = %v, want a *FailError", run, m.Err())
		}
		if f.Where != "the transition" || !f.HasInput || f.Input != (*int)(nil) {
			t.Fatalf("run %d: failure in %q on input %v (has input: %v), want the transition on a nil input", run, f.Where, f.Input, f.HasInput)
		}
		if !bytes.Contains(f.Stack, []byte("derefTransition")) {
			t.Fatalf("run %d: the stack does not show the transition:\n%s", run, f.Stack)
		}
		if !strings.Contains(f.Error(), "invalid memory address") {
			t.Fatalf("run %d: message %q does not carry the panic value", run, f.Error())
		}
		select {
		case e := <-failedEvents:
			if e.Err != m.Err() {
				t.Fatalf("run %d: MachineFailed carries %v, want %v", run, e.Err, m.Err())
			}
		default:
			t.Fatalf("run %d: no MachineFailed event", run)
		}
		one := 1
		if err := m.Dispatch(&one); !errors.Is(err, f) {
			t.Fatalf("run %d: Dispatch after the failure = %v, want the failure", run, err)
		}
		if err := m.DispatchWait(context.Background(), &one); !errors.Is(err, f) {
			t.Fatalf("run %d: DispatchWait after the failure = %v, want the failure", run, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		err := m.Close(ctx)
		cancel()
		if !errors.Is(err, f) || strings.Contains(err.Error(), "still running") {
			t.Fatalf("run %d: Close = %v, want the failure alone", run, err)
		}
		if m.Current() != 0 {
			t.Fatalf("run %d: state %d after a failed input, want 0", run, m.Current())
		}
	}
}

// TestPanicInSubscriberStopsTheMachine: the caller that applied the input
// hears of it, and an input queued behind it is answered, not left waiting.
func TestPanicInSubscriberStopsTheMachine(t *testing.T) {
	m := automata.NewMoore(counter, func(n int) int { return n })
	entered, unblock := make(chan struct{}), make(chan struct{})
	m.Subscribe(func(n int) {
		if n == 1 {
			close(entered)
			<-unblock
			panic("subscriber gave up")
		}
	})
	first := make(chan error, 1)
	go func() { first <- m.Dispatch(1) }()
	<-entered
	queued := make(chan error, 1)
	go func() { queued <- m.DispatchWait(context.Background(), 2) }()
	close(unblock)

	var f *automata.FailError
	select {
	case err := <-first:
		if !errors.As(err, &f) || f.Where != "a subscriber" || f.Value != "subscriber gave up" {
			t.Fatalf("Dispatch = %v, want the subscriber's failure", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("hung: the Dispatch that applied the input did not return")
	}
	select {
	case err := <-queued:
		// Either it was queued (and is answered with the failure) or it
		// came after the failure (and is refused with it): never applied.
		if !errors.Is(err, f) {
			t.Fatalf("DispatchWait of a queued input = %v, want the failure", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("hung: a queued input's DispatchWait was never answered")
	}
	if got := m.Current(); got != 1 {
		t.Errorf("state = %d, want 1: nothing applied after the failure", got)
	}
	if err := m.Close(context.Background()); !errors.Is(err, f) {
		t.Errorf("Close = %v, want the failure", err)
	}
}

// TestPanicInEffectStopsTheMachineNamingTheActor, also on the initial state.
func TestPanicInEffectStopsTheMachineNamingTheActor(t *testing.T) {
	boom := func(n int, _ automata.Dispatch[int]) {
		if n >= 2 {
			panic(fmt.Sprintf("effect cannot handle %d", n))
		}
	}
	m := automata.NewMoore(counter, func(n int) int { return n }, automata.WithActorEffect("brain", boom))
	if err := m.Dispatch(1); err != nil {
		t.Fatalf("Dispatch(1) = %v", err)
	}
	err := m.Dispatch(1)
	var f *automata.FailError
	if !errors.As(err, &f) || f.Where != `the effect of actor "brain"` || f.HasInput {
		t.Fatalf("Dispatch = %v, want the brain's effect failing", err)
	}
	if !strings.Contains(err.Error(), `the effect of actor "brain" panicked: effect cannot handle 2`) {
		t.Errorf("message = %q", err)
	}
	m.Close(context.Background())

	// On the initial state: New returns a machine that has already failed.
	restored := automata.Definition[int, int]{Initial: func() int { return 5 }, Transition: counter.Transition}
	m = automata.NewMoore(restored, func(n int) int { return n }, automata.WithActorEffect("brain", boom))
	waitDone(t, m.Done(), "a machine whose effect panicked on the initial state")
	if !errors.As(m.Err(), &f) || f.Where != `the effect of actor "brain"` {
		t.Errorf("Err() = %v", m.Err())
	}
	if err := m.Close(context.Background()); !errors.Is(err, f) {
		t.Errorf("Close = %v, want the failure", err)
	}
}

// view is what an actor sees: it shares the state's slice, as a generated
// ContextOf view does.
type conversation struct {
	Messages []string
	Owner    string
}

type view struct{ Messages []string }

func project(s conversation) view { return view{Messages: s.Messages} }

// TestPurityCheckCatchesEffectsAndJobsThatWriteIntoTheState: an effect or a
// jobs function that writes through its view into the state (owned by
// another actor) stops the machine under WithPurityCheck, naming it; without
// the check the write goes through, which is why the check exists.
func TestPurityCheckCatchesEffectsAndJobsThatWriteIntoTheState(t *testing.T) {
	def := automata.Definition[conversation, string]{
		Initial: func() conversation { return conversation{Owner: "user"} },
		Transition: func(s conversation, msg string) conversation {
			s.Messages = automata.Append(s.Messages, msg)
			return s
		},
	}
	rewrite := func(v view, _ automata.Dispatch[string]) {
		if len(v.Messages) > 0 {
			v.Messages[0] = "rewritten"
		}
	}
	rewriteJobs := func(v view) map[string]automata.Job[string] {
		if len(v.Messages) > 0 {
			v.Messages[0] = "rewritten"
		}
		return nil
	}
	output := func(s conversation) conversation { return s }
	tests := []struct {
		name      string
		opt       automata.Option[conversation, string]
		wantWhere string
	}{
		{"effect", automata.WithActorEffect("llm", automata.Project(project, rewrite)), `the effect of actor "llm"`},
		{"unnamed effect", automata.WithEffect(automata.Project(project, rewrite)), `the effect of WithEffect #1`},
		{"jobs function", automata.WithActorJobs("llm", automata.ProjectJobs(project, rewriteJobs)), `the jobs function of actor "llm"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := automata.NewMoore(def, output, tt.opt, automata.WithPurityCheck[conversation, string]())
			err := m.Dispatch("hello")
			var ie *automata.ImpurityError
			if !errors.As(err, &ie) {
				t.Fatalf("Dispatch = %v, want an *ImpurityError", err)
			}
			if ie.Where != tt.wantWhere || ie.Path != "state.Messages[0]" {
				t.Errorf("blamed %q at %s, want %q at state.Messages[0]", ie.Where, ie.Path, tt.wantWhere)
			}
			want := tt.wantWhere + ` mutated the state it was given: state.Messages[0] changed from "hello" to "rewritten"`
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q does not say %q", err, want)
			}
			m.Close(context.Background())
		})
	}
	t.Run("without the check", func(t *testing.T) {
		m := automata.NewMoore(def, output, automata.WithActorEffect("llm", automata.Project(project, rewrite)))
		defer m.Close(context.Background())
		m.Dispatch("hello")
		if got := m.Current().Messages[0]; got != "rewritten" {
			t.Fatalf("state = %q: the effect's write did not reach the state, so the check above proves nothing", got)
		}
	})
}

// TestAdmissionStampsAndRejects: admission runs in apply order on the state
// the input meets, may rewrite the input or reject it; DispatchWait returns
// the rejection, an InputRejected event reports it, and the machine goes on.
func TestAdmissionStampsAndRejects(t *testing.T) {
	type stamped struct {
		Text string
		At   int
	}
	def := automata.Definition[[]stamped, stamped]{
		Initial:    func() []stamped { return nil },
		Transition: func(s []stamped, in stamped) []stamped { return automata.Append(s, in) },
	}
	var clock atomic.Int64
	stamp := func(s []stamped, in stamped) (stamped, error) {
		if in.Text == "" {
			return in, errors.New("empty message")
		}
		in.At = int(clock.Add(10)) // the server's time, not the sender's
		if len(s) > 0 && in.At <= s[len(s)-1].At {
			t.Errorf("admission saw a state newer than its clock")
		}
		return in, nil
	}
	var mu sync.Mutex
	var rejected []string
	m := automata.NewMoore(def, func(s []stamped) []stamped { return s }, automata.WithAdmission(stamp),
		automata.WithEvents(func(e automata.Event[[]stamped, stamped]) {
			if e.Kind == automata.InputRejected {
				mu.Lock()
				rejected = append(rejected, e.Err.Error())
				mu.Unlock()
			}
		}))
	defer m.Close(context.Background())
	ctx := context.Background()
	if err := m.DispatchWait(ctx, stamped{Text: "a", At: 999}); err != nil {
		t.Fatal(err)
	}
	if err := m.DispatchWait(ctx, stamped{}); err == nil || err.Error() != "empty message" {
		t.Fatalf("DispatchWait of a rejected input = %v, want the admission's error", err)
	}
	m.Dispatch(stamped{}) // no one waits: the event reports it
	if err := m.DispatchWait(ctx, stamped{Text: "b"}); err != nil {
		t.Fatal(err)
	}
	want := []stamped{{"a", 10}, {"b", 20}}
	if got := m.Current(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("state = %v, want %v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(rejected) != "[empty message empty message]" {
		t.Errorf("InputRejected events = %q, want two", rejected)
	}
}

// TestDispatchWaitWithADoneContextAppliesNothing: an error means not applied.
func TestDispatchWaitWithADoneContextAppliesNothing(t *testing.T) {
	m := automata.NewMoore(counter, func(n int) int { return n })
	defer m.Close(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.DispatchWait(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("DispatchWait = %v, want context.Canceled", err)
	}
	if err := m.DispatchWait(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	if m.Current() != 2 {
		t.Errorf("state = %d, want 2: the cancelled input was applied", m.Current())
	}
	m.Close(context.Background())
	if err := m.Dispatch(3); !errors.Is(err, automata.ErrClosed) {
		t.Errorf("Dispatch after Close = %v, want ErrClosed", err)
	}
	if !errors.Is(m.Err(), automata.ErrClosed) {
		t.Errorf("Err() after Close = %v, want ErrClosed", m.Err())
	}
}
