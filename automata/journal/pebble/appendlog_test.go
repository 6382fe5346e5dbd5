package pebble_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/pebble"

	pdb "github.com/cockroachdb/pebble/v2"
)

// The append log's file, and the key that says which of its batches the
// database holds (see appendlog.go).
const appendLog = "appends"

var lsnKey = []byte("\x00appends")

// recordData is the data of the record seq of the tests of the append log.
func recordData(seq uint64, size int) []byte {
	return bytes.Repeat([]byte{byte('a' + seq%26)}, size)
}

// appendRecords opens the store in dir and appends the records from..to
// (one Append each) of size bytes, then closes it.
func appendRecords(t *testing.T, dir string, from, to uint64, size int) {
	t.Helper()
	s, err := pebble.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for seq := from; seq <= to; seq++ {
		if err := s.Append([]journal.Record{{Seq: seq, Data: recordData(seq, size)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// loseTail makes the database of the store in dir as pebble leaves it
// when its log lost the last n Appends (each a batch of one record, the
// last numbered last) before a crash: written without a sync, which the
// append log alone made durable.
func loseTail(t *testing.T, dir string, last, n uint64) {
	t.Helper()
	loseAgentTail(t, dir, nil, last, n)
}

// loseAgentTail is loseTail for the journal of prefix (a fleet's agent's:
// its id's length and its id; nil: a store's).
func loseAgentTail(t *testing.T, dir string, prefix []byte, last, n uint64) {
	t.Helper()
	db, err := pdb.Open(dir, &pdb.Options{Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	v, closer, err := db.Get(lsnKey)
	if err != nil {
		t.Fatal(err)
	}
	lsn, salt := binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
	closer.Close()
	b := db.NewBatch()
	for seq := last - n + 1; seq <= last; seq++ {
		b.Delete(binary.BigEndian.AppendUint64(append([]byte{'i'}, prefix...), seq), nil)
	}
	b.Set(append([]byte{'e'}, prefix...), binary.BigEndian.AppendUint64(nil, last-n), nil)
	b.Set(lsnKey, binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, lsn-n), salt), nil)
	if err := b.Commit(pdb.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkRecords opens the store in dir and checks it holds the records
// 1..last of size bytes and nothing else.
func checkRecords(t *testing.T, dir string, last uint64, size int) {
	t.Helper()
	s, err := pebble.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := uint64(1)
	err = s.Scan(0, func(r journal.Record) error {
		if r.Seq != want || !bytes.Equal(r.Data, recordData(r.Seq, size)) {
			return fmt.Errorf("record %d: got seq %d, %d bytes", want, r.Seq, len(r.Data))
		}
		want++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want-1 != last {
		t.Fatalf("the store holds records 1..%d, want 1..%d", want-1, last)
	}
}

// logEntries returns the offsets of the entries of the append log's
// current round in dir, and the number of its first. An entry's header is
// 20 bytes: two checksums, the batch's length (at 8) and the number (at
// 12).
func logEntries(t *testing.T, dir string) (offsets []int, first uint64) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, appendLog))
	if err != nil {
		t.Fatal(err)
	}
	first = binary.BigEndian.Uint64(data[12:20])
	for off, lsn := 0, first; off+20 <= len(data) && binary.BigEndian.Uint64(data[off+12:off+20]) == lsn; lsn++ {
		offsets = append(offsets, off)
		off += 20 + int(binary.BigEndian.Uint32(data[off+8:off+12]))
	}
	return offsets, first
}

// TestAppendLogRestoresWhatPebbleLost: the Appends pebble lost (written to
// its log without a sync) come back from the append log at Open, in order,
// and the store goes on from them.
func TestAppendLogRestoresWhatPebbleLost(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	appendRecords(t, dir, 1, 50, 100)
	loseTail(t, dir, 50, 10)
	checkRecords(t, dir, 50, 100)
	appendRecords(t, dir, 51, 60, 100)
	loseTail(t, dir, 60, 10)
	checkRecords(t, dir, 60, 100)
}

// TestAppendLogGoesOnWithItsRound: a store closed with pebble holding
// every batch of the log's round goes on with that round at the next
// Open, which writes nothing to pebble (no table is added); what pebble
// then loses of either Open's Appends comes back from the one round.
func TestAppendLogGoesOnWithItsRound(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	appendRecords(t, dir, 1, 20, 100)
	tables := func() []string {
		t.Helper()
		names, err := filepath.Glob(filepath.Join(dir, "*.sst"))
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	before := tables()
	for range 5 {
		appendRecords(t, dir, 1, 0, 100) // an Open and a Close, no Append
	}
	if after := tables(); !slices.Equal(before, after) {
		t.Fatalf("five Opens without an Append changed the tables from %v to %v", before, after)
	}
	appendRecords(t, dir, 21, 40, 100)
	offsets, first := logEntries(t, dir)
	if first != 1 || len(offsets) != 40 {
		t.Fatalf("the log's round holds batches %d..%d, want 1..40", first, first+uint64(len(offsets))-1)
	}
	loseTail(t, dir, 40, 30)
	checkRecords(t, dir, 40, 100)
}

// TestAppendLogWritesOverACutWrite: where the round's last entry is a
// write a crash cut short (its Append had not returned, and pebble does
// not have its batch), the round goes on from the entry before it, the
// next Append's entry written over it.
func TestAppendLogWritesOverACutWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	appendRecords(t, dir, 1, 21, 100)
	loseTail(t, dir, 21, 1)
	offsets, _ := logEntries(t, dir)
	path := filepath.Join(dir, appendLog)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[offsets[20]+20+50] ^= 0x10 // in the batch of entry 21
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	appendRecords(t, dir, 21, 30, 100)
	if offsets, first := logEntries(t, dir); first != 1 || len(offsets) != 30 {
		t.Fatalf("the log's round holds batches %d..%d, want 1..30", first, first+uint64(len(offsets))-1)
	}
	loseTail(t, dir, 30, 15)
	checkRecords(t, dir, 30, 100)
}

// TestAppendLogRestoresAFleet: a fleet's Appends, of all its agents, go
// through its append log too, and what pebble lost of them comes back at
// OpenFleet.
func TestAppendLogRestoresAFleet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	f, err := pebble.OpenFleet(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"ann", "bob"}
	for _, id := range ids {
		if err := f.Create(id, journal.AgentInfo{Owner: "ann"}); err != nil {
			t.Fatal(err)
		}
	}
	stores := map[string]journal.Store{}
	for _, id := range ids {
		if stores[id], err = f.Open(id); err != nil {
			t.Fatal(err)
		}
	}
	for seq := uint64(1); seq <= 20; seq++ {
		for _, id := range ids { // in turn: the last 10 batches are 5 of each
			if err := stores[id].Append([]journal.Record{{Seq: seq, Data: recordData(seq, 100)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range ids {
		if err := stores[id].Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Lose the last 5 Appends of each: the last 10 batches (each call
	// takes 5 off the database's number of the log).
	for _, id := range ids {
		loseAgentTail(t, dir, append([]byte{byte(len(id))}, id...), 20, 5)
	}

	f, err = pebble.OpenFleet(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, id := range ids {
		s, err := f.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		var got []uint64
		if err := s.Scan(0, func(r journal.Record) error {
			if !bytes.Equal(r.Data, recordData(r.Seq, 100)) {
				return fmt.Errorf("record %d: wrong data", r.Seq)
			}
			got = append(got, r.Seq)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 20 || got[19] != 20 {
			t.Fatalf("agent %s holds records %v, want 1..20", id, got)
		}
	}
}

// TestAppendLogRounds: with records large enough that the log starts
// again every 50 or so Appends, what pebble lost is restored when the
// log's current round holds it, and is a *CorruptError, not a silent loss,
// when it does not.
func TestAppendLogRounds(t *testing.T) {
	const size, last = 20_000, 150
	base := filepath.Join(t.TempDir(), "store")
	appendRecords(t, base, 1, last, size)
	offsets, first := logEntries(t, base)
	if len(offsets) == 0 || first <= 1 {
		t.Fatalf("the log's round begins at batch %d with %d entries: expected it to have started again", first, len(offsets))
	}
	roundLSN := first + uint64(len(offsets)) - 1 // the last Append's
	t.Logf("the log's current round holds batches %d..%d", first, roundLSN)
	held := uint64(len(offsets))

	dir := copyDir(t, base)
	loseTail(t, dir, last, held)
	checkRecords(t, dir, last, size)

	dir = copyDir(t, base)
	loseTail(t, dir, last, held+1)
	s, err := pebble.Open(dir)
	var ce *journal.CorruptError
	if !errors.As(err, &ce) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("pebble lost a batch the log no longer holds: Open = %v, want a *journal.CorruptError", err)
	}
	t.Log(err)
}

// TestAppendLogDamage: damage to the append log where it holds what pebble
// lost is a *CorruptError; where pebble holds the batch, it costs nothing;
// in its last entry, it is what a crash during that write leaves (the
// Append had not returned), and the store opens without it. A cut or a
// missing log is an error.
func TestAppendLogDamage(t *testing.T) {
	const size, last, lost = 100, 60, 10
	base := filepath.Join(t.TempDir(), "store")
	appendRecords(t, base, 1, last, size)
	loseTail(t, base, last, lost)
	offsets, _ := logEntries(t, base)
	n := len(offsets)
	flip := func(t *testing.T, entry, at int) string {
		dir := copyDir(t, base)
		path := filepath.Join(dir, appendLog)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data[offsets[entry]+at] ^= 0x10
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	refused := func(t *testing.T, dir string) {
		t.Helper()
		s, err := pebble.Open(dir)
		var ce *journal.CorruptError
		if !errors.As(err, &ce) {
			if s != nil {
				s.Close()
			}
			t.Fatalf("Open = %v, want a *journal.CorruptError", err)
		}
		t.Log(err)
	}
	for _, at := range []int{0, 5, 9, 15, 30, 60} { // the checksums, the length, the number, the batch
		t.Run(fmt.Sprintf("lost-entry-byte-%d", at), func(t *testing.T) { refused(t, flip(t, n-lost/2, at)) })
		t.Run(fmt.Sprintf("held-entry-byte-%d", at), func(t *testing.T) { checkRecords(t, flip(t, n-2*lost, at), last, size) })
		t.Run(fmt.Sprintf("last-entry-byte-%d", at), func(t *testing.T) { checkRecords(t, flip(t, n-1, at), last-1, size) })
	}
	t.Run("cut", func(t *testing.T) {
		dir := copyDir(t, base)
		if err := os.Truncate(filepath.Join(dir, appendLog), int64(offsets[n-1])); err != nil {
			t.Fatal(err)
		}
		refused(t, dir)
	})
	t.Run("missing", func(t *testing.T) {
		dir := copyDir(t, base)
		if err := os.Remove(filepath.Join(dir, appendLog)); err != nil {
			t.Fatal(err)
		}
		refused(t, dir)
	})
}

// copyDir copies the files of dir (no subdirectories) to a new directory.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "copy")
	if err := os.Mkdir(to, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "LOCK" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}
