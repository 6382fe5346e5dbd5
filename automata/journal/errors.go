package journal

import (
	"errors"
	"fmt"
)

// The errors of the package: every sentinel and error type a Machine, a
// Store or a Fleet returns, for errors.Is and errors.As. A closed Machine
// answers automata.ErrClosed, as every automata machine does.

// CorruptError reports damage that Open will not pass over: a damaged record,
// or damage to the store itself (its file's structure), when Kind is 0.
type CorruptError struct {
	Kind Kind   // KindInput or KindSnapshot; 0: the store itself
	Seq  uint64 // the record's sequence number; 0 when Kind is 0
	Err  error  // what is wrong
}

func (e *CorruptError) Error() string {
	if e.Kind == 0 {
		return fmt.Sprintf("journal: the store is corrupt: %v", e.Err)
	}
	return fmt.Sprintf("journal: %v record %d is corrupt: %v", e.Kind, e.Seq, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// ErrNondeterministic is wrapped by the error VerifyReplay reports when
// replaying the journal from one snapshot does not reproduce the next: the
// error names the inputs replayed and the two snapshots.
var ErrNondeterministic = errors.New("a transition is not deterministic (it reads the clock, randomness or shared mutable state)")

// ErrUnavailable is wrapped by the error of a Store or Fleet whose server
// did not answer in time, or said it cannot serve now (a JetStream cluster
// electing a leader): nothing is known to be wrong with the journal, and
// the call may succeed if made again. An HTTP front answers 503 with
// Retry-After.
var ErrUnavailable = errors.New("the journal's server is unavailable now")

// ErrStop, returned by a Scan or Snapshots callback, ends the walk early
// without an error.
var ErrStop = errors.New("stop")

var (
	// ErrNoAgent: the fleet has no agent of that id.
	ErrNoAgent = errors.New("no such agent")
	// ErrAgentExists: Create of an id the fleet has.
	ErrAgentExists = errors.New("the agent exists")
	// ErrInvalidAgentID: an id CheckAgentID refuses.
	ErrInvalidAgentID = errors.New("invalid agent id")
)

// ErrInUse is wrapped by the error of opening a Store that is open already:
// by another process (a bbolt file is locked) or in this one (a Fleet's agent
// whose Store is open); and by the error of a write to a Store that another
// process has taken over since it was opened (a JetStream store fenced).
// An HTTP front answers 503 with Retry-After.
var ErrInUse = errors.New("the store is in use")

// ErrBeforeFork is wrapped by the error of StateAt of a fork at a position
// before the one it was forked at: that part of its history is the
// conversation's it was forked from (see Machine.Fork).
var ErrBeforeFork = errors.New("before the fork")
