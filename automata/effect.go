package automata

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
