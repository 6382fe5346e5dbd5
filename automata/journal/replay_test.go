package journal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// recordNotes journals n notes ("note 1" ...) at path with opts, as a live
// machine does, and closes it.
func recordNotes(t *testing.T, path string, n int, opts journal.Options[state, input]) {
	t.Helper()
	m := mustOpen(t, path, opts)
	first := int(m.Seq()) + 1
	for i := first; i < first+n; i++ {
		if err := m.Dispatch(context.Background(), input{Note: fmt.Sprintf("note %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// changed is the model with one transition changed: note 17 is written
// twice.
var changed = automata.Definition[state, input]{
	Initial: model.Initial,
	Transition: func(s state, in input) state {
		s = model.Transition(s, in)
		if in.Note == "note 17" {
			s.Notes = automata.Append(s.Notes, in.Note)
		}
		return s
	},
}

func replayFile(t *testing.T, path string, def automata.Definition[state, input]) *journal.ReplayReport {
	t.Helper()
	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rep, err := journal.Replay(store, def, journal.Options[state, input]{Codec: codec()})
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	return rep
}

func TestReplayFindsTheFirstDivergingInputByItsDigest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.db")
	recordNotes(t, path, 50, journal.Options[state, input]{Digests: journal.DigestEvery, SnapshotEvery: 20, KeepSnapshots: 10})

	rep := replayFile(t, path, model)
	if !rep.Identical() || rep.Inputs != 50 || rep.Digests != 50 || rep.Snapshots == 0 {
		t.Fatalf("today's code: %+v, want identical, 50 inputs and digests, snapshots compared", rep)
	}

	rep = replayFile(t, path, changed)
	d := rep.Divergence
	if d == nil {
		t.Fatalf("changed code: %+v, want a divergence", rep)
	}
	if d.Seq != 17 || d.Since != 16 || string(d.Input) != `{"note":"note 17"}` {
		t.Fatalf("divergence at %d since %d, input %s; want 17 since 16, note 17", d.Seq, d.Since, d.Input)
	}
	step, _ := json.Marshal(d.Step)
	if want := `[{"op":"add","path":"/notes/-","value":"note 17"},{"op":"add","path":"/notes/-","value":"note 17"}]`; string(step) != want {
		t.Fatalf("step %s, want %s", step, want)
	}
	// The recorded state at 17 is known by its digest only: the diff is
	// at the next snapshot, where the replayed notes are one longer and
	// shifted from 17 on.
	if d.DiffAt < 17 || len(d.Diff) == 0 {
		t.Fatalf("diff at %d: %+v", d.DiffAt, d.Diff)
	}
	last := d.Diff[len(d.Diff)-1]
	if last.Op != "add" || last.Path != "/notes/-" {
		t.Fatalf("diff at %d ends with %+v, want the add of one more note", d.DiffAt, last)
	}
}

func TestReplayWithoutDigestsComparesAtSnapshots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.db")
	// A journal as one written before digests: snapshots only.
	recordNotes(t, path, 10, journal.Options[state, input]{SnapshotEvery: -1})
	recordNotes(t, path, 15, journal.Options[state, input]{SnapshotEvery: -1, KeepSnapshots: 5})
	recordNotes(t, path, 25, journal.Options[state, input]{SnapshotEvery: -1, KeepSnapshots: 5})
	// Snapshots at 10, 25 and 50 (each Close); note 17 is the 7th of
	// the second run, input 17.
	rep := replayFile(t, path, model)
	if !rep.Identical() || rep.Inputs != 50 || rep.Digests != 0 || rep.Snapshots != 3 {
		t.Fatalf("today's code: %+v, want identical, 50 inputs, 3 snapshots", rep)
	}
	rep = replayFile(t, path, changed)
	d := rep.Divergence
	if d == nil || d.Seq != 25 || d.Since != 10 || d.DiffAt != 25 {
		t.Fatalf("changed code: %+v, want a divergence found at the snapshot at 25, since 10", d)
	}
	diff, _ := json.Marshal(d.Diff)
	if !strings.Contains(string(diff), `{"op":"add","path":"/notes/-","value":"note 25"}`) {
		t.Fatalf("diff %s, want the add of a 26th note", diff)
	}
}

func TestAcceptRecordsTheChange(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "notes.db")
	recordNotes(t, path, 40, journal.Options[state, input]{Digests: journal.DigestEvery, SnapshotEvery: 20, KeepSnapshots: 10})
	src, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := bolt.Open(filepath.Join(dir, "accepted.db"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := journal.Accept(src, dst, changed, journal.Options[state, input]{Codec: codec()})
	if err != nil || rep.Divergence == nil || rep.Divergence.Seq != 17 {
		t.Fatalf("Accept = %+v, %v; want the divergence at 17 reported", rep, err)
	}
	src.Close()
	dst.Close()
	if rep := replayFile(t, filepath.Join(dir, "accepted.db"), changed); !rep.Identical() || rep.Digests != 40 {
		t.Fatalf("the accepted journal against the changed code: %+v, want identical, 40 digests", rep)
	}
	if rep := replayFile(t, filepath.Join(dir, "accepted.db"), model); rep.Identical() || rep.Divergence.Seq != 17 {
		t.Fatalf("the accepted journal against the old code: %+v, want a divergence at 17", rep)
	}
	// The accepted journal is a journal: Open reads it, with the changed
	// code's state.
	m := mustOpen(t, filepath.Join(dir, "accepted.db"), journal.Options[state, input]{})
	if got := len(m.Current().Notes); got != 41 || m.Seq() != 40 {
		t.Fatalf("Open of the accepted journal: %d notes at %d, want 41 at 40", got, m.Seq())
	}
	m.Close(context.Background())
}

// TestDigestsFollowTheInputsBytes: a state much larger than its inputs is
// not digested after every input.
func TestDigestsFollowTheInputsBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.db")
	recordNotes(t, path, 2000, journal.Options[state, input]{Digests: journal.DigestSampled, SnapshotEvery: -1})
	rep := replayFile(t, path, model)
	// Note i's JSON is ~17 bytes; the state after n notes ~12n: digests
	// thin out as the state grows, some 8 ln(2000·12/(8·17)) of them.
	if !rep.Identical() || rep.Digests < 10 || rep.Digests > 200 {
		t.Fatalf("%+v: want identical, and between 10 and 200 digests for 2000 inputs", rep)
	}
}

func TestReplayOfADamagedRecordIsCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.db")
	recordNotes(t, path, 30, journal.Options[state, input]{Digests: journal.DigestEvery})
	flipBit(t, path, "inputs", 12, 9)
	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	_, err = journal.Replay(store, model, journal.Options[state, input]{Codec: codec()})
	var corrupt *journal.CorruptError
	if !errors.As(err, &corrupt) || corrupt.Seq != 12 {
		t.Fatalf("Replay = %v, want a *CorruptError at 12", err)
	}
}
