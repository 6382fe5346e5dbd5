// Package storetest is the conformance suite of journal.Store: the rules
// every store keeps (consecutive sequence numbers, all-or-none appends,
// newest-first snapshots, prune and quarantine, durability across a reopen)
// and the behaviour of a journal.Machine on top of it (recovery, the
// corruption rules, jobs restarted after a reopen). The bbolt store and the
// JetStream store both run it:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t testing.TB, name string) journal.Store { ... })
//	}
//
// Damage is injected through the Store itself — records whose bytes are
// torn or flipped are appended as they are, since a store keeps the bytes it
// is given — so the suite needs no knowledge of how a store lays them out.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/moora-go/moora/automata/internal/frame"
	"github.com/moora-go/moora/automata/journal"
)

// Opener opens the store called name, creating it empty the first time.
// Opening a name again after Close gives the same store, with what it held;
// two names are two independent stores. The suite closes what it opens
// (through a Machine's Close, or directly).
type Opener func(t testing.TB, name string) journal.Store

// Run runs the suite, each test as a subtest with fresh store names.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"AppendAndScan", testAppendAndScan},
		{"AppendRefusesAGap", testAppendRefusesAGap},
		{"SnapshotsNewestFirst", testSnapshotsNewestFirst},
		{"Prune", testPrune},
		{"QuarantineTheLast", testQuarantineTheLast},
		{"DurableAcrossReopen", testDurableAcrossReopen},
		{"ConcurrentUse", testConcurrentUse},
		{"StoresAreIndependent", testStoresAreIndependent},
		{"MachineReopenRestoresStateAndHistory", testMachineReopen},
		{"MachineGroupsConcurrentDispatches", testMachineGroups},
		{"MachineDamagedLastRecord", testDamagedLastRecord},
		{"MachineDamagedRecordInTheMiddle", testDamagedMiddle},
		{"MachineRecordUnderTheWrongSeq", testWrongSeq},
		{"MachineDamagedSnapshotFallsBack", testDamagedSnapshotFallsBack},
		{"MachineDamagedSnapshotWithoutJournal", testDamagedSnapshotWithoutJournal},
		{"MachineReplayFromSnapshotEqualsFullReplay", testReplayProperty},
		{"MachineJobsRestartWithTheirKeys", testJobsRestart},
		{"MachineFork", testFork},
		{"VersionsMigrateJournalAndSnapshot", testVersionsMigrate},
		{"VersionsReplayOverAStaleSnapshot", testVersionsReplayOverAStaleSnapshot},
		{"VersionsNewerJournalRefused", testVersionsNewerJournalRefused},
		{"VersionsOlderBinaryAfterANewerOpen", testVersionsOlderBinaryAfterANewerOpen},
		{"VersionsCorruptUnderItsOwnVersion", testVersionsCorruptUnderItsOwnVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open) })
	}
}

// unique gives each test its own store names, so that an Opener backed by
// one server may be shared by all of them.
var unique atomic.Int64

func newName(t testing.TB) string {
	name := strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())
	return fmt.Sprintf("%s-%d", name, unique.Add(1))
}

// record is the journal record seq holding payload, framed as a Machine
// frames it.
func record(seq uint64, payload string) journal.Record {
	return journal.Record{Seq: seq, Data: frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: seq, UnixNano: int64(seq), Payload: []byte(payload)})}
}

func records(from, to uint64) []journal.Record {
	var rs []journal.Record
	for seq := from; seq <= to; seq++ {
		rs = append(rs, record(seq, fmt.Sprintf(`{"note":"n%d"}`, seq)))
	}
	return rs
}

func snapshot(seq uint64, payload string) journal.Record {
	return journal.Record{Seq: seq, Data: frame.Append(nil, frame.Frame{Kind: frame.Snapshot, Seq: seq, UnixNano: int64(seq), Payload: []byte(payload)})}
}

// scan returns every journal record from seq on, copied.
func scan(t testing.TB, s journal.Store, from uint64) []journal.Record {
	t.Helper()
	var got []journal.Record
	err := s.Scan(from, func(r journal.Record) error {
		got = append(got, journal.Record{Seq: r.Seq, Data: bytes.Clone(r.Data)})
		return nil
	})
	if err != nil {
		t.Fatalf("Scan(%d): %v", from, err)
	}
	return got
}

func snapshots(t testing.TB, s journal.Store) []journal.Record {
	t.Helper()
	var got []journal.Record
	err := s.Snapshots(func(r journal.Record) error {
		got = append(got, journal.Record{Seq: r.Seq, Data: bytes.Clone(r.Data)})
		return nil
	})
	if err != nil {
		t.Fatalf("Snapshots: %v", err)
	}
	return got
}

func seqs(rs []journal.Record) []uint64 {
	var s []uint64
	for _, r := range rs {
		s = append(s, r.Seq)
	}
	return s
}

func mustAppend(t testing.TB, s journal.Store, rs []journal.Record) {
	t.Helper()
	if err := s.Append(rs); err != nil {
		t.Fatalf("Append(%d..%d): %v", rs[0].Seq, rs[len(rs)-1].Seq, err)
	}
}

func mustCloseStore(t testing.TB, s journal.Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func testAppendAndScan(t *testing.T, open Opener) {
	s := open(t, newName(t))
	defer mustCloseStore(t, s)
	if got := scan(t, s, 0); len(got) != 0 {
		t.Fatalf("a new store's journal holds %v", seqs(got))
	}
	if got := snapshots(t, s); len(got) != 0 {
		t.Fatalf("a new store holds snapshots %v", seqs(got))
	}
	want := records(1, 9)
	mustAppend(t, s, want[:1])
	mustAppend(t, s, want[1:6])
	mustAppend(t, s, want[6:])
	if got := scan(t, s, 0); !reflect.DeepEqual(got, want) {
		t.Fatalf("Scan(0) = %v, want the records appended, in order", seqs(got))
	}
	if got := scan(t, s, 4); !reflect.DeepEqual(got, want[3:]) {
		t.Fatalf("Scan(4) = %v, want 4..9", seqs(got))
	}
	if got := scan(t, s, 10); len(got) != 0 {
		t.Fatalf("Scan(10) = %v, want nothing", seqs(got))
	}
	// ErrStop ends the walk quietly; any other error is returned as is.
	n := 0
	if err := s.Scan(0, func(journal.Record) error { n++; return journal.ErrStop }); err != nil || n != 1 {
		t.Fatalf("Scan stopped with ErrStop: %v after %d records, want nil after 1", err, n)
	}
	boom := errors.New("boom")
	if err := s.Scan(0, func(journal.Record) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Scan with a failing callback = %v, want its error", err)
	}
}

func testAppendRefusesAGap(t *testing.T, open Opener) {
	s := open(t, newName(t))
	defer mustCloseStore(t, s)
	mustAppend(t, s, records(1, 3))
	for _, bad := range [][]journal.Record{records(5, 6), records(3, 4), records(1, 1)} {
		if err := s.Append(bad); err == nil {
			t.Fatalf("Append(%v) after 3 succeeded, want an error", seqs(bad))
		}
	}
	if got := scan(t, s, 0); !reflect.DeepEqual(seqs(got), []uint64{1, 2, 3}) {
		t.Fatalf("after refused appends the journal is %v, want 1..3 (all or none)", seqs(got))
	}
	mustAppend(t, s, records(4, 5))
	if got := scan(t, s, 0); !reflect.DeepEqual(seqs(got), []uint64{1, 2, 3, 4, 5}) {
		t.Fatalf("journal = %v, want 1..5", seqs(got))
	}
}

func testSnapshotsNewestFirst(t *testing.T, open Opener) {
	s := open(t, newName(t))
	defer mustCloseStore(t, s)
	for _, seq := range []uint64{3, 7, 5} {
		if err := s.PutSnapshot(snapshot(seq, fmt.Sprintf("state at %d", seq))); err != nil {
			t.Fatal(err)
		}
	}
	got := snapshots(t, s)
	if !reflect.DeepEqual(seqs(got), []uint64{7, 5, 3}) {
		t.Fatalf("Snapshots = %v, want 7, 5, 3", seqs(got))
	}
	if want := snapshot(7, "state at 7"); !bytes.Equal(got[0].Data, want.Data) {
		t.Fatalf("snapshot 7 holds %q", got[0].Data)
	}
	n := 0
	if err := s.Snapshots(func(journal.Record) error { n++; return journal.ErrStop }); err != nil || n != 1 {
		t.Fatalf("Snapshots stopped with ErrStop: %v after %d, want nil after 1", err, n)
	}
	boom := errors.New("boom")
	if err := s.Snapshots(func(journal.Record) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Snapshots with a failing callback = %v, want its error", err)
	}
}

func testPrune(t *testing.T, open Opener) {
	s := open(t, newName(t))
	defer mustCloseStore(t, s)
	mustAppend(t, s, records(1, 10))
	for _, seq := range []uint64{4, 8, 10} {
		if err := s.PutSnapshot(snapshot(seq, "x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Prune(8, 0, 0); err != nil {
		t.Fatal(err)
	}
	if got := seqs(snapshots(t, s)); !reflect.DeepEqual(got, []uint64{10, 8}) {
		t.Fatalf("snapshots after Prune(8, 0) = %v, want 10, 8", got)
	}
	if got := scan(t, s, 0); len(got) != 10 {
		t.Fatalf("Prune(8, 0) deleted journal records: %v left", seqs(got))
	}
	if err := s.Prune(8, 0, 9); err != nil {
		t.Fatal(err)
	}
	if got := seqs(scan(t, s, 0)); !reflect.DeepEqual(got, []uint64{9, 10}) {
		t.Fatalf("journal after Prune(8, 9) = %v, want 9, 10", got)
	}
	mustAppend(t, s, records(11, 12))
	if got := seqs(scan(t, s, 0)); !reflect.DeepEqual(got, []uint64{9, 10, 11, 12}) {
		t.Fatalf("journal = %v, want 9..12", got)
	}
	// A journal pruned empty starts again wherever the next append says.
	if err := s.Prune(10, 0, 100); err != nil {
		t.Fatal(err)
	}
	if got := scan(t, s, 0); len(got) != 0 {
		t.Fatalf("journal after Prune(10, 100) = %v, want empty", seqs(got))
	}
	mustAppend(t, s, records(13, 13))
	if got := seqs(scan(t, s, 0)); !reflect.DeepEqual(got, []uint64{13}) {
		t.Fatalf("journal = %v, want 13", got)
	}
	// A snapshot kept: the others before snapshotsBefore go.
	for _, seq := range []uint64{11, 12, 13} {
		if err := s.PutSnapshot(snapshot(seq, "y")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Prune(13, 4, 0); err != nil { // 4 was pruned already: nothing to keep
		t.Fatal(err)
	}
	if got := seqs(snapshots(t, s)); !reflect.DeepEqual(got, []uint64{13}) {
		t.Fatalf("snapshots after Prune(13, keep 4) = %v, want 13", got)
	}
	for _, seq := range []uint64{14, 15, 16} {
		if err := s.PutSnapshot(snapshot(seq, "z")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Prune(16, 14, 0); err != nil {
		t.Fatal(err)
	}
	if got := seqs(snapshots(t, s)); !reflect.DeepEqual(got, []uint64{16, 14}) {
		t.Fatalf("snapshots after Prune(16, keep 14) = %v, want 16, 14", got)
	}
}

func testQuarantineTheLast(t *testing.T, open Opener) {
	s := open(t, newName(t))
	defer mustCloseStore(t, s)
	mustAppend(t, s, records(1, 3))
	if err := s.Quarantine(3); err != nil {
		t.Fatal(err)
	}
	if got := seqs(scan(t, s, 0)); !reflect.DeepEqual(got, []uint64{1, 2}) {
		t.Fatalf("journal after Quarantine(3) = %v, want 1, 2", got)
	}
	// The journal goes on from the record before the quarantined one.
	replacement := record(3, `{"note":"again"}`)
	mustAppend(t, s, []journal.Record{replacement})
	got := scan(t, s, 0)
	if !reflect.DeepEqual(seqs(got), []uint64{1, 2, 3}) || !bytes.Equal(got[2].Data, replacement.Data) {
		t.Fatalf("journal = %v, want 1, 2 and the new 3", seqs(got))
	}
	if err := s.Quarantine(7); err == nil {
		t.Fatal("Quarantine of a record that does not exist succeeded")
	}
}

func testDurableAcrossReopen(t *testing.T, open Opener) {
	name := newName(t)
	s := open(t, name)
	mustAppend(t, s, records(1, 5))
	if err := s.PutSnapshot(snapshot(5, "five")); err != nil {
		t.Fatal(err)
	}
	mustCloseStore(t, s)
	s = open(t, name)
	defer mustCloseStore(t, s)
	if got := scan(t, s, 0); !reflect.DeepEqual(got, records(1, 5)) {
		t.Fatalf("reopened journal = %v, want 1..5 as appended", seqs(got))
	}
	if got := snapshots(t, s); len(got) != 1 || !bytes.Equal(got[0].Data, snapshot(5, "five").Data) {
		t.Fatalf("reopened snapshots = %v", seqs(got))
	}
	mustAppend(t, s, records(6, 6))
}

// testConcurrentUse: a Machine appends from the goroutine applying inputs
// while snapshots are taken and read on others.
func testConcurrentUse(t *testing.T, open Opener) {
	s := open(t, newName(t))
	defer mustCloseStore(t, s)
	const n = 60
	var wg sync.WaitGroup
	wg.Go(func() {
		for seq := uint64(1); seq <= n; seq++ {
			if err := s.Append(records(seq, seq)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() {
		for seq := uint64(1); seq <= n; seq += 10 {
			if err := s.PutSnapshot(snapshot(seq, "s")); err != nil {
				t.Error(err)
				return
			}
			if err := s.Snapshots(func(journal.Record) error { return nil }); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() {
		for range 10 {
			last := uint64(0)
			err := s.Scan(0, func(r journal.Record) error {
				if r.Seq != last+1 {
					return fmt.Errorf("scan saw %d after %d", r.Seq, last)
				}
				last = r.Seq
				return nil
			})
			if err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	if got := scan(t, s, 0); len(got) != n {
		t.Fatalf("journal holds %d records, want %d", len(got), n)
	}
}

func testStoresAreIndependent(t *testing.T, open Opener) {
	a, b := open(t, newName(t)), open(t, newName(t))
	defer mustCloseStore(t, a)
	defer mustCloseStore(t, b)
	mustAppend(t, a, records(1, 3))
	mustAppend(t, b, records(1, 1))
	if err := a.PutSnapshot(snapshot(3, "a")); err != nil {
		t.Fatal(err)
	}
	if got := seqs(scan(t, b, 0)); !reflect.DeepEqual(got, []uint64{1}) {
		t.Fatalf("store b holds %v, want only its own record 1", got)
	}
	if got := snapshots(t, b); len(got) != 0 {
		t.Fatalf("store b holds a's snapshots %v", seqs(got))
	}
}
