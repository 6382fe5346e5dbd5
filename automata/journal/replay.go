package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/internal/frame"
	"github.com/moora-go/moora/automata/internal/jsonpatch"
	"github.com/moora-go/moora/automata/migrate"
)

// ReplayReport is what Replay found in one journal.
type ReplayReport struct {
	// Inputs is the number of journal records replayed.
	Inputs int `json:"inputs"`
	// From is the position the replay started from: 0, the initial state,
	// or the snapshot a compacted journal starts after.
	From uint64 `json:"from"`
	// Snapshots and Digests are how many positions were compared with a
	// recorded snapshot and with a recorded digest (Options.Digests).
	Snapshots int `json:"snapshots"`
	Digests   int `json:"digests"`
	// Divergence is the first position at which the replayed state is
	// not the recorded one; nil when every comparison held.
	Divergence *Divergence `json:"divergence,omitempty"`
}

// Identical reports whether the replay found no divergence.
func (r *ReplayReport) Identical() bool { return r.Divergence == nil }

// Divergence is the first position at which the state today's code
// computes differs from the state the recorded code produced.
type Divergence struct {
	// Seq is the first position found to differ, and Since the last one
	// found identical (From, if none): the input that made the states
	// part is among Since+1..Seq, and is input Seq when Since is Seq-1,
	// as it always is in a journal with a digest on every record.
	Seq   uint64 `json:"seq"`
	Since uint64 `json:"since"`
	// Time and Version are input Seq's: when it was journaled, and under
	// which version of the spec.
	Time    time.Time `json:"time"`
	Version int       `json:"version"`
	// Input is input Seq, as today's code reads it (migrated), in JSON.
	Input json.RawMessage `json:"input"`
	// Diff is the JSON Patch that turns the recorded state at DiffAt into
	// the replayed one: DiffAt is Seq when the journal has a snapshot
	// there, or else the next snapshot (the recorded state at Seq is
	// known only by its digest); 0, and no Diff, when no snapshot follows.
	DiffAt uint64    `json:"diffAt"`
	Diff   []PatchOp `json:"diff,omitempty"`
	// Step is the JSON Patch of what today's transition of input Seq did
	// to the replayed state.
	Step []PatchOp `json:"step"`
}

// PatchOp is one operation of a JSON Patch (RFC 6902): add, remove or
// replace, with the JSON of the value.
type PatchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Replay runs the journal in store through the transitions of def, today's
// code, and compares at every position the state it computes with the one
// the recorded code produced: the snapshots' states, and the digests of
// the states that records carry (Options.Digests). Records are read as
// Open reads them: an input of an earlier version of the spec is migrated,
// a dropped input is passed over, a damaged record is a *CorruptError. A
// digest recorded under an earlier version (of a state of another shape)
// is not compared; a snapshot of one is compared once migrated.
//
// Replay reads and writes nothing but the store's records, holds one state
// at a time, and stops at the first divergence (once it has the recorded
// state to diff against). An error is a journal Replay could not read; a
// divergence is not an error but the report's Divergence.
//
// opts is the agent's journal options: Codec (which must read the
// snapshots) and Versions (default, the definition's) matter; the rest is
// not used.
func Replay[S, I any](store Store, def automata.Definition[S, I], opts Options[S, I]) (*ReplayReport, error) {
	return replayJournal(store, nil, def, opts)
}

// Accept is Replay that records today's code's states as the journal's: it
// writes into dst, an empty store, the journal of src with the digest of
// the replayed state on its records (on every record, or as opts.Digests
// says when it is DigestSampled) and the replayed states as its
// snapshots, at the same positions, so that a Replay of dst finds it
// identical. The inputs, their times and versions are src's, byte for byte.
// It is how a deliberate change of behavior is accepted, as a golden file
// is updated; its report is src's against today's code.
func Accept[S, I any](src, dst Store, def automata.Definition[S, I], opts Options[S, I]) (*ReplayReport, error) {
	return replayJournal(src, dst, def, opts)
}

// acceptBatch is how many records Accept appends at once.
const acceptBatch = 1024

func replayJournal[S, I any](store, dst Store, def automata.Definition[S, I], opts Options[S, I]) (*ReplayReport, error) {
	if opts.Versions == nil {
		opts.Versions = def.Versions
	}
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	m := &Machine[S, I]{store: store, def: def, opts: opts, log: opts.Logger}
	policy := DigestEvery
	if opts.Digests == DigestSampled {
		policy = DigestSampled
	}
	// The positions of the snapshots, oldest first: a few (KeepSnapshots).
	var snaps []uint64
	if err := store.Snapshots(func(r Record) error {
		snaps = append(snaps, r.Seq)
		return nil
	}); err != nil {
		return nil, err
	}
	slices.Reverse(snaps)
	first, err := m.firstJournalSeq()
	if err != nil {
		return nil, err
	}
	state, base := def.Initial(), uint64(0)
	if first > 1 || first == 0 && len(snaps) > 0 {
		// A compacted journal: replay from the snapshot it starts after.
		base = snaps[len(snaps)-1]
		if first > 1 {
			base = first - 1
		}
		s, ok, err := m.snapshotAt(base)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("journal: the journal starts at %d, and no snapshot this code can read precedes it", first)
		}
		state = s
	}
	rep := &ReplayReport{From: base}
	var (
		seq, same = base, base // the last position replayed, and found identical
		next      = 0          // the index in snaps of the next snapshot to compare
		div       *Divergence
		dg        digester
		batch     []Record
	)
	for next < len(snaps) && snaps[next] <= base {
		next++
	}
	if dst != nil && base > 0 {
		if err := m.putReplayed(dst, state, base); err != nil {
			return nil, err
		}
	}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := dst.Append(batch)
		batch = batch[:0]
		return err
	}
	err = store.Scan(base+1, func(r Record) error {
		if r.Seq != seq+1 {
			return &CorruptError{Kind: KindInput, Seq: seq + 1, Err: fmt.Errorf("missing (the next record is %d)", r.Seq)}
		}
		in, f, err := m.decodeInput(r)
		dropped := errors.As(err, new(*migrate.DroppedError))
		if err != nil && !dropped {
			return err
		}
		prev := state
		if !dropped {
			if state, err = m.apply(state, in, r.Seq); err != nil {
				return err
			}
		}
		seq = r.Seq
		rep.Inputs++
		atSnapshot := next < len(snaps) && snaps[next] == r.Seq
		if atSnapshot {
			next++
		}
		if dst != nil {
			nf := frame.Frame{Kind: frame.Input, Seq: f.Seq, UnixNano: f.UnixNano, Version: f.Version, Payload: f.Payload}
			if !dropped && f.Version != m.version() {
				// Recorded as today's code reads it, so that its digest,
				// of today's state, is compared.
				if nf.Payload, err = guard(m, "encoding an input", func() ([]byte, error) { return m.opts.Codec.EncodeInput(in) }); err != nil {
					return fmt.Errorf("journal: encoding input %d: %w", r.Seq, err)
				}
				nf.Version = m.version()
			}
			if !dropped && dg.due(policy, len(f.Payload)) {
				if nf.Digest, err = dg.digest(state); err != nil {
					return fmt.Errorf("journal: the digest of the state after input %d: %w", r.Seq, err)
				}
				nf.HasDigest = true
			}
			batch = append(batch, Record{Seq: r.Seq, Data: frame.Append(nil, nf)})
			if len(batch) == acceptBatch {
				if err := flush(); err != nil {
					return err
				}
			}
			if atSnapshot {
				if err := flush(); err != nil {
					return err
				}
				if err := m.putReplayed(dst, state, r.Seq); err != nil {
					return err
				}
			}
		}
		if div != nil {
			if div.DiffAt == 0 && atSnapshot {
				if err := m.diffWithSnapshot(div, state, r.Seq); err != nil {
					return err
				}
			}
			if dst == nil && (div.DiffAt != 0 || next == len(snaps)) {
				return ErrStop // nothing more to learn
			}
			return nil
		}
		differs, compared := false, false
		if f.HasDigest && f.Version == m.version() {
			d, _, err := stateDigest(state)
			if err != nil {
				return fmt.Errorf("journal: the digest of the state after input %d: %w", r.Seq, err)
			}
			rep.Digests++
			compared, differs = true, d != f.Digest
		}
		var recorded S
		haveRecorded := false
		if atSnapshot {
			if recorded, haveRecorded, err = m.snapshotAt(r.Seq); err != nil {
				return err
			}
			if haveRecorded {
				rep.Snapshots++
				ops, err := jsonpatch.DiffNilAsEmpty(recorded, state)
				if err != nil {
					return fmt.Errorf("journal: comparing the states at %d: %w", r.Seq, err)
				}
				compared, differs = true, differs || len(ops) > 0
			}
		}
		if !compared {
			return nil
		}
		if !differs {
			same = r.Seq
			return nil
		}
		div = &Divergence{Seq: r.Seq, Since: same, Time: time.Unix(0, f.UnixNano).UTC(), Version: int(f.Version)}
		if dropped {
			div.Input = json.RawMessage("null")
			if json.Valid(f.Payload) {
				div.Input = append(json.RawMessage(nil), f.Payload...)
			}
		} else if div.Input, err = json.Marshal(in); err != nil {
			return fmt.Errorf("journal: input %d as JSON: %w", r.Seq, err)
		}
		step, err := jsonpatch.DiffNilAsEmpty(prev, state)
		if err != nil {
			return fmt.Errorf("journal: the step of input %d: %w", r.Seq, err)
		}
		div.Step = patchOps(step)
		if haveRecorded {
			if err := m.setDiff(div, recorded, state, r.Seq); err != nil {
				return err
			}
		}
		rep.Divergence = div
		if dst == nil && (div.DiffAt != 0 || next == len(snaps)) {
			return ErrStop
		}
		return nil
	})
	if err != nil && err != ErrStop {
		return nil, err
	}
	if dst != nil {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// snapshotAt decodes the snapshot at seq as Open does (migrating one of an
// earlier version); ok is false when there is none, or one of an earlier
// version that no migration brings up.
func (m *Machine[S, I]) snapshotAt(seq uint64) (state S, ok bool, err error) {
	err = m.store.Snapshots(func(r Record) error {
		if r.Seq != seq {
			return nil
		}
		s, err := m.decodeSnapshot(r)
		if errors.As(err, new(*staleSnapshot)) {
			return ErrStop
		}
		if err != nil {
			return err
		}
		state, ok = s, true
		return ErrStop
	})
	if err == ErrStop {
		err = nil
	}
	return state, ok, err
}

// diffWithSnapshot sets div's Diff against the snapshot at seq, if it can
// be read.
func (m *Machine[S, I]) diffWithSnapshot(div *Divergence, state S, seq uint64) error {
	recorded, ok, err := m.snapshotAt(seq)
	if err != nil || !ok {
		return err
	}
	return m.setDiff(div, recorded, state, seq)
}

func (m *Machine[S, I]) setDiff(div *Divergence, recorded, state S, seq uint64) error {
	ops, err := jsonpatch.DiffNilAsEmpty(recorded, state)
	if err != nil {
		return fmt.Errorf("journal: comparing the states at %d: %w", seq, err)
	}
	div.DiffAt, div.Diff = seq, patchOps(ops)
	return nil
}

// putReplayed stores state as the snapshot at seq in dst.
func (m *Machine[S, I]) putReplayed(dst Store, state S, seq uint64) error {
	payload, err := guard(m, "encoding a snapshot", func() ([]byte, error) { return m.opts.Codec.EncodeState(state) })
	if err != nil {
		return fmt.Errorf("journal: encoding the state at %d: %w", seq, err)
	}
	data := frame.Append(nil, frame.Frame{Kind: frame.Snapshot, Seq: seq, UnixNano: m.opts.Now().UnixNano(), Version: m.version(), Payload: payload})
	if err := dst.PutSnapshot(Record{Seq: seq, Data: data}); err != nil {
		return fmt.Errorf("journal: storing the snapshot at %d: %w", seq, err)
	}
	return nil
}

func patchOps(ops []jsonpatch.Op) []PatchOp {
	out := make([]PatchOp, len(ops))
	for i, op := range ops {
		out[i] = PatchOp(op)
	}
	return out
}
