package pebble

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal"
)

// entry is an append-log entry numbered lsn holding batch.
func entry(lsn, salt uint64, batch []byte) []byte {
	buf := make([]byte, entryHeader, entryHeader+len(batch))
	binary.BigEndian.PutUint32(buf[8:12], uint32(len(batch)))
	binary.BigEndian.PutUint64(buf[12:20], lsn)
	buf = append(buf, batch...)
	hcrc := headerCRC(salt, buf[8:20])
	binary.BigEndian.PutUint32(buf[0:4], hcrc)
	binary.BigEndian.PutUint32(buf[4:8], crc32.Update(hcrc, castagnoli, batch))
	return buf
}

const testSalt = 0x5a17

// FuzzScanLog reads arbitrary bytes as an append log (after a few good
// entries, so that the fuzzer starts from the real format): scanLog never
// panics, and what it returns to apply follows the database's last batch
// with no gap, each batch at least a batch's header long.
func FuzzScanLog(f *testing.F) {
	var good []byte
	for lsn := uint64(5); lsn < 9; lsn++ {
		good = append(good, entry(lsn, testSalt, make([]byte, batchHeader+int(lsn)))...)
	}
	f.Add(good, uint64(6))
	f.Add(good, uint64(0))
	f.Add(good[:len(good)-3], uint64(7))
	f.Add(append(good, entry(9, testSalt+1, make([]byte, 20))...), uint64(8))
	f.Add(append(good, entry(2, testSalt, make([]byte, 20))...), uint64(8))
	f.Fuzz(func(t *testing.T, data []byte, have uint64) {
		if have >= math.MaxUint64-appendLogBytes {
			return // refused by appliedLSN before any scan
		}
		scan, err := scanLog(data, have, testSalt)
		missing, last := scan.missing, scan.last
		if scan.end < 0 || scan.end > len(data) || scan.end == 0 && last != 0 {
			t.Fatalf("the round's last entry, %d, ends at offset %d of %d", last, scan.end, len(data))
		}
		if err != nil {
			if missing != nil {
				t.Fatalf("an error (%v) with %d batches to apply", err, len(missing))
			}
			return
		}
		if len(missing) > 0 && last != have+uint64(len(missing)) {
			t.Fatalf("%d batches to apply after %d, and the last is %d: a gap", len(missing), have, last)
		}
		for _, b := range missing {
			if len(b) < batchHeader {
				t.Fatalf("a batch of %d bytes", len(b))
			}
		}
	})
}

// scanRecords opens the store in dir and returns its records as
// "seq:data".
func scanRecords(t *testing.T, dir string) []string {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return records(t, s)
}

// records returns the records of s as "seq:data".
func records(t *testing.T, s journal.Store) []string {
	t.Helper()
	var got []string
	if err := s.Scan(0, func(r journal.Record) error {
		got = append(got, fmt.Sprintf("%d:%s", r.Seq, r.Data))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestAppendLogFailedSyncIsUndone: an Append whose sync of the append log
// fails (after the data may have reached the disk) returns an error, does
// not come back at the next Open, and the store refuses Appends until it
// is reopened.
func TestAppendLogFailedSyncIsUndone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func(d func(*os.File) error) { datasync = d }(datasync)
	sync, calls := datasync, 0
	datasync = func(f *os.File) error {
		calls++
		err := sync(f)
		if calls == 3 {
			return syscall.EIO // the data synced, the call failed
		}
		return err
	}
	for seq := uint64(1); seq <= 2; seq++ {
		if err := s.Append([]journal.Record{{Seq: seq, Data: []byte("kept")}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append([]journal.Record{{Seq: 3, Data: []byte("failed")}}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("the Append whose sync failed: %v, want EIO", err)
	}
	if err := s.Append([]journal.Record{{Seq: 3, Data: []byte("after")}}); err == nil {
		t.Fatal("an Append after a failed sync succeeded: the log's state is unknown")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := scanRecords(t, dir), []string{"1:kept", "2:kept"}; !slices.Equal(got, want) {
		t.Fatalf("after the failed Append, the store holds %v, want %v", got, want)
	}
}

// TestAppendLogIgnoresEntriesInRecords: a record whose data holds a
// well-formed entry of the append log (of the round it was written in,
// numbered ahead, its batch rewriting record 1) is never read as one:
// neither when a later round ends before the bytes (where Open looks past
// a round's end for damage), nor when the store closes right after a round
// began.
func TestAppendLogIgnoresEntriesInRecords(t *testing.T) {
	for _, closeAtRestart := range []bool{false, true} {
		t.Run(fmt.Sprintf("close-at-restart=%v", closeAtRestart), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			seq := uint64(0)
			want := []string{}
			app := func(data []byte) {
				seq++
				if err := s.Append([]journal.Record{{Seq: seq, Data: data}}); err != nil {
					t.Fatal(err)
				}
				want = append(want, fmt.Sprintf("%d:%s", seq, data))
			}
			filler := bytes.Repeat([]byte{'y'}, 20_000)
			for s.db.log.off < appendLogBytes-100_000 {
				app(filler)
			}
			fake := s.db.p.NewBatch()
			fake.Set(s.j.key(kindInput, 1), []byte("INJECTED"), nil)
			fake.Set(lsnKey, lsnValue(s.db.log.lsn+40, s.db.log.salt), nil)
			crafted := slices.Clone(filler)
			copy(crafted[10_000:], entry(s.db.log.lsn+40, s.db.log.salt, slices.Clone(fake.Repr())))
			fake.Close()
			app(crafted)
			round := s.db.log.salt
			for s.db.log.salt == round {
				app(filler)
			}
			if !closeAtRestart {
				for s.db.log.off < 500_000 {
					app(filler)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if got := scanRecords(t, dir); !slices.Equal(got, want) {
				t.Fatalf("the store holds %d records (the first %.20q), want %d", len(got), got[0], len(want))
			}
		})
	}
}

// TestFleetCloseWaitsForAnAppend: Closes of an agent's Store and of its
// fleet while the agent's Append is between its append log's sync and its
// pebble commit wait for that commit: the Append succeeds and is there
// after a reopen; an Append after the Close fails, and is not.
func TestFleetCloseWaitsForAnAppend(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	f, err := OpenFleet(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Create("ann", journal.AgentInfo{Owner: "ann"}); err != nil {
		t.Fatal(err)
	}
	s, err := f.Open("ann")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append([]journal.Record{{Seq: 1, Data: []byte("kept")}}); err != nil {
		t.Fatal(err)
	}
	defer func(d func(*os.File) error) { datasync = d }(datasync)
	sync := datasync
	closed := make(chan error, 1)
	datasync = func(file *os.File) error {
		err := sync(file)
		datasync = sync
		go func() {
			if err := s.Close(); err != nil {
				closed <- err
				return
			}
			closed <- f.Close()
		}()
		// Give the Closes time to reach what they wait on: the agent's
		// Close this Append, the fleet's this commit. (A bound, not an
		// assertion: whichever they reach, the Append must succeed.)
		for deadline := time.Now().Add(100 * time.Millisecond); time.Now().Before(deadline); {
			f.db.gmu.Lock()
			closing := f.db.closing
			f.db.gmu.Unlock()
			if closing {
				break
			}
			runtime.Gosched()
		}
		return err
	}
	if err := s.Append([]journal.Record{{Seq: 2, Data: []byte("in flight")}}); err != nil {
		t.Fatalf("the Append a Close waited for: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := s.Append([]journal.Record{{Seq: 3, Data: []byte("after")}}); err == nil {
		t.Fatal("an Append after Close succeeded")
	}
	f, err = OpenFleet(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err = f.Open("ann")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := records(t, s), []string{"1:kept", "2:in flight"}; !slices.Equal(got, want) {
		t.Fatalf("after the Close, the fleet's agent holds %v, want %v", got, want)
	}
}

// TestAppendLogUndoesARefusedCommit: when pebble refuses an Append's batch
// after the append log has it (here, pebble panics: its database was
// closed under the store), the Append fails, and the batch does not come
// back at the next Open.
func TestAppendLogUndoesARefusedCommit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 3; seq++ {
		if err := s.Append([]journal.Record{{Seq: seq, Data: []byte("kept")}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.p.Close(); err != nil {
		t.Fatal(err)
	}
	err = s.Append([]journal.Record{{Seq: 4, Data: []byte("refused")}})
	if err == nil {
		t.Fatal("an Append on a closed database succeeded")
	}
	t.Log(err)
	s.Close()

	if got, want := scanRecords(t, dir), []string{"1:kept", "2:kept", "3:kept"}; !slices.Equal(got, want) {
		t.Fatalf("after the refused Append, the store holds %v, want %v", got, want)
	}
}
