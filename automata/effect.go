package automata

import (
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
)

// Dispatch sends an input to a machine. A Dispatch handed out by a machine is
// safe to call from any goroutine, including from inside subscribers, effects
// and jobs.
type Dispatch[I any] func(input I)

// Effect is a synchronous side effect of a value derived from state: the whole
// state for a machine, or an actor's ContextOf view for an actor of a
// generated agent. The value is called the view throughout this package so
// that it is never mistaken for a context.Context.
//
// An Effect must return promptly; asynchronous work runs in goroutines it
// starts, and reports back through dispatch. For tracked, cancellable
// asynchronous work, prefer keyed jobs (see WithJobs).
type Effect[V, I any] func(view V, dispatch Dispatch[I])

// Project adapts an effect on a view to an effect on the state the view is
// projected from, such as an actor's effect on its ContextOf view to an
// effect on the whole agent state.
func Project[S, V, I any](view func(state S) V, effect Effect[V, I]) Effect[S, I] {
	return func(state S, dispatch Dispatch[I]) { effect(view(state), dispatch) }
}

// Sequential runs effects one after another, in order, on the same view.
func Sequential[V, I any](effects ...Effect[V, I]) Effect[V, I] {
	effects = slices.Clone(effects)
	return func(view V, dispatch Dispatch[I]) {
		for _, eff := range effects {
			eff(view, dispatch)
		}
	}
}

// Parallel runs effects concurrently, each in its own goroutine, on the same
// view, and returns when all of them have returned. Use it for independent
// effects whose synchronous part takes a while; for quick ones Sequential is
// cheaper.
//
// A panic in one of the effects (or a call of runtime.Goexit) does not
// crash the process from its goroutine: Parallel waits for the others and
// panics again on the calling goroutine, where a machine catches it
// (fail-stop) and reports the first effect's panic value and the stack
// where it panicked.
func Parallel[V, I any](effects ...Effect[V, I]) Effect[V, I] {
	effects = slices.Clone(effects)
	return func(view V, dispatch Dispatch[I]) {
		var (
			wg    sync.WaitGroup
			once  sync.Once
			first *parallelPanic
		)
		for _, eff := range effects {
			wg.Go(func() {
				returned := false
				defer func() {
					v := recover()
					if v == nil && !returned {
						v = errGoexit
					}
					if v == nil {
						return
					}
					p, nested := v.(*parallelPanic) // from a Parallel inside this one
					if !nested {
						p = &parallelPanic{value: v, stack: debug.Stack()}
					}
					once.Do(func() { first = p })
				}()
				eff(view, dispatch)
				returned = true
			})
		}
		wg.Wait()
		if first != nil {
			panic(first)
		}
	}
}

// parallelPanic is what Parallel panics with when one of its effects
// panicked on a goroutine of its own: the value that effect panicked with
// and the stack of its goroutine at the panic. A machine reports value and
// stack in its *FailError, as if the effect had panicked on the machine's
// goroutine.
type parallelPanic struct {
	value any
	stack []byte
}

func (p *parallelPanic) Error() string {
	return fmt.Sprintf("automata: a Parallel effect panicked: %v", p.value)
}

// Unwrap returns the panic value if it is an error.
func (p *parallelPanic) Unwrap() error {
	err, _ := p.value.(error)
	return err
}

// Stateful makes an effect with a local state of its own, kept across calls:
// fn receives the latest view, the local state and update, which replaces the
// local state with a function of it. When update changes the local state, fn
// runs again with the latest view and the new local state: at once if update
// was called from another goroutine, or right after fn returns if fn called
// it. Calls of fn never overlap.
//
// The local state lives in the returned Effect value: build the effect once,
// outside the function that receives views, and every call shares it. A
// machine that failed leaves it usable by the next (a panic in fn or in a
// change function leaves no lock held and no run pending).
//
// When update is called from a goroutine of the program's own, fn runs on
// that goroutine, outside the machine: a panic there is that goroutine's,
// not the machine's, and crashes the process unless it recovers it, as in
// any goroutine. To report a failure from asynchronous work, dispatch an
// input.
func Stateful[V, I any, L comparable](initial L, fn func(view V, local L, update func(func(L) L), dispatch Dispatch[I])) Effect[V, I] {
	s := &statefulEffect[V, I, L]{local: initial, fn: fn}
	s.update = s.set
	return s.call
}

type statefulEffect[V, I any, L comparable] struct {
	fn     func(V, L, func(func(L) L), Dispatch[I])
	update func(func(L) L)

	mu       sync.Mutex
	local    L
	view     V
	dispatch Dispatch[I]
	seen     bool // a view has arrived
	running  bool // fn is being called
	again    bool // run fn again when the current call returns
}

func (s *statefulEffect[V, I, L]) call(view V, dispatch Dispatch[I]) {
	s.mu.Lock()
	s.view, s.dispatch, s.seen = view, dispatch, true
	s.runLocked()
}

func (s *statefulEffect[V, I, L]) set(change func(L) L) {
	if s.change(change) {
		s.mu.Lock()
		s.runLocked()
	}
}

// change replaces the local state with change of it, and reports whether
// that changed it and fn has seen a view, so must run again.
func (s *statefulEffect[V, I, L]) change(change func(L) L) bool {
	s.mu.Lock()
	defer s.mu.Unlock() // also if change panics
	next := change(s.local)
	if next == s.local {
		return false
	}
	s.local = next
	return s.seen
}

// runLocked calls fn until no further run was asked for. It is entered with
// s.mu held and returns with it released.
func (s *statefulEffect[V, I, L]) runLocked() {
	s.again = true
	if s.running {
		s.mu.Unlock()
		return
	}
	s.running = true
	for s.again {
		s.again = false
		view, local, dispatch := s.view, s.local, s.dispatch
		s.mu.Unlock()
		s.invoke(view, local, dispatch)
		s.mu.Lock()
	}
	s.running = false
	s.mu.Unlock()
}

// invoke calls fn. If fn panics, the effect is left as if no call were
// running, for the next machine to use.
func (s *statefulEffect[V, I, L]) invoke(view V, local L, dispatch Dispatch[I]) {
	returned := false
	defer func() {
		if !returned {
			s.mu.Lock()
			s.running, s.again = false, false
			s.mu.Unlock()
		}
	}()
	s.fn(view, local, s.update, dispatch)
	returned = true
}
