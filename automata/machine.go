package automata

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moora-go/moora/automata/migrate"

	"go.opentelemetry.io/otel/trace"
)

// Definition is a pure machine: where it starts and how an input changes it.
//
// Both functions must be pure and deterministic: no clock, no randomness, no
// I/O, and no mutation of the state they are given (time arrives inside
// inputs). Transition returns a new state; it may share unchanged parts with
// the old one, but must never write into memory the old state can reach.
// CheckPure and WithPurityCheck catch a transition that does.
type Definition[S, I any] struct {
	Initial    func() S
	Transition func(state S, input I) S
	// Versions is the version history of the spec the inputs and the state
	// were generated from, for a durable machine: package automata/journal
	// writes each record under its current version and brings the records
	// of earlier versions up to it as it reads them. Nil: one version, 1.
	// A machine that is not durable does not use it.
	Versions *migrate.History
}

// Update is what a general machine's output function sees: one applied input,
// the state before and the state after.
//
// When Replay is true no input was applied: the update is the current state
// handed to a subscriber as it subscribes, and Prev and Input are zero.
type Update[S, I any] struct {
	Prev   S
	Input  I
	State  S
	Replay bool
	// Job is the key of the job that dispatched Input, or "" for an input
	// from outside the machine (Dispatch, an effect).
	Job string
}

// drainBudget is how many queued inputs a goroutine drafted by Dispatch
// applies, beyond its own, before it hands the rest of the queue to a new
// goroutine and returns.
const drainBudget = 1024

// maxBatchYields bounds how often the goroutine applying inputs of a machine
// with a committer yields, waiting for producers to join a batch.
const maxBatchYields = 64

// Machine is a running machine with state S, input I and output O. Create one
// with New, NewMoore or NewMealy; its methods are safe for concurrent use.
//
// One goroutine at a time holds the processing role (processing, under mu):
// it alone applies inputs, calls user code (admission, transitions, output,
// subscribers, effects, jobs functions, event handlers) and owns the fields
// below that say so. A panic in that code ends the role for good: run
// recovers it and fail records it (failed), replies to every waiter, drops
// the queue and cancels the jobs; processing stays set, so that no goroutine
// takes the role again.
type Machine[S, I, O any] struct {
	def         Definition[S, I]
	output      func(Update[S, I]) (O, bool)
	cfg         config[S, I]
	needsSettle bool        // an effect, jobs or events are configured
	nilable     bool        // I is an interface type: an input may be nil
	dispatch    Dispatch[I] // m.Dispatch, bound once

	// Owned by the goroutine holding the processing role.
	state   S
	subs    []*subscriber[O]
	dirty   bool // effects and jobs have not seen the latest state
	changed bool // inputs were applied since the last StateUpdated
	// The running jobs, in no order, indexed by key once there are more
	// than indexRunning of them; those completed while still desired.
	running      []*job[I]
	runningIndex map[string]*job[I]
	finished     map[string]struct{}
	// The first error that rejected an input of a running job.
	rejected map[*job[I]]error
	gone     []*job[I]
	ready    []chan task[I] // parked workers, taken from idle to start jobs
	fresh    []pending[I]
	shutdown bool
	// What user code is running, for the report of a panic: doing says
	// what (doingIndex: which effect or jobs function), doingInput is the
	// input it works on when hasInput is set.
	doing      phase
	doingIndex int
	doingInput I
	hasInput   bool
	applied    uint64 // how many inputs have been applied since New
	// WithTelemetry: tel records (nil: off); times are the moments of the
	// input being applied, lastInput the span of the last one applied,
	// which the jobs started next are children of.
	tel       *telemetry
	times     inputTimes
	stepTimes []inputTimes // of applyBatch's steps, by index
	lastInput trace.SpanContext
	// since are the spans of the inputs applied since the jobs were last
	// reconciled (at most maxSince): a job started next is a child of the
	// last, linked to the others.
	since []trace.SpanContext
	// The inputs being applied, whose waiters a failure must answer;
	// committed: the committer has made them durable.
	inflight  []queued[I]
	one       [1]queued[I] // inflight of an input applied alone
	committed bool
	batch     []queued[I] // reused by applyBatch
	steps     []step[I]
	updates   []Update[S, I]
	payloads  [][]byte
	lastBatch int // size of the previous committed batch

	// wg counts the worker goroutines, which run the jobs: a worker
	// exits only between jobs, so Close waiting for the workers waits for
	// the jobs. The processing role is not counted, to spare Dispatch two
	// atomic operations: Close waits for it through roleFree.
	wg sync.WaitGroup

	failed atomic.Pointer[FailError] // set once, by fail
	// jobs counts the jobs started and not yet returned, for Jobs.
	jobs atomic.Int64

	mu         sync.Mutex
	processing bool
	roleOver   bool          // a failure ended the role's work; processing stays set
	roleFree   chan struct{} // made by Close while the role is held; closed when it is released
	closed     bool
	current    S
	stale      bool   // current lags state: publish left it to run
	arrivals   uint64 // stamps queued inputs and control items in arrival order
	inputs     []queued[I]
	head       int
	ctrl       []control[I, O]
	ctrlHead   int
	idle       []chan task[I] // parked workers

	// stopping is closed by the first Close once stopped is set; stopped
	// is closed when every goroutine of the machine has exited. done is
	// closed when the machine fails or Close has finished.
	stopping chan struct{}
	stopped  chan struct{}
	done     chan struct{}
	doneOnce sync.Once
}

// queued is an input waiting to be applied, with the job that dispatched it,
// its place in the order of arrival, and who waits for it (DispatchWait).
type queued[I any] struct {
	input I
	from  *job[I]
	seq   uint64
	wait  *waiter
}

// waiter is how DispatchWait learns what became of its input. Its state
// moves from pending to taken (the processing role took the input) or to
// abandoned (the caller's ctx ended first: the input is skipped), and then
// to replied, once, when done receives the outcome.
type waiter struct {
	state atomic.Uint32
	done  chan error       // buffered: replying never blocks
	pos   uint64           // set before a nil reply: see DispatchWaitPos
	ctx   *context.Context // the caller's, with WithTelemetry: its span is the input's parent
}

const (
	waitPending uint32 = iota
	waitTaken
	waitAbandoned
	waitReplied
)

// take claims the input for applying; false if its caller gave up on it.
func (w *waiter) take() bool { return w.state.CompareAndSwap(waitPending, waitTaken) }

// reply delivers the outcome, unless it was delivered already or the caller
// gave up.
func (w *waiter) reply(err error) {
	for {
		s := w.state.Load()
		if s == waitAbandoned || s == waitReplied {
			return
		}
		if w.state.CompareAndSwap(s, waitReplied) {
			w.done <- err
			return
		}
	}
}

type subscriber[O any] struct {
	fn      func(O)
	removed atomic.Bool
}

type controlOp uint8

const (
	opSubscribe controlOp = iota + 1
	opUnsubscribe
	opJobDone
)

type control[I, O any] struct {
	op  controlOp
	sub *subscriber[O]
	job *job[I]
	err error
	seq uint64 // place in the order of arrival, with the inputs'
}

// ErrClosed is returned by Dispatch and DispatchWait once Close has been
// called, and by Err once Close has finished.
var ErrClosed = errors.New("automata: machine closed")

// errGoexit is the failure of user code that called runtime.Goexit (as
// t.FailNow does) on the goroutine applying inputs, which would otherwise
// leave the machine's work half done for good.
var errGoexit = errors.New("runtime.Goexit was called (as t.FailNow does)")

// ErrNilInput is returned by Dispatch and DispatchWait for a nil input of a
// machine whose input type is an interface (as a generated agent's
// AgentInput is): no transition can apply it. A job that dispatches one has
// it rejected (an InputRejected event), and the machine goes on.
var ErrNilInput = errors.New("automata: nil input")

// FailError is the error of a machine that stopped because user code it
// runs panicked (fail-stop): a transition, an admission step, the output
// function, a subscriber, an effect, a jobs function, an event handler, or
// a committer. Err, Close, Dispatch and DispatchWait return it, and a
// MachineFailed event carries it. A job's own panic is not one: it is the
// job's failure (see PanicError).
type FailError struct {
	Where    string // what panicked, such as "the transition" or `the effect of actor "user"`
	Input    any    // the input being applied or admitted, if HasInput
	HasInput bool
	Value    any    // the value passed to panic
	Stack    []byte // the stack of the goroutine that panicked, at the panic
}

func (e *FailError) Error() string {
	on := ""
	if e.HasInput {
		on = fmt.Sprintf(" on input %#v", e.Input)
	}
	return fmt.Sprintf("automata: machine stopped: %s panicked%s: %v", e.Where, on, e.Value)
}

// Unwrap returns the panic value if it is an error, such as the
// *ImpurityError of WithPurityCheck.
func (e *FailError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// New starts a general machine: output is called for every applied input with
// the update it made, and for each new subscriber with a Replay update of the
// current state. When output returns false, subscribers are not called.
//
// If the effects or jobs functions panic on the initial state, the machine
// that New returns has already failed: see Err.
func New[S, I, O any](def Definition[S, I], output func(Update[S, I]) (O, bool), opts ...Option[S, I]) *Machine[S, I, O] {
	if def.Initial == nil || def.Transition == nil {
		panic("automata: Definition needs both Initial and Transition")
	}
	if output == nil {
		panic("automata: nil output function")
	}
	m := &Machine[S, I, O]{def: def, output: output, stopping: make(chan struct{}), done: make(chan struct{})}
	for _, opt := range opts {
		opt(&m.cfg)
	}
	m.dispatch = func(in I) { m.Dispatch(in) }
	m.tel = m.cfg.telemetry
	if m.tel != nil {
		m.tel.spanAttrs = m.cfg.spanAttrs
	}
	m.nilable = reflect.TypeFor[I]().Kind() == reflect.Interface
	m.needsSettle = len(m.cfg.effects) > 0 || len(m.cfg.jobs) > 0 || len(m.cfg.events) > 0
	if len(m.cfg.jobs) > 0 {
		m.finished = make(map[string]struct{})
	}
	m.state = def.Initial()
	m.current = m.state
	if m.needsSettle {
		// Run the effect and start the jobs the initial state calls for:
		// an agent restored from storage resumes its work here.
		m.dirty = true
		m.processing = true
		m.run(queued[I]{}, false)
	}
	return m
}

// NewMoore starts a Moore machine: its output is a function of state alone,
// and a new subscriber immediately receives the output of the current state.
func NewMoore[S, I, O any](def Definition[S, I], output func(state S) O, opts ...Option[S, I]) *Machine[S, I, O] {
	if output == nil {
		panic("automata: nil output function")
	}
	return New(def, func(u Update[S, I]) (O, bool) { return output(u.State), true }, opts...)
}

// NewMealy starts a Mealy machine: its output is a function of the state an
// input arrived in and that input. A new subscriber receives outputs of later
// inputs only.
func NewMealy[S, I, O any](def Definition[S, I], output func(state S, input I) O, opts ...Option[S, I]) *Machine[S, I, O] {
	if output == nil {
		panic("automata: nil output function")
	}
	return New(def, func(u Update[S, I]) (O, bool) {
		if u.Replay {
			var zero O
			return zero, false
		}
		return output(u.Prev, u.Input), true
	}, opts...)
}

// Current returns the state after the most recently applied input. Inside a
// subscriber it is the state of the update being delivered, or a later one.
func (m *Machine[S, I, O]) Current() S {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current
}

// Jobs returns the number of jobs running: started and not yet returned,
// cancelled or not. A registry of agents keeps an agent with a job in flight
// active (package automata/registry).
func (m *Machine[S, I, O]) Jobs() int { return int(m.jobs.Load()) }

// Err returns nil while the machine runs; the *FailError once it has failed
// (fail-stop: see the package documentation); ErrClosed once a machine that
// did not fail has shut down (Done is closed).
func (m *Machine[S, I, O]) Err() error {
	if f := m.failed.Load(); f != nil {
		return f
	}
	select {
	case <-m.done:
		return ErrClosed
	default:
		return nil
	}
}

// Done returns a channel that is closed when the machine fails, or when
// Close has been called and every goroutine of the machine has exited (also
// if that Close gave up waiting first, when the last job returns later);
// Err then says which.
func (m *Machine[S, I, O]) Done() <-chan struct{} { return m.done }

func (m *Machine[S, I, O]) closeDone() { m.doneOnce.Do(func() { close(m.done) }) }

// Dispatch queues an input. It never waits for room and never deadlocks: it
// is safe from any goroutine, and from inside subscribers, effects, jobs and
// event handlers.
//
// If no goroutine is applying inputs, the caller becomes the one that does:
// it applies its input, calls the subscribers, runs the effects, and goes on
// with whatever was queued meanwhile until the queue is empty, or hands the
// rest of the queue to a new goroutine after drainBudget more inputs. If
// another goroutine is applying inputs (including the caller itself, one
// level up, when Dispatch is called from a subscriber or effect), Dispatch
// appends the input to the queue and returns at once.
//
// Dispatch returns nil when the input was queued (or applied). It refuses
// the input with ErrClosed once Close has been called, with the *FailError
// once the machine has failed, and with ErrNilInput if it is a nil
// interface value; if the machine fails while this
// call applies inputs, it returns that error too (the input may or may not
// have been applied: Current says). An input that admission rejects is
// reported as an InputRejected event; use DispatchWait to be told.
func (m *Machine[S, I, O]) Dispatch(input I) error {
	if err := m.dispatchFrom(nil, input, nil); err != nil {
		return err
	}
	if f := m.failed.Load(); f != nil {
		return f
	}
	return nil
}

// DispatchWait dispatches input as Dispatch does and waits until it has been
// applied, or rejected. It returns nil once the input is applied (in a
// machine WithCommitter, once it is durable; it is then applied even if the
// machine fails right after). It returns an error if the input was not and
// will never be applied: the error of the admission step, or of the
// committer, that rejected it; ErrNilInput; ErrClosed or the *FailError if the machine
// closed or failed first; ctx.Err() if ctx ended before the input was taken
// up for applying. Once the input is taken up, DispatchWait waits for the
// outcome whatever ctx does, so that an error always means "not applied".
//
// DispatchWait must not be called from a subscriber, effect or event handler
// of the same machine: it would wait for itself. Effects and jobs dispatch
// with the Dispatch they are handed.
func (m *Machine[S, I, O]) DispatchWait(ctx context.Context, input I) error {
	_, err := m.DispatchWaitPos(ctx, input)
	return err
}

// DispatchWaitPos is DispatchWait that also returns, with nil, the input's
// position: n when it is the n-th input the machine has applied since New.
// A durable machine numbers its journal in the same order (see
// journal.Machine.DispatchSeq).
func (m *Machine[S, I, O]) DispatchWaitPos(ctx context.Context, input I) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	w := &waiter{done: make(chan error, 1)}
	if m.tel != nil {
		c := ctx // only then does a context escape
		w.ctx = &c
	}
	if err := m.dispatchFrom(nil, input, w); err != nil {
		return 0, err
	}
	var err error
	select {
	case err = <-w.done:
	case <-ctx.Done():
		if w.state.CompareAndSwap(waitPending, waitAbandoned) {
			return 0, ctx.Err()
		}
		err = <-w.done
	}
	if err != nil {
		return 0, err
	}
	return w.pos, nil // written before the reply
}

// dispatchFrom queues an input from a job (or none), with its waiter (or
// none). It returns an error only when it refuses the input.
func (m *Machine[S, I, O]) dispatchFrom(j *job[I], input I, w *waiter) error {
	if j == nil && m.isNil(input) {
		return ErrNilInput // a job's goes through admission, to be reported
	}
	m.mu.Lock()
	if err := m.refusalLocked(); err != nil {
		m.mu.Unlock()
		return err
	}
	if j != nil && j.cancelled.Load() {
		m.mu.Unlock()
		if w != nil {
			w.reply(context.Canceled) // WithJobDispatch's deliver
		}
		return nil // dropped: the job's key vanished
	}
	q := queued[I]{input, j, m.arrivals, w}
	m.arrivals++
	if m.processing || m.ctrlHead < len(m.ctrl) || m.cfg.committer != nil {
		// Queue behind what arrived first: another goroutine is
		// applying inputs, or job ends were recorded while idle. With a
		// committer, queue anyway: the batch is taken from the queue,
		// where other producers' inputs join it.
		m.inputs = push(m.inputs, &m.head, q)
		if m.claimLocked() {
			m.run(queued[I]{}, false)
		}
		return nil
	}
	m.claimLocked()
	m.run(q, true)
	return nil
}

// isNil reports whether in is a nil interface value.
func (m *Machine[S, I, O]) isNil(in I) bool { return m.nilable && any(in) == nil }

// refusalLocked says why the machine takes no more inputs, if it does not.
func (m *Machine[S, I, O]) refusalLocked() error {
	if f := m.failed.Load(); f != nil {
		return f
	}
	if m.closed {
		return ErrClosed
	}
	return nil
}

// claimLocked takes the processing role unless another goroutine holds it,
// and reports whether it did. It is entered with m.mu held and releases it.
func (m *Machine[S, I, O]) claimLocked() bool {
	if m.processing {
		m.mu.Unlock()
		return false
	}
	m.processing = true
	m.mu.Unlock()
	return true
}

// releaseLocked ends the processing role's work, with m.mu held: it was
// released, or kept for good by a failure (roleOver). A Close waiting for
// it learns so.
func (m *Machine[S, I, O]) releaseLocked() {
	if m.roleFree != nil {
		close(m.roleFree)
		m.roleFree = nil
	}
}

// Subscribe registers fn to receive every output from now on, in the order
// the inputs were applied; every subscriber sees the same sequence. For a
// Moore or general machine, fn first receives the output of the current
// state. fn runs on the goroutine applying inputs and must not block for long;
// it may call Dispatch, Subscribe and unsubscribe functions.
//
// The returned function unsubscribes; after it returns, fn receives no
// further outputs, except one that was already being delivered concurrently.
func (m *Machine[S, I, O]) Subscribe(fn func(output O)) (unsubscribe func()) {
	s := &subscriber[O]{fn: fn}
	m.enqueue(control[I, O]{op: opSubscribe, sub: s})
	return func() {
		if !s.removed.Swap(true) {
			m.enqueue(control[I, O]{op: opUnsubscribe, sub: s})
		}
	}
}

// Close stops the machine: later inputs are refused, inputs already queued
// are applied (subscribers see them; effects and jobs no longer run), every
// running job's context is cancelled, and Close waits for the jobs to return
// and for every goroutine the machine started to exit, or for ctx to be done,
// whichever comes first. Close must not be called from a subscriber, effect,
// job or event handler of the same machine: it would wait for itself.
//
// Close returns the *FailError if the machine has failed (after waiting for
// its jobs all the same), and an error if ctx ended first. It may be called
// more than once, and concurrently; every call waits for the same shutdown.
func (m *Machine[S, I, O]) Close(ctx context.Context) error {
	m.mu.Lock()
	first := !m.closed
	m.closed = true
	// An earlier Close started the shutdown; or the goroutine applying
	// inputs shuts the jobs down when it finishes (see run); or this one
	// takes that role and does.
	if !first {
		m.mu.Unlock()
	} else if m.claimLocked() {
		m.run(queued[I]{}, false)
	}
	if first {
		m.stopWorkers()
		m.stopped = make(chan struct{})
		// No goroutine takes the processing role once the machine is
		// closed; wait for the one that may hold it, then for the jobs
		// and workers.
		var roleFree chan struct{}
		m.mu.Lock()
		if m.processing && !m.roleOver {
			roleFree = make(chan struct{})
			m.roleFree = roleFree
		}
		m.mu.Unlock()
		go func() {
			if roleFree != nil {
				<-roleFree
			}
			m.wg.Wait()
			close(m.stopped)
			// Also when no Close is waiting any more (its ctx ended
			// before a job returned): a program watching Done learns
			// that the machine is over.
			m.closeDone()
		}()
		close(m.stopping)
	}
	<-m.stopping // m.stopped is set
	select {
	case <-m.stopped:
		m.closeDone()
		if f := m.failed.Load(); f != nil {
			return f
		}
		return nil
	case <-ctx.Done():
		err := fmt.Errorf("automata: close: jobs still running: %w", ctx.Err())
		if f := m.failed.Load(); f != nil {
			return errors.Join(f, err)
		}
		return err
	}
}

// enqueue hands a control item to the goroutine applying inputs, becoming
// that goroutine if there is none.
func (m *Machine[S, I, O]) enqueue(c control[I, O]) {
	m.mu.Lock()
	m.enqueueLocked(c)
}

// enqueueLocked is enqueue entered with m.mu held; it releases it.
func (m *Machine[S, I, O]) enqueueLocked(c control[I, O]) {
	if m.refusalLocked() != nil {
		m.mu.Unlock()
		return
	}
	c.seq = m.arrivals
	m.arrivals++
	m.ctrl = push(m.ctrl, &m.ctrlHead, c)
	if m.claimLocked() {
		m.run(queued[I]{}, false)
	}
}

// run is the processing role. It applies first when have is set, then
// handles queued control items and inputs in the order they arrived (a job's
// input before the job's end, which came after it), settles effects and jobs
// on the latest state whenever the queue runs dry or a control item is next,
// and releases the role when there is nothing left to do. A panic in the
// user code it calls stops the machine (see fail).
func (m *Machine[S, I, O]) run(first queued[I], have bool) {
	returned := false
	defer func() {
		if v := recover(); v != nil {
			m.fail(v, debug.Stack())
		} else if !returned {
			m.fail(errGoexit, debug.Stack())
		}
	}()
	budget := drainBudget
	if have {
		m.applyOne(first) // never with a committer: see dispatchFrom
	}
	for {
		m.mu.Lock()
		if m.stale {
			m.current, m.stale = m.state, false
		}
		haveInput := m.head < len(m.inputs)
		if m.ctrlHead < len(m.ctrl) && (!haveInput || m.ctrl[m.ctrlHead].seq < m.inputs[m.head].seq) {
			if m.dirty {
				// Settle the inputs applied so far first: a job's
				// end is reported after the state its own input
				// made, however the scheduling went.
				m.readyWorkersLocked()
				closed := m.closed
				m.mu.Unlock()
				m.settle(closed)
				continue
			}
			c := m.ctrl[m.ctrlHead]
			m.ctrl[m.ctrlHead] = control[I, O]{}
			m.ctrlHead++
			if m.ctrlHead == len(m.ctrl) {
				m.ctrl = m.ctrl[:0]
				m.ctrlHead = 0
			}
			m.mu.Unlock()
			m.handle(c)
			continue
		}
		if haveInput {
			if budget == 0 {
				m.mu.Unlock()
				m.handOff()
				returned = true
				return
			}
			if m.cfg.committer != nil {
				batch := m.takeBatchLocked(&budget)
				m.mu.Unlock()
				m.applyBatch(batch)
				continue
			}
			budget--
			q := m.pop()
			m.mu.Unlock()
			m.applyOne(q)
			continue
		}
		if m.dirty {
			m.readyWorkersLocked()
			closed := m.closed
			m.mu.Unlock()
			m.settle(closed)
			continue
		}
		if m.closed && !m.shutdown {
			m.mu.Unlock()
			m.stopJobs()
			continue
		}
		m.processing = false
		m.releaseLocked()
		m.mu.Unlock()
		returned = true
		return
	}
}

// push appends x to the queue q whose first *head items are taken, and
// returns q. When q is full and at least half of it is taken, it first moves
// the rest to the front: so the backing array holds what is queued, not
// every item that ever passed through a queue that never drains, and each
// item is moved at most once per doubling (amortized O(1)).
func push[T any](q []T, head *int, x T) []T {
	if len(q) == cap(q) && *head > 0 && *head >= len(q)/2 {
		n := copy(q, q[*head:])
		clear(q[n:])
		q, *head = q[:n], 0
	}
	return append(q, x)
}

// pop takes the next queued input; m.mu must be held.
func (m *Machine[S, I, O]) pop() queued[I] {
	q := m.inputs[m.head]
	m.inputs[m.head] = queued[I]{}
	m.head++
	if m.head == len(m.inputs) {
		m.inputs = m.inputs[:0]
		m.head = 0
	}
	return q
}

// takeBatchLocked takes the queued inputs that arrived before the next
// control item, at most budget of them, for one commit. Producers that the
// previous commit acknowledged are about to dispatch again: it gives them a
// moment to join this batch rather than the next, as a yield costs far less
// than the commit (an fsync) it saves.
func (m *Machine[S, I, O]) takeBatchLocked(budget *int) []queued[I] {
	// Yield while the queue is shorter than the previous batch: at least
	// 4 times, and then as long as each yield brought more inputs in.
	for i, n := 0, len(m.inputs)-m.head; n < m.lastBatch && i < maxBatchYields; i++ {
		m.mu.Unlock()
		runtime.Gosched()
		m.mu.Lock()
		prev := n
		if n = len(m.inputs) - m.head; n == prev && i >= 3 {
			break
		}
	}
	batch := m.batch[:0]
	for m.head < len(m.inputs) && *budget > 0 &&
		(m.ctrlHead == len(m.ctrl) || m.inputs[m.head].seq < m.ctrl[m.ctrlHead].seq) {
		batch = append(batch, m.pop())
		*budget--
	}
	return batch
}

// handOff passes the processing role, with the queue it still holds, to a new
// goroutine, so that no Dispatch call is kept busy by other producers forever.
func (m *Machine[S, I, O]) handOff() {
	go m.run(queued[I]{}, false)
}

// admits says whether inputs go through admit: there are admission steps
// or a committer, or an input may be nil.
func (m *Machine[S, I, O]) admits() bool {
	return len(m.cfg.admit) > 0 || m.cfg.committer != nil || m.nilable
}

// admit runs the admission steps (unless the input is a recorded answer,
// WithJobAnswers) and the committer's Prepare on an input about to be
// applied to state, after refusing a nil one. It returns the
// input to apply and the bytes to commit; or, when the input is rejected,
// the input as the step that rejected it saw it, and the error.
func (m *Machine[S, I, O]) admit(state S, in I, answered bool) (I, []byte, error) {
	if m.isNil(in) {
		return in, nil, ErrNilInput
	}
	for _, admit := range m.cfg.admit {
		if answered {
			break // recorded answers were admitted when they were recorded
		}
		m.doing, m.doingInput, m.hasInput = phaseAdmission, in, true
		next, err := admit(state, in)
		if err != nil {
			return in, nil, err
		}
		in = next
	}
	c := m.cfg.committer
	if c == nil {
		return in, nil, nil
	}
	m.doing, m.doingInput, m.hasInput = phasePrepare, in, true
	next, payload, err := c.Prepare(in)
	if err != nil {
		return in, nil, err
	}
	return next, payload, nil
}

// reject answers an input that will not be applied and reports it. A job
// whose input is rejected is not recorded as finished when it returns: see
// jobDone.
func (m *Machine[S, I, O]) reject(q queued[I], in I, err error) {
	if j := q.from; j != nil && j.index >= 0 {
		if _, ok := m.rejected[j]; !ok {
			if m.rejected == nil {
				m.rejected = make(map[*job[I]]error)
			}
			m.rejected[j] = err
		}
	}
	var sc trace.SpanContext
	if m.tel != nil {
		sc = m.tel.input(parentOf(q), in, 0, m.times, err)
	}
	if q.wait != nil {
		q.wait.reply(err) // a no-op for a batch's, answered already
	}
	if l := m.cfg.logger; l != nil {
		l.LogAttrs(context.Background(), slog.LevelWarn, "automata: input rejected",
			logAttrs(sc, m.cfg.spanAttrs, slog.String("moora.input.type", inputType(in)), slog.Any("error", err))...)
	}
	m.doing, m.doingInput, m.hasInput = phaseNone, in, true
	m.emit(Event[S, I]{Kind: InputRejected, Input: in, Err: err})
	m.hasInput = false
}

func (m *Machine[S, I, O]) transition(state S, in I) S {
	m.doing, m.doingInput, m.hasInput = phaseTransition, in, true
	if m.cfg.purity {
		return checkedTransition(m.def.Transition, state, in)
	}
	return m.def.Transition(state, in)
}

// applyOne admits an input, applies it and delivers the update.
func (m *Machine[S, I, O]) applyOne(q queued[I]) {
	if q.wait != nil && !q.wait.take() {
		return // its DispatchWait gave up on it
	}
	if q.wait != nil {
		m.one[0] = q
		m.inflight = m.one[:]
	}
	in := q.input
	var err error
	if m.tel != nil {
		m.times = inputTimes{start: time.Now()}
	}
	if m.admits() {
		in, _, err = m.admit(m.state, in, q.from != nil && q.from.answered)
	}
	if err != nil {
		m.reject(q, in, err)
	} else if m.tel != nil {
		m.times.admitted = time.Now()
		next := m.transition(m.state, in)
		m.times.transitioned = time.Now()
		m.publish(q, in, m.state, next)
	} else {
		m.publish(q, in, m.state, m.transition(m.state, in))
	}
	if q.wait != nil {
		m.one[0], m.inflight = queued[I]{}, nil
	}
}

// applyBatch admits a batch of inputs and computes their transitions, has
// the committer make them durable, and only then applies them and delivers
// their updates. Rejections and updates are reported in the order the
// inputs were taken up.
func (m *Machine[S, I, O]) applyBatch(batch []queued[I]) {
	m.inflight = batch
	steps, updates, payloads := m.steps[:0], m.updates[:0], m.payloads[:0]
	state := m.state
	for _, q := range batch {
		if q.wait != nil && !q.wait.take() {
			continue
		}
		if m.tel != nil {
			m.stepTimes = append(m.stepTimes, inputTimes{start: time.Now()})
		}
		in, payload, err := m.admit(state, q.input, q.from != nil && q.from.answered)
		if err != nil {
			steps = append(steps, step[I]{q: q, in: in, err: err})
			continue
		}
		if m.tel != nil {
			m.stepTimes[len(steps)].admitted = time.Now()
		}
		next := m.transition(state, in)
		if m.tel != nil {
			m.stepTimes[len(steps)].transitioned = time.Now()
		}
		steps = append(steps, step[I]{q: q, in: in, update: len(updates)})
		u := Update[S, I]{Prev: state, Input: in, State: next}
		if q.from != nil {
			u.Job = q.from.key
		}
		updates = append(updates, u)
		payloads = append(payloads, payload)
		state = next
	}
	m.hasInput = false
	var commitErr error
	if len(updates) > 0 {
		m.doing = phaseCommit
		var began time.Time
		if m.tel != nil {
			began = time.Now()
		}
		if commitErr = m.cfg.committer.Commit(updates, payloads); commitErr == nil {
			m.committed = true
			m.lastBatch = len(updates)
			if m.tel != nil {
				now := time.Now()
				m.tel.commit(len(updates), now.Sub(began))
				for i := range steps {
					if steps[i].err == nil {
						m.stepTimes[i].committed, m.stepTimes[i].batch = now, len(updates)
					}
				}
			}
		}
	}
	// Answer the rejected first: if a subscriber or event handler fails
	// the machine while the batch is delivered, fail answers every input
	// still in flight as durable, which these are not. The committed know
	// their positions now, for the same reason.
	pos := m.applied
	for i := range steps {
		st := &steps[i]
		if st.err == nil && commitErr != nil {
			st.err = commitErr
		}
		if st.err != nil && st.q.wait != nil {
			st.q.wait.reply(st.err)
		}
		if st.err == nil {
			pos++
			if st.q.wait != nil {
				st.q.wait.pos = pos
			}
		}
	}
	for i, st := range steps {
		if m.tel != nil {
			m.times = m.stepTimes[i]
		}
		switch {
		case st.err != nil:
			m.reject(st.q, st.in, st.err)
		default:
			u := &updates[st.update]
			m.publish(st.q, u.Input, u.Prev, u.State)
		}
	}
	clear(batch)
	clear(steps)
	m.stepTimes = m.stepTimes[:0]
	clear(updates)
	clear(payloads)
	m.batch, m.steps, m.updates, m.payloads = batch[:0], steps[:0], updates[:0], payloads[:0]
	m.inflight, m.committed = nil, false
}

// step is what became of one input of a batch: rejected with err, or the
// update at index update of the batch's updates.
type step[I any] struct {
	q      queued[I]
	in     I
	err    error
	update int
}

// publish applies an input whose transition gave next: the state changes,
// the waiter is answered and the subscribers get the update.
func (m *Machine[S, I, O]) publish(q queued[I], in I, prev, next S) {
	if q.from != nil {
		q.from.delivered = true
	}
	m.doingInput, m.hasInput = in, true
	if len(m.cfg.events) > 0 {
		m.emit(Event[S, I]{Kind: InputReceived, Input: in})
	}
	m.state = next
	m.dirty = m.needsSettle
	m.changed = true
	m.applied++
	if q.wait != nil && q.wait.pos == 0 {
		q.wait.pos = m.applied
	}
	if q.wait == nil && len(m.subs) == 0 && len(m.cfg.events) == 0 {
		// Nobody looks before the processing role next takes m.mu, in
		// run, which brings current up to date then.
		m.stale = true
	} else {
		m.mu.Lock()
		m.current, m.stale = next, false
		m.mu.Unlock()
	}
	if m.tel != nil {
		// The input is applied: its span ends before its DispatchWait
		// returns (the caller's span ends after its child's) and before
		// the subscribers are called (one that panics fails the machine,
		// the input applied all the same).
		m.lastInput = m.tel.input(parentOf(q), in, m.cfg.seqBase+m.applied, m.times, nil)
		if m.lastInput.IsValid() && len(m.since) < maxSince {
			m.since = append(m.since, m.lastInput)
		}
	}
	if q.wait != nil {
		q.wait.reply(nil)
	}
	if len(m.subs) > 0 {
		m.doing = phaseOutput
		u := Update[S, I]{Prev: prev, Input: in, State: next}
		if q.from != nil {
			u.Job = q.from.key
		}
		if out, ok := m.output(u); ok {
			m.doing = phaseSubscriber
			for _, s := range m.subs {
				if !s.removed.Load() {
					s.fn(out)
				}
			}
		}
	}
	m.hasInput = false
}

func (m *Machine[S, I, O]) handle(c control[I, O]) {
	switch c.op {
	case opSubscribe:
		if c.sub.removed.Load() {
			return
		}
		m.doing, m.hasInput = phaseReplay, false
		if out, ok := m.output(Update[S, I]{State: m.state, Replay: true}); ok {
			c.sub.fn(out)
		}
		m.subs = append(m.subs, c.sub)
	case opUnsubscribe:
		subs := m.subs[:0:0]
		for _, s := range m.subs {
			if s != c.sub {
				subs = append(subs, s)
			}
		}
		m.subs = subs
	case opJobDone:
		m.jobDone(c.job, c.err)
	}
}

// settle runs the effects and reconciles the jobs on the latest state, then
// reports the state update. Once the machine is closed, it only reports the
// update: effects and jobs no longer run.
func (m *Machine[S, I, O]) settle(closed bool) {
	m.dirty = false
	m.hasInput = false
	if closed {
		m.settled()
		return
	}
	for i := range m.cfg.effects {
		e := &m.cfg.effects[i]
		m.doing, m.doingIndex = phaseEffect, i
		if !m.cfg.purity {
			e.fn(m.state, m.dispatch)
			continue
		}
		before := fingerprint(m.state)
		e.fn(m.state, m.dispatch)
		if err := mutated(before, m.state); err != nil {
			err.Index, err.Where = -1, e.name
			panic(err)
		}
	}
	if len(m.cfg.jobs) > 0 {
		m.reconcile(m.jobsAt())
	}
	if m.tel != nil {
		clear(m.since)
		m.since = m.since[:0]
	}
	m.settled()
}

// settled reports the state update of the inputs applied since the last.
func (m *Machine[S, I, O]) settled() {
	if m.changed {
		m.changed = false
		m.emit(Event[S, I]{Kind: StateUpdated, State: m.state})
	}
}

// jobsAt asks every jobs function for the jobs the latest state calls for,
// keys prefixed as configured.
func (m *Machine[S, I, O]) jobsAt() map[string]Job[I] {
	call := func(i int) map[string]Job[I] {
		j := &m.cfg.jobs[i]
		m.doing, m.doingIndex = phaseJobs, i
		if !m.cfg.purity {
			return j.fn(m.state)
		}
		before := fingerprint(m.state)
		jobs := j.fn(m.state)
		if err := mutated(before, m.state); err != nil {
			err.Index, err.Where = -1, j.name
			panic(err)
		}
		return jobs
	}
	if len(m.cfg.jobs) == 1 && m.cfg.jobs[0].prefix == "" {
		return call(0)
	}
	want := make(map[string]Job[I])
	for i := range m.cfg.jobs {
		j := &m.cfg.jobs[i]
		for key, job := range call(i) {
			key = j.prefix + key
			if _, dup := want[key]; dup {
				panic(fmt.Sprintf("automata: two jobs functions return the key %q", key))
			}
			want[key] = job
		}
	}
	return want
}

func (m *Machine[S, I, O]) emit(e Event[S, I]) {
	if len(m.cfg.events) == 0 {
		return
	}
	doing := m.doing
	m.doing = phaseEvents
	for _, handle := range m.cfg.events {
		handle(e)
	}
	m.doing = doing
}

// phase is what user code the processing role runs, for failure reports.
type phase uint8

const (
	phaseNone phase = iota
	phaseAdmission
	phasePrepare
	phaseTransition
	phaseCommit
	phaseOutput
	phaseSubscriber
	phaseReplay
	phaseEffect
	phaseJobs
	phaseEvents
)

var phaseNames = [...]string{
	phaseNone:       "the machine",
	phaseAdmission:  "the admission step",
	phasePrepare:    "the committer's Prepare",
	phaseTransition: "the transition",
	phaseCommit:     "the committer's Commit",
	phaseOutput:     "the output function",
	phaseSubscriber: "a subscriber",
	phaseReplay:     "a subscriber, given the current state",
	phaseEvents:     "an event handler",
}

// where names the user code that is running.
func (m *Machine[S, I, O]) where() string {
	switch m.doing {
	case phaseEffect:
		return m.cfg.effects[m.doingIndex].name
	case phaseJobs:
		return m.cfg.jobs[m.doingIndex].name
	}
	return phaseNames[m.doing]
}

// fail stops the machine after user code panicked with v, on the goroutine
// holding the processing role, which it keeps: nothing is applied any more.
// It answers the inputs in flight and in the queue, cancels the jobs,
// reports a MachineFailed event (unless an event handler panicked) and
// closes Done.
func (m *Machine[S, I, O]) fail(v any, stack []byte) {
	if p, ok := v.(*parallelPanic); ok {
		v, stack = p.value, p.stack // the effect's own panic, on its own goroutine
	}
	f := &FailError{Where: m.where(), Value: v, Stack: stack}
	if m.hasInput {
		f.Input, f.HasInput = m.doingInput, true
	}
	m.failed.Store(f)
	if l := m.cfg.logger; l != nil {
		l.LogAttrs(context.Background(), slog.LevelError, "automata: the machine failed",
			logAttrs(trace.SpanContext{}, m.cfg.spanAttrs, slog.String("where", f.Where), slog.Any("error", f))...)
	}
	m.mu.Lock()
	if m.stale {
		m.current, m.stale = m.state, false
	}
	m.mu.Unlock()
	for _, q := range m.inflight {
		if q.wait != nil {
			if m.committed {
				q.wait.reply(nil) // durable: it will be applied on recovery
			} else {
				q.wait.reply(f)
			}
		}
	}
	m.inflight = nil
	m.mu.Lock()
	queue := m.inputs[m.head:]
	m.inputs, m.head = nil, 0
	m.ctrl, m.ctrlHead = nil, 0
	for _, j := range m.running {
		j.cancelled.Store(true)
	}
	m.mu.Unlock()
	m.stopReadyWorkers()
	for _, q := range queue {
		if q.wait != nil {
			q.wait.reply(f)
		}
	}
	for _, j := range m.running {
		if j.tel != nil {
			j.tel.reason.Store(cancelClosed)
		}
		j.cancelContext(cancelClosed)
	}
	if m.doing != phaseEvents {
		e := Event[S, I]{Kind: MachineFailed, Err: f}
		if m.hasInput {
			e.Input = m.doingInput
		}
		func() {
			defer func() { recover() }() // already failed: nothing more to report
			for _, handle := range m.cfg.events {
				handle(e)
			}
		}()
	}
	m.closeDone()
	m.mu.Lock()
	m.roleOver = true // processing stays set: the role is kept for good
	m.releaseLocked()
	m.mu.Unlock()
}
