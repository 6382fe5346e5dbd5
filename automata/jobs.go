package automata

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
)

// Job is a piece of asynchronous work the state calls for, such as an LLM or
// tool call. It runs in its own goroutine, reports back by dispatching
// inputs, and must return when ctx is done. JobKey(ctx) is its key.
//
// A job that returns an error or panics is reported as an EffectFailed event;
// the machine keeps running.
type Job[I any] func(ctx context.Context, dispatch Dispatch[I]) error

type jobKeyCtx struct{}

// JobKey returns the key of the job ctx was handed to, or "" if ctx did not
// come from a machine. The key is stable across restarts of an agent whose
// state is restored, which makes it the idempotency key for the call the job
// makes.
func JobKey(ctx context.Context) string {
	key, _ := ctx.Value(jobKeyCtx{}).(string)
	return key
}

// PanicError is the error of a job that panicked.
type PanicError struct {
	Key   string // the job's key
	Value any    // the value passed to panic
	Stack []byte // the job goroutine's stack at the panic
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("automata: job %q panicked: %v", e.Key, e.Value)
}

type job[I any] struct {
	key    string
	cancel context.CancelFunc
	// cancelled is guarded by Machine.mu: a cancelled job's dispatches are
	// dropped.
	cancelled bool
	// delivered and quiet are owned by the processing role. delivered:
	// an input from the job was applied since the last reconcile. quiet:
	// the job's key vanished in a batch that applied its own input, so
	// how it ends is reported when it returns.
	delivered bool
	quiet     bool
}

// reconcile starts jobs for keys that appeared, cancels jobs whose key
// vanished and leaves the rest alone. A key whose job finished while the key
// was desired is not started again until the key disappears and comes back.
func (m *Machine[S, I, O]) reconcile(want map[string]Job[I]) {
	gone := m.newKeys[:0]
	for key, j := range m.running {
		if _, ok := want[key]; !ok {
			gone = append(gone, key)
			j.quiet = j.delivered
		}
		j.delivered = false
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		m.cancelJobs(gone)
	}
	for key := range m.finished {
		if _, ok := want[key]; !ok {
			delete(m.finished, key)
		}
	}
	fresh := gone[:0]
	for key := range want {
		if _, ok := m.running[key]; ok {
			continue
		}
		if _, ok := m.finished[key]; ok {
			continue
		}
		fresh = append(fresh, key)
	}
	slices.Sort(fresh)
	for _, key := range fresh {
		m.startJob(key, want[key])
	}
	clear(fresh)
	m.newKeys = fresh[:0]
}

func (m *Machine[S, I, O]) cancelJobs(keys []string) {
	jobs := make([]*job[I], len(keys))
	m.mu.Lock()
	for i, key := range keys {
		jobs[i] = m.running[key]
		jobs[i].cancelled = true
	}
	m.mu.Unlock()
	for _, j := range jobs {
		delete(m.running, j.key)
		j.cancel()
		if j.quiet {
			// The key vanished because of the job's own input:
			// most likely it handed in its result and is about
			// to return. Report how it ends when it does.
			continue
		}
		m.emit(Event[S, I]{Kind: EffectCancelled, Key: j.key})
	}
}

func (m *Machine[S, I, O]) startJob(key string, fn Job[I]) {
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), jobKeyCtx{}, key))
	j := &job[I]{key: key, cancel: cancel}
	m.running[key] = j
	m.emit(Event[S, I]{Kind: EffectStarted, Key: key})
	m.wg.Add(1)
	go m.runJob(ctx, j, fn)
}

func (m *Machine[S, I, O]) runJob(ctx context.Context, j *job[I], fn Job[I]) {
	defer m.wg.Done()
	err := callJob(ctx, j.key, fn, func(in I) { m.dispatchFrom(j, in) })
	j.cancel()
	m.enqueue(control[I, O]{op: opJobDone, job: j, err: err})
}

func callJob[I any](ctx context.Context, key string, fn Job[I], dispatch Dispatch[I]) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Key: key, Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, dispatch)
}

// jobDone records the end of a job and reports it.
func (m *Machine[S, I, O]) jobDone(j *job[I], err error) {
	if m.running[j.key] == j {
		delete(m.running, j.key)
		// Its key is still desired (or reconcile would have cancelled
		// it): remember, so that it is not started again.
		m.finished[j.key] = struct{}{}
	} else if !j.quiet {
		return // cancelled, and already reported as such
	}
	switch {
	case j.quiet && err != nil:
		m.emit(Event[S, I]{Kind: EffectCancelled, Key: j.key})
	case err != nil:
		m.emit(Event[S, I]{Kind: EffectFailed, Key: j.key, Err: err})
	default:
		m.emit(Event[S, I]{Kind: EffectCompleted, Key: j.key})
	}
}

// stopJobs cancels every running job once the machine is closed.
func (m *Machine[S, I, O]) stopJobs() {
	m.shutdown = true
	if len(m.running) == 0 {
		return
	}
	keys := make([]string, 0, len(m.running))
	for key := range m.running {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	m.cancelJobs(keys)
}
