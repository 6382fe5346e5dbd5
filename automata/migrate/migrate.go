// Package migrate brings what a durable agent journaled under an earlier
// version of its spec up to the current version: the inputs of its journal
// and the states of its snapshots.
//
// agentgen records each version of a spec's data shapes in the history file
// beside the spec, and generates, for an agent whose spec has more than one
// version, a History (impl/agent.Versions()) that package
// automata/journal takes in Options.Versions. Every record the journal
// writes carries the current version; when it opens a journal, a record of
// an older version is read under that version's schema and brought up, step
// by step, by the migrations written for the steps that need them. This
// package is the run-time half of that: the History type that generated
// code fills in, and the walk along its steps. Nobody needs to write a
// History by hand.
//
// An input of an earlier version is decoded into that version's type (it
// was validated when it was journaled, and its frame is checksummed), and
// what the migrations make of it is validated by the current version, as a
// live input is: through its JSON, by the agent's own decoder.
//
// A step from one version to the next needs code only for a breaking
// change: an input type whose shape changed so that an old record is not a
// valid new one, or that was removed, and a state whose shape changed. An
// input type that changed compatibly (a new optional property, a widened
// enum or constraint) is read by the next version as it is. A step whose
// state changed compatibly (a new actor or observation) has no state
// migration: a snapshot of the older version cannot be decoded into the new
// state, and the journal replays the inputs over it instead. A step whose
// state only gained optional properties inside its properties has a State
// that agentgen generates: it decodes the snapshot into the next version's
// state as it is (New returns a pointer to that type, Migrate the value).
package migrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// History is what an agent reads of its spec's versions: records are
// written under Current, and records of each earlier version come up to it
// through Steps.
type History struct {
	// Current is the version of the spec the agent was generated from.
	Current int
	// Steps[i] brings version i+1 to version i+2: Current-1 of them.
	Steps []Step
}

// Step is what the records of one version need to become records of the
// next.
type Step struct {
	// Inputs are the input types whose records need a migration to be
	// read by the next version, by type name: their shape changed in a
	// breaking way, or the type was removed. An input type not listed
	// reads as it is.
	Inputs map[string]Input
	// StateChanged says that the state's shape differs in the next
	// version: a snapshot needs State to come up, or is replayed over.
	StateChanged bool
	// State migrates the state; nil when the state is unchanged, or
	// changed compatibly (then a snapshot of this version is replayed
	// over).
	State *State
}

// Input migrates the inputs of one type from a step's version to the next.
type Input struct {
	// Decode decodes an input of the step's version from its JSON into
	// that version's type (Unmarshal). The record was validated when it
	// was journaled, and its frame is checksummed: what the migrations
	// make of it is validated by the current version, as a live input is.
	Decode func([]byte) (any, error)
	// Migrate returns the input of the next version the decoded input
	// becomes, or nil to drop it.
	Migrate func(any) any
}

// State migrates the state from a step's version to the next.
type State struct {
	// New returns a pointer to a zero state of the step's version, for a
	// snapshot to be decoded into.
	New func() any
	// Migrate takes that pointer and returns the state of the next
	// version (a value, not a pointer).
	Migrate func(any) any
}

// VersionError is a record written under a version of the spec newer than
// the agent's: a binary older than its journal (a rolled-back deploy).
type VersionError struct {
	Version, Current int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("written under version %d of the spec, newer than version %d that this binary was generated from: the journal was written by a newer binary; run that binary (or a newer one), as this one cannot know what the new version means", e.Version, e.Current)
}

// InvalidError is a record that does not decode under the version it was
// written under: damage, not a change of the spec.
type InvalidError struct {
	Version int
	Err     error
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("does not decode under version %d of the spec, which it was written under: %v", e.Version, e.Err)
}

func (e *InvalidError) Unwrap() error { return e.Err }

// DroppedError reports an input that a migration dropped: it has no
// counterpart in the next version (its type was removed, say).
type DroppedError struct {
	Type string // the input's type
	From int    // the version the migration that dropped it starts at
}

func (e *DroppedError) Error() string {
	return fmt.Sprintf("input %q dropped by the migration from version %d to %d", e.Type, e.From, e.From+1)
}

// MigrationError is a migration that failed: it panicked, or what it
// returned is not an input of the version it was to bring the record to.
type MigrationError struct {
	What string // "input \"send\"" or "the state"
	From int
	Err  error
}

func (e *MigrationError) Error() string {
	return fmt.Sprintf("migrating %s from version %d to %d: %v", e.What, e.From, e.From+1, e.Err)
}

func (e *MigrationError) Unwrap() error { return e.Err }

// ErrNoStateMigration is returned by State (as a *NoStateMigrationError)
// for a snapshot whose state changed shape on the way to the current
// version without a migration: it cannot be read, and the journal must be
// replayed instead.
var ErrNoStateMigration = errors.New("the state changed shape since, and no migration brings it up")

// NoStateMigrationError is ErrNoStateMigration at the step from version
// From to From+1. Reason, when set, says why a migration that exists
// cannot run: the codec cannot decode a state of version From.
type NoStateMigrationError struct {
	From   int
	Reason error
}

func (e *NoStateMigrationError) Error() string {
	if e.Reason != nil {
		return fmt.Sprintf("version %d to %d: the state of version %d cannot be decoded for its migration: %v", e.From, e.From+1, e.From, e.Reason)
	}
	return fmt.Sprintf("version %d to %d: %v", e.From, e.From+1, ErrNoStateMigration)
}

func (e *NoStateMigrationError) Unwrap() error { return e.Reason }

func (e *NoStateMigrationError) Is(target error) bool { return target == ErrNoStateMigration }

// check returns the error of a record of version v, or nil when h can read
// it.
func (h *History) check(v int) error {
	switch {
	case v > h.Current:
		return &VersionError{Version: v, Current: h.Current}
	case v < 1:
		return fmt.Errorf("version %d: versions start at 1", v)
	case len(h.Steps) != h.Current-1:
		return fmt.Errorf("migrate: a History of version %d has %d steps, want %d", h.Current, len(h.Steps), h.Current-1)
	}
	return nil
}

// Input brings the JSON of an input written under version v up to the
// current version. decode decodes an input of the current version (the
// agent's own DecodeInput); the result is what it returns, or the value
// the last migration returned. Errors: *VersionError (v is newer),
// *InvalidError (the record does not decode under its own version),
// *DroppedError, *MigrationError.
func (h *History) Input(v int, data []byte, decode func([]byte) (any, error)) (any, error) {
	if err := h.check(v); err != nil {
		return nil, err
	}
	if v == h.Current {
		return decode(data)
	}
	typ, err := InputType(data)
	if err != nil {
		return nil, &InvalidError{Version: v, Err: err}
	}
	var (
		val     any // the input as the last migration returned it
		valFrom int // the version val is of; 0 while val is nil
	)
	for from := v; from < h.Current; from++ {
		step, ok := h.Steps[from-1].Inputs[typ]
		if !ok {
			continue // compatible: the version after reads it as it is
		}
		var in any
		switch {
		case val == nil:
			// The versions since v changed the type compatibly, so
			// the record is valid under from if it is under v.
			if in, err = step.Decode(data); err != nil {
				return nil, &InvalidError{Version: v, Err: err}
			}
		default:
			// A migration's result is validated by the version it is of
			// (or a later one, through compatible steps): through its
			// JSON, as a live input is.
			in, err = reencode(val, step.Decode)
		}
		if err != nil {
			return nil, &MigrationError{What: fmt.Sprintf("input %q", typ), From: valFrom - 1,
				Err: fmt.Errorf("its result does not decode as version %d: %w", from, err)}
		}
		out, err := call(step.Migrate, in)
		if err != nil {
			return nil, &MigrationError{What: fmt.Sprintf("input %q", typ), From: from, Err: err}
		}
		if out == nil {
			return nil, &DroppedError{Type: typ, From: from}
		}
		t, ok := out.(interface{ InputType() string })
		if !ok {
			return nil, &MigrationError{What: fmt.Sprintf("input %q", typ), From: from, Err: fmt.Errorf("it returned %T, which is not an input", out)}
		}
		val, valFrom, typ = out, from+1, t.InputType()
	}
	if val == nil {
		in, err := decode(data)
		if err != nil {
			return nil, &InvalidError{Version: v, Err: err}
		}
		return in, nil
	}
	// The last migration's result, validated by the current version: the
	// input is applied as the journal would apply it live, decoded from
	// its JSON, and a migration that makes an input the schema refuses is
	// an error at the version that has it, not at a later one.
	in, err := reencode(val, decode)
	if err != nil {
		return nil, &MigrationError{What: fmt.Sprintf("input %q", typ), From: valFrom - 1,
			Err: fmt.Errorf("its result does not decode as version %d: %w", h.Current, err)}
	}
	return in, nil
}

// Unmarshal decodes the JSON of an input of type T (of an earlier version
// of the spec): a Step's Input.Decode.
func Unmarshal[T any](data []byte) (any, error) {
	var in T
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, err
	}
	return in, nil
}

// reencode turns an input of one version into the same input of a later
// one whose changes since are compatible: through its JSON, validated.
func reencode(val any, decode func([]byte) (any, error)) (any, error) {
	data, err := json.Marshal(val)
	if err != nil {
		return nil, err
	}
	return decode(data)
}

// call calls a migration, turning a panic into an error.
func call(migrate func(any) any, in any) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the migration panicked: %v", p)
		}
	}()
	return migrate(in), nil
}

// StateCodec is how snapshots encode states, for states of any version:
// package journal's JSON and JSONGob codecs provide it.
type StateCodec interface {
	EncodeStateValue(state any) ([]byte, error)
	DecodeStateValue(data []byte, ptr any) error
}

// State brings a snapshot's payload, a state written under version v, up
// to the current version. decode decodes a state of the current version.
// It fails with ErrNoStateMigration (wrapped) when a step on the way
// changed the state without a migration, and with the errors of Input.
func (h *History) State(v int, data []byte, codec StateCodec, decode func([]byte) (any, error)) (any, error) {
	if err := h.check(v); err != nil {
		return nil, err
	}
	var (
		val     any
		valFrom int
	)
	for from := v; from < h.Current; from++ {
		step := h.Steps[from-1]
		if !step.StateChanged {
			continue
		}
		if step.State == nil {
			return nil, &NoStateMigrationError{From: from}
		}
		if codec == nil {
			return nil, &NoStateMigrationError{From: from, Reason: errors.New("the journal's codec is no migrate.StateCodec")}
		}
		ptr := step.State.New()
		switch {
		case val == nil:
			// The snapshot's frame is checksummed: a state its codec
			// cannot decode into its version's type (gob cannot, when an
			// interface field holds a type registered under another
			// version's name) is replayed over, not called corrupt.
			if err := codec.DecodeStateValue(data, ptr); err != nil {
				return nil, &NoStateMigrationError{From: from, Reason: err}
			}
		case valFrom == from && reflect.TypeOf(ptr) == reflect.PointerTo(reflect.TypeOf(val)):
			reflect.ValueOf(ptr).Elem().Set(reflect.ValueOf(val)) // the last migration made a state of this version
		default:
			b, err := codec.EncodeStateValue(val)
			if err == nil {
				err = codec.DecodeStateValue(b, ptr)
			}
			if err != nil {
				return nil, &MigrationError{What: "the state", From: valFrom - 1, Err: fmt.Errorf("its result does not decode as version %d: %w", from, err)}
			}
		}
		out, err := call(step.State.Migrate, ptr)
		if err == nil && out == nil {
			err = errors.New("it returned nil, not a state")
		}
		if err != nil {
			return nil, &MigrationError{What: "the state", From: from, Err: err}
		}
		val, valFrom = out, from+1
	}
	switch {
	case val == nil:
		s, err := decode(data)
		if err != nil {
			return nil, &InvalidError{Version: v, Err: err}
		}
		return s, nil
	case valFrom == h.Current:
		return val, nil
	}
	b, err := codec.EncodeStateValue(val)
	if err != nil {
		return nil, &MigrationError{What: "the state", From: valFrom - 1, Err: err}
	}
	s, err := decode(b)
	if err != nil {
		return nil, &MigrationError{What: "the state", From: valFrom - 1, Err: fmt.Errorf("its result does not decode as version %d: %w", h.Current, err)}
	}
	return s, nil
}
