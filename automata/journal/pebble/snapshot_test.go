package pebble_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

var sink byte

// TestSnapshotFaultOnTheMapIsAnError: a snapshot's file cut short under an
// open store, while its map is read (by another process, or a disk read
// error), is a *CorruptError naming the snapshot, not a crash (SIGBUS); the
// journal goes on working.
func TestSnapshotFaultOnTheMapIsAnError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent")
	s, err := pebble.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutSnapshot(journal.Record{Seq: 7, Data: bytes.Repeat([]byte("state "), 3*os.Getpagesize())}); err != nil {
		t.Fatal(err)
	}
	err = s.Snapshots(func(r journal.Record) error {
		if err := os.Truncate(filepath.Join(dir, "snapshots", "7.snap"), 0); err != nil {
			t.Fatal(err)
		}
		sink = r.Data[len(r.Data)-1] // the page is gone
		return nil
	})
	var ce *journal.CorruptError
	if !errors.As(err, &ce) || ce.Kind != journal.KindSnapshot || ce.Seq != 7 || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Snapshots over a file cut short = %v, want a *CorruptError of snapshot 7 naming the directory", err)
	}
	if err := s.Append([]journal.Record{{Seq: 1, Data: []byte("x")}}); err != nil {
		t.Errorf("Append after the fault: %v", err)
	}
}

// TestStoreCallbackPanicIsNotTheStores: a panic in the caller's Scan or
// Snapshots callback is the caller's, passed on as it is; the store goes on
// working.
func TestStoreCallbackPanicIsNotTheStores(t *testing.T) {
	s, err := pebble.Open(filepath.Join(t.TempDir(), "agent"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append([]journal.Record{{Seq: 1, Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSnapshot(journal.Record{Seq: 1, Data: []byte("state")}); err != nil {
		t.Fatal(err)
	}
	type boom struct{}
	for name, walk := range map[string]func(func(journal.Record) error) error{
		"Scan":      func(fn func(journal.Record) error) error { return s.Scan(0, fn) },
		"Snapshots": s.Snapshots,
	} {
		func() {
			defer func() {
				if v := recover(); v != (boom{}) {
					t.Errorf("%s: recovered %v, want the callback's own panic", name, v)
				}
			}()
			walk(func(journal.Record) error { panic(boom{}) })
		}()
		n := 0
		if err := walk(func(journal.Record) error { n++; return nil }); err != nil || n != 1 {
			t.Errorf("%s after the callback's panic = %v, %d records; want nil, 1", name, err, n)
		}
	}
}
