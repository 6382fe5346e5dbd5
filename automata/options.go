package automata

import (
	"context"
	"log/slog"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
)

// Option configures a machine at New, NewMoore or NewMealy, or a durable
// machine at journal.Open: every option works the same on both.
type Option[S, I any] func(*config[S, I])

// Join returns one option that applies opts in order: how a generated agent
// hands over the effects (or the jobs) of all its actors as one option.
func Join[S, I any](opts ...Option[S, I]) Option[S, I] {
	return func(c *config[S, I]) {
		for _, opt := range opts {
			opt(c)
		}
	}
}

type config[S, I any] struct {
	effects   []namedEffect[S, I]
	jobs      []namedJobs[S, I]
	events    []func(Event[S, I])
	admit     []func(S, I) (I, error)
	gates     []func(ctx context.Context) error
	answers   func(key string) ([]I, bool)
	route     func(ctx context.Context, input I, deliver func(I) <-chan error)
	committer Committer[S, I]
	purity    bool
	telemetry *telemetry           // WithTelemetry; nil: off
	seqBase   uint64               // WithSeqBase
	spanAttrs []attribute.KeyValue // WithTelemetryAttributes
	logger    *slog.Logger         // WithLogger
}

// namedEffect is an effect with the name that reports about it use: the
// actor whose effect it is, or its place among the WithEffect options.
type namedEffect[S, I any] struct {
	name string
	fn   Effect[S, I]
}

// namedJobs is a jobs function with its name and the prefix of its keys.
type namedJobs[S, I any] struct {
	name   string
	prefix string
	fn     func(S) map[string]Job[I]
}

// WithEffect runs effect on the latest state each time queued inputs have
// been applied, and once on the initial state when the machine starts. Inputs
// that arrive together are applied first and the effect sees only the state
// after the last of them; subscribers still see every update. An actor's
// effect on its own view is adapted with Project (and given with
// WithActorEffect, which names it in reports). The effect runs on the
// goroutine applying inputs, and its dispatch is the machine's.
//
// WithEffect may be given more than once: the effects run in the order
// given, as Sequential runs them.
//
// An effect must not write into the state it is given (or into a view that
// shares memory with it, as an actor's ContextOf view does); WithPurityCheck
// catches one that does.
func WithEffect[S, I any](effect Effect[S, I]) Option[S, I] {
	return func(c *config[S, I]) {
		c.effects = append(c.effects, namedEffect[S, I]{"the effect of WithEffect #" + strconv.Itoa(len(c.effects)+1), effect})
	}
}

// WithActorEffect is WithEffect for the effect of one actor of an agent:
// failures and purity violations name the actor. Generated agents use it.
func WithActorEffect[S, I any](actor string, effect Effect[S, I]) Option[S, I] {
	return func(c *config[S, I]) {
		c.effects = append(c.effects, namedEffect[S, I]{"the effect of actor " + strconv.Quote(actor), effect})
	}
}

// WithJobs reconciles keyed jobs with the state, as Moorex does: each time
// queued inputs have been applied, and when the machine starts, jobsAt says
// which jobs the latest state calls for, by key. A job for a new key starts in
// its own goroutine with its own context.Context; the context of a job whose
// key vanished is cancelled, and any input it dispatches afterwards is
// dropped; a job whose key is still wanted is left alone.
//
// A job that returns while its key is still wanted is not started again: the
// key must vanish from jobsAt's result and come back for a new job to start.
// (The state is what asks for work; a job finished is work done, and the
// state should record its result through an input.) The exception is a job
// an input of which was rejected (by an admission step or a committer): its
// result never reached the state, so it is reported as failed with a
// *RejectedInputError and started again at the next reconcile.
//
// jobsAt must be pure, like Transition: a restored state restarts exactly the
// jobs it calls for; and it must not write into the state it is given.
//
// WithJobs and WithActorJobs may be given more than once: the jobs of all of
// them are reconciled together, and their keys must differ (a key returned
// by two of them stops the machine, see Machine.Err).
func WithJobs[S, I any](jobsAt func(state S) map[string]Job[I]) Option[S, I] {
	return func(c *config[S, I]) {
		c.jobs = append(c.jobs, namedJobs[S, I]{"the jobs function of WithJobs #" + strconv.Itoa(len(c.jobs)+1), "", jobsAt})
	}
}

// WithActorJobs is WithJobs for the jobs of one actor of an agent: each key
// jobsAt returns is prefixed with the actor's name and a slash ("brain/" +
// key), so that actors never clash, and failures and purity violations name
// the actor. JobKey returns the prefixed key. Generated agents use it, with
// ProjectJobs to hand each actor its ContextOf view.
func WithActorJobs[S, I any](actor string, jobsAt func(state S) map[string]Job[I]) Option[S, I] {
	return func(c *config[S, I]) {
		c.jobs = append(c.jobs, namedJobs[S, I]{"the jobs function of actor " + strconv.Quote(actor), actor + "/", jobsAt})
	}
}

// ProjectJobs adapts a jobs function on a view to one on the state the view
// is projected from, as Project does for effects: an actor's jobs function
// on its ContextOf view to one on the whole agent state.
func ProjectJobs[S, V, I any](view func(state S) V, jobsAt func(view V) map[string]Job[I]) func(state S) map[string]Job[I] {
	return func(state S) map[string]Job[I] { return jobsAt(view(state)) }
}

// WithEvents calls handle for every lifecycle event, in the order described
// by EventKind. handle runs on the goroutine applying inputs, one event at a
// time, and may call Dispatch (not DispatchWait, which would wait for
// itself). Given more than once, every handler is called, in order.
func WithEvents[S, I any](handle func(Event[S, I])) Option[S, I] {
	return func(c *config[S, I]) { c.events = append(c.events, handle) }
}

// WithAdmission runs admit on each input before its transition, on the
// goroutine applying inputs and in the order inputs are applied (and, in a
// durable machine, journaled), with the state the input is about to be
// applied to. admit returns the input to apply, which may differ from the
// one dispatched, such as stamped with the time of its arrival (seed 000's
// server-side timestamps, which keep time from running backwards), or an
// error that rejects it: the input is then not applied (nor journaled), the
// error goes to the DispatchWait (or journal Dispatch) that waits for it and
// is reported as an InputRejected event, and the machine goes on.
//
// Admission is not part of the pure definition: it may read the clock. It
// runs once per input and never on replay, where the journal holds what it
// returned. Given more than once, the admission steps run in order, each on
// the input the previous one returned.
func WithAdmission[S, I any](admit func(state S, input I) (I, error)) Option[S, I] {
	return func(c *config[S, I]) { c.admit = append(c.admit, admit) }
}

// WithJobGate makes every job pass gate before it runs: gate is called on
// the job's goroutine, with the job's context (JobKey names the job), after
// the job has started (EffectStarted) and before its function runs. Until gate
// returns, the job is started but does nothing; if gate returns an error,
// the job ends with it, without running, as if it had returned it (a
// cancelled job's context error is a cancellation, any other error an
// EffectFailed). A gate must return once the context is done.
//
// It is the seam for holding jobs, such as package automata/devpanel's hold,
// step and release: inputs are still admitted and applied, and jobs are
// reconciled with the state as usual, but none does its work until the gate
// lets it. Given more than once, the gates are passed in order.
func WithJobGate[S, I any](gate func(ctx context.Context) error) Option[S, I] {
	return func(c *config[S, I]) { c.gates = append(c.gates, gate) }
}

// WithJobAnswers lets answer stand in for the jobs: as a job starts under
// key, answer(key) is asked first, on the goroutine applying inputs (it must
// return at once); when it says ok, the job's function does not run, and
// the inputs it gave are dispatched as the job's, in order, then the job
// returns nil. They are applied as they are, past the admission steps
// (WithAdmission): they are answers recorded once, admitted when they were
// (package journal's forks answer their jobs so, from the conversation
// forked). The gates of WithJobGate hold such a job as any other. Given more
// than once, the last one is used.
func WithJobAnswers[S, I any](answer func(key string) (inputs []I, ok bool)) Option[S, I] {
	return func(c *config[S, I]) { c.answers = answer }
}

// WithJobDispatch puts route between the jobs and the machine: each input a
// job dispatches is handed to route, on the job's goroutine, with the job's
// context (JobKey names the job), and the job's dispatch returns when route
// does. deliver hands the input to the machine as the job's dispatch would
// have (dropped if the job's key has vanished), and returns a channel that
// receives one value once the input's fate is known: nil when it has been
// applied (in a durable machine, journaled), else why it never will be: the
// error of the admission step or committer that rejected it,
// context.Canceled when the job's key had vanished, ErrClosed or the
// *FailError. Waiting on the channel holds the job (not the machine) until
// then; as with DispatchWait, a subscriber, effect or event handler must not
// wait for something a job does after such a wait.
//
// route may wait before it delivers, holding the job and its input, and may
// drop the input by returning without delivering it; it must return once ctx
// is done. It is the seam for holding what jobs hand in, as package
// automata/devpanel's hold does to step an agent one input at a time. Given
// more than once, the last one is used.
func WithJobDispatch[S, I any](route func(ctx context.Context, input I, deliver func(I) <-chan error)) Option[S, I] {
	return func(c *config[S, I]) { c.route = route }
}

// WithPurityCheck makes the machine check every transition for mutation of
// the state it was given, and every effect and jobs function for mutation of
// the state (or the view) it was given; a violation stops the machine (see
// Machine.Err) with a *FailError wrapping an *ImpurityError that names the
// input or the effect, and the mutated location. It walks the whole state
// twice per input and per effect: meant for tests, not production.
func WithPurityCheck[S, I any]() Option[S, I] {
	return func(c *config[S, I]) { c.purity = true }
}

// Committer makes inputs durable before a machine applies them: a write-ahead
// log. Package journal is one; most programs never implement it.
//
// Both are called on the goroutine applying inputs, never concurrently. For
// each input, in apply order: admission (WithAdmission), then Prepare, then
// the transition; then Commit for the batch of inputs that got that far, and
// only after Commit returns nil are they applied: the state changes,
// subscribers are called, and DispatchWait returns nil.
type Committer[S, I any] interface {
	// Prepare checks that input can be made durable and returns it as it
	// will be read back (the journal encodes it and decodes it again, so
	// that the live state is the one replay rebuilds) with the bytes to
	// store, or an error that rejects it, as admission does.
	Prepare(input I) (I, []byte, error)
	// Commit makes the updates durable, in order, all or none, with the
	// bytes Prepare returned for each: when it returns nil they must
	// survive a crash. An error rejects every input of the batch, and the
	// state stays as it was.
	Commit(updates []Update[S, I], payloads [][]byte) error
}

// WithCommitter makes the machine write-ahead: see Committer. It is how
// package journal runs a machine; given more than once, the last one wins.
func WithCommitter[S, I any](c Committer[S, I]) Option[S, I] {
	return func(cfg *config[S, I]) { cfg.committer = c }
}
