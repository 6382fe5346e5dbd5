package pebble

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/moora-go/moora/automata/journal"

	pdb "github.com/cockroachdb/pebble/v2"
)

// The keys of a directory. A store's journal has its records under one
// byte of kind and the seq; a fleet's agent under the kind, the id's length
// and the id, and then the seq (see Fleet). The layout key says which kind
// of directory it is.
const (
	kindInput      = 'i' // + seq: a journal record
	kindSnapshot   = 's' // + seq: a snapshot record
	kindQuarantine = 'q' // + seq + the time it was moved: a quarantined record
	kindEnd        = 'e' // the seq of the journal's last record, while it has one
	kindMeta       = 'm' // + id (fleets only): the agent's AgentInfo, as JSON
)

var layoutKey = []byte("\x00layout")

const (
	layoutStore = "moora-go journal: store 1"
	layoutFleet = "moora-go journal: fleet 1"
)

// MaxRecordBytes is the largest record a store keeps: a pebble batch holds
// at most 4 GiB, and a journal record far less; an Append of a larger
// record is refused before anything is written.
const MaxRecordBytes = 1 << 30

// Store is the pebble Store: one agent's journal in a directory of its own,
// a github.com/cockroachdb/pebble database. Each Append is one pebble batch,
// made durable by one write and one fdatasync of the directory's append
// log on the Append's goroutine (see the package's doc); the Appends that
// arrive while one commits share the next batch and its sync.
//
// A damaged directory is an error, never a crash: see Open.
type Store struct {
	db *db
	j  *pebbleJournal
}

// Open opens (creating if needed) the store in directory dir. It fails at
// once with an error wrapping journal.ErrInUse if another Open has it open,
// in this process or another.
//
// Open checks that the journal ends where its last Append left it (each
// Append records its last seq beside its records): two reads, whatever the
// journal's length. Pebble checks the checksum of every block it reads, so
// damage to a record is found by the read that meets it, a Machine's Open
// replaying the journal or a later Scan, as a *journal.CorruptError naming
// the directory; from then on the store refuses every call but Close. A
// directory that is a fleet's is refused, saying so. Only an empty (or
// absent) directory is initialised.
func Open(dir string) (*Store, error) {
	d, err := openDB(dir, layoutStore, "Open", "OpenFleet")
	if err != nil {
		return nil, err
	}
	j := &pebbleJournal{db: d}
	if err := j.load(); err != nil {
		d.close()
		return nil, err
	}
	return &Store{db: d, j: j}, nil
}

// db is an open pebble database of the package, and the first panic of
// pebble that broke it.
type db struct {
	// The group commit of Appends (commitAppend).
	gmu     sync.Mutex
	leading bool
	closing bool      // close has begun: no more Appends
	idle    sync.Cond // on gmu: leading became false
	queue   []*pendingAppend
	commits atomic.Int64

	p      *pdb.DB
	dir    string
	abs    string                               // dir, absolute: its entry in openDirs
	broken atomic.Pointer[journal.CorruptError] // set once
	log    *appendLog                           // see appendLogName
}

// openDB opens the pebble database in dir as a directory of layout (a
// store's or a fleet's), which open (the function) opens and other the
// other kind.
func openDB(dir, layout, open, other string) (d *db, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", dir, err)
	}
	fresh, err := isEmptyDir(dir)
	if err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", dir, err)
	}
	openMu.Lock()
	inUse := openDirs[abs]
	openDirs[abs] = true
	openMu.Unlock()
	if inUse {
		return nil, fmt.Errorf("journal: open %s: %w: another %s of this process has it open; a journal has one writer at a time", dir, journal.ErrInUse, open)
	}
	defer func() {
		if d == nil {
			release(abs)
		}
	}()
	d = &db{dir: dir, abs: abs}
	d.idle.L = &d.gmu
	opts := &pdb.Options{
		Logger:           quietLogger{dir: dir},
		ErrorIfNotExists: !fresh,
		// A directory that is not a pebble database is refused, not
		// initialised over.
		FormatMajorVersion: pdb.FormatNewest,
		EventListener: &pdb.EventListener{
			// Corruption met on a read of pebble's own (a compaction's)
			// breaks the database, instead of pebble's default, a fatal
			// log line, which would end the process.
			DataCorruption: func(info pdb.DataCorruptionInfo) {
				d.broken.CompareAndSwap(nil, &journal.CorruptError{Err: fmt.Errorf("%s: pebble: on-disk corruption in %s: %v", dir, filepath.Base(info.Path), info.Details)})
			},
		},
	}
	// Records are small and snapshots are read whole: compressing them
	// would cost every recovery a decompression of the state, to save disk
	// that a journal pruned to its snapshots does not use.
	opts.ApplyCompressionSettings(func() pdb.DBCompressionSettings { return pdb.DBCompressionNone })
	err = d.guard("open", nil, func() error {
		p, err := pdb.Open(dir, opts)
		d.p = p
		return err
	})
	if err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("journal: open %s: %w: another process (or another %s of this one) has it open; a journal has one writer at a time", dir, journal.ErrInUse, open)
		}
		var ce *journal.CorruptError
		if errors.As(err, &ce) {
			return nil, err
		}
		if errors.Is(err, pdb.ErrCorruption) {
			return nil, &journal.CorruptError{Err: fmt.Errorf("%s: pebble: %v", dir, err)}
		}
		return nil, fmt.Errorf("journal: open %s: %w", dir, err)
	}
	var have []byte
	err = d.guard("open", nil, func() error {
		v, closer, err := d.p.Get(layoutKey)
		if errors.Is(err, pdb.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		have = append([]byte(nil), v...)
		return closer.Close()
	})
	switch {
	case err != nil:
	case have == nil && fresh:
		err = d.guard("open", nil, func() error { return d.p.Set(layoutKey, []byte(layout), pdb.Sync) })
	case have == nil:
		err = &journal.CorruptError{Err: fmt.Errorf("%s: the directory holds a pebble database without the key that says it is a journal's", dir)}
	case string(have) == layoutStore && layout == layoutFleet, string(have) == layoutFleet && layout == layoutStore:
		what := map[string]string{layoutStore: "a store", layoutFleet: "a fleet"}
		err = fmt.Errorf("journal: open %s: it holds %s, not %s: open it with %s", dir, what[string(have)], what[layout], other)
	case string(have) != layout:
		err = &journal.CorruptError{Err: fmt.Errorf("%s: the layout key holds %q, expected %q", dir, have, layout)}
	}
	if err == nil {
		err = d.openLog()
	}
	if err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// The directories this process has open: pebble's lock of a directory
// tells only another process apart.
var (
	openMu   sync.Mutex
	openDirs = map[string]bool{}
)

func release(abs string) {
	openMu.Lock()
	delete(openDirs, abs)
	openMu.Unlock()
}

// isEmptyDir says whether dir has no entries.
func isEmptyDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	return len(entries) == 0, nil
}

// flushAtClose is false only in tests that make a store as a process
// killed after its Appends leaves it: its newest records in pebble's log.
var flushAtClose = true

// close closes the database; one that pebble broke was closed by nobody
// else either.
func (d *db) close() error {
	if d.p == nil {
		return nil
	}
	// A commit in flight finishes first, and the Appends queued behind it
	// fail: the database and the append log close under no commit.
	d.gmu.Lock()
	d.closing = true
	for d.leading {
		d.idle.Wait()
	}
	d.gmu.Unlock()
	// What pebble holds only in its log (the memtable) is written to a
	// table first, so that the next Open has no log to replay and flush:
	// a store closed as Close leaves it opens at the cost of reading it.
	// A database pebble broke is not written to.
	var err error
	if flushAtClose && d.broken.Load() == nil {
		err = d.guard("close", nil, d.p.Flush)
	}
	if gerr := d.guard("close", nil, func() error { err = errors.Join(err, d.p.Close()); return nil }); gerr != nil && err == nil {
		err = gerr
	}
	d.p = nil
	if d.log != nil {
		if cerr := d.log.f.Close(); err == nil {
			err = cerr
		}
		d.log = nil
	}
	release(d.abs)
	return err
}

// guard runs fn, which uses pebble, and turns a panic in it into a
// *CorruptError, after which the database refuses every call. A panic of
// the caller's callback is not the store's: while *inCallback is true, guard
// passes it on.
func (d *db) guard(op string, inCallback *bool, fn func() error) (err error) {
	if e := d.broken.Load(); e != nil && op != "close" {
		return e
	}
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if inCallback != nil && *inCallback {
			panic(v)
		}
		d.broken.CompareAndSwap(nil, &journal.CorruptError{Err: fmt.Errorf("%s: %s: pebble failed: %v (the directory is damaged, or was changed by another process)", d.dir, op, v)})
		err = d.broken.Load()
	}()
	return d.corrupt(fn())
}

// corrupt returns err, an error of pebble, as a *CorruptError when pebble
// says it found corruption.
func (d *db) corrupt(err error) error {
	if err != nil && errors.Is(err, pdb.ErrCorruption) {
		var ce *journal.CorruptError
		if !errors.As(err, &ce) {
			return &journal.CorruptError{Err: fmt.Errorf("%s: pebble: %v", d.dir, err)}
		}
	}
	return err
}

// quietLogger keeps pebble's informational lines out of the program's
// output; its errors go to the standard logger, and a fatal error, which
// pebble raises on a broken invariant, is a panic (which a call's guard
// turns into a *CorruptError) instead of an exit.
type quietLogger struct{ dir string }

func (quietLogger) Infof(string, ...any) {}

func (l quietLogger) Errorf(format string, args ...any) {
	log.Printf("journal: pebble %s: %s", filepath.Base(l.dir), fmt.Sprintf(format, args...))
}

func (l quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: %s", fmt.Sprintf(format, args...)))
}

// pebbleJournal is one journal in a database: a store's, or an agent's of
// a fleet (prefix: the id's length and the id). It carries out the Store's
// operations; the journal's last seq is kept in memory, read at open.
type pebbleJournal struct {
	db     *db
	id     string // the agent; "" for a store
	prefix []byte
	closed atomic.Bool

	mu      sync.Mutex // Append, Prune, Quarantine: the end moves
	last    uint64
	hasLast bool
	smu     sync.Mutex // PutSnapshot and the removal of snapshot files
}

// key is the key of kind for seq (and suffix) in the journal.
func (j *pebbleJournal) key(kind byte, seq uint64, suffix ...byte) []byte {
	k := make([]byte, 0, 1+len(j.prefix)+8+len(suffix))
	k = append(append(append(k, kind), j.prefix...), binary.BigEndian.AppendUint64(nil, seq)...)
	return append(k, suffix...)
}

// endKey is the key of the journal's recorded end.
func (j *pebbleJournal) endKey() []byte { return append([]byte{kindEnd}, j.prefix...) }

// bounds are the lower and upper bound of the keys of kind.
func (j *pebbleJournal) bounds(kind byte) (lower, upper []byte) {
	lower = append([]byte{kind}, j.prefix...)
	upper = append(append([]byte{kind}, j.prefix...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	return lower, upper
}

// where names the journal in messages: the directory, and the agent.
func (j *pebbleJournal) where() string {
	if j.id == "" {
		return j.db.dir
	}
	return fmt.Sprintf("%s: agent %q", j.db.dir, j.id)
}

// usable says why the journal refuses calls, or nil.
func (j *pebbleJournal) usable() error {
	if j.closed.Load() {
		return fmt.Errorf("journal: %s: the store is closed", j.where())
	}
	return nil
}

// Append stores records in one batch, synced, as Store says: consecutive
// seqs following the journal's last one (any, without one).
func (j *pebbleJournal) Append(records []journal.Record) error {
	if err := j.usable(); err != nil {
		return err
	}
	if len(records) == 0 {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := checkAppend(j.last, j.hasLast, records); err != nil {
		return err
	}
	err := j.db.commitAppend(&pendingAppend{j: j, records: records, done: make(chan error, 1), lead: make(chan struct{}, 1)})
	if err != nil {
		return j.wrap("append", err)
	}
	j.last, j.hasLast = records[len(records)-1].Seq, true
	return nil
}

// pendingAppend is an Append waiting for its group commit.
type pendingAppend struct {
	j       *pebbleJournal
	records []journal.Record
	done    chan error    // its group's outcome, from the group's leader
	lead    chan struct{} // or the leadership of the next group, which holds it
}

// maxGroupBytes bounds the records of one group commit (one pebble
// batch); an Append larger than that is a group of its own.
const maxGroupBytes = 16 << 20

// commitAppend commits p with the Appends of the other journals of the
// database that arrive while a commit is in flight, in one pebble batch,
// synced: one write of the log and one fdatasync for all of them, as the
// bbolt fleet commits its agents' Appends in one transaction. The Append
// that finds no commit in flight commits on its own goroutine, at once; the
// others queue, and when the commit in flight ends, its leader answers its
// group and hands the next to the first of those queued, whose goroutine
// commits everything queued by then. One producer thus pays no hand-off.
func (d *db) commitAppend(p *pendingAppend) error {
	d.gmu.Lock()
	if d.closing {
		d.gmu.Unlock()
		return errClosing
	}
	d.queue = append(d.queue, p)
	if d.leading {
		d.gmu.Unlock()
		select {
		case err := <-p.done:
			return err
		case <-p.lead:
		}
		d.gmu.Lock()
	}
	d.leading = true
	n, size := 0, 0
	for n < len(d.queue) && (n == 0 || size+appendBytes(d.queue[n]) <= maxGroupBytes) {
		size += appendBytes(d.queue[n])
		n++
	}
	group := d.queue[:n:n]
	d.queue = d.queue[n:]
	closing := d.closing
	d.gmu.Unlock()

	err := errClosing
	if !closing {
		err = d.writeGroup(group)
	}
	var mine error
	for _, q := range group {
		if q == p {
			mine = err
		} else {
			q.done <- err
		}
	}
	d.gmu.Lock()
	if len(d.queue) > 0 {
		next := d.queue[0]
		d.gmu.Unlock()
		next.lead <- struct{}{}
	} else {
		d.leading = false
		d.queue = nil
		d.idle.Broadcast()
		d.gmu.Unlock()
	}
	return mine
}

// errClosing refuses an Append that a Close of the database overtook.
var errClosing = errors.New("the store is closed")

func appendBytes(p *pendingAppend) int {
	n := 0
	for _, r := range p.records {
		n += len(r.Data) + 32
	}
	return n
}

// writeGroup writes the records of the group's Appends, and each journal's
// new end, in one batch, committed with a sync.
func (d *db) writeGroup(group []*pendingAppend) error {
	err := d.guard("append", nil, func() error {
		b := d.p.NewBatch()
		defer b.Close()
		for _, p := range group {
			for _, r := range p.records {
				if err := b.Set(p.j.key(kindInput, r.Seq), r.Data, nil); err != nil {
					return err
				}
			}
			if err := b.Set(p.j.endKey(), binary.BigEndian.AppendUint64(nil, p.records[len(p.records)-1].Seq), nil); err != nil {
				return err
			}
		}
		return d.commitLogged(b)
	})
	if err == nil {
		d.commits.Add(1)
	}
	return err
}

// commitLogged commits b, a group's batch, durably: written to the append
// log and synced there, then committed to pebble without a sync; or, when
// it does not fit in what is left of the log, committed through pebble with
// a sync, after which the log starts again. Either way b also sets lsnKey
// to its number in the log.
func (d *db) commitLogged(b *pdb.Batch) (err error) {
	l := d.log
	if l.err != nil {
		return l.err
	}
	lsn := l.lsn + 1
	if err := b.Set(lsnKey, lsnValue(lsn, l.salt), nil); err != nil {
		return err
	}
	if !l.fits(len(b.Repr())) {
		// The batch's own Set of lsnKey, later in it, wins: the next
		// round's salt.
		salt, err := newSalt()
		if err != nil {
			return fmt.Errorf("journal: %s: the append log's salt: %w", d.dir, err)
		}
		if err := b.Set(lsnKey, lsnValue(lsn, salt), nil); err != nil {
			return err
		}
		if err := b.Commit(pdb.Sync); err != nil {
			return err
		}
		l.restart(lsn, salt)
		return nil
	}
	if err := l.write(lsn, b.Repr()); err != nil {
		return fmt.Errorf("journal: %s: %w", d.dir, err)
	}
	// Durable now; pebble's own log catches up in the background, and
	// with the next commit synced through it. If pebble refuses the batch
	// (an error, or a panic that guard turns into one), the Append fails,
	// so the batch must not come back at the next Open: its entry is taken
	// out of the log. (If that fails, the log refuses every write after,
	// saying why.)
	committed := false
	defer func() {
		if !committed {
			if uerr := l.undo(lsn - 1); uerr != nil && err != nil {
				err = fmt.Errorf("journal: %s: %w; and %w", d.dir, err, uerr)
			}
		}
	}()
	if err := b.Commit(pdb.NoSync); err != nil {
		return err
	}
	committed = true
	return nil
}

// wrap is err of op, as returned: a *CorruptError as it is, any other
// error wrapped with where it came from.
func (j *pebbleJournal) wrap(op string, err error) error {
	var ce *journal.CorruptError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("journal: %s %s: %w", op, j.where(), err)
}

// checkAppend checks records before any is written: consecutive seqs
// following last (any, without one), each at most MaxRecordBytes.
func checkAppend(last uint64, ok bool, records []journal.Record) error {
	if want := last + 1; ok && records[0].Seq != want {
		return fmt.Errorf("journal: append seq %d, expected %d", records[0].Seq, want)
	}
	for i, r := range records {
		if i > 0 && r.Seq != records[i-1].Seq+1 {
			return fmt.Errorf("journal: append seq %d after %d in one append, expected %d", r.Seq, records[i-1].Seq, records[i-1].Seq+1)
		}
		if len(r.Data) > MaxRecordBytes {
			return fmt.Errorf("journal: append seq %d: a record of %d bytes, more than the limit of %d", r.Seq, len(r.Data), MaxRecordBytes)
		}
	}
	return nil
}

// Scan is Store.Scan.
func (j *pebbleJournal) Scan(from uint64, fn func(journal.Record) error) error {
	lower, upper := j.bounds(kindInput)
	return j.walk("scan", j.key(kindInput, from), upper, lower, false, fn)
}

// walk calls fn with the records whose keys are in [lower, upper), forward
// or newest first, until fn returns an error; ErrStop ends it quietly. A key
// of the range that is not a record's (its length is not the prefix's and a
// seq's: base) is damage.
func (j *pebbleJournal) walk(op string, lower, upper, base []byte, reverse bool, fn func(journal.Record) error) error {
	if err := j.usable(); err != nil {
		return err
	}
	var inFn bool
	err := j.db.guard(op, &inFn, func() error {
		it, err := j.db.p.NewIter(&pdb.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			return err
		}
		ok := it.First()
		next := it.Next
		if reverse {
			ok, next = it.Last(), it.Prev
		}
		for ; ok; ok = next() {
			k := it.Key()
			if len(k) != len(base)+8 {
				it.Close()
				return &journal.CorruptError{Err: fmt.Errorf("%s: a %s key of %d bytes (%x), expected %d", j.where(), op, len(k), k, len(base)+8)}
			}
			v, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return err
			}
			inFn = true
			err = fn(journal.Record{Seq: binary.BigEndian.Uint64(k[len(base):]), Data: v})
			inFn = false
			if err != nil {
				it.Close()
				return err
			}
		}
		return errors.Join(it.Error(), it.Close())
	})
	if errors.Is(err, journal.ErrStop) {
		return nil
	}
	if inFn || err == nil {
		return err
	}
	return j.wrap(op, err)
}

// seqs returns the seqs of the journal's keys of kind below before, in
// order.
func (j *pebbleJournal) seqs(kind byte, before uint64) ([]uint64, error) {
	lower, _ := j.bounds(kind)
	var seqs []uint64
	err := j.db.guard("prune", nil, func() error {
		it, err := j.db.p.NewIter(&pdb.IterOptions{LowerBound: lower, UpperBound: j.key(kind, before)})
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			if k := it.Key(); len(k) == len(lower)+8 {
				seqs = append(seqs, binary.BigEndian.Uint64(k[len(lower):]))
			}
		}
		return errors.Join(it.Error(), it.Close())
	})
	return seqs, err
}

// Prune deletes as Store says, in one batch; a journal pruned empty forgets
// its end, as a new one.
func (j *pebbleJournal) Prune(snapshotsBefore, keepSnapshot, inputsBefore uint64) error {
	if err := j.usable(); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	snaps, err := j.seqs(kindSnapshot, snapshotsBefore)
	if err != nil {
		return j.wrap("prune", err)
	}
	empties := j.hasLast && inputsBefore > j.last
	err = j.db.guard("prune", nil, func() error {
		b := j.db.p.NewBatch()
		defer b.Close()
		for _, seq := range snaps {
			if keepSnapshot != 0 && seq == keepSnapshot {
				continue
			}
			if err := b.Delete(j.key(kindSnapshot, seq), nil); err != nil {
				return err
			}
		}
		if inputsBefore > 0 {
			lower, _ := j.bounds(kindInput)
			if err := b.DeleteRange(lower, j.key(kindInput, inputsBefore), nil); err != nil {
				return err
			}
		}
		if empties {
			if err := b.Delete(j.endKey(), nil); err != nil {
				return err
			}
		}
		if b.Empty() {
			return nil
		}
		return b.Commit(pdb.Sync)
	})
	if err != nil {
		return j.wrap("prune", err)
	}
	if empties {
		j.last, j.hasLast = 0, false
	}
	return j.wrap("prune", j.pruneSnapshotFiles(snapshotsBefore, keepSnapshot))
}

// pruneSnapshotFiles removes the journal's snapshot files before
// snapshotsBefore but keepSnapshot's, and every one whose key is gone.
func (j *pebbleJournal) pruneSnapshotFiles(snapshotsBefore, keepSnapshot uint64) error {
	j.smu.Lock()
	defer j.smu.Unlock()
	files, err := j.snapshotFiles()
	if err != nil {
		return err
	}
	keys, err := j.seqs(kindSnapshot, ^uint64(0))
	if err != nil {
		return err
	}
	var gone []uint64
	for _, seq := range files {
		if _, kept := slices.BinarySearch(keys, seq); !kept || seq < snapshotsBefore && seq != keepSnapshot {
			gone = append(gone, seq)
		}
	}
	return j.removeSnapshots(gone)
}

// Quarantine moves the record as Store says; moving the last one moves the
// journal's recorded end back to the record before it.
func (j *pebbleJournal) Quarantine(seq uint64) error {
	if err := j.usable(); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	var end uint64
	err := j.db.guard("quarantine", nil, func() error {
		v, closer, err := j.db.p.Get(j.key(kindInput, seq))
		if errors.Is(err, pdb.ErrNotFound) {
			return fmt.Errorf("journal: quarantine: no record %d", seq)
		}
		if err != nil {
			return err
		}
		b := j.db.p.NewBatch()
		defer b.Close()
		// Keyed by seq and the time it was moved, so that a seq reused
		// after a quarantine never overwrites an earlier one.
		err = b.Set(j.key(kindQuarantine, seq, binary.BigEndian.AppendUint64(nil, uint64(time.Now().UnixNano()))...), v, nil)
		closer.Close()
		if err != nil {
			return err
		}
		if err := b.Delete(j.key(kindInput, seq), nil); err != nil {
			return err
		}
		if j.hasLast && j.last == seq {
			var found bool
			if end, found, err = j.lastBefore(seq); err != nil {
				return err
			}
			if found {
				err = b.Set(j.endKey(), binary.BigEndian.AppendUint64(nil, end), nil)
			} else {
				err = b.Delete(j.endKey(), nil)
			}
			if err != nil {
				return err
			}
		}
		return b.Commit(pdb.Sync)
	})
	if err != nil {
		return j.wrap("quarantine", err)
	}
	if j.hasLast && j.last == seq {
		j.last, j.hasLast = end, end != 0
	}
	return nil
}

// lastBefore returns the seq of the journal's last record before seq: one
// seek, whatever the journal's length.
func (j *pebbleJournal) lastBefore(seq uint64) (last uint64, found bool, err error) {
	lower, _ := j.bounds(kindInput)
	it, err := j.db.p.NewIter(&pdb.IterOptions{LowerBound: lower, UpperBound: j.key(kindInput, seq)})
	if err != nil {
		return 0, false, err
	}
	if it.Last() {
		if k := it.Key(); len(k) == len(lower)+8 {
			last, found = binary.BigEndian.Uint64(k[len(lower):]), true
		}
	}
	return last, found, errors.Join(it.Error(), it.Close())
}

// size returns the bytes the journal's live records take, keys and
// values, of the inputs and the snapshots.
func (j *pebbleJournal) size() (inputs, snapshots int64, err error) {
	err = j.db.guard("size", nil, func() error {
		for _, p := range []struct {
			kind byte
			n    *int64
		}{{kindInput, &inputs}, {kindSnapshot, &snapshots}} {
			lower, upper := j.bounds(p.kind)
			it, err := j.db.p.NewIter(&pdb.IterOptions{LowerBound: lower, UpperBound: upper})
			if err != nil {
				return err
			}
			for ok := it.First(); ok; ok = it.Next() {
				n := int64(len(it.Value()))
				if p.kind == kindSnapshot && n == 8 {
					n = int64(binary.BigEndian.Uint64(it.Value())) // its file's
				}
				*p.n += int64(len(it.Key())) + n
			}
			if err := errors.Join(it.Error(), it.Close()); err != nil {
				return err
			}
		}
		return nil
	})
	return inputs, snapshots, err
}

// Append stores the records in one synced batch, as Store says.
func (s *Store) Append(records []journal.Record) error { return s.j.Append(records) }

func (s *Store) Scan(from uint64, fn func(journal.Record) error) error { return s.j.Scan(from, fn) }

func (s *Store) PutSnapshot(r journal.Record) error { return s.j.PutSnapshot(r) }

func (s *Store) Snapshots(fn func(journal.Record) error) error { return s.j.Snapshots(fn) }

// Prune deletes as Store says; a journal pruned empty forgets its end, as a
// new one.
func (s *Store) Prune(snapshotsBefore, keepSnapshot, inputsBefore uint64) error {
	return s.j.Prune(snapshotsBefore, keepSnapshot, inputsBefore)
}

// Quarantine moves the record as Store says; moving the last one moves the
// journal's recorded end back to the record before it.
func (s *Store) Quarantine(seq uint64) error { return s.j.Quarantine(seq) }

// Close closes the database. A second Close does nothing.
func (s *Store) Close() error {
	if s.j.closed.Swap(true) {
		return nil
	}
	return s.db.close()
}

// Size returns the bytes the store's live records take: keys and values of
// the journal and the snapshots.
func (s *Store) Size() (journal, snapshots int64, err error) { return s.j.size() }

var _ journal.Store = (*Store)(nil)
