package automata

import "fmt"

// EventKind says what an Event reports.
//
// For each batch of inputs applied together, events arrive in this order:
// InputReceived for each input, then EffectStarted and EffectCancelled as the
// jobs are reconciled with the latest state, then one StateUpdated.
// EffectCompleted and EffectFailed arrive when jobs return, between or after
// those of later batches, but always after the StateUpdated of the batch that
// applied the job's own inputs, however the goroutines were scheduled. All
// events come from the goroutine applying inputs, one at a time, so a handler
// sees one total order.
type EventKind uint8

const (
	// InputReceived: Input is about to be applied.
	InputReceived EventKind = iota + 1
	// EffectStarted: the job for Key started.
	EffectStarted
	// EffectCancelled: the job for Key was cancelled because its key
	// vanished from the state's jobs, or because the machine closed. A job
	// cancelled while it was itself handing in an input (the usual way a
	// job delivers its result) is reported when it returns instead: as
	// EffectCompleted if it returned nil, else as EffectCancelled.
	EffectCancelled
	// EffectCompleted: the job for Key returned nil.
	EffectCompleted
	// EffectFailed: the job for Key returned Err or panicked (Err is then a
	// *PanicError), or returned nil although an input it dispatched was
	// rejected (Err is then a *RejectedInputError, and the job is started
	// again at the next reconcile).
	EffectFailed
	// StateUpdated: a batch of inputs was applied; State is the result.
	StateUpdated
	// InputRejected: Input was not applied: an admission step (or, in a
	// durable machine, the journal) rejected it with Err. It takes the
	// place of InputReceived in the order above.
	InputRejected
	// MachineFailed: user code panicked and the machine stopped (fail-stop);
	// Err is the *FailError, Input the input it was applying, if any. It
	// is the last event.
	MachineFailed
)

var eventKindNames = [...]string{
	InputReceived:   "input-received",
	EffectStarted:   "effect-started",
	EffectCancelled: "effect-cancelled",
	EffectCompleted: "effect-completed",
	EffectFailed:    "effect-failed",
	StateUpdated:    "state-updated",
	InputRejected:   "input-rejected",
	MachineFailed:   "machine-failed",
}

func (k EventKind) String() string {
	if int(k) < len(eventKindNames) && eventKindNames[k] != "" {
		return eventKindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", k)
}

// Event is a lifecycle event, for logging and devtools. Which fields are set
// depends on Kind.
type Event[S, I any] struct {
	Kind  EventKind
	Input I      // InputReceived, InputRejected, MachineFailed
	Key   string // EffectStarted, EffectCancelled, EffectCompleted, EffectFailed
	Err   error  // EffectFailed, InputRejected, MachineFailed
	State S      // StateUpdated
}

func (e Event[S, I]) String() string {
	switch e.Kind {
	case InputReceived:
		return fmt.Sprintf("%v %+v", e.Kind, e.Input)
	case EffectStarted, EffectCancelled, EffectCompleted:
		return fmt.Sprintf("%v %s", e.Kind, e.Key)
	case EffectFailed:
		return fmt.Sprintf("%v %s: %v", e.Kind, e.Key, e.Err)
	case InputRejected:
		return fmt.Sprintf("%v %+v: %v", e.Kind, e.Input, e.Err)
	case MachineFailed:
		return fmt.Sprintf("%v: %v", e.Kind, e.Err)
	case StateUpdated:
		return fmt.Sprintf("%v %+v", e.Kind, e.State)
	}
	return e.Kind.String()
}
