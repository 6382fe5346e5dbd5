package pebble_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
	"github.com/moora-go/moora/automata/journal/pebble"
)

// TestSnapshotFileLost: the newest snapshot's file gone (a key without its
// file), the Machine recovers from the snapshot before it and the journal
// after it, every input there; and the files a Prune leaves are those of
// the snapshots kept, the temporary file of a PutSnapshot a crash cut off
// removed.
func TestSnapshotFileLost(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent")
	opts := journal.Options[storetest.State, storetest.Input]{Codec: journal.JSON[storetest.State, storetest.Input](nil), SnapshotEvery: 10, KeepSnapshots: 3, SkipCloseSnapshot: true}
	open := func() *journal.Machine[storetest.State, storetest.Input] {
		s, err := pebble.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		m, err := journal.Open(s, storetest.Model, opts)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := open()
	storetest.DispatchAll(t, m, storetest.Notes(0, 35))
	storetest.MustClose(t, m)
	files := func() []string {
		names, err := filepath.Glob(filepath.Join(dir, "snapshots", "*"))
		if err != nil {
			t.Fatal(err)
		}
		for i := range names {
			names[i] = filepath.Base(names[i])
		}
		slices.Sort(names)
		return names
	}
	if got := files(); !slices.Equal(got, []string{"10.snap", "20.snap", "30.snap"}) {
		t.Fatalf("snapshot files %v, want those of 10, 20 and 30", got)
	}
	if err := os.Remove(filepath.Join(dir, "snapshots", "30.snap")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "snapshots", "40.snap.tmp-123"), []byte("cut off"), 0o600); err != nil {
		t.Fatal(err)
	}
	m = open()
	if got, want := m.Current(), storetest.Fold(storetest.Notes(0, 35)); !slices.Equal(got.Notes, want.Notes) {
		t.Fatalf("recovered %d notes, want %d", len(got.Notes), len(want.Notes))
	}
	storetest.DispatchAll(t, m, storetest.Notes(35, 50)) // a snapshot at 40 and 50, a prune
	storetest.MustClose(t, m)
	got := files()
	if slices.Contains(got, "40.snap.tmp-123") || slices.Contains(got, "10.snap") || !slices.Contains(got, "50.snap") {
		t.Fatalf("snapshot files after a Prune: %v", got)
	}
}
