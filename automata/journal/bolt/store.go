package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/moora-go/moora/automata/journal"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

var (
	bucketInputs     = []byte("inputs")
	bucketSnapshots  = []byte("snapshots")
	bucketQuarantine = []byte("quarantine")
)

// Store is the embedded Store: one bbolt file, ACID, no server. Each
// Append is one bbolt transaction, so one fsync commits a whole group of
// inputs.
//
// A damaged file is an error, never a crash: Open checks the file before
// bbolt maps it, and every method that reads the map turns a bbolt panic or
// a fault on the map (the file changed or truncated under it, a read error
// of the disk) into a *CorruptError, after which the store refuses every
// call but Close.
type Store struct {
	file *boltFile
	j    boltJournal // the root's three buckets
}

// Options are the operator's settings for OpenWith; Open uses
// the zero value.
type Options struct {
	// AcceptRollback opens a store one of whose two bbolt meta pages is
	// damaged when the damaged one may be the newer: bbolt then opens the
	// store as it was one transaction earlier, and the inputs of the last
	// commit, which may have been acknowledged, are lost. Open refuses
	// such a store with a *CorruptError that says so; set AcceptRollback on
	// purpose, for one open, after reading it. The next commit rewrites the
	// damaged page.
	AcceptRollback bool
}

// boltLockTimeout is how long Open waits for another process's lock.
const boltLockTimeout = 100 * time.Millisecond

// Open opens (creating if needed) the store file at path. It fails at
// once, rather than waiting, if another process has the file open.
//
// Before bbolt maps the file, Open reads and checks it, holding bbolt's
// lock on it: both meta pages (magic, version, checksum), the file's length
// against the pages the meta says it has (a truncated file is reported, not
// mapped), and every page of the tree: page ids and types, elements packed
// as bbolt writes them, keys in order, the store's three buckets present,
// and the journal as long as the last append left it. Damage is a
// *CorruptError (Kind 0) naming the file, the page, its offset and what was
// expected. It reads every live page once, as bbolt's own open does, which
// about doubles the time Open takes (for 1,000,000 starter-agent inputs
// and two snapshots, a 450 MB file: 60 ms more, on top of 65 ms).
//
// A damaged meta page that may be the newer one (its txid is not the valid
// one's less one, or it holds a txid bbolt writes to the other page) would
// make bbolt open the store one transaction behind, silently; Open
// refuses it (see Options.AcceptRollback). The boundaries of that check:
// a meta page torn by a crash in the middle of its write, whose commit was
// therefore not acknowledged, is refused too when the new txid made it to
// disk; and a disk that acknowledges a write and then loses it, leaving the
// older meta page (or the older page of the buckets) intact in its place,
// rolls the store back unseen.
//
// Only a new file (absent or empty), or one that bbolt initialised but no
// transaction committed to, is initialised; an Open that fails leaves
// the file's bytes as they were.
func Open(path string) (*Store, error) { return OpenWith(path, Options{}) }

// OpenWith is Open with options.
func OpenWith(path string, opts Options) (*Store, error) {
	file, _, err := openBoltFile(path, boltStoreLayout, opts.AcceptRollback)
	if err != nil {
		return nil, err
	}
	return &Store{file: file, j: boltJournal{file: file}}, nil
}

// boltLayout is what a kind of bbolt file holds at its root, and how the
// open of that kind is named in messages.
type boltLayout struct {
	fleet    bool     // a fleet's buckets (fleetRootBuckets); otherwise one store's three
	what     string   // "store" or "fleet"
	open     string   // the function that opens it
	rollback string   // the call that accepts a rollback
	buckets  [][]byte // the buckets a new file is given
}

var (
	boltStoreLayout = &boltLayout{what: "store", open: "Open",
		rollback: "OpenWith(path, Options{AcceptRollback: true})",
		buckets:  [][]byte{bucketInputs, bucketSnapshots, bucketQuarantine}}
	boltFleetLayout = &boltLayout{fleet: true, what: "fleet", open: "OpenFleet",
		rollback: "OpenFleetWith(path, FleetOptions{AcceptRollback: true})",
		buckets:  fleetRootBuckets}
)

// boltFile is an open bbolt file, checked before it was mapped, and the
// first panic or fault that broke it.
type boltFile struct {
	db     *bbolt.DB
	path   string
	broken atomic.Pointer[journal.CorruptError] // set once
}

// openBoltFile opens (creating if needed) the bbolt file at path, checked as
// a file of the given layout, as Open says. It returns what the check
// found wrong with single agents of a fleet, by id.
func openBoltFile(path string, layout *boltLayout, acceptRollback bool) (*boltFile, map[string]*journal.CorruptError, error) {
	var (
		file    *os.File
		checked boltChecked
	)
	// Check the file in bbolt's own open, once it is locked and before it
	// is mapped: bbolt calls openFile, then locks the same file (which
	// lockBoltFile has done), then maps it.
	openFile := func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		if err := lockBoltFile(f, boltLockTimeout); err != nil {
			f.Close()
			return nil, err
		}
		if checked, err = checkBoltFile(f, path, layout, acceptRollback); err != nil {
			f.Close()
			return nil, err
		}
		file = f
		return f, nil
	}
	s := &boltFile{path: path}
	err := s.guard(nil, "open", nil, func() error {
		db, err := bbolt.Open(path, 0o600, &bbolt.Options{
			Timeout: boltLockTimeout,
			// The free list is rebuilt on open instead of written on each
			// commit: commits are the hot path, opens are rare.
			NoFreelistSync: true,
			FreelistType:   bbolt.FreelistMapType,
			OpenFile:       openFile,
		})
		s.db = db
		return err
	})
	if err != nil {
		if s.broken.Load() != nil && file != nil {
			// bbolt panicked inside Open: release the file and its lock
			// (its map, out of reach, stays until the process ends).
			file.Close()
		}
		var ce *journal.CorruptError
		if errors.As(err, &ce) {
			return nil, nil, err
		}
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, nil, fmt.Errorf("journal: open %s: %w: another process (or another %s of this one) has the %s open; a %s has one writer at a time", path, journal.ErrInUse, layout.open, layout.what, layout.what)
		}
		return nil, nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	if checked.fresh {
		err = s.guard(nil, "open", nil, func() error {
			return s.db.Update(func(tx *bbolt.Tx) error {
				for _, name := range layout.buckets {
					if _, err := tx.CreateBucketIfNotExists(name); err != nil {
						return err
					}
				}
				return nil
			})
		})
		if err != nil {
			s.db.Close()
			return nil, nil, fmt.Errorf("journal: open %s: %w", path, err)
		}
	}
	return s, checked.agents, nil
}

// boltScope is a part of a bbolt file that can break alone: one agent of a
// fleet, whose Store refuses every call once bbolt panicked on its pages or
// it was closed.
type boltScope struct {
	id     string
	broken atomic.Pointer[journal.CorruptError] // set once
	closed atomic.Bool
}

// usable returns why scope (nil: the file) refuses calls, or nil.
func (s *boltFile) usable(scope *boltScope) error {
	if e := s.broken.Load(); e != nil {
		return e
	}
	if scope == nil {
		return nil
	}
	if e := scope.broken.Load(); e != nil {
		return e
	}
	if scope.closed.Load() {
		return fmt.Errorf("journal: agent %q of %s: the store is closed", scope.id, s.path)
	}
	return nil
}

// guard runs fn, which uses bbolt, and turns a panic in it, or a fault on
// bbolt's memory map, into a *CorruptError (see broke). A panic of the
// caller's callback is not the store's: while *inCallback is true, guard
// passes panics other than memory faults on.
func (s *boltFile) guard(scope *boltScope, op string, inCallback *bool, fn func() error) (err error) {
	if err := s.usable(scope); err != nil {
		return err
	}
	// Per goroutine: set it here and restore it on the way out.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if _, isFault := v.(interface{ Addr() uintptr }); inCallback != nil && *inCallback && !isFault {
			panic(v)
		}
		err = s.broke(scope, op, v)
	}()
	return fn()
}

// broke records v, a panic of bbolt or a fault on its map met during op, as
// a *CorruptError, and returns it. A fault breaks the whole file: the file
// was changed or truncated under the process, or the disk failed. Another
// panic breaks scope, bbolt having tripped on its pages, or the file when
// scope is nil.
func (s *boltFile) broke(scope *boltScope, op string, v any) error {
	fault, isFault := v.(interface{ Addr() uintptr })
	where, in := "", ""
	if isFault {
		where = s.mapOffset(fault.Addr())
	}
	if scope != nil {
		in = fmt.Sprintf(" agent %q:", scope.id)
	}
	ce := &journal.CorruptError{Err: fmt.Errorf("%s:%s %s: bbolt failed%s: %v (the file is damaged, or was changed or truncated by another process)", s.path, in, op, where, v)}
	if isFault || scope == nil {
		s.broken.CompareAndSwap(nil, ce)
		return s.broken.Load()
	}
	scope.broken.CompareAndSwap(nil, ce)
	return scope.broken.Load()
}

// mapOffset says where in the file a faulting address of the map is, if it
// can tell.
func (s *boltFile) mapOffset(addr uintptr) (where string) {
	if s.db == nil {
		return ""
	}
	defer func() {
		if recover() != nil {
			where = ""
		}
	}()
	info := s.db.Info()
	if addr < info.Data || info.PageSize <= 0 {
		return ""
	}
	off := addr - info.Data
	return fmt.Sprintf(" at offset %d (page %d)", off, off/uintptr(info.PageSize))
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// boltJournal is one journal in a bbolt file, its three buckets inputs,
// snapshots and quarantine: at the root (Store), or in the bucket of an
// agent of a fleet (Fleet). It carries out the Store's operations on
// them; Store and a fleet's agent differ only in how they append.
type boltJournal struct {
	file  *boltFile
	scope *boltScope // the agent; nil: the root's buckets, the whole file's
	key   []byte     // the agent's id, its key in bucket agents
}

// where names the journal in messages: the file, and the agent.
func (j *boltJournal) where() string {
	if j.scope == nil {
		return j.file.path
	}
	return fmt.Sprintf("%s: agent %q", j.file.path, j.scope.id)
}

// bucket returns the named bucket of the journal in tx (an agent's is in the
// fleet's bucket of that name's), which the open-time check found.
func (j *boltJournal) bucket(tx *bbolt.Tx, name []byte) (*bbolt.Bucket, error) {
	var b *bbolt.Bucket
	if j.scope == nil {
		b = tx.Bucket(name)
	} else if all := tx.Bucket(fleetBucket(name)); all != nil {
		b = all.Bucket(j.key)
	}
	if b == nil {
		return nil, &journal.CorruptError{Err: fmt.Errorf("%s: bucket %s is missing", j.where(), name)}
	}
	return b, nil
}

// update runs fn in a write transaction of its own, guarded.
func (j *boltJournal) update(op string, fn func(*bbolt.Tx) error) error {
	return j.file.guard(j.scope, op, nil, func() error { return j.file.db.Update(fn) })
}

// append stores the records in tx, after checkAppend, with putRecords.
func (j *boltJournal) append(tx *bbolt.Tx, records []journal.Record) error {
	if len(records) == 0 {
		return nil
	}
	b, err := j.bucket(tx, bucketInputs)
	if err != nil {
		return err
	}
	last, ok := lastSeq(b)
	if err := checkAppend(last, ok, records); err != nil {
		return err
	}
	return putRecords(b, records)
}

// lastSeq returns the seq of the last record of the inputs bucket b, if it
// has one.
func lastSeq(b *bbolt.Bucket) (uint64, bool) {
	last, _ := b.Cursor().Last()
	if last == nil {
		return 0, false
	}
	return binary.BigEndian.Uint64(last), true
}

// checkAppend checks records before any is written, so that an append it
// refuses leaves a transaction as it was (a fleet commits the appends of
// many agents in one, and one agent's refusal fails no other): consecutive
// seqs following last (any, without one), each value within bbolt's limit.
func checkAppend(last uint64, ok bool, records []journal.Record) error {
	if want := last + 1; ok && len(records) > 0 && records[0].Seq != want {
		return fmt.Errorf("journal: append seq %d, expected %d", records[0].Seq, want)
	}
	for i, r := range records {
		if i > 0 && r.Seq != records[i-1].Seq+1 {
			return fmt.Errorf("journal: append seq %d after %d in one append, expected %d", r.Seq, records[i-1].Seq, records[i-1].Seq+1)
		}
		if len(r.Data) > bbolt.MaxValueSize {
			return fmt.Errorf("journal: append seq %d: a record of %d bytes, more than bbolt's limit of %d", r.Seq, len(r.Data), bbolt.MaxValueSize)
		}
	}
	return nil
}

// putRecords stores records, checked, in the inputs bucket b, and records
// the last seq as its sequence, which the open-time check checks the
// journal's end against.
func putRecords(b *bbolt.Bucket, records []journal.Record) error {
	b.FillPercent = 1 // keys only ever grow: pack pages full
	for _, r := range records {
		if err := b.Put(seqKey(r.Seq), r.Data); err != nil {
			return err
		}
	}
	return b.SetSequence(records[len(records)-1].Seq)
}

// Scan is Store.Scan.
func (j *boltJournal) Scan(from uint64, fn func(journal.Record) error) error {
	return j.walk("scan", bucketInputs, func(c *bbolt.Cursor) ([]byte, []byte) { return c.Seek(seqKey(from)) }, (*bbolt.Cursor).Next, fn)
}

// walk calls fn with the records of bucket from where first puts the cursor,
// moving it with next, until fn returns an error; ErrStop ends it quietly.
func (j *boltJournal) walk(op string, bucket []byte, first, next func(*bbolt.Cursor) ([]byte, []byte), fn func(journal.Record) error) error {
	var inFn bool
	err := j.file.guard(j.scope, op, &inFn, func() error {
		return j.file.db.View(func(tx *bbolt.Tx) error {
			return j.walkTx(tx, bucket, first, next, fn, &inFn)
		})
	})
	if errors.Is(err, journal.ErrStop) {
		return nil
	}
	return err
}

// walkTx is walk's work in tx; *inFn is true while fn runs, for guard.
func (j *boltJournal) walkTx(tx *bbolt.Tx, bucket []byte, first, next func(*bbolt.Cursor) ([]byte, []byte), fn func(journal.Record) error, inFn *bool) error {
	b, err := j.bucket(tx, bucket)
	if err != nil {
		return err
	}
	c := b.Cursor()
	for k, v := first(c); k != nil; k, v = next(c) {
		if len(k) != 8 {
			return &journal.CorruptError{Err: fmt.Errorf("%s: bucket %s holds a key of %d bytes (%x), expected 8", j.where(), bucket, len(k), k)}
		}
		*inFn = true
		err := fn(journal.Record{Seq: binary.BigEndian.Uint64(k), Data: v})
		*inFn = false
		if err != nil {
			return err
		}
	}
	return nil
}

// PutSnapshot is Store.PutSnapshot.
func (j *boltJournal) PutSnapshot(r journal.Record) error {
	return j.update("put snapshot", func(tx *bbolt.Tx) error {
		b, err := j.bucket(tx, bucketSnapshots)
		if err != nil {
			return err
		}
		return b.Put(seqKey(r.Seq), r.Data)
	})
}

// Snapshots is Store.Snapshots.
func (j *boltJournal) Snapshots(fn func(journal.Record) error) error {
	return j.walk("snapshots", bucketSnapshots, (*bbolt.Cursor).Last, (*bbolt.Cursor).Prev, fn)
}

// Prune deletes as Store says; a journal pruned empty forgets its last seq
// (sequence 0), as a new one.
func (j *boltJournal) Prune(snapshotsBefore, keepSnapshot, inputsBefore uint64) error {
	return j.update("prune", func(tx *bbolt.Tx) error {
		for _, p := range []struct {
			bucket []byte
			before uint64
			keep   uint64
		}{{bucketSnapshots, snapshotsBefore, keepSnapshot}, {bucketInputs, inputsBefore, 0}} {
			b, err := j.bucket(tx, p.bucket)
			if err != nil {
				return err
			}
			c := b.Cursor()
			for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) < p.before; k, _ = c.Next() {
				if p.keep != 0 && binary.BigEndian.Uint64(k) == p.keep {
					continue
				}
				if err := c.Delete(); err != nil {
					return err
				}
			}
			if first, _ := c.First(); first == nil && b.Sequence() != 0 {
				if err := b.SetSequence(0); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Quarantine moves the record as Store says; moving the last one moves the
// journal's recorded end back to the record before it.
func (j *boltJournal) Quarantine(seq uint64) error {
	return j.update("quarantine", func(tx *bbolt.Tx) error {
		inputs, err := j.bucket(tx, bucketInputs)
		if err != nil {
			return err
		}
		quarantine, err := j.bucket(tx, bucketQuarantine)
		if err != nil {
			return err
		}
		key := seqKey(seq)
		v := inputs.Get(key)
		if v == nil {
			return fmt.Errorf("journal: quarantine: no record %d", seq)
		}
		// Keyed by seq and the time it was moved, so that a seq reused
		// after a quarantine never overwrites an earlier one.
		qkey := binary.BigEndian.AppendUint64(key, uint64(time.Now().UnixNano()))
		if err := quarantine.Put(qkey, append([]byte(nil), v...)); err != nil {
			return err
		}
		if err := inputs.Delete(key); err != nil {
			return err
		}
		if inputs.Sequence() != seq {
			return nil
		}
		var end uint64
		if last, _ := inputs.Cursor().Last(); last != nil {
			end = binary.BigEndian.Uint64(last)
		}
		return inputs.SetSequence(end)
	})
}

// Append stores the records in one transaction of their own, as Store says.
func (s *Store) Append(records []journal.Record) error {
	return s.j.update("append", func(tx *bbolt.Tx) error { return s.j.append(tx, records) })
}

func (s *Store) Scan(from uint64, fn func(journal.Record) error) error { return s.j.Scan(from, fn) }

func (s *Store) PutSnapshot(r journal.Record) error { return s.j.PutSnapshot(r) }

func (s *Store) Snapshots(fn func(journal.Record) error) error { return s.j.Snapshots(fn) }

// Prune deletes as Store says; a journal pruned empty forgets its last seq
// (sequence 0), as a new one.
func (s *Store) Prune(snapshotsBefore, keepSnapshot, inputsBefore uint64) error {
	return s.j.Prune(snapshotsBefore, keepSnapshot, inputsBefore)
}

// Quarantine moves the record as Store says; moving the last one moves the
// journal's recorded end back to the record before it.
func (s *Store) Quarantine(seq uint64) error { return s.j.Quarantine(seq) }

// Close closes the bbolt file.
func (s *Store) Close() error { return s.file.db.Close() }

// Size returns the bytes the store's live records take: keys and values of
// the journal and the snapshots, without bbolt's free pages.
func (s *Store) Size() (journal, snapshots int64, err error) {
	err = s.file.guard(nil, "size", nil, func() error {
		return s.file.db.View(func(tx *bbolt.Tx) error {
			for _, p := range []struct {
				bucket []byte
				n      *int64
			}{{bucketInputs, &journal}, {bucketSnapshots, &snapshots}} {
				b, err := s.j.bucket(tx, p.bucket)
				if err != nil {
					return err
				}
				err = b.ForEach(func(k, v []byte) error {
					*p.n += int64(len(k) + len(v))
					return nil
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
	})
	return journal, snapshots, err
}

var _ journal.Store = (*Store)(nil)
