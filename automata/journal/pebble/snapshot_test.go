package pebble_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	// The snapshots' files, by seq. Which seqs they are follows the
	// timing (a snapshot due while one is being written waits for the
	// next commit, and under load may be written after many more), so the
	// test goes by what it finds, dispatching until it finds what it needs.
	files := func() (seqs []uint64, tmp []string) {
		names, err := filepath.Glob(filepath.Join(dir, "snapshots", "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			base := filepath.Base(name)
			seq, err := strconv.ParseUint(strings.TrimSuffix(base, ".snap"), 10, 64)
			if err != nil {
				tmp = append(tmp, base)
				continue
			}
			seqs = append(seqs, seq)
		}
		slices.Sort(seqs)
		return seqs, tmp
	}
	// dispatchUntil dispatches the notes from next on, one at a time,
	// until done holds (at most 1,000 of them), and returns the next.
	dispatchUntil := func(m *journal.Machine[storetest.State, storetest.Input], next int, done func() bool) int {
		for limit := next + 1000; !done(); next++ {
			if next == limit {
				seqs, _ := files()
				t.Fatalf("1,000 inputs dispatched, and the snapshot files are those of %v", seqs)
			}
			storetest.DispatchAll(t, m, storetest.Notes(next, next+1))
		}
		return next
	}
	m := open()
	dispatched := dispatchUntil(m, 0, func() bool { seqs, _ := files(); return len(seqs) == 3 })
	storetest.MustClose(t, m)
	before, _ := files()
	if len(before) != 3 {
		t.Fatalf("snapshot files of %v, want 3 (KeepSnapshots)", before)
	}
	newest := before[len(before)-1]
	if err := os.Remove(filepath.Join(dir, "snapshots", fmt.Sprintf("%d.snap", newest))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "snapshots", fmt.Sprintf("%d.snap.tmp-123", newest+10)), []byte("cut off"), 0o600); err != nil {
		t.Fatal(err)
	}
	m = open()
	if got, want := m.Current(), storetest.Fold(storetest.Notes(0, dispatched)); !slices.Equal(got.Notes, want.Notes) {
		t.Fatalf("recovered %d notes, want %d", len(got.Notes), len(want.Notes))
	}
	// Snapshots past newest, and prunes.
	dispatchUntil(m, dispatched, func() bool {
		seqs, _ := files()
		return len(seqs) > 0 && seqs[len(seqs)-1] > newest && !slices.Contains(seqs, before[0])
	})
	storetest.MustClose(t, m)
	after, tmp := files()
	if len(tmp) > 0 || slices.Contains(after, before[0]) || after[len(after)-1] <= newest || len(after) > 3 {
		t.Fatalf("snapshot files after a Prune: %v and %v, from %v (the newest, %d, lost)", after, tmp, before, newest)
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
