package automata

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Job is a piece of asynchronous work the state calls for, such as an LLM or
// tool call. It runs in its own goroutine, reports back by dispatching
// inputs, and must return when ctx is done. JobKey(ctx) is its key.
//
// A job that returns an error or panics is reported as an EffectFailed event;
// the machine keeps running. (Only the job's own code is covered: inputs it
// dispatches may be applied on its goroutine, and a panic there stops the
// machine, as everywhere else.)
type Job[I any] func(ctx context.Context, dispatch Dispatch[I]) error

type jobKeyCtx struct{}

// JobKey returns the key of the job ctx was handed to, or "" if ctx did not
// come from a machine. The key is stable across restarts of an agent whose
// state is restored, which makes it the idempotency key for the call the job
// makes.
func JobKey(ctx context.Context) string {
	if j, ok := ctx.Value(jobKeyCtx{}).(interface{ jobKey() string }); ok {
		return j.jobKey()
	}
	return ""
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

// RejectedInputError is the error of a job that returned nil although an
// input it dispatched was rejected (by an admission step, or in a durable
// machine by the journal): its result never reached the state. Its key,
// still wanted, is started again at the next reconcile, after the next
// applied input.
type RejectedInputError struct {
	Key string // the job's key
	Err error  // why its input was rejected (the first one, if several were)
}

func (e *RejectedInputError) Error() string {
	return fmt.Sprintf("automata: job %q: an input it dispatched was rejected: %v", e.Key, e.Err)
}

func (e *RejectedInputError) Unwrap() error { return e.Err }

// job is a running job. It is also the job's context.Context: cancelled when
// its key vanishes or the machine closes, and carrying its key. Merging the
// two saves three allocations per job over context.WithValue and
// context.WithCancel.
type job[I any] struct {
	key string

	ctxMu  sync.Mutex
	done   chan struct{} // made on first use; closed on cancel
	afters map[*afterFunc]struct{}
	// over is set, under ctxMu, when the context is cancelled, to why (a
	// cancel* constant); read without it by Err and by the fast paths.
	over atomic.Uint32

	// cancelled: the job's dispatches are dropped. Set by the processing
	// role as it cancels the job, and by the job's worker as it ends.
	cancelled atomic.Bool
	// Owned by the processing role. delivered: an input from the job was
	// applied since the last reconcile. quiet: the job's key vanished in
	// a batch that applied its own input, so how it ends is reported when
	// it returns. wanted: the reconcile under way found its key among
	// those wanted. index: the job's place in Machine.running, -1 once it
	// is no longer running.
	delivered bool
	quiet     bool
	wanted    bool
	// answered: WithJobAnswers stands in for the job, whose inputs pass
	// the admission steps. Set before the job starts.
	answered bool
	index    int32

	// tel is the job's telemetry (WithTelemetry, WithLogger); nil without.
	// The fields above fill 56 bytes, and tel the last 8 of the 64 the
	// job has always taken.
	tel *jobTelemetry
}

// jobTelemetry is what WithTelemetry and WithLogger record of a job.
type jobTelemetry struct {
	// cause is the span of the last input applied before the job started,
	// the state after which called for it; also are the other inputs
	// applied since the jobs were last reconciled, any of which may have
	// been the one that called for it first.
	cause trace.SpanContext
	also  []trace.SpanContext
	// traced is the job's context with its own span (set by its worker
	// before the job runs), the parent of the inputs it dispatches.
	traced context.Context
	// span is the job's span while its end is to be reported: a job that
	// returned nil is reported by the machine (jobDone), which knows
	// whether an input of it was rejected.
	span trace.Span
	// reason is why the job's context was cancelled (a cancel* constant),
	// set before it was.
	reason atomic.Uint32
}

// Why a job's context was cancelled.
const (
	cancelNone uint32 = iota
	cancelKeyVanished
	cancelClosed
	cancelEnded // the job returned
)

// ErrJobKeyVanished is what JobCancelCause says of a job cancelled because
// the state no longer calls for its key: its work is not wanted any more (a
// job that delegates tells its sub-agent so). A job cancelled because its
// machine closed or failed is ErrClosed instead: its key may still be
// wanted, and the job runs again when the agent is opened again.
var ErrJobKeyVanished = errors.New("automata: the job's key vanished from the state")

// JobCancelCause says why the context a machine handed to a job (which ctx
// is, or is derived from) was cancelled: ErrJobKeyVanished, ErrClosed, or
// context.Canceled once the job has returned; nil while it is not
// cancelled (a context derived from it may be, for its own reasons), and
// for a context that comes from no job.
func JobCancelCause(ctx context.Context) error {
	j, ok := ctx.Value(jobKeyCtx{}).(interface{ cancelCause() error })
	if !ok {
		return nil
	}
	return j.cancelCause()
}

func (j *job[I]) cancelCause() error {
	switch j.over.Load() {
	case cancelKeyVanished:
		return ErrJobKeyVanished
	case cancelClosed:
		return ErrClosed
	case cancelEnded:
		return context.Canceled
	}
	return nil
}

func cancelReason(r uint32) string {
	switch r {
	case cancelKeyVanished:
		return "its key vanished"
	case cancelClosed:
		return "the machine closed"
	}
	return ""
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (j *job[I]) Deadline() (time.Time, bool) { return time.Time{}, false }

func (j *job[I]) Done() <-chan struct{} {
	if j.over.Load() != 0 {
		// done is written only before over is set, under ctxMu: the
		// same channel an earlier call returned, or none.
		if d := j.done; d != nil {
			return d
		}
		return closedChan
	}
	j.ctxMu.Lock()
	defer j.ctxMu.Unlock()
	if j.done == nil {
		if j.over.Load() != 0 {
			return closedChan
		}
		j.done = make(chan struct{})
	}
	return j.done
}

func (j *job[I]) Err() error {
	if j.over.Load() == 0 {
		return nil
	}
	// Cancelled; once cancelContext releases ctxMu, Done is closed too,
	// as a context's Err must not be set while Done is open.
	j.ctxMu.Lock()
	j.ctxMu.Unlock()
	return context.Canceled
}

// Value answers JobKey's lookup with the job itself (a pointer: no
// allocation, unlike boxing the key string).
func (j *job[I]) Value(key any) any {
	if key == (jobKeyCtx{}) {
		return j
	}
	return nil
}

func (j *job[I]) jobKey() string { return j.key }

func (j *job[I]) String() string { return "automata.JobContext(" + strconv.Quote(j.key) + ")" }

// AfterFunc behaves like context.AfterFunc(j, f). The context package uses it
// to make contexts derived from a job's context follow its cancellation
// without starting a goroutine for each.
func (j *job[I]) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	j.ctxMu.Lock()
	if j.over.Load() != 0 {
		j.ctxMu.Unlock()
		a.start()
		return a.claim
	}
	if j.afters == nil {
		j.afters = make(map[*afterFunc]struct{})
	}
	j.afters[a] = struct{}{}
	j.ctxMu.Unlock()
	return func() bool {
		j.ctxMu.Lock()
		delete(j.afters, a)
		j.ctxMu.Unlock()
		return a.claim()
	}
}

// cancelContext cancels the job's context, for why; later calls do nothing.
func (j *job[I]) cancelContext(why uint32) {
	if j.over.Load() != 0 {
		return
	}
	j.ctxMu.Lock()
	if j.over.Load() != 0 {
		j.ctxMu.Unlock()
		return
	}
	j.over.Store(why)
	if j.done != nil {
		close(j.done)
	}
	afters := j.afters
	j.afters = nil
	j.ctxMu.Unlock()
	for a := range afters {
		a.start()
	}
}

// afterFunc is a function registered with AfterFunc: it runs once, in its own
// goroutine, unless stopped first.
type afterFunc struct {
	claimed atomic.Bool
	f       func()
}

// claim reports whether the caller is the first to claim a: to run it, or to
// stop it.
func (a *afterFunc) claim() bool { return !a.claimed.Swap(true) }

func (a *afterFunc) start() {
	if a.claim() {
		go a.f()
	}
}

// reconcile starts jobs for keys that appeared, cancels jobs whose key
// vanished and leaves the rest alone. A key whose job finished while the key
// was desired is not started again until the key disappears and comes back.
//
// It looks each wanted key up once among the running jobs, marking those it
// finds; the running jobs left unmarked are the ones to cancel.
func (m *Machine[S, I, O]) reconcile(want map[string]Job[I]) {
	fresh := m.fresh[:0]
	for key, fn := range want {
		if j := m.lookupRunning(key); j != nil {
			j.wanted = true
			continue
		}
		if len(m.finished) > 0 {
			if _, ok := m.finished[key]; ok {
				continue
			}
		}
		fresh = append(fresh, pending[I]{key: key, fn: fn})
	}
	gone := m.gone[:0]
	for _, j := range m.running {
		if !j.wanted {
			gone = append(gone, j)
			j.quiet = j.delivered
		}
		j.wanted, j.delivered = false, false
	}
	if len(m.finished) > 0 {
		for key := range m.finished {
			if _, ok := want[key]; !ok {
				delete(m.finished, key)
			}
		}
	}
	if len(gone) > 1 {
		slices.SortFunc(gone, func(a, b *job[I]) int { return strings.Compare(a.key, b.key) })
	}
	if len(fresh) > 1 {
		slices.SortFunc(fresh, func(a, b pending[I]) int { return strings.Compare(a.key, b.key) })
	}
	if len(gone) == 0 && len(fresh) == 0 {
		return
	}
	m.cancelJobs(gone)
	for _, p := range fresh {
		m.startJob(p.key, p.fn)
	}
	clear(gone)
	clear(fresh)
	m.gone, m.fresh = gone[:0], fresh[:0]
}

// pending is a job reconcile is about to start.
type pending[I any] struct {
	key string
	fn  Job[I]
}

// indexRunning is how many running jobs a machine looks through one by one
// before it indexes them by key: comparing a few short keys costs less than
// hashing one.
const indexRunning = 16

// lookupRunning returns the running job of key, or nil.
func (m *Machine[S, I, O]) lookupRunning(key string) *job[I] {
	if m.runningIndex != nil {
		return m.runningIndex[key]
	}
	for _, j := range m.running {
		if j.key == key {
			return j
		}
	}
	return nil
}

// addRunning records j as running.
func (m *Machine[S, I, O]) addRunning(j *job[I]) {
	j.index = int32(len(m.running))
	m.running = append(m.running, j)
	switch {
	case m.runningIndex != nil:
		m.runningIndex[j.key] = j
	case len(m.running) > indexRunning:
		m.runningIndex = make(map[string]*job[I], 2*indexRunning)
		for _, r := range m.running {
			m.runningIndex[r.key] = r
		}
	}
}

// removeRunning records that j, running, no longer is.
func (m *Machine[S, I, O]) removeRunning(j *job[I]) {
	last := len(m.running) - 1
	moved := m.running[last]
	m.running[j.index] = moved
	moved.index = j.index
	m.running[last] = nil
	m.running = m.running[:last]
	j.index = -1
	if len(m.rejected) > 0 {
		delete(m.rejected, j)
	}
	if m.runningIndex != nil {
		delete(m.runningIndex, j.key)
		if len(m.running) < indexRunning/2 {
			m.runningIndex = nil
		}
	}
}

// cancelJobs cancels the jobs in gone: their dispatches are dropped from
// now on, and their contexts are cancelled.
func (m *Machine[S, I, O]) cancelJobs(gone []*job[I]) {
	// All are marked before any context is cancelled: a job that sees
	// another's cancellation finds its own dispatches dropped already.
	for _, j := range gone {
		j.cancelled.Store(true)
	}
	for _, j := range gone {
		m.removeRunning(j)
		r := cancelKeyVanished
		if m.shutdown {
			r = cancelClosed
		}
		if j.tel != nil {
			j.tel.reason.Store(r)
		}
		j.cancelContext(r)
		if j.quiet {
			// The key vanished because of the job's own input:
			// most likely it handed in its result and is about
			// to return. Report how it ends when it does.
			continue
		}
		m.emit(Event[S, I]{Kind: EffectCancelled, Key: j.key})
	}
}

// maxIdleWorkers is how many goroutines that finished a job a machine keeps
// parked, to run later jobs, besides the up to maxReadyWorkers of them the
// processing role holds ready. A reused goroutine has already grown its
// stack (job goroutines also apply inputs, which takes a deeper stack than a
// fresh goroutine has), so reuse saves both the start and the growth.
const (
	maxIdleWorkers  = 16
	maxReadyWorkers = 4
)

// readyWorkersLocked moves parked workers to the processing role's own
// store, with m.mu held, before it settles: reconcile then hands jobs to
// them without taking m.mu.
func (m *Machine[S, I, O]) readyWorkersLocked() {
	for len(m.ready) < maxReadyWorkers && len(m.idle) > 0 && !m.closed {
		n := len(m.idle) - 1
		m.ready = append(m.ready, m.idle[n])
		m.idle[n] = nil
		m.idle = m.idle[:n]
	}
}

// stopReadyWorkers ends the workers the processing role holds ready, when
// the machine has closed or failed.
func (m *Machine[S, I, O]) stopReadyWorkers() {
	for i, w := range m.ready {
		close(w)
		m.ready[i] = nil
	}
	m.ready = m.ready[:0]
}

// task is a job handed to a worker goroutine.
type task[I any] struct {
	j  *job[I]
	fn Job[I]
}

// startJob starts a job on a worker the processing role holds ready, or on
// a new goroutine if it holds none.
func (m *Machine[S, I, O]) startJob(key string, fn Job[I]) {
	j := &job[I]{key: key}
	if m.tel != nil || m.cfg.logger != nil {
		j.tel = &jobTelemetry{cause: m.lastInput}
		if n := len(m.since); n > 1 {
			j.tel.also = slices.Clone(m.since[:n-1])
		}
	}
	if m.cfg.answers != nil {
		if ins, ok := m.cfg.answers(key); ok {
			j.answered = true
			fn = func(_ context.Context, dispatch Dispatch[I]) error {
				for _, in := range ins {
					dispatch(in)
				}
				return nil
			}
		}
	}
	if len(m.cfg.gates) > 0 {
		fn = gated(m.cfg.gates, fn)
	}
	m.addRunning(j)
	m.jobs.Add(1)
	if len(m.cfg.events) > 0 {
		m.emit(Event[S, I]{Kind: EffectStarted, Key: j.key})
	}
	t := task[I]{j, fn}
	if n := len(m.ready) - 1; n >= 0 {
		w := m.ready[n]
		m.ready[n] = nil
		m.ready = m.ready[:n]
		w <- t
		return
	}
	m.wg.Add(1) // the worker; it counts for the jobs it runs
	go m.work(t)
}

// gated returns fn behind gates (WithJobGate): each is passed, in order,
// before fn runs; a gate's error ends the job without running fn.
func gated[I any](gates []func(context.Context) error, fn Job[I]) Job[I] {
	return func(ctx context.Context, dispatch Dispatch[I]) error {
		for _, gate := range gates {
			if err := gate(ctx); err != nil {
				return err
			}
		}
		return fn(ctx, dispatch)
	}
}

// work runs jobs: t, then whatever it is handed while parked idle, until
// the machine closes or enough other workers are idle.
func (m *Machine[S, I, O]) work(t task[I]) {
	defer m.wg.Done()
	var tasks chan task[I]
	for {
		err := m.runJob(t)
		j := t.j
		t = task[I]{}
		// The job is over: so is work it left behind, whose dispatches
		// are dropped from before it can see its context cancelled.
		wasCancelled := j.cancelled.Swap(true)
		j.cancelContext(cancelEnded)
		m.mu.Lock()
		if !m.jobEndedLocked(j, err, wasCancelled) {
			m.mu.Lock() // released to report the end
		}
		if m.closed || len(m.idle) >= maxIdleWorkers {
			m.mu.Unlock()
			return
		}
		if tasks == nil {
			tasks = make(chan task[I], 1)
		}
		m.idle = append(m.idle, tasks)
		m.mu.Unlock()
		var ok bool
		if t, ok = <-tasks; !ok {
			return // closed by stopWorkers
		}
	}
}

// stopWorkers ends the idle workers; m.closed must be set, so that no more
// park.
func (m *Machine[S, I, O]) stopWorkers() {
	m.mu.Lock()
	idle := m.idle
	m.idle = nil
	m.mu.Unlock()
	for _, w := range idle {
		close(w)
	}
}

// runJob runs a job and returns its error. If the job calls runtime.Goexit,
// its end is recorded all the same, and the worker's goroutine ends.
func (m *Machine[S, I, O]) runJob(t task[I]) error {
	j := t.j
	returned := false
	var span trace.Span // WithTelemetry
	defer func() {
		if !returned {
			err := &PanicError{Key: j.key, Value: errGoexit, Stack: debug.Stack()}
			if m.tel != nil {
				m.tel.jobEnd(span, j.key, err, false, "")
				j.tel.span = nil
			}
			wasCancelled := j.cancelled.Swap(true)
			j.cancelContext(cancelEnded)
			m.mu.Lock()
			if m.jobEndedLocked(j, err, wasCancelled) {
				m.mu.Unlock()
			}
		}
	}()
	dispatch := func(in I) { m.dispatchFrom(j, in, nil) }
	if route := m.cfg.route; route != nil {
		deliver := func(in I) <-chan error {
			w := &waiter{done: make(chan error, 1)}
			if err := m.dispatchFrom(j, in, w); err != nil {
				w.reply(err)
			}
			return w.done
		}
		dispatch = func(in I) { route(j, in, deliver) }
	}
	if m.tel != nil {
		var ctx context.Context
		ctx, span = m.tel.jobStart(j, j.key, j.tel.cause, j.tel.also)
		j.tel.traced, j.tel.span = ctx, span
		err := callJob(ctx, j.key, t.fn, dispatch)
		returned = true
		if err != nil {
			// Cut off (its context cancelled: why was set before it
			// was) or failed. A job that returned nil is reported by
			// the machine: see jobDone.
			cancelled := j.over.Load() != 0
			m.tel.jobEnd(span, j.key, err, cancelled, cancelReason(j.tel.reason.Load()))
			j.tel.span = nil
		}
		return err
	}
	err := callJob(j, j.key, t.fn, dispatch)
	returned = true
	return err
}

// jobEndedLocked records, with m.mu held, that the job returned err, its
// worker having marked it cancelled (wasCancelled: it already was) and
// cancelled its context: its end is queued for the processing role. It
// reports whether m.mu is
// still held: with event handlers it is released, as the end is reported
// at once (taking the processing role if no goroutine holds it); without,
// it is kept, for the caller to park its worker under the same lock.
func (m *Machine[S, I, O]) jobEndedLocked(j *job[I], err error, wasCancelled bool) (held bool) {
	m.jobs.Add(-1)
	if m.cfg.events != nil || m.cfg.logger != nil || m.tel != nil {
		if m.refusalLocked() != nil && j.tel != nil && j.tel.span != nil {
			// Closed or failed: enqueueLocked drops the report, so
			// the span ends here.
			m.tel.jobEnd(j.tel.span, j.key, err, false, "")
			j.tel.span = nil
		}
		// Reported at once: to the event handlers, to the log, as the
		// job's span ends.
		m.enqueueLocked(control[I, O]{op: opJobDone, job: j, err: err})
		return false
	}
	// Nobody is waiting to hear of it: the end only needs recording
	// before the next reconcile, which handles queued control items
	// first. Saves taking the processing role for it. A job that was
	// cancelled needs no record at all: it is no longer running.
	if !wasCancelled && m.refusalLocked() == nil {
		m.ctrl = push(m.ctrl, &m.ctrlHead, control[I, O]{op: opJobDone, job: j, err: err, seq: m.arrivals})
		m.arrivals++
	} else if j.tel != nil && j.tel.span != nil {
		m.tel.jobEnd(j.tel.span, j.key, nil, false, "") // no report comes
		j.tel.span = nil
	}
	return true
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
	m.hasInput = false
	// Its span, if the job returned nil, ends with the outcome reported
	// below, before the report.
	endSpan := func() {
		if j.tel != nil && j.tel.span != nil {
			m.tel.jobEnd(j.tel.span, j.key, err, false, "")
			j.tel.span = nil
		}
	}
	if j.index >= 0 {
		// Its key is still desired (or reconcile would have cancelled
		// it): remember, so that it is not started again; unless an
		// input it dispatched was rejected, its result lost, when the
		// next reconcile starts it again.
		rejected := m.rejected[j]
		m.removeRunning(j)
		if rejected == nil {
			m.finished[j.key] = struct{}{}
		} else if err == nil {
			err = &RejectedInputError{Key: j.key, Err: rejected}
		}
	} else if !j.quiet {
		endSpan()
		return // cancelled, and already reported as such
	}
	endSpan()
	switch {
	case j.quiet && err != nil:
		m.emit(Event[S, I]{Kind: EffectCancelled, Key: j.key})
	case err != nil:
		m.logJob(j, slog.LevelWarn, "automata: job failed", err)
		m.emit(Event[S, I]{Kind: EffectFailed, Key: j.key, Err: err})
	default:
		m.emit(Event[S, I]{Kind: EffectCompleted, Key: j.key})
	}
}

// logJob logs the end of job j (WithLogger).
func (m *Machine[S, I, O]) logJob(j *job[I], level slog.Level, msg string, err error) {
	l := m.cfg.logger
	if l == nil || !l.Enabled(context.Background(), level) {
		return
	}
	var sc trace.SpanContext
	if j.tel != nil && j.tel.traced != nil {
		sc = trace.SpanContextFromContext(j.tel.traced)
	}
	l.LogAttrs(context.Background(), level, msg, logAttrs(sc, m.cfg.spanAttrs, slog.String("moora.job.key", j.key), slog.Any("error", err))...)
}

// stopJobs cancels every running job once the machine is closed, and ends
// the workers the processing role holds ready.
func (m *Machine[S, I, O]) stopJobs() {
	m.shutdown = true
	m.stopReadyWorkers()
	if len(m.running) == 0 {
		return
	}
	gone := slices.Clone(m.running)
	slices.SortFunc(gone, func(a, b *job[I]) int { return strings.Compare(a.key, b.key) })
	m.cancelJobs(gone)
}
