package pebble

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/moora-go/moora/automata/journal"

	pdb "github.com/cockroachdb/pebble/v2"
)

// The append log makes an Append durable with one write and one fdatasync
// on the Append's own goroutine. A commit synced through pebble hands its
// batch to pebble's log writer, a goroutine of its own, and waits for it to
// hand back: two wake-ups of another goroutine for each commit, which cost
// a producer that waits for each input more than a tenth of its rate (see
// BenchmarkDiskFloor). So an Append writes its group's batch (pebble's own
// encoding of it) to this file, in place in blocks allocated when the file
// was made, so that the fdatasync flushes that data and no metadata; then
// it commits the batch to pebble without a sync. Every batch of the log also
// sets lsnKey to its number in the log, so pebble's copy says which of the
// log's batches it holds: after a crash, Open applies the log's batches
// pebble lost, in order, before anything reads the database.
//
// The log is written from its start; a batch that does not fit in what is
// left of it is committed through pebble with a sync instead, after which
// pebble holds every batch of the log, and the log starts again from its
// start. An entry is its header, a CRC-32C (Castagnoli) of the rest, the
// batch's length and its number in the log, and the batch. The entries of
// the log's current round are those from its start that follow each other
// by number: what follows them is left from an earlier round (numbered
// lower) or a write a crash cut short (its checksum fails). Every other
// operation of the database (snapshots, pruning, quarantine, a fleet's
// agents) is committed through pebble with a sync, which makes the batches
// before it durable in pebble too: the log only ever holds, past what
// pebble has, the newest Appends.
const (
	appendLogName  = "appends"
	appendLogBytes = 1 << 20
	entryHeader    = 16
)

// lsnKey holds, in the database, the number in the append log of the newest
// batch pebble has.
var lsnKey = []byte("\x00appends")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendLog is the open append log of a database: written only by the
// group commit's leader (see commitAppend), one at a time.
type appendLog struct {
	f    *os.File
	off  int64  // where the next entry goes
	prev int64  // where the newest entry is
	lsn  uint64 // the newest batch's number
	buf  []byte
	err  error // the first failed write or sync: the file's state is unknown
}

// openLog opens the append log of d, creating it if d has none yet, and
// applies to pebble the batches it has that pebble lost.
func (d *db) openLog() error {
	have, err := d.appliedLSN()
	if err != nil {
		return err
	}
	path := filepath.Join(d.dir, appendLogName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		if have != 0 {
			return &journal.CorruptError{Err: fmt.Errorf("%s: the append log (%s) is missing: the database has batch %d of it", d.dir, appendLogName, have)}
		}
		f, err = createLog(d.dir)
	}
	if err != nil {
		return fmt.Errorf("journal: open %s: the append log: %w", d.dir, err)
	}
	d.log = &appendLog{f: f, lsn: have}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("journal: open %s: the append log: %w", d.dir, err)
	}
	if fi.Size() != appendLogBytes {
		return &journal.CorruptError{Err: fmt.Errorf("%s: the append log (%s) has %d bytes, not %d: it was cut or written over", d.dir, appendLogName, fi.Size(), appendLogBytes)}
	}
	data := make([]byte, appendLogBytes)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, appendLogBytes), data); err != nil {
		return fmt.Errorf("journal: open %s: reading the append log: %w", d.dir, err)
	}
	missing, last, err := scanLog(data, have)
	if err != nil {
		return &journal.CorruptError{Err: fmt.Errorf("%s: the append log (%s): %w", d.dir, appendLogName, err)}
	}
	for i, repr := range missing {
		sync := pdb.NoSync
		if i == len(missing)-1 {
			sync = pdb.Sync // and with it, every batch before
		}
		err := d.guard("open", nil, func() error {
			b := d.p.NewBatch()
			if err := b.SetRepr(repr); err != nil {
				return err
			}
			return d.p.Apply(b, sync)
		})
		if err != nil {
			return &journal.CorruptError{Err: fmt.Errorf("%s: applying batch %d of the append log: %v", d.dir, last-uint64(len(missing)-1-i), err)}
		}
	}
	d.log.lsn = max(have, last)
	return nil
}

// appliedLSN reads lsnKey: 0 when the database has no batch of the log.
func (d *db) appliedLSN() (uint64, error) {
	var lsn uint64
	err := d.guard("open", nil, func() error {
		v, closer, err := d.p.Get(lsnKey)
		if errors.Is(err, pdb.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		defer closer.Close()
		if len(v) != 8 {
			return &journal.CorruptError{Err: fmt.Errorf("%s: the key of the append log's number holds %d bytes, not 8", d.dir, len(v))}
		}
		lsn = binary.BigEndian.Uint64(v)
		return nil
	})
	if err == nil && lsn == math.MaxUint64 {
		err = &journal.CorruptError{Err: fmt.Errorf("%s: the key of the append log's number holds the largest number", d.dir)}
	}
	return lsn, err
}

// createLog makes the append log of dir, its blocks allocated (written
// with zeros) and synced under a temporary name, then renamed into place:
// a crash leaves it whole or absent.
func createLog(dir string) (*os.File, error) {
	tmp := filepath.Join(dir, appendLogName+".tmp")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*os.File, error) {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	if _, err := f.Write(make([]byte, appendLogBytes)); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, appendLogName)); err != nil {
		return fail(err)
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// parseEntry reads the entry at off of data: its number and batch, and
// the offset past it; ok is false when no whole entry with a good checksum
// is there.
func parseEntry(data []byte, off int) (lsn uint64, batch []byte, next int, ok bool) {
	if off < 0 || len(data)-off < entryHeader {
		return 0, nil, 0, false
	}
	h := data[off : off+entryHeader]
	n := int(binary.BigEndian.Uint32(h[4:8]))
	if n < batchHeader || n > len(data)-off-entryHeader {
		return 0, nil, 0, false
	}
	next = off + entryHeader + n
	crc := crc32.Update(crc32.Checksum(h[4:], castagnoli), castagnoli, data[off+entryHeader:next])
	if crc != binary.BigEndian.Uint32(h[0:4]) {
		return 0, nil, 0, false
	}
	return binary.BigEndian.Uint64(h[8:16]), data[off+entryHeader : next], next, true
}

// batchHeader is the length of a pebble batch's header: no batch is
// shorter.
const batchHeader = 12

// scanLog finds in data, the append log, the batches numbered above have
// (which the database holds), in order, and the number of the last entry
// of the log's current round.
//
// The round ends where no entry with a good checksum and the next number
// is: at an entry of an earlier round, or at one a crash cut short, which
// had not been acknowledged. Damage can look like that end too, so where
// the entry there does not read, scanLog looks further on for an entry of
// this round (numbered higher, its checksum good): found, the entries
// between were damaged, an error when the database does not hold all of
// their batches, and skipped when it does. A round whose batches begin past
// the database's next one is an error too: the batches between are lost.
func scanLog(data []byte, have uint64) (missing [][]byte, last uint64, err error) {
	expect := uint64(0) // the next entry's number; 0 before the first
	for off := 0; off < len(data); {
		lsn, batch, next, ok := parseEntry(data, off)
		if ok && (expect == 0 || lsn == expect) {
			if lsn > have {
				if len(missing) == 0 && lsn != have+1 {
					return nil, 0, fmt.Errorf("its batches begin at %d, but the database ends at %d: the batches between are lost", lsn, have)
				}
				missing = append(missing, batch)
			}
			last, expect, off = lsn, lsn+1, next
			continue
		}
		if ok {
			break // an entry of an earlier round
		}
		lo := expect + 1
		if expect == 0 {
			lo = have + 1
		}
		at, found := findEntry(data, off+1, lo)
		if found == 0 {
			break // a write cut short, or the round's end
		}
		if found > have+1 {
			return nil, 0, fmt.Errorf("the entry at offset %d is damaged (its checksum fails), and with it batches up to %d, which the database does not have", off, found-1)
		}
		last, expect, off = found-1, found, at
	}
	return missing, last, nil
}

// findEntry looks in data from offset from for an entry numbered at least
// lo (and by less than the number of entries a log holds), its checksum
// good, and returns its offset and number; number 0 if there is none.
func findEntry(data []byte, from int, lo uint64) (at int, lsn uint64) {
	for o := from; o+entryHeader <= len(data); o++ {
		if v := binary.BigEndian.Uint64(data[o+8 : o+16]); v-lo < appendLogBytes/entryHeader {
			if n, _, _, ok := parseEntry(data, o); ok && n == v {
				return o, v
			}
		}
	}
	return 0, 0
}

// fits says whether a batch of n bytes fits in what is left of the log.
func (l *appendLog) fits(n int) bool { return l.off+entryHeader+int64(n) <= appendLogBytes }

// write writes batch, numbered lsn, at the log's end, and syncs it.
func (l *appendLog) write(lsn uint64, batch []byte) error {
	if l.err != nil {
		return l.err
	}
	buf := append(l.buf[:0], make([]byte, entryHeader)...)
	binary.BigEndian.PutUint32(buf[4:8], uint32(len(batch)))
	binary.BigEndian.PutUint64(buf[8:16], lsn)
	buf = append(buf, batch...)
	binary.BigEndian.PutUint32(buf[0:4], crc32.Checksum(buf[4:], castagnoli))
	l.buf = buf
	if _, err := l.f.WriteAt(buf, l.off); err != nil {
		l.err = fmt.Errorf("writing the append log: %w (the store must be reopened)", err)
		return l.err
	}
	if err := datasync(l.f); err != nil {
		// What the kernel kept of the write is unknown (a failed
		// fsync may drop the dirty pages): nothing more is written.
		l.err = fmt.Errorf("syncing the append log: %w (the store must be reopened)", err)
		return l.err
	}
	l.prev, l.off, l.lsn = l.off, l.off+int64(len(buf)), lsn
	return nil
}

// undo takes the newest entry out of the log, its header written over with
// zeros and synced, when pebble refused its batch: the log then ends
// before it.
func (l *appendLog) undo() error {
	if _, err := l.f.WriteAt(make([]byte, entryHeader), l.prev); err != nil {
		l.err = fmt.Errorf("taking a refused batch out of the append log: %w (the store must be reopened)", err)
		return l.err
	}
	if err := datasync(l.f); err != nil {
		l.err = fmt.Errorf("taking a refused batch out of the append log: %w (the store must be reopened)", err)
		return l.err
	}
	l.off, l.lsn = l.prev, l.lsn-1
	return nil
}

// restart begins the log's next round, after a batch numbered lsn was
// committed through pebble with a sync.
func (l *appendLog) restart(lsn uint64) { l.off, l.lsn = 0, lsn }
