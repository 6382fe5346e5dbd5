package automata

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
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
}

// drainBudget is how many queued inputs a goroutine drafted by Dispatch
// applies, beyond its own, before it hands the rest of the queue to a new
// goroutine and returns.
const drainBudget = 1024

// Machine is a running machine with state S, input I and output O. Create one
// with New, NewMoore or NewMealy; its methods are safe for concurrent use.
type Machine[S, I, O any] struct {
	def         Definition[S, I]
	output      func(Update[S, I]) (O, bool)
	cfg         config[S, I]
	needsSettle bool        // an effect, jobs or events are configured
	dispatch    Dispatch[I] // m.Dispatch, bound once

	// Owned by the goroutine holding the processing role.
	state    S
	subs     []*subscriber[O]
	dirty    bool // effects and jobs have not seen the latest state
	changed  bool // inputs were applied since the last StateUpdated
	running  map[string]*job[I]
	finished map[string]struct{} // completed while still desired
	newKeys  []string
	shutdown bool

	// wg counts the processing role, running jobs and worker goroutines.
	wg sync.WaitGroup

	mu         sync.Mutex
	processing bool
	closed     bool
	current    S
	arrivals   uint64 // stamps queued inputs and control items in arrival order
	inputs     []queued[I]
	head       int
	ctrl       []control[I, O]
	ctrlHead   int
	idle       []chan task[I] // parked workers

	// stopping is closed by the first Close once stopped is set; stopped
	// is closed when every goroutine of the machine has exited.
	stopping chan struct{}
	stopped  chan struct{}
}

// queued is an input waiting to be applied, with the job that dispatched it
// and its place in the order of arrival.
type queued[I any] struct {
	input I
	from  *job[I]
	seq   uint64
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

// New starts a general machine: output is called for every applied input with
// the update it made, and for each new subscriber with a Replay update of the
// current state. When output returns false, subscribers are not called.
func New[S, I, O any](def Definition[S, I], output func(Update[S, I]) (O, bool), opts ...Option[S, I]) *Machine[S, I, O] {
	if def.Initial == nil || def.Transition == nil {
		panic("automata: Definition needs both Initial and Transition")
	}
	if output == nil {
		panic("automata: nil output function")
	}
	m := &Machine[S, I, O]{def: def, output: output, stopping: make(chan struct{})}
	for _, opt := range opts {
		opt(&m.cfg)
	}
	m.dispatch = m.Dispatch
	m.needsSettle = m.cfg.effect != nil || m.cfg.jobsAt != nil || m.cfg.events != nil
	if m.cfg.jobsAt != nil {
		m.running = make(map[string]*job[I])
		m.finished = make(map[string]struct{})
	}
	m.state = def.Initial()
	m.current = m.state
	if m.needsSettle {
		// Run the effect and start the jobs the initial state calls for:
		// an agent restored from storage resumes its work here.
		m.dirty = true
		m.processing = true
		m.wg.Add(1)
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
// After Close, Dispatch does nothing.
func (m *Machine[S, I, O]) Dispatch(input I) {
	m.dispatchFrom(nil, input)
}

func (m *Machine[S, I, O]) dispatchFrom(j *job[I], input I) {
	m.mu.Lock()
	if m.closed || (j != nil && j.cancelled) {
		m.mu.Unlock()
		return
	}
	q := queued[I]{input, j, m.arrivals}
	m.arrivals++
	if m.processing || m.ctrlHead < len(m.ctrl) {
		// Queue behind what arrived first: another goroutine is
		// applying inputs, or job ends were recorded while idle.
		m.inputs = append(m.inputs, q)
		if m.claimLocked() {
			m.run(queued[I]{}, false)
		}
		return
	}
	m.claimLocked()
	m.run(q, true)
}

// claimLocked takes the processing role unless another goroutine holds it,
// and reports whether it did. It is entered with m.mu held and releases it.
func (m *Machine[S, I, O]) claimLocked() bool {
	if m.processing {
		m.mu.Unlock()
		return false
	}
	m.processing = true
	m.wg.Add(1)
	m.mu.Unlock()
	return true
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

// Close stops the machine: later inputs are dropped, inputs already queued are
// applied (subscribers see them; effects and jobs no longer run), every
// running job's context is cancelled, and Close waits for the jobs to return
// and for every goroutine the machine started to exit, or for ctx to be done,
// whichever comes first. Close must not be called from a subscriber, effect,
// job or event handler of the same machine: it would wait for itself.
//
// Close may be called more than once, and concurrently; every call waits for
// the same shutdown.
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
		go func() {
			m.wg.Wait()
			close(m.stopped)
		}()
		close(m.stopping)
	}
	<-m.stopping // m.stopped is set
	select {
	case <-m.stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("automata: close: jobs still running: %w", ctx.Err())
	}
}

// enqueue hands a control item to the goroutine applying inputs, becoming
// that goroutine if there is none.
func (m *Machine[S, I, O]) enqueue(c control[I, O]) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	c.seq = m.arrivals
	m.arrivals++
	m.ctrl = append(m.ctrl, c)
	if m.claimLocked() {
		m.run(queued[I]{}, false)
	}
}

// run is the processing role. It applies first when have is set, then
// handles queued control items and inputs in the order they arrived (a job's
// input before the job's end, which came after it), settles effects and jobs
// on the latest state whenever the queue runs dry or a control item is next,
// and releases the role when there is nothing left to do.
func (m *Machine[S, I, O]) run(first queued[I], have bool) {
	budget := drainBudget
	if have {
		m.apply(first)
	}
	for {
		m.mu.Lock()
		haveInput := m.head < len(m.inputs)
		if m.ctrlHead < len(m.ctrl) && (!haveInput || m.ctrl[m.ctrlHead].seq < m.inputs[m.head].seq) {
			if m.dirty && !m.closed {
				// Settle the inputs applied so far first: a job's
				// end is reported after the state its own input
				// made, however the scheduling went.
				m.mu.Unlock()
				m.settle()
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
				return
			}
			budget--
			in := m.inputs[m.head]
			m.inputs[m.head] = queued[I]{}
			m.head++
			if m.head == len(m.inputs) {
				m.inputs = m.inputs[:0]
				m.head = 0
			}
			m.mu.Unlock()
			m.apply(in)
			continue
		}
		if m.dirty && !m.closed {
			m.mu.Unlock()
			m.settle()
			continue
		}
		if m.closed && !m.shutdown {
			m.mu.Unlock()
			m.stopJobs()
			continue
		}
		m.processing = false
		m.mu.Unlock()
		m.wg.Done()
		return
	}
}

// handOff passes the processing role, with the queue it still holds, to a new
// goroutine, so that no Dispatch call is kept busy by other producers forever.
func (m *Machine[S, I, O]) handOff() {
	go m.run(queued[I]{}, false)
}

func (m *Machine[S, I, O]) apply(q queued[I]) {
	in := q.input
	if q.from != nil {
		q.from.delivered = true
	}
	m.emit(Event[S, I]{Kind: InputReceived, Input: in})
	prev := m.state
	var next S
	if m.cfg.purity {
		next = checkedTransition(m.def.Transition, prev, in)
	} else {
		next = m.def.Transition(prev, in)
	}
	m.state = next
	m.dirty = m.needsSettle
	m.changed = true
	m.mu.Lock()
	m.current = next
	m.mu.Unlock()
	if len(m.subs) == 0 {
		return
	}
	out, ok := m.output(Update[S, I]{Prev: prev, Input: in, State: next})
	if !ok {
		return
	}
	for _, s := range m.subs {
		if !s.removed.Load() {
			s.fn(out)
		}
	}
}

func (m *Machine[S, I, O]) handle(c control[I, O]) {
	switch c.op {
	case opSubscribe:
		if c.sub.removed.Load() {
			return
		}
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

// settle runs the effect and reconciles the jobs on the latest state, then
// reports the state update.
func (m *Machine[S, I, O]) settle() {
	m.dirty = false
	if m.cfg.effect != nil {
		m.cfg.effect(m.state, m.dispatch)
	}
	if m.cfg.jobsAt != nil {
		m.reconcile(m.cfg.jobsAt(m.state))
	}
	if m.changed {
		m.changed = false
		m.emit(Event[S, I]{Kind: StateUpdated, State: m.state})
	}
}

func (m *Machine[S, I, O]) emit(e Event[S, I]) {
	if m.cfg.events != nil {
		m.cfg.events(e)
	}
}
