package automata_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
)

// memCommitter is a committer that keeps nothing, or fails when told.
type memCommitter struct {
	fail    func(ins []int) error
	commits [][]int
}

func (c *memCommitter) Prepare(in int) (int, []byte, error) { return in, []byte(fmt.Sprint(in)), nil }
func (c *memCommitter) Commit(us []automata.Update[int, int], _ [][]byte) error {
	var ins []int
	for _, u := range us {
		ins = append(ins, u.Input)
	}
	if c.fail != nil {
		if err := c.fail(ins); err != nil {
			return err
		}
	}
	c.commits = append(c.commits, ins)
	return nil
}

var adder = automata.Definition[int, int]{
	Initial:    func() int { return 0 },
	Transition: func(s, in int) int { return s + in },
}

// TestRejectedInputIsReportedInItsPlaceInABatch: per batch, InputReceived
// or InputRejected for each input, in apply order, the rejection taking the
// place of InputReceived. A write-ahead machine used to report a batch's
// rejections before all of its updates: a batch of 1, 2 (rejected), 3 came
// out as 2, 1, 3.
func TestRejectedInputIsReportedInItsPlaceInABatch(t *testing.T) {
	var events []string
	c := &memCommitter{}
	m := automata.NewMoore(adder, func(s int) int { return s },
		automata.WithCommitter[int, int](c),
		automata.WithAdmission(func(_ int, in int) (int, error) {
			if in == 2 {
				return in, errors.New("no twos")
			}
			return in, nil
		}),
		automata.WithEffect(func(s int, dispatch automata.Dispatch[int]) {
			if s == 0 {
				// Queued while the machine is busy: one batch.
				dispatch(1)
				dispatch(2)
				dispatch(3)
			}
		}),
		automata.WithEvents(func(e automata.Event[int, int]) {
			switch e.Kind {
			case automata.InputReceived, automata.InputRejected:
				events = append(events, fmt.Sprintf("%v %d", e.Kind, e.Input))
			}
		}))
	defer m.Close(context.Background())
	if len(c.commits) != 1 {
		t.Fatalf("commits %v, want one batch", c.commits)
	}
	want := "[input-received 1 input-rejected 2 input-received 3]"
	if got := fmt.Sprint(events); got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
}

// TestPanicInAParallelEffectStopsTheMachineNotTheProcess: a panic in an
// effect is fail-stop and the process does not crash, also when the effect
// is built with Parallel, whose parts run on goroutines of their own (a
// panic there used to kill the process). The child is this test binary; the
// parent checks that it survived and reported the effect's own panic.
func TestPanicInAParallelEffectStopsTheMachineNotTheProcess(t *testing.T) {
	if os.Getenv("AUTOMATA_PARALLEL_PANIC_CHILD") == "1" {
		m := automata.NewMoore(adder, func(s int) int { return s },
			automata.WithEffect(automata.Parallel(
				func(s int, _ automata.Dispatch[int]) {},
				func(s int, _ automata.Dispatch[int]) {
					if s == 1 {
						panic("effect part gave up")
					}
				},
			)))
		m.Dispatch(1)
		select {
		case <-m.Done():
		case <-time.After(5 * time.Second):
		}
		fmt.Println("SURVIVED:", m.Err())
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPanicInAParallelEffectStopsTheMachineNotTheProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AUTOMATA_PARALLEL_PANIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SURVIVED: automata: machine stopped") {
		first := string(out)
		if i := strings.Index(first, "\n\ngoroutine"); i > 0 {
			first = first[:i]
		}
		t.Fatalf("the process crashed on a panicking Parallel effect (%v):\n%s", err, first)
	}
}

// TestDoneClosesWhenAStubbornJobReturnsAfterCloseGaveUp: a Close whose ctx
// ends before a stubborn job returns gives up; when the job does return,
// every goroutine of the machine has exited, and Done must close (it used to
// stay open forever, with Err nil though Dispatch said ErrClosed: a program
// waiting on Done hung).
func TestDoneClosesWhenAStubbornJobReturnsAfterCloseGaveUp(t *testing.T) {
	release := make(chan struct{})
	returned := make(chan struct{})
	m := automata.NewMoore(adder, func(s int) int { return s },
		automata.WithJobs(func(s int) map[string]automata.Job[int] {
			return map[string]automata.Job[int]{"stubborn": func(ctx context.Context, _ automata.Dispatch[int]) error {
				defer close(returned)
				<-release // ignores ctx for a while
				return nil
			}}
		}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Close(ctx); err == nil {
		t.Fatal("Close with a done ctx and a stubborn job returned nil")
	}
	if !errors.Is(m.Dispatch(1), automata.ErrClosed) {
		t.Fatal("Dispatch after Close is not refused")
	}
	close(release)
	<-returned
	select {
	case <-m.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("hung: Done never closed after the last goroutine exited (Err() = %v)", m.Err())
	}
}

// TestFailErrorNamesTheInputOfAPanickingSubscriber: the *FailError names
// the input being applied. A write-ahead machine (the journal's) used to
// report a subscriber's panic without its input.
func TestFailErrorNamesTheInputOfAPanickingSubscriber(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("committer=%v", durable), func(t *testing.T) {
			var opts []automata.Option[int, int]
			if durable {
				opts = append(opts, automata.WithCommitter[int, int](&memCommitter{}))
			}
			m := automata.NewMoore(adder, func(s int) int { return s }, opts...)
			m.Subscribe(func(s int) {
				if s == 7 {
					panic("subscriber gave up")
				}
			})
			m.DispatchWait(context.Background(), 7)
			var f *automata.FailError
			if !errors.As(m.Err(), &f) {
				t.Fatalf("Err() = %v", m.Err())
			}
			if f.Where != "a subscriber" || !f.HasInput || f.Input != 7 {
				t.Fatalf("failure in %q, input %v (has input %v); want a subscriber on input 7", f.Where, f.Input, f.HasInput)
			}
		})
	}
}

// TestFailErrorNamesNoInputForAJobsEnd: an event handler that panics on a
// job's end panicked on no input. After an admission step had rejected an
// input, it used to be reported as failing on that input, which it never
// saw.
func TestFailErrorNamesNoInputForAJobsEnd(t *testing.T) {
	release := make(chan struct{})
	m := automata.NewMoore(adder, func(s int) int { return s },
		automata.WithAdmission(func(_ int, in int) (int, error) {
			if in < 0 {
				return in, errors.New("negative")
			}
			return in, nil
		}),
		automata.WithJobs(func(s int) map[string]automata.Job[int] {
			return map[string]automata.Job[int]{"j": func(ctx context.Context, _ automata.Dispatch[int]) error {
				<-release
				return nil
			}}
		}),
		automata.WithEvents(func(e automata.Event[int, int]) {
			if e.Kind == automata.EffectCompleted {
				panic("handler gave up")
			}
		}))
	defer m.Close(context.Background())
	if err := m.DispatchWait(context.Background(), -5); err == nil {
		t.Fatal("not rejected")
	}
	close(release)
	select {
	case <-m.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("hung")
	}
	var f *automata.FailError
	if !errors.As(m.Err(), &f) {
		t.Fatalf("Err() = %v", m.Err())
	}
	if f.HasInput {
		t.Fatalf("%v: reports input %v, but the event handler panicked on a job's end, not on an input", f, f.Input)
	}
}

// TestJobWhoseResultIsRejectedIsStartedAgain: a job hands in its result;
// the committer fails once (a transient store error: the journal's Append
// failing), so the input is rejected. The job returned nil, but its result
// never reached the state: it is reported as failed with a
// *RejectedInputError, and the next reconcile starts it again. (It used to
// be recorded as finished while the state still called for it, and never
// started again: the agent waited forever.)
func TestJobWhoseResultIsRejectedIsStartedAgain(t *testing.T) {
	// State: 0 asks for an answer; the answer (input 1) makes it 1.
	failed := false
	c := &memCommitter{fail: func(ins []int) error {
		for _, in := range ins {
			if in == 1 && !failed {
				failed = true
				return errors.New("transient: disk full")
			}
		}
		return nil
	}}
	var mu sync.Mutex
	starts := 0
	events := make(chan automata.Event[int, int], 100)
	m := automata.NewMoore(adder, func(s int) int { return s },
		automata.WithCommitter[int, int](c),
		automata.WithJobs(func(s int) map[string]automata.Job[int] {
			if s%10 != 0 { // answered
				return nil
			}
			return map[string]automata.Job[int]{"answer": func(ctx context.Context, dispatch automata.Dispatch[int]) error {
				mu.Lock()
				starts++
				mu.Unlock()
				dispatch(1)
				return nil
			}}
		}),
		automata.WithEvents(func(e automata.Event[int, int]) { events <- e }))
	defer m.Close(context.Background())
	next := func(kind automata.EventKind) automata.Event[int, int] {
		t.Helper()
		for {
			select {
			case e := <-events:
				if kind == 0 || e.Kind == kind {
					return e
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("hung waiting for %v", kind)
			}
		}
	}
	next(automata.InputRejected)
	if e := next(automata.EffectFailed); !errors.As(e.Err, new(*automata.RejectedInputError)) {
		t.Fatalf("the job whose result was rejected failed with %v, want a *RejectedInputError", e.Err)
	}
	// Any later input reconciles the jobs; 10 keeps the state asking.
	if err := m.DispatchWait(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	// The reconcile after 10 is reported before its StateUpdated.
	restarted := false
	for {
		e := next(0)
		if e.Kind == automata.EffectStarted && e.Key == "answer" {
			restarted = true
		}
		if e.Kind == automata.StateUpdated && e.State == 10 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !restarted {
		t.Fatalf("state 10 still asks for an answer; its job ran %d time(s), its result was rejected, and it is not started again", starts)
	}
}

// TestNilInputIsRefusedBeforeAnyUserCode: an interface-typed machine
// refuses a nil input before admission steps and the transition see it:
// Dispatch and DispatchWait return ErrNilInput, a job's nil is rejected
// (InputRejected, and the job fails with a *RejectedInputError), and the
// machine goes on. An admission step that looks at its input used to panic
// on it and stop the machine.
func TestNilInputIsRefusedBeforeAnyUserCode(t *testing.T) {
	type input interface{ amount() int }
	events := make(chan automata.Event[int, input], 100)
	m := automata.NewMoore(automata.Definition[int, input]{
		Initial:    func() int { return 0 },
		Transition: func(s int, in input) int { return s + in.amount() },
	}, func(s int) int { return s },
		automata.WithAdmission(func(_ int, in input) (input, error) {
			_ = in.amount() // panics on nil
			return in, nil
		}),
		automata.WithJobs(func(s int) map[string]automata.Job[input] {
			if s != 0 {
				return nil
			}
			return map[string]automata.Job[input]{"nil": func(ctx context.Context, dispatch automata.Dispatch[input]) error {
				dispatch(nil)
				return nil
			}}
		}),
		automata.WithEvents(func(e automata.Event[int, input]) { events <- e }))
	defer m.Close(context.Background())
	for {
		select {
		case e := <-events:
			if e.Kind == automata.InputRejected && !errors.Is(e.Err, automata.ErrNilInput) {
				t.Fatalf("the job's nil was rejected with %v, want ErrNilInput", e.Err)
			}
			if e.Kind != automata.EffectFailed {
				continue
			}
			if !errors.Is(e.Err, automata.ErrNilInput) || !errors.As(e.Err, new(*automata.RejectedInputError)) {
				t.Fatalf("the job failed with %v, want a *RejectedInputError wrapping ErrNilInput", e.Err)
			}
		case <-time.After(hangGuard):
			t.Fatal("hung: no EffectFailed for the job that dispatched nil")
		}
		break
	}
	if err := m.Dispatch(nil); !errors.Is(err, automata.ErrNilInput) {
		t.Fatalf("Dispatch(nil) = %v, want ErrNilInput", err)
	}
	if err := m.DispatchWait(context.Background(), nil); !errors.Is(err, automata.ErrNilInput) {
		t.Fatalf("DispatchWait(nil) = %v, want ErrNilInput", err)
	}
	if err := m.DispatchWait(context.Background(), amount(3)); err != nil || m.Current() != 3 {
		t.Fatalf("after the nil inputs: DispatchWait = %v, state %d; want nil, 3", err, m.Current())
	}
}

type amount int

func (a amount) amount() int { return int(a) }

var counterDef = automata.Definition[int, int]{
	Initial:    func() int { return 0 },
	Transition: func(s, in int) int { return s + in },
}

// TestStatefulEffectSurvivesARestartAfterItsPanic: after fail-stop a
// program restarts the agent, and a Stateful effect is built once and
// shared. A Stateful fn that panicked used to leave the effect's running
// flag set for good: in the restarted machine the effect was silently dead.
func TestStatefulEffectSurvivesARestartAfterItsPanic(t *testing.T) {
	var calls atomic.Int32
	var panicked atomic.Bool
	eff := automata.Stateful(0, func(view int, local int, update func(func(int) int), dispatch automata.Dispatch[int]) {
		calls.Add(1)
		if view == 1 && !panicked.Swap(true) {
			panic("transient bug")
		}
	})
	m1 := automata.NewMoore(counterDef, func(s int) int { return s }, automata.WithEffect(eff))
	m1.Dispatch(1)
	if !errors.As(m1.Err(), new(*automata.FailError)) {
		t.Fatalf("first machine did not fail: %v", m1.Err())
	}
	m1.Close(context.Background())

	// Restart with the same options, as the doc suggests.
	before := calls.Load()
	m2 := automata.NewMoore(counterDef, func(s int) int { return s }, automata.WithEffect(eff))
	defer m2.Close(context.Background())
	m2.Dispatch(5)
	if got := calls.Load() - before; got == 0 {
		t.Fatalf("restarted machine: the Stateful effect was never called (it ran 0 times for the initial state and input 5); err=%v", m2.Err())
	}
}

// TestFinishedJobLeftoverDispatchIsDropped: a job's context is cancelled
// when it returns, and what it dispatches from then on (work it left
// behind) is dropped. It used to be applied, even after the job's key had
// vanished.
func TestFinishedJobLeftoverDispatchIsDropped(t *testing.T) {
	leftover := make(chan automata.Dispatch[int], 1)
	jobCtx := make(chan context.Context, 1)
	m := automata.NewMoore(counterDef, func(s int) int { return s },
		automata.WithJobs(func(s int) map[string]automata.Job[int] {
			if s != 0 {
				return nil // the key vanishes after the first input
			}
			return map[string]automata.Job[int]{"k": func(ctx context.Context, dispatch automata.Dispatch[int]) error {
				jobCtx <- ctx
				leftover <- dispatch // work left behind, e.g. a goroutine
				return nil
			}}
		}))
	defer m.Close(context.Background())
	dispatch := <-leftover
	ctx := <-jobCtx
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("job context not cancelled after the job returned")
	}
	if err := m.Dispatch(1); err != nil { // the key "k" vanishes
		t.Fatal(err)
	}
	dispatch(100) // the job's context is cancelled and its key is gone
	if got := m.Current(); got != 1 {
		t.Fatalf("state = %d: the input (100) of a job whose context was cancelled and whose key vanished was applied, want it dropped (state 1)", got)
	}
}

// TestQueueMemoryIsBoundedByQueuedInputs: each input dispatched and not
// yet applied holds one slot until it is. The queue's backing array used to
// be reset only when the queue drained: a queue that never drains (here, 2
// inputs long) kept a slot for every input ever applied.
func TestQueueMemoryIsBoundedByQueuedInputs(t *testing.T) {
	type big [256]byte
	def := automata.Definition[int, big]{
		Initial:    func() int { return 0 },
		Transition: func(s int, _ big) int { return s + 1 },
	}
	const n = 200_000
	var m *automata.Machine[int, big, int]
	var heapAtStart, heapAtEnd uint64
	end := make(chan struct{})
	m = automata.NewMoore(def, func(s int) int { return s })
	m.Subscribe(func(s int) {
		switch {
		case s == 0:
			return
		case s == 10:
			heapAtStart = liveHeap()
		case s == n:
			heapAtEnd = liveHeap()
			close(end)
		}
		if s == 1 {
			m.Dispatch(big{}) // pre-load a second one: the queue never drains
		}
		if s < n {
			m.Dispatch(big{}) // one in, one out: at most 2 queued
		}
	})
	m.Dispatch(big{}) // hands off to another goroutine after 1024 inputs
	defer m.Close(context.Background())
	select {
	case <-end:
	case <-time.After(60 * time.Second):
		t.Fatal("did not reach the end")
	}
	growth := int64(heapAtEnd) - int64(heapAtStart)
	t.Logf("live heap growth over %d inputs with a queue of at most 2: %d bytes", n, growth)
	if growth > 4<<20 {
		t.Fatalf("live heap grew by %d MB over %d inputs while at most 2 were ever queued", growth>>20, n)
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestGoexitInUserCodeStopsTheMachine: a subscriber that ends its
// goroutine with runtime.Goexit (as t.FailNow does) used to leave the
// processing role taken: later inputs queued forever, Err nil, Done never
// closed. It is a failure like a panic.
func TestGoexitInUserCodeStopsTheMachine(t *testing.T) {
	m := automata.NewMoore(counterDef, func(s int) int { return s })
	m.Subscribe(func(s int) {
		if s == 1 {
			runtime.Goexit()
		}
	})
	done := make(chan struct{})
	go func() { defer close(done); m.Dispatch(1) }()
	<-done
	errDispatch := m.Dispatch(2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	errClose := m.Close(ctx)
	t.Logf("Dispatch(2) = %v; Close = %v; Err = %v; Current = %d", errDispatch, errClose, m.Err(), m.Current())
	select {
	case <-m.Done():
	default:
		t.Fatalf("machine hung after Goexit in a subscriber: Done not closed, Err=%v, Dispatch(2)=%v, Close=%v", m.Err(), errDispatch, errClose)
	}
}

// TestStatefulChangePanicLeavesNoLockHeld: a change function passed to
// Stateful's update that panics (on the machine's goroutine: fail-stop)
// used to leave the effect's mutex locked, and a restart of the agent with
// the same effect hung in New.
func TestStatefulChangePanicLeavesNoLockHeld(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	eff := automata.Stateful(0, func(view int, local int, update func(func(int) int), dispatch automata.Dispatch[int]) {
		if view == 1 {
			update(func(l int) int {
				if broken.Swap(false) {
					panic("bug in a change function")
				}
				return l + 1
			})
		}
	})
	m1 := automata.NewMoore(counterDef, func(s int) int { return s }, automata.WithEffect(eff))
	m1.Dispatch(1)
	if !errors.As(m1.Err(), new(*automata.FailError)) {
		t.Fatalf("first machine did not fail: %v", m1.Err())
	}
	m1.Close(context.Background())
	started := make(chan *automata.Machine[int, int, int], 1)
	go func() {
		started <- automata.NewMoore(counterDef, func(s int) int { return s }, automata.WithEffect(eff))
	}()
	select {
	case m2 := <-started:
		m2.Close(context.Background())
	case <-time.After(3 * time.Second):
		t.Fatal("restarting the machine with the same Stateful effect hangs in New: the effect's mutex was left locked by the panic")
	}
}

// TestNestedParallelReportsTheEffectsOwnPanic: the *FailError of a panic in
// a Parallel effect carries the effect's own panic value, also with one
// Parallel inside another (it used to carry the inner Parallel's wrapper).
func TestNestedParallelReportsTheEffectsOwnPanic(t *testing.T) {
	noop := func(int, automata.Dispatch[int]) {}
	bad := func(int, automata.Dispatch[int]) { panic("the effect's own panic") }
	m := automata.NewMoore(counterDef, func(s int) int { return s },
		automata.WithEffect(automata.Parallel(noop, automata.Parallel(noop, bad))))
	defer m.Close(context.Background())
	var f *automata.FailError
	if !errors.As(m.Err(), &f) {
		t.Fatalf("not failed: %v", m.Err())
	}
	if s, ok := f.Value.(string); !ok || s != "the effect's own panic" {
		t.Fatalf("FailError.Value is a %T, want the effect's own panic value (a string); Error(): %v", f.Value, f)
	}
}

// TestInputsThatCloseAppliesEndWithStateUpdated: each batch ends with one
// StateUpdated, also the inputs that Close applies (it applies the ones
// already queued). They used to get an InputReceived and no StateUpdated:
// a devtool following StateUpdated never saw the final state.
func TestInputsThatCloseAppliesEndWithStateUpdated(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var events []automata.Event[int, int]
	m := automata.NewMoore(counterDef, func(s int) int { return s },
		automata.WithEvents(func(e automata.Event[int, int]) { events = append(events, e) }))
	m.Subscribe(func(s int) {
		if s == 1 {
			close(entered)
			<-release
		}
	})
	first := make(chan struct{})
	go func() { defer close(first); m.Dispatch(1) }()
	<-entered     // the goroutine applying inputs is busy with 1
	m.Dispatch(2) // queued behind 1
	closed := make(chan error, 1)
	go func() { closed <- m.Close(context.Background()) }()
	for m.Dispatch(0) == nil { // adds nothing; refused once Close has begun
		runtime.Gosched()
	}
	close(release)
	<-first
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	var kinds []string
	lastUpdated := -1
	for _, e := range events {
		kinds = append(kinds, e.String())
		if e.Kind == automata.StateUpdated {
			lastUpdated = e.State
		}
	}
	t.Logf("events: %v; final state %d", kinds, m.Current())
	if lastUpdated != m.Current() {
		t.Fatalf("the last StateUpdated reported state %d, but inputs were received after it and the final state is %d", lastUpdated, m.Current())
	}
}
