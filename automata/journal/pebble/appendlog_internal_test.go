package pebble

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"slices"
	"testing"

	"github.com/moora-go/moora/automata/journal"
)

// entry is an append-log entry numbered lsn holding batch.
func entry(lsn uint64, batch []byte) []byte {
	buf := make([]byte, entryHeader, entryHeader+len(batch))
	binary.BigEndian.PutUint32(buf[4:8], uint32(len(batch)))
	binary.BigEndian.PutUint64(buf[8:16], lsn)
	buf = append(buf, batch...)
	binary.BigEndian.PutUint32(buf[0:4], crc32.Checksum(buf[4:], castagnoli))
	return buf
}

// FuzzScanLog reads arbitrary bytes as an append log (after a few good
// entries, so that the fuzzer starts from the real format): scanLog never
// panics, and what it returns to apply follows the database's last batch
// with no gap, each batch at least a batch's header long.
func FuzzScanLog(f *testing.F) {
	var good []byte
	for lsn := uint64(5); lsn < 9; lsn++ {
		good = append(good, entry(lsn, make([]byte, batchHeader+int(lsn)))...)
	}
	f.Add(good, uint64(6))
	f.Add(good, uint64(0))
	f.Add(good[:len(good)-3], uint64(7))
	f.Add(append(good, entry(2, make([]byte, 20))...), uint64(8))
	f.Fuzz(func(t *testing.T, data []byte, have uint64) {
		if have == ^uint64(0) {
			return // refused by appliedLSN before any scan
		}
		missing, last, err := scanLog(data, have)
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

	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []string
	if err := s.Scan(0, func(r journal.Record) error {
		got = append(got, fmt.Sprintf("%d:%s", r.Seq, r.Data))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"1:kept", "2:kept", "3:kept"}; !slices.Equal(got, want) {
		t.Fatalf("after the refused Append, the store holds %v, want %v", got, want)
	}
}
