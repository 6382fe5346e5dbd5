package pebble

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/moora-go/moora/automata/journal"

	pdb "github.com/cockroachdb/pebble/v2"
)

// Snapshots are files of their own, in the directory's snapshots/, one a
// snapshot, and the key of each (kind s, the prefix, the seq) holds its
// size. A state is large and written whole: through the log-structured
// tree it would be written again by each flush and compaction, and read
// back through its block cache with a copy and a checksum; a file is
// written once, and read by mapping it, as bbolt reads its pages.

const snapshotDir = "snapshots"

// snapshotFolder is the directory of the journal's snapshot files:
// snapshots/ for a store's, snapshots/<the agent's id in hex>/ for an
// agent's (in hex, so that ids differing in case differ on a filesystem
// that does not), so that an agent's files are listed alone.
func (j *pebbleJournal) snapshotFolder() string {
	if j.id == "" {
		return filepath.Join(j.db.dir, snapshotDir)
	}
	return filepath.Join(j.db.dir, snapshotDir, hex.EncodeToString([]byte(j.id)))
}

// snapshotName is the file name of the snapshot at seq: the seq, and
// ".snap".
func snapshotName(seq uint64) string { return strconv.FormatUint(seq, 10) + ".snap" }

func (j *pebbleJournal) snapshotPath(seq uint64) string {
	return filepath.Join(j.snapshotFolder(), snapshotName(seq))
}

// writeSnapshot writes r's data to its file durably: a temporary file,
// synced, renamed over the snapshot's file, and the directory synced (and
// the one above it, when the agent's is new).
func (j *pebbleJournal) writeSnapshot(r journal.Record) error {
	dir := j.snapshotFolder()
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := syncDir(filepath.Dir(dir)); err != nil {
			return err
		}
	}
	tmp, err := os.CreateTemp(dir, snapshotName(r.Seq)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(r.Data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), j.snapshotPath(r.Seq))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return syncDir(dir)
}

// syncDir makes the entries of dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// PutSnapshot is Store.PutSnapshot: the snapshot's file, then its key,
// synced. A crash between the two leaves a file without a key, which the
// journal's next Prune removes.
func (j *pebbleJournal) PutSnapshot(r journal.Record) error {
	if err := j.usable(); err != nil {
		return err
	}
	if len(r.Data) > MaxRecordBytes {
		return fmt.Errorf("journal: snapshot %d: %d bytes, more than the limit of %d", r.Seq, len(r.Data), MaxRecordBytes)
	}
	if err := j.db.usable(); err != nil {
		return err
	}
	j.smu.Lock()
	defer j.smu.Unlock()
	if err := j.writeSnapshot(r); err != nil {
		return j.wrap("put snapshot", err)
	}
	return j.wrap("put snapshot", j.db.guard("put snapshot", nil, func() error {
		return j.db.p.Set(j.key(kindSnapshot, r.Seq), binary.BigEndian.AppendUint64(nil, uint64(len(r.Data))), pdb.Sync)
	}))
}

// Snapshots is Store.Snapshots: each snapshot's file, mapped for the call.
// A file that is missing or shorter than its key says is given as it is
// (empty, or cut short), for the Machine's checks to refuse, as a store
// gives the bytes of a damaged record.
func (j *pebbleJournal) Snapshots(fn func(journal.Record) error) error {
	lower, upper := j.bounds(kindSnapshot)
	var seqs []uint64
	err := j.walk("snapshots", lower, upper, lower, true, func(r journal.Record) error {
		seqs = append(seqs, r.Seq)
		return nil
	})
	if err != nil {
		return err
	}
	for _, seq := range seqs {
		if err := j.mapped(seq, fn); err != nil {
			if errors.Is(err, journal.ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
}

// mapped calls fn with the snapshot at seq, its file mapped read-only. A
// fault on the map (the file cut short under it, a read error of the disk)
// is a *journal.CorruptError, not a crash.
func (j *pebbleJournal) mapped(seq uint64, fn func(journal.Record) error) (err error) {
	f, err := os.Open(j.snapshotPath(seq))
	if errors.Is(err, os.ErrNotExist) {
		return fn(journal.Record{Seq: seq})
	}
	if err != nil {
		return j.wrap("snapshots", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return j.wrap("snapshots", err)
	}
	if fi.Size() == 0 {
		return fn(journal.Record{Seq: seq, Data: []byte{}})
	}
	if fi.Size() > MaxRecordBytes {
		return &journal.CorruptError{Kind: journal.KindSnapshot, Seq: seq, Err: fmt.Errorf("%s: its file is %d bytes, more than the limit of %d", j.where(), fi.Size(), MaxRecordBytes)}
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return j.wrap("snapshots", err)
	}
	defer syscall.Munmap(data)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	inFn := false
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if _, isFault := v.(interface{ Addr() uintptr }); !isFault && inFn {
			panic(v)
		}
		err = &journal.CorruptError{Kind: journal.KindSnapshot, Seq: seq, Err: fmt.Errorf("%s: reading its file: %v (it was cut short or changed under the process, or the disk failed)", j.where(), v)}
	}()
	inFn = true
	return fn(journal.Record{Seq: seq, Data: data})
}

// removeSnapshots deletes the files of the snapshots at seqs, once their
// keys are gone, and the files of the journal no key names (left by a crash
// inside PutSnapshot).
func (j *pebbleJournal) removeSnapshots(seqs []uint64) error {
	for _, seq := range seqs {
		if err := os.Remove(j.snapshotPath(seq)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// snapshotFiles returns the seqs of the journal's snapshot files, and
// removes the temporary files of PutSnapshots a crash cut off. It is called
// with smu held.
func (j *pebbleJournal) snapshotFiles() ([]uint64, error) {
	entries, err := os.ReadDir(j.snapshotFolder())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for _, e := range entries {
		if strings.Contains(e.Name(), ".snap.tmp-") && e.Type().IsRegular() {
			// Left by a PutSnapshot cut off by a crash: under smu, none
			// is in flight.
			if err := os.Remove(filepath.Join(j.snapshotFolder(), e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
			continue
		}
		digits, ok := strings.CutSuffix(e.Name(), ".snap")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if seq, err := strconv.ParseUint(digits, 10, 64); err == nil {
			seqs = append(seqs, seq)
		}
	}
	return seqs, nil
}

// usable says why the database refuses calls, or nil.
func (d *db) usable() error {
	if e := d.broken.Load(); e != nil {
		return e
	}
	return nil
}
