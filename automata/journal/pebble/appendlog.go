package pebble

import (
	"crypto/rand"
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
// start, with a new salt: 8 random bytes that the database keeps beside
// the number (lsnKey holds both) and that each entry's checksums cover, so
// that nothing written in an earlier round, and no bytes a record carries,
// reads as an entry of this one. An entry is its header (a CRC-32C,
// Castagnoli, of the salt and the header's other fields; one of them and
// the batch; the batch's length; its number in the log) and the batch.
// The entries of the log's current round are those from its start that
// follow each other by number: what follows them is left from an earlier
// round (another salt) or a write a crash cut short (its checksum fails).
// Every other
// operation of the database (snapshots, pruning, quarantine, a fleet's
// agents) is committed through pebble with a sync, which makes the batches
// before it durable in pebble too: the log only ever holds, past what
// pebble has, the newest Appends.
const (
	appendLogName  = "appends"
	appendLogBytes = 1 << 20
	entryHeader    = 20 // header CRC, CRC, length, number
)

// lsnKey holds, in the database, the number in the append log of the newest
// batch pebble has, and the salt of the log's round.
var lsnKey = []byte("\x00appends")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendLog is the open append log of a database: written only by the
// group commit's leader (see commitAppend), one at a time.
type appendLog struct {
	f    *os.File
	off  int64  // where the next entry goes
	prev int64  // where the newest entry is
	lsn  uint64 // the newest batch's number
	salt uint64 // the round's
	buf  []byte
	err  error // the first failed write or sync: the file's state is unknown
}

// openLog opens the append log of d, creating it if d has none yet. When
// pebble holds every batch of the log's round, and the round reads to its
// end undamaged (as Close, or a process killed with its writes done,
// leaves it), the log goes on with the round where it ends: Open writes
// nothing, so that it leaves pebble no write to replay and flush at the
// next Open. Otherwise it applies to pebble the batches pebble lost and
// begins a new round, with a new salt, committed with a sync.
func (d *db) openLog() error {
	have, salt, err := d.appliedLSN()
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
	scan, err := scanLog(data, have, salt)
	if err != nil {
		return &journal.CorruptError{Err: fmt.Errorf("%s: the append log (%s): %w", d.dir, appendLogName, err)}
	}
	missing, last := scan.missing, scan.last
	// The round goes on where pebble has all of it and it reads whole: what
	// lies past its end is an earlier round's (another salt) or a write
	// cut short, numbered last+1, which the next entry writes over, and no
	// entry of the round numbered above lies anywhere (scanLog looked for
	// one); or the round has no entry yet (it began with the batch
	// pebble has last). A fresh database (no salt yet) begins its first
	// round.
	if have != 0 && len(missing) == 0 && !scan.skipped && (last == have || scan.end == 0) {
		d.log.off, d.log.prev, d.log.lsn, d.log.salt = int64(scan.end), int64(scan.end), have, salt
		return nil
	}
	for i, repr := range missing {
		err := d.guard("open", nil, func() error {
			b := d.p.NewBatch()
			if err := b.SetRepr(repr); err != nil {
				return err
			}
			return d.p.Apply(b, pdb.NoSync)
		})
		if err != nil {
			return &journal.CorruptError{Err: fmt.Errorf("%s: applying batch %d of the append log: %v", d.dir, last-uint64(len(missing)-1-i), err)}
		}
	}
	// The new round's salt, committed with a sync: with it, every batch
	// applied above.
	lsn := max(have, last)
	next, err := newSalt()
	if err != nil {
		return fmt.Errorf("journal: open %s: the append log's salt: %w", d.dir, err)
	}
	err = d.guard("open", nil, func() error { return d.p.Set(lsnKey, lsnValue(lsn, next), pdb.Sync) })
	if err != nil {
		return fmt.Errorf("journal: open %s: %w", d.dir, err)
	}
	d.log.restart(lsn, next)
	return nil
}

// lsnValue is the value of lsnKey: the number, then the salt.
func lsnValue(lsn, salt uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, 16), lsn), salt)
}

// newSalt returns a salt for a round of the append log.
func newSalt() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(b[:]), nil
}

// appliedLSN reads lsnKey: the number of the newest batch of the append
// log the database has (0 when it has none) and the salt of its round.
func (d *db) appliedLSN() (lsn, salt uint64, err error) {
	err = d.guard("open", nil, func() error {
		v, closer, err := d.p.Get(lsnKey)
		if errors.Is(err, pdb.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		defer closer.Close()
		if len(v) != 16 {
			return &journal.CorruptError{Err: fmt.Errorf("%s: the key of the append log's number holds %d bytes, not 16", d.dir, len(v))}
		}
		lsn, salt = binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
		return nil
	})
	if err == nil && lsn >= math.MaxUint64-appendLogBytes {
		err = &journal.CorruptError{Err: fmt.Errorf("%s: the key of the append log's number holds %d, past any number a log reaches", d.dir, lsn)}
	}
	return lsn, salt, err
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

// parseEntry reads the entry at off of data, of the round of salt: its
// number and batch, and the offset past it; ok is false when no whole
// entry of that round with good checksums is there. The header's own
// checksum is checked first, so that looking for an entry among arbitrary
// bytes costs a checksum of 24 bytes an offset, not one of a batch.
func parseEntry(data []byte, off int, salt uint64) (lsn uint64, batch []byte, next int, ok bool) {
	if off < 0 || len(data)-off < entryHeader {
		return 0, nil, 0, false
	}
	h := data[off : off+entryHeader]
	if binary.BigEndian.Uint32(h[0:4]) != headerCRC(salt, h[8:20]) {
		return 0, nil, 0, false
	}
	n := int(binary.BigEndian.Uint32(h[8:12]))
	if n < batchHeader || n > len(data)-off-entryHeader {
		return 0, nil, 0, false
	}
	next = off + entryHeader + n
	if binary.BigEndian.Uint32(h[4:8]) != crc32.Update(headerCRC(salt, h[8:20]), castagnoli, data[off+entryHeader:next]) {
		return 0, nil, 0, false
	}
	return binary.BigEndian.Uint64(h[12:20]), data[off+entryHeader : next], next, true
}

// headerCRC is the checksum of an entry's length and number (fields),
// salted.
func headerCRC(salt uint64, fields []byte) uint32 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], salt)
	return crc32.Update(crc32.Checksum(b[:], castagnoli), castagnoli, fields)
}

// batchHeader is the length of a pebble batch's header: no batch is
// shorter.
const batchHeader = 12

// logScan is what scanLog found.
type logScan struct {
	missing [][]byte // the batches numbered above have, in order
	last    uint64   // the number of the round's last entry; 0 if none
	end     int      // the offset past it
	skipped bool     // damaged entries were skipped on the way
}

// scanLog finds in data, the append log, the batches of the round of salt
// numbered above have (which the database holds), in order, and the number
// of the last entry of the round and where it ends.
//
// The round ends where no entry of it with good checksums and the next
// number is: at what an earlier round left, or at an entry a crash cut
// short, which had not been acknowledged. Damage can look like that end
// too, so where the entry there does not read, scanLog looks further on
// for an entry of this round (its salt, a number above): found, the
// entries between were damaged, an error when the database does not hold
// all of their batches, and skipped when it does. A round whose batches
// begin past the database's next one is an error too: the batches between
// are lost.
func scanLog(data []byte, have, salt uint64) (scan logScan, err error) {
	expect := uint64(0) // the next entry's number; 0 before the first
	for off := 0; off < len(data); {
		lsn, batch, next, ok := parseEntry(data, off, salt)
		if ok && lsn >= math.MaxUint64-appendLogBytes {
			return logScan{}, fmt.Errorf("the entry at offset %d is numbered %d, past any number a log reaches", off, lsn)
		}
		if ok && (expect == 0 || lsn == expect) {
			if lsn > have {
				if len(scan.missing) == 0 && lsn != have+1 {
					return logScan{}, fmt.Errorf("its batches begin at %d, but the database ends at %d: the batches between are lost", lsn, have)
				}
				scan.missing = append(scan.missing, batch)
			}
			scan.last, scan.end, expect, off = lsn, next, lsn+1, next
			continue
		}
		if ok {
			break // numbered out of turn: the round ended before
		}
		lo := expect + 1
		if expect == 0 {
			lo = have + 1
		}
		at, found := findEntry(data, off+1, lo, salt)
		if found == 0 {
			break // a write cut short, or the round's end
		}
		if found > have+1 {
			return logScan{}, fmt.Errorf("the entry at offset %d is damaged (its checksum fails), and with it batches up to %d, which the database does not have", off, found-1)
		}
		scan.last, scan.skipped, expect, off = found-1, true, found, at
	}
	return scan, nil
}

// findEntry looks in data from offset from for an entry of the round of
// salt numbered at least lo (and by less than the number of entries a log
// holds), and returns its offset and number; number 0 if there is none.
func findEntry(data []byte, from int, lo, salt uint64) (at int, lsn uint64) {
	for o := from; o+entryHeader <= len(data); o++ {
		if v := binary.BigEndian.Uint64(data[o+12 : o+20]); v-lo < appendLogBytes/entryHeader {
			if n, _, _, ok := parseEntry(data, o, salt); ok && n == v {
				return o, v
			}
		}
	}
	return 0, 0
}

// fits says whether a batch of n bytes fits in what is left of the log.
func (l *appendLog) fits(n int) bool { return l.off+entryHeader+int64(n) <= appendLogBytes }

// write writes batch, numbered lsn, at the log's end, and syncs it. A
// write or sync that fails leaves the log refusing every write after it:
// what the file holds is unknown (a failed fsync may drop the dirty pages,
// or keep them). It first takes the entry out again (undo), so that an
// Append that fails does not come back at the next Open; if that fails
// too, the error says the Append's outcome is unknown.
func (l *appendLog) write(lsn uint64, batch []byte) error {
	if l.err != nil {
		return l.err
	}
	buf := append(l.buf[:0], make([]byte, entryHeader)...)
	binary.BigEndian.PutUint32(buf[8:12], uint32(len(batch)))
	binary.BigEndian.PutUint64(buf[12:20], lsn)
	buf = append(buf, batch...)
	hcrc := headerCRC(l.salt, buf[8:20])
	binary.BigEndian.PutUint32(buf[0:4], hcrc)
	binary.BigEndian.PutUint32(buf[4:8], crc32.Update(hcrc, castagnoli, batch))
	l.buf = buf
	_, err := l.f.WriteAt(buf, l.off)
	what := "writing"
	if err == nil {
		what = "syncing"
		err = datasync(l.f)
	}
	if err != nil {
		l.prev = l.off
		if uerr := l.undo(l.lsn); uerr != nil {
			l.err = fmt.Errorf("%s the append log: %w; the Append's outcome is unknown (%v): the store must be reopened", what, err, uerr)
			return l.err
		}
		l.err = fmt.Errorf("%s the append log: %w (the store must be reopened)", what, err)
		return l.err
	}
	l.prev, l.off, l.lsn = l.off, l.off+int64(len(buf)), lsn
	return nil
}

// undo takes the newest entry out of the log, its header written over with
// zeros and synced, when pebble refused its batch (or the entry's own
// write failed): the log then ends before it, its newest number lsn again.
func (l *appendLog) undo(lsn uint64) error {
	if _, err := l.f.WriteAt(make([]byte, entryHeader), l.prev); err != nil {
		l.err = fmt.Errorf("taking a refused batch out of the append log: %w (the store must be reopened)", err)
		return l.err
	}
	if err := datasync(l.f); err != nil {
		l.err = fmt.Errorf("taking a refused batch out of the append log: %w (the store must be reopened)", err)
		return l.err
	}
	l.off, l.lsn = l.prev, lsn
	return nil
}

// restart begins the log's next round, of salt, after a batch numbered lsn
// (and setting salt) was committed through pebble with a sync.
func (l *appendLog) restart(lsn, salt uint64) { l.off, l.lsn, l.salt = 0, lsn, salt }
