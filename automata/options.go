package automata

// Option configures a machine at New, NewMoore or NewMealy.
type Option[S, I any] func(*config[S, I])

type config[S, I any] struct {
	effect Effect[S, I]
	jobsAt func(S) map[string]Job[I]
	events func(Event[S, I])
	purity bool
}

// WithEffect runs effect on the latest state each time queued inputs have
// been applied, and once on the initial state when the machine starts. Inputs
// that arrive together are applied first and the effect sees only the state
// after the last of them; subscribers still see every update. Several effects
// combine with Sequential or Parallel; an actor's effect on its own view is
// adapted with Project. The effect runs on the goroutine applying inputs, and
// its dispatch is the machine's Dispatch.
//
// WithEffect may be given more than once: the effects run in the order
// given, as Sequential runs them.
func WithEffect[S, I any](effect Effect[S, I]) Option[S, I] {
	return func(c *config[S, I]) {
		if c.effect != nil {
			c.effect = Sequential(c.effect, effect)
			return
		}
		c.effect = effect
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
// state should record its result through an input.)
//
// jobsAt must be pure, like Transition: a restored state restarts exactly the
// jobs it calls for.
func WithJobs[S, I any](jobsAt func(state S) map[string]Job[I]) Option[S, I] {
	return func(c *config[S, I]) { c.jobsAt = jobsAt }
}

// WithEvents calls handle for every lifecycle event, in the order described
// by EventKind. handle runs on the goroutine applying inputs, one event at a
// time, and may call Dispatch.
func WithEvents[S, I any](handle func(Event[S, I])) Option[S, I] {
	return func(c *config[S, I]) { c.events = handle }
}

// WithPurityCheck makes the machine check every transition for mutation of
// the state it was given, and panic with an *ImpurityError naming the input
// and the mutated location when one does. It walks the whole state twice per
// input: meant for tests, not production.
func WithPurityCheck[S, I any]() Option[S, I] {
	return func(c *config[S, I]) { c.purity = true }
}
