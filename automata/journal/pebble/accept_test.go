package pebble_test

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
	"github.com/moora-go/moora/automata/journal/pebble"
)

// TestAcceptMovesABoltJournal: journal.Accept from a bbolt store into an
// empty pebble one copies the journal (with today's digests on its records):
// a Machine on the pebble store recovers the same inputs, at the same times,
// and the same state.
func TestAcceptMovesABoltJournal(t *testing.T) {
	dir := t.TempDir()
	opts := journal.Options[storetest.State, storetest.Input]{Codec: journal.JSON[storetest.State, storetest.Input](nil), SnapshotEvery: 10}
	src, err := bolt.Open(filepath.Join(dir, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := journal.Open(src, storetest.Model, opts)
	if err != nil {
		t.Fatal(err)
	}
	ins := storetest.Notes(0, 25)
	storetest.DispatchAll(t, m, ins)
	storetest.MustClose(t, m)

	src, err = bolt.Open(filepath.Join(dir, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	times := recordTimes(t, src)
	dst, err := pebble.Open(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Accept(src, dst, storetest.Model, opts); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := dst.Scan(0, func(journal.Record) error { n++; return nil }); err != nil || n != len(ins) {
		t.Fatalf("the pebble journal holds %d records (%v), want %d", n, err, len(ins))
	}
	src.Close()
	dst.Close()

	dst, err = pebble.Open(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	m, err = journal.Open(dst, storetest.Model, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer storetest.MustClose(t, m)
	if got, want := m.Current(), storetest.Fold(ins); m.Seq() != uint64(len(ins)) || !reflect.DeepEqual(got, want) {
		t.Fatalf("recovered %d inputs and a state other than their fold", m.Seq())
	}
	entries, err := m.Inputs(1, m.Seq())
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		if e.Input != ins[i] || e.Time.IsZero() || !e.Time.Equal(times[i]) {
			t.Fatalf("input %d: %+v at %v, want %+v at %v", i+1, e.Input, e.Time, ins[i], times[i])
		}
	}
}

// recordTimes returns the times of the journal records of s, in order.
func recordTimes(t *testing.T, s journal.Store) []time.Time {
	t.Helper()
	m, err := journal.Open(nopClose{s}, storetest.Model, journal.Options[storetest.State, storetest.Input]{Codec: journal.JSON[storetest.State, storetest.Input](nil), SkipCloseSnapshot: true})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := m.Inputs(1, m.Seq())
	if err != nil {
		t.Fatal(err)
	}
	var times []time.Time
	for _, e := range entries {
		times = append(times, e.Time)
	}
	storetest.MustClose(t, m)
	return times
}

// nopClose is a Store whose Close leaves it open.
type nopClose struct{ journal.Store }

func (nopClose) Close() error { return nil }
