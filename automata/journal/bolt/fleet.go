package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/internal/backend"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// A fleet's buckets at the root: its agents; for each of a journal's three
// buckets (inputs, snapshots, quarantine) a bucket holding each agent's
// under its id; and the log, where commits put the agents' records until
// they are moved to their agents' inputs.
var (
	bucketAgents        = []byte("agents") // by id: the agent's AgentInfo, as JSON
	fleetJournalBuckets = [3][]byte{[]byte("agent-inputs"), []byte("agent-snapshots"), []byte("agent-quarantine")}
	bucketLog           = []byte("log")
	fleetRootBuckets    = [][]byte{bucketAgents, fleetJournalBuckets[0], fleetJournalBuckets[1], fleetJournalBuckets[2], bucketLog}
)

// fleetBucket is the fleet's bucket that holds the agents' journal buckets
// of the given name.
func fleetBucket(name []byte) []byte {
	for i, n := range journalBucketNames {
		if bytes.Equal(n, name) {
			return fleetJournalBuckets[i]
		}
	}
	return nil
}

// Fleet is the embedded Fleet: the journals of many agents in one bbolt
// file. At its root, bucket agents holds each agent's AgentInfo, as JSON,
// under its id; buckets agent-inputs, agent-snapshots and agent-quarantine
// hold, under the agent's id, its journal's three buckets as a Store has
// them at its root; and bucket log holds records on their way to their
// agent's inputs.
//
// The Appends of all its agents share one group commit: an Append waits
// for the commit in flight, if any, and joins the next with every other
// agent's Append that arrived meanwhile, so the inputs of many agents are
// committed in one bbolt transaction, one fsync. Each agent's records are
// checked on their own inside it: an Append refused (a gap in its seqs)
// fails alone. PutSnapshot, Prune and Quarantine are transactions of their
// own, as in a Store, and so are Create and Delete.
//
// A commit puts an Append of fewer than 8 KiB of records in the log, one
// entry an Append (the agent's id, its records, a CRC-32C checksum), the
// entries packed in the order of commits: putting them in each agent's
// inputs would write two or three pages an agent (bbolt copies the path from
// each changed page up to the root), where the log's take a few pages for
// the whole commit. Once the log holds FleetOptions.LogBytes, its
// records are moved to their agents' inputs, many an agent, in one
// transaction; an agent's own are moved before its Prune and Quarantine,
// when the fleet opens (what a crash left) and when it closes. A Scan reads
// them where they are.
// A larger Append of an agent with nothing in the log goes to the agent's
// inputs at once.
//
// Damage is confined to the agent it is found in where the file allows it:
// see OpenFleet.
type Fleet struct {
	file *boltFile

	mu      sync.Mutex
	open    map[string]*boltAgent            // the ids in use: a Store open, or nil while one is opened or deleted
	damaged map[string]*journal.CorruptError // agents found damaged: at open, or by bbolt panicking on their pages
	closed  bool

	// The shared commit: Appends queue, the commit loop takes them all.
	qmu     sync.Mutex
	queue   []*fleetAppend
	qclosed bool
	// Appends queued and taken by the commit loop since the fleet opened,
	// for tests that arrange commits.
	enqueued, taken int64
	wake            chan struct{} // one token: the queue is not empty
	stop            chan struct{}
	stopped         chan struct{}

	// The agents' records in the log, by id.
	logBytes int64 // moved once the log holds that many bytes
	pmu      sync.Mutex
	pending  map[string]*pendingLog
	logged   int64 // bytes of the entries in the log

	commits, appends, records, moves atomic.Int64

	lasts map[string]uint64 // the commit loop's, for commitOnce: by agent id
	arena []byte
}

// pendingLog is what the log holds of one agent: its entries' numbers in
// order, and the seq of its last record.
type pendingLog struct {
	keys  []uint64
	bytes int64
	last  uint64
}

// FleetOptions are the operator's settings for OpenFleetWith;
// OpenFleet uses the zero value.
type FleetOptions struct {
	// AcceptRollback is Options.AcceptRollback, for the fleet's file: it
	// opens a fleet whose newer meta page may be the damaged one, one
	// transaction behind, losing that transaction's commits of every agent.
	AcceptRollback bool
	// LogBytes is how many bytes the fleet's log holds before its records
	// are moved to their agents' inputs (see Fleet); 0 means 16 MiB.
	LogBytes int64
}

// defaultFleetLogBytes is FleetOptions.LogBytes's default.
const defaultFleetLogBytes = 16 << 20

// FleetStats counts the shared commits of a fleet since it was opened.
type FleetStats struct {
	// Commits is the bbolt transactions that appended inputs: one commit,
	// and its fsyncs, each.
	Commits int64
	// Appends is the Store.Append calls committed in them, of every agent:
	// Appends/Commits agents' Appends shared a commit, on average.
	Appends int64
	// Records is the journal records those Appends held.
	Records int64
	// Moves is the transactions that moved records from the log to their
	// agents' inputs.
	Moves int64
}

// OpenFleet opens (creating if needed) the fleet file at path. It fails
// at once if another process has it open.
//
// The file is checked before bbolt maps it, as Open checks a store's,
// and a Store's file is refused with an error that says so (as Open
// refuses a fleet's). What the check finds is handled by where it lies:
//
//   - Damage that bbolt does not see, to one agent (its meta does not
//     decode as an AgentInfo, or is a bucket; a bucket of its journal holds
//     a key or a bucket the store never writes; its journal's end is cut
//     short), is that agent's alone: the fleet opens, and Open of that agent
//     returns the *CorruptError that names it (Info too, when the meta is
//     what is damaged). List passes over an agent whose meta is damaged,
//     lists the rest, and then returns the damage; it lists an agent whose
//     journal alone is damaged. Delete removes a damaged agent. Every other
//     agent opens as usual. So does an entry of the log that does not check
//     out, or whose records do not follow its agent's journal: it is found
//     as the log is moved (the whole log at open), stays in the log with
//     the agent's later entries, and makes the agent damaged, its Store
//     refusing every call if it is open. Two cases are found only when the agent is
//     opened: a journal bucket missing (Open returns it), and a meta lost
//     while the journal is left (Open, Info and Create of the id return it;
//     List, which reads the metas, does not see the agent).
//   - Damage to the pages (anything bbolt's own open would trip on: a page
//     header, a page reached twice, keys out of order), even in one agent's
//     pages, refuses the whole file with a *CorruptError that names the
//     agent whose pages hold it. bbolt's open walks every page of the file
//     on a goroutine of its own, where such damage would crash the process,
//     so no fleet holding it can be opened; the operator restores the file
//     or copies the other agents out (with bbolt's own tools).
//
// Once open, a fault on the map (the file changed or truncated under the
// process, a read error of the disk) breaks the whole fleet, as it breaks a
// Store; bbolt panicking on one agent's pages breaks that agent's Store
// only, and the others go on (the other appends of the commit it was in are
// committed again without it), except while the whole log is moved, when it
// breaks the fleet.
func OpenFleet(path string) (*Fleet, error) {
	return OpenFleetWith(path, FleetOptions{})
}

// OpenFleetWith is OpenFleet with options.
func OpenFleetWith(path string, opts FleetOptions) (*Fleet, error) {
	file, damaged, err := openBoltFile(path, boltFleetLayout, opts.AcceptRollback)
	if err != nil {
		return nil, err
	}
	if damaged == nil {
		damaged = map[string]*journal.CorruptError{}
	}
	f := &Fleet{
		file:     file,
		open:     map[string]*boltAgent{},
		damaged:  damaged,
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		stopped:  make(chan struct{}),
		logBytes: opts.LogBytes,
		pending:  map[string]*pendingLog{},
		lasts:    map[string]uint64{},
	}
	if f.logBytes <= 0 {
		f.logBytes = defaultFleetLogBytes
	}
	// What a crash left in the log goes to its agents now.
	if err := f.move(nil); err != nil {
		file.db.Close()
		return nil, err
	}
	go f.commitLoop()
	return f, nil
}

// encodeAgentMeta is an AgentInfo as the fleet stores it.
func encodeAgentMeta(info journal.AgentInfo) ([]byte, error) { return json.Marshal(info) }

// decodeAgentMeta reads the meta of agent id, strictly
// (backend.DecodeAgentInfo). Anything else is a *CorruptError naming the
// file (path), the agent and what is wrong.
func decodeAgentMeta(path, id string, data []byte) (journal.AgentInfo, error) {
	info, err := backend.DecodeAgentInfo(data)
	if err != nil {
		return journal.AgentInfo{}, &journal.CorruptError{Err: fmt.Errorf("%s: agent %q: its meta (%d bytes) %v", path, id, len(data), err)}
	}
	return info, nil
}

// agents returns the fleet's bucket agents in tx, which the open-time check
// found.
func (f *Fleet) agents(tx *bbolt.Tx) (*bbolt.Bucket, error) {
	if b := tx.Bucket(bucketAgents); b != nil {
		return b, nil
	}
	return nil, &journal.CorruptError{Err: fmt.Errorf("%s: bucket %s is missing", f.file.path, bucketAgents)}
}

// Create adds agent id with empty journal buckets and info, in one
// transaction.
func (f *Fleet) Create(id string, info journal.AgentInfo) error {
	if err := journal.CheckAgentID(id); err != nil {
		return fmt.Errorf("journal: create agent in %s: %w", f.file.path, err)
	}
	meta, err := encodeAgentMeta(info)
	if err != nil {
		return fmt.Errorf("journal: create agent %q in %s: %w", id, f.file.path, err)
	}
	err = f.file.guard(nil, "create", nil, func() error {
		return f.file.db.Update(func(tx *bbolt.Tx) error {
			agents, err := f.agents(tx)
			if err != nil {
				return err
			}
			if k, _ := agents.Cursor().Seek([]byte(id)); string(k) == id {
				return journal.ErrAgentExists
			}
			for _, name := range fleetJournalBuckets {
				all := tx.Bucket(name)
				if all == nil {
					return &journal.CorruptError{Err: fmt.Errorf("%s: bucket %s is missing", f.file.path, name)}
				}
				_, err := all.CreateBucket([]byte(id))
				if errors.Is(err, berrors.ErrBucketExists) {
					return f.orphan(id)
				}
				if err != nil {
					return err
				}
			}
			return agents.Put([]byte(id), meta)
		})
	})
	if err != nil && !isCorrupt(err) {
		return fmt.Errorf("journal: create agent %q in %s: %w", id, f.file.path, err)
	}
	return err
}

func isCorrupt(err error) bool {
	var ce *journal.CorruptError
	return errors.As(err, &ce)
}

// Open returns the Store of agent id. It fails with ErrInUse while the id's
// Store is open (or the id is being deleted), and with the *CorruptError of
// an agent found damaged.
func (f *Fleet) Open(id string) (journal.Store, error) {
	if err := journal.CheckAgentID(id); err != nil {
		return nil, fmt.Errorf("journal: open agent in %s: %w", f.file.path, err)
	}
	if err := f.take(id, "open"); err != nil {
		return nil, err
	}
	a := &boltAgent{boltJournal: boltJournal{file: f.file, scope: &boltScope{id: id}, key: []byte(id)}, fleet: f}
	err := f.file.guard(nil, "open agent", nil, func() error {
		return f.file.db.View(func(tx *bbolt.Tx) error {
			if _, err := f.info(tx, id); err != nil {
				return err
			}
			for _, name := range journalBucketNames {
				if _, err := a.bucket(tx, name); err != nil {
					return err
				}
			}
			return nil
		})
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil && f.damaged[id] != nil {
		// Found damaged (its log entry, by a move of the whole log)
		// while it was being opened: take saw it whole.
		err = f.damaged[id]
	}
	if err != nil {
		delete(f.open, id)
		return nil, f.agentError("open", id, err)
	}
	f.open[id] = a
	return a, nil
}

// take marks id in use for op (open or delete), or says why it cannot be.
func (f *Fleet) take(id, op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch _, inUse := f.open[id]; {
	case f.closed:
		return fmt.Errorf("journal: %s agent %q: the fleet %s is closed", op, id, f.file.path)
	case inUse:
		return fmt.Errorf("journal: %s agent %q of %s: %w: its Store is open (or it is being opened or deleted); an agent has one Machine at a time", op, id, f.file.path, journal.ErrInUse)
	case f.damaged[id] != nil && op == "open":
		return f.damaged[id]
	}
	f.open[id] = nil
	return nil
}

// agentError is err of op on agent id, as returned: a *CorruptError as it
// is, any other error wrapped with where it came from.
func (f *Fleet) agentError(op, id string, err error) error {
	if isCorrupt(err) {
		return err
	}
	return fmt.Errorf("journal: %s agent %q of %s: %w", op, id, f.file.path, err)
}

// info reads agent id's meta in tx. An id without meta is no agent's,
// unless a journal bucket is left under it: that is damage.
func (f *Fleet) info(tx *bbolt.Tx, id string) (journal.AgentInfo, error) {
	agents, err := f.agents(tx)
	if err != nil {
		return journal.AgentInfo{}, err
	}
	meta := agents.Get([]byte(id))
	switch {
	case meta != nil:
		return decodeAgentMeta(f.file.path, id, meta)
	case agents.Bucket([]byte(id)) != nil:
		return journal.AgentInfo{}, &journal.CorruptError{Err: fmt.Errorf("%s: agent %q: bucket agents holds a bucket under its id, not its meta", f.file.path, id)}
	}
	for _, name := range fleetJournalBuckets {
		if all := tx.Bucket(name); all != nil && all.Bucket([]byte(id)) != nil {
			return journal.AgentInfo{}, f.orphan(id)
		}
	}
	return journal.AgentInfo{}, journal.ErrNoAgent
}

// orphan is the damage of an id that has journal buckets but no meta: Delete
// removes them.
func (f *Fleet) orphan(id string) error {
	return &journal.CorruptError{Err: fmt.Errorf("%s: agent %q has journal buckets but no meta in bucket agents (its meta was lost; Delete removes the rest)", f.file.path, id)}
}

// Info returns what Create was given for id. An agent whose meta is damaged
// is a *CorruptError naming it.
func (f *Fleet) Info(id string) (journal.AgentInfo, error) {
	var info journal.AgentInfo
	err := f.file.guard(nil, "info", nil, func() error {
		return f.file.db.View(func(tx *bbolt.Tx) (err error) {
			info, err = f.info(tx, id)
			return err
		})
	})
	if err != nil {
		return journal.AgentInfo{}, f.agentError("info", id, err)
	}
	return info, nil
}

// fleetListPage is how many agents List reads in one transaction: it calls
// its callback outside any, so that the callback may use the fleet, and
// holds no more than that many in memory.
const fleetListPage = 256

// List calls fn with each agent whose id sorts after the given one, in order
// of id, as Fleet says. An agent whose meta does not read (see
// OpenFleet) is passed over, and the walk goes on: once it ends, List
// returns the *CorruptError of the first one passed over, which says how
// many more there were; nil if there was none (or fn's own error). An agent
// whose journal alone is damaged is listed: its Open says what is wrong.
func (f *Fleet) List(after string, fn func(id string, info journal.AgentInfo) error) error {
	return backend.List(after, fleetListPage, func(after string) ([]backend.ListEntry, error) {
		var page []backend.ListEntry
		err := f.file.guard(nil, "list", nil, func() error {
			return f.file.db.View(func(tx *bbolt.Tx) error {
				agents, err := f.agents(tx)
				if err != nil {
					return err
				}
				c := agents.Cursor()
				k, v := c.Seek([]byte(after))
				if k != nil && string(k) == after {
					k, v = c.Next()
				}
				for ; k != nil && len(page) < fleetListPage; k, v = c.Next() {
					e := backend.ListEntry{ID: string(k)}
					switch err := journal.CheckAgentID(e.ID); {
					case err != nil:
						e.Err = &journal.CorruptError{Err: fmt.Errorf("%s: bucket agents holds the key %q, which is no agent's id: %v", f.file.path, e.ID, err)}
					case v == nil:
						e.Err = &journal.CorruptError{Err: fmt.Errorf("%s: agent %q: bucket agents holds a bucket under its id, not its meta", f.file.path, e.ID)}
					default:
						e.Info, e.Err = decodeAgentMeta(f.file.path, e.ID, v)
					}
					page = append(page, e)
				}
				return nil
			})
		})
		if err != nil && !isCorrupt(err) {
			err = fmt.Errorf("journal: list the agents of %s: %w", f.file.path, err)
		}
		return page, err
	}, fn)
}

// Delete removes agent id, its journal and its meta, in one transaction. An
// agent found damaged (see OpenFleet) can be deleted, and so can what is
// left of one whose meta was lost.
func (f *Fleet) Delete(id string) error {
	if id == "" {
		return fmt.Errorf("journal: delete agent %q of %s: %w", id, f.file.path, journal.ErrNoAgent)
	}
	if err := f.take(id, "delete"); err != nil {
		return err
	}
	err := f.file.guard(nil, "delete", nil, func() error {
		return f.file.db.Update(func(tx *bbolt.Tx) error {
			agents, err := f.agents(tx)
			if err != nil {
				return err
			}
			found := agents.Get([]byte(id)) != nil || agents.Bucket([]byte(id)) != nil
			// Damage may have left a bucket where a value should be, or
			// the reverse: whatever is under id goes.
			remove := func(b *bbolt.Bucket, plain bool) error {
				del, other := b.Delete, b.DeleteBucket
				if !plain {
					del, other = b.DeleteBucket, b.Delete
				}
				err := del([]byte(id))
				if errors.Is(err, berrors.ErrIncompatibleValue) {
					err = other([]byte(id))
				}
				return err
			}
			if err := remove(agents, true); err != nil {
				return err
			}
			for _, name := range fleetJournalBuckets {
				all := tx.Bucket(name)
				if all == nil {
					continue
				}
				switch err := remove(all, false); {
				case err == nil:
					found = true
				case !errors.Is(err, berrors.ErrBucketNotFound):
					return err
				}
			}
			if err := f.dropLog(tx, id); err != nil {
				return err
			}
			if !found {
				return journal.ErrNoAgent
			}
			return nil
		})
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.open, id)
	if err != nil {
		return f.agentError("delete", id, err)
	}
	delete(f.damaged, id)
	f.pmu.Lock()
	if p := f.pending[id]; p != nil {
		f.logged -= p.bytes
		delete(f.pending, id)
	}
	f.pmu.Unlock()
	return nil
}

// dropLog deletes the log's entries of agent id in tx.
func (f *Fleet) dropLog(tx *bbolt.Tx, id string) error {
	log := tx.Bucket(bucketLog)
	if log == nil {
		return &journal.CorruptError{Err: fmt.Errorf("%s: bucket %s is missing", f.file.path, bucketLog)}
	}
	var keys [][]byte
	c := log.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) > 8 && string(k[8:]) == id {
			keys = append(keys, bytes.Clone(k))
		}
	}
	for _, k := range keys {
		if err := log.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Stats returns the counts of the fleet's shared commits.
func (f *Fleet) Stats() FleetStats {
	return FleetStats{Commits: f.commits.Load(), Appends: f.appends.Load(), Records: f.records.Load(), Moves: f.moves.Load()}
}

// Close moves what the log holds to its agents, and closes the fleet's
// file. It fails, leaving the fleet open, while any agent's Store is open.
func (f *Fleet) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	if n := len(f.open); n > 0 {
		ids := make([]string, 0, n)
		for id := range f.open {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		f.mu.Unlock()
		return fmt.Errorf("journal: close %s: the Stores of %d agents are open (%q): close them first", f.file.path, n, ids[:min(n, 5)])
	}
	f.closed = true
	f.mu.Unlock()
	f.qmu.Lock()
	f.qclosed = true
	f.qmu.Unlock()
	close(f.stop)
	<-f.stopped
	return errors.Join(f.move(nil), f.file.db.Close())
}

var _ journal.Fleet = (*Fleet)(nil)

// boltAgent is the Store of one agent of a Fleet: the journal in its
// bucket, appended to through the shared commit.
type boltAgent struct {
	boltJournal
	fleet *Fleet
}

// Append joins the fleet's next commit (see Fleet).
func (a *boltAgent) Append(records []journal.Record) error {
	if err := a.file.usable(a.scope); err != nil {
		return err
	}
	if len(records) == 0 {
		return nil
	}
	return a.fleet.append(a, records)
}

// Scan moves the agent's records in the log to its inputs first.
func (a *boltAgent) Scan(from uint64, fn func(journal.Record) error) error {
	f := a.fleet
	f.pmu.Lock()
	var keys []uint64 // the numbers of a's entries in the log
	if p := f.pending[a.scope.id]; p != nil {
		keys = slices.Clone(p.keys)
	}
	f.pmu.Unlock()
	if len(keys) == 0 {
		return a.boltJournal.Scan(from, fn)
	}
	// Read them where they are, after the agent's inputs: a read moves
	// nothing (a move is a commit, with its fsync). An entry moved since
	// keys were taken is among the inputs now, in this transaction, and
	// absent from the log: the records come in order either way, as the
	// log holds an agent's latest records, in order of their numbers.
	var inFn bool
	err := a.file.guard(a.scope, "scan", &inFn, func() error {
		return a.file.db.View(func(tx *bbolt.Tx) error {
			first := func(c *bbolt.Cursor) ([]byte, []byte) { return c.Seek(seqKey(from)) }
			if err := a.walkTx(tx, bucketInputs, first, (*bbolt.Cursor).Next, fn, &inFn); err != nil {
				return err
			}
			log := tx.Bucket(bucketLog)
			if log == nil {
				return &journal.CorruptError{Err: fmt.Errorf("%s: bucket %s is missing", f.file.path, bucketLog)}
			}
			key := make([]byte, 8+len(a.scope.id))
			copy(key[8:], a.scope.id)
			for _, num := range keys {
				binary.BigEndian.PutUint64(key, num)
				v := log.Get(key)
				if v == nil {
					continue // moved to the inputs, walked above
				}
				_, records, err := decodeLogEntry(f.file.path, key, v)
				if err != nil {
					return err
				}
				for _, r := range records {
					if r.Seq < from {
						continue
					}
					inFn = true
					err := fn(r)
					inFn = false
					if err != nil {
						return err
					}
				}
			}
			return nil
		})
	})
	if errors.Is(err, journal.ErrStop) {
		return nil
	}
	return err
}

// Prune moves the agent's records in the log to its inputs first.
func (a *boltAgent) Prune(snapshotsBefore, keepSnapshot, inputsBefore uint64) error {
	if err := a.fleet.move(a); err != nil {
		return err
	}
	return a.boltJournal.Prune(snapshotsBefore, keepSnapshot, inputsBefore)
}

// Quarantine moves the agent's records in the log to its inputs first.
func (a *boltAgent) Quarantine(seq uint64) error {
	if err := a.fleet.move(a); err != nil {
		return err
	}
	return a.boltJournal.Quarantine(seq)
}

// Close releases the agent's id; a Store broken by bbolt's panic leaves the
// agent marked damaged.
func (a *boltAgent) Close() error {
	if !a.scope.closed.CompareAndSwap(false, true) {
		return nil
	}
	f := a.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.open, a.scope.id)
	if ce := a.scope.broken.Load(); ce != nil {
		f.damaged[a.scope.id] = ce
	}
	return nil
}

// fleetAppend is one Append waiting for the shared commit.
type fleetAppend struct {
	agent    *boltAgent
	records  []journal.Record
	err      error
	done     chan struct{} // one token: err is set
	logKey   uint64        // its entry in the log, once committed; 0: none, the records went to the agent's inputs
	logBytes int64
}

var fleetAppends = sync.Pool{New: func() any { return &fleetAppend{done: make(chan struct{}, 1)} }}

// append queues the records of a for the next commit, and waits for it.
func (f *Fleet) append(a *boltAgent, records []journal.Record) error {
	req := fleetAppends.Get().(*fleetAppend)
	req.agent, req.records = a, records
	f.qmu.Lock()
	if f.qclosed {
		f.qmu.Unlock()
		return fmt.Errorf("journal: append to agent %q: the fleet %s is closed", a.scope.id, f.file.path)
	}
	f.queue = append(f.queue, req)
	f.enqueued++
	f.qmu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default: // the loop is woken already
	}
	<-req.done
	err := req.err
	*req = fleetAppend{done: req.done}
	fleetAppends.Put(req)
	return err
}

// gather lets the goroutines that are ready to run go first, while they
// add to the queue, so that their Appends join this commit rather than
// wait for the next: at most maxGather turns of the scheduler, fewer once a
// turn adds nothing.
func (f *Fleet) gather() {
	f.qmu.Lock()
	n := len(f.queue)
	f.qmu.Unlock()
	for range maxGather {
		runtime.Gosched()
		f.qmu.Lock()
		m := len(f.queue)
		f.qmu.Unlock()
		if m == n {
			return
		}
		n = m
	}
}

const maxGather = 8

// maxKeptArena bounds the buffer of log entries the commit loop keeps from
// one commit to the next.
const maxKeptArena = 4 << 20

// commitLoop commits whatever the queue holds, all of it at once, whenever
// it is not empty: the appends that arrive while a commit is in flight make
// the next one, with no delay added. It ends, the queue drained, when the
// fleet closes.
func (f *Fleet) commitLoop() {
	defer close(f.stopped)
	var batch []*fleetAppend
	for {
		stopping := false
		select {
		case <-f.wake:
		case <-f.stop:
			stopping = true
		}
		f.gather()
		f.qmu.Lock()
		batch, f.queue = f.queue, batch[:0]
		f.taken += int64(len(batch))
		f.qmu.Unlock()
		f.commit(batch)
		clear(batch)
		f.pmu.Lock()
		full := f.logged >= f.logBytes
		f.pmu.Unlock()
		if full {
			// Its error is the file's (a damaged agent is only marked),
			// and the next commit meets it too.
			f.move(nil)
		}
		if stopping {
			return
		}
	}
}

// commit commits the appends of batch in one bbolt transaction, and tells
// each its outcome. When bbolt panics on one agent's pages, that agent's
// Append fails with the *CorruptError and the others are committed again,
// in a new transaction; a fault on the map, or a failed commit, fails them
// all.
func (f *Fleet) commit(batch []*fleetAppend) {
	for len(batch) > 0 {
		bad, err := f.commitOnce(batch)
		if bad < 0 {
			for _, a := range batch {
				if err != nil && a.err == nil {
					a.err = err
				}
				a.done <- struct{}{}
			}
			return
		}
		batch[bad].err = err
		batch[bad].done <- struct{}{}
		batch = append(batch[:bad:bad], batch[bad+1:]...)
		for _, a := range batch {
			a.err = nil
		}
	}
}

// commitOnce runs the transaction of commit. Each agent's append is checked
// on its own inside it, and one refused (a.err) leaves the transaction as it
// was. bad is the index of the append on whose agent's pages bbolt
// panicked, or -1; err is that panic's, or the transaction's.
func (f *Fleet) commitOnce(batch []*fleetAppend) (bad int, err error) {
	cur := -1
	if err := f.file.usable(nil); err != nil {
		return -1, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			var scope *boltScope
			if cur >= 0 {
				scope = batch[cur].agent.scope
			}
			bad, err = cur, f.file.broke(scope, "append", v)
			if f.file.broken.Load() != nil {
				bad = -1
			}
		}
	}()
	var appends, records int
	// The last seq each agent's earlier appends in this transaction put;
	// the entries, which bbolt holds until the commit. Both are the commit
	// loop's, used again by each commit.
	lasts, arena := f.lasts, f.arena[:0]
	clear(lasts)
	defer func() {
		if cap(arena) > maxKeptArena {
			arena = nil // one huge commit pins no memory for the fleet's life
		}
		f.arena = arena[:0]
	}()
	err = f.file.db.Update(func(tx *bbolt.Tx) error {
		log := tx.Bucket(bucketLog)
		if log == nil {
			return &journal.CorruptError{Err: fmt.Errorf("%s: bucket %s is missing", f.file.path, bucketLog)}
		}
		log.FillPercent = 1 // keys only ever grow: pack pages full
		for i, a := range batch {
			cur, a.logKey = i, 0
			if a.err = a.agent.file.usable(a.agent.scope); a.err != nil {
				continue
			}
			// By id, not by Store: two Stores of one id (one closed
			// while its Append was in flight) append to one journal.
			last, earlier := lasts[a.agent.scope.id]
			ok := earlier
			if !earlier {
				if last, ok, a.err = f.lastSeq(tx, a.agent); a.err != nil {
					continue
				}
			}
			if a.err = checkAppend(last, ok, a.records); a.err != nil {
				continue
			}
			lasts[a.agent.scope.id] = a.records[len(a.records)-1].Seq
			appends++
			records += len(a.records)
			if !earlier && f.direct(a) {
				inputs, err := a.agent.bucket(tx, bucketInputs)
				if err == nil {
					err = putRecords(inputs, a.records)
				}
				if err != nil {
					return err
				}
				continue
			}
			num, err := log.NextSequence()
			if err != nil {
				return err
			}
			start := len(arena)
			arena = appendLogEntry(arena, num, a.agent.scope.id, a.records)
			entry := arena[start:len(arena):len(arena)]
			if err := log.Put(entry[:8+len(a.agent.scope.id)], entry[8+len(a.agent.scope.id):]); err != nil {
				return err
			}
			a.logKey, a.logBytes = num, int64(len(entry))
		}
		cur = -1
		return nil
	})
	if err != nil {
		return -1, err
	}
	f.commits.Add(1)
	f.appends.Add(int64(appends))
	f.records.Add(int64(records))
	f.pmu.Lock()
	defer f.pmu.Unlock()
	for _, a := range batch {
		if a.err != nil || a.logKey == 0 {
			continue
		}
		p := f.pending[a.agent.scope.id]
		if p == nil {
			p = &pendingLog{}
			f.pending[a.agent.scope.id] = p
		}
		p.keys = append(p.keys, a.logKey)
		p.bytes += a.logBytes
		p.last = a.records[len(a.records)-1].Seq
		f.logged += a.logBytes
	}
	return -1, err
}

// fleetDirectBytes is the size from which an Append's records go straight
// to its agent's inputs rather than through the log: the pages bbolt
// copies to put them there (two or three) are then a small part of what
// the records fill, and writing them to the log first would write them
// twice.
const fleetDirectBytes = 8 << 10

// direct says whether a's records go straight to its agent's inputs: when
// they are fleetDirectBytes or more, and none of the agent's records wait
// in the log (which must be moved first, to keep the journal's order). The
// caller has checked that no earlier append of the agent is in the same
// transaction.
func (f *Fleet) direct(a *fleetAppend) bool {
	n := 0
	for _, r := range a.records {
		if n += len(r.Data); n >= fleetDirectBytes {
			break
		}
	}
	if n < fleetDirectBytes {
		return false
	}
	f.pmu.Lock()
	defer f.pmu.Unlock()
	return f.pending[a.agent.scope.id] == nil
}

// lastSeq returns the seq of the last record of agent a, in the log or in
// its inputs, if it has one.
func (f *Fleet) lastSeq(tx *bbolt.Tx, a *boltAgent) (uint64, bool, error) {
	f.pmu.Lock()
	p := f.pending[a.scope.id]
	f.pmu.Unlock()
	if p != nil {
		return p.last, true, nil
	}
	b, err := a.bucket(tx, bucketInputs)
	if err != nil {
		return 0, false, err
	}
	last, ok := lastSeq(b)
	return last, ok, nil
}

// A log entry is one Append of one agent. Its key is the entry's number (8
// bytes, big-endian: the log's sequence) and the agent's id; its value is a
// CRC-32C (Castagnoli) checksum of the key and of the rest of the value, then
// the number of records (uvarint), then each record: its seq (8 bytes,
// big-endian), the length of its data (uvarint) and the data.

// castagnoli is the CRC-32C table of the log entries' checksums, as the
// journal's frames use.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendLogEntry appends the key of entry num of agent id, then its value,
// to dst.
func appendLogEntry(dst []byte, num uint64, id string, records []journal.Record) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, num)
	dst = append(dst, id...)
	sumAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.AppendUvarint(dst, uint64(len(records)))
	for _, r := range records {
		dst = binary.BigEndian.AppendUint64(dst, r.Seq)
		dst = binary.AppendUvarint(dst, uint64(len(r.Data)))
		dst = append(dst, r.Data...)
	}
	sum := crc32.Update(crc32.Checksum(dst[start:sumAt], castagnoli), castagnoli, dst[sumAt+4:])
	binary.BigEndian.PutUint32(dst[sumAt:], sum)
	return dst
}

// decodeLogEntry reads the log entry of key and value, its records' data
// copied. Damage is a *CorruptError naming the file (path), the entry and,
// as far as the key tells it, the agent.
func decodeLogEntry(path string, key, value []byte) (id string, records []journal.Record, err error) {
	if len(key) <= 8 {
		return "", nil, &journal.CorruptError{Err: fmt.Errorf("%s: bucket log holds a key of %d bytes (%x), expected an entry's number and an agent's id", path, len(key), key)}
	}
	id = string(key[8:])
	fail := func(format string, args ...any) (string, []journal.Record, error) {
		return id, nil, &journal.CorruptError{Err: fmt.Errorf("%s: agent %q: log entry %d: %s", path, id, binary.BigEndian.Uint64(key), fmt.Sprintf(format, args...))}
	}
	if len(value) < 4 {
		return fail("%d bytes, shorter than its checksum", len(value))
	}
	want := binary.BigEndian.Uint32(value)
	if got := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, value[4:]); got != want {
		return fail("checksum mismatch (%#08x, expected %#08x)", got, want)
	}
	rest := value[4:]
	n, size := binary.Uvarint(rest)
	if size <= 0 || n == 0 || n > uint64(len(rest)) {
		return fail("a bad count of records")
	}
	rest = rest[size:]
	records = make([]journal.Record, 0, n)
	for range n {
		if len(rest) < 8 {
			return fail("it ends inside record %d of %d", len(records)+1, n)
		}
		seq := binary.BigEndian.Uint64(rest)
		l, size := binary.Uvarint(rest[8:])
		if size <= 0 || l > uint64(len(rest)-8-size) {
			return fail("record %d of %d (seq %d) has a bad length", len(records)+1, n, seq)
		}
		data := rest[8+size : 8+size+int(l)]
		records = append(records, journal.Record{Seq: seq, Data: bytes.Clone(data)})
		rest = rest[8+size+int(l):]
	}
	if len(rest) != 0 {
		return fail("%d bytes after its %d records", len(rest), n)
	}
	return id, records, nil
}

// errNothingMoved rolls back a move that found nothing to move.
var errNothingMoved = errors.New("nothing moved")

// move moves records from the log to their agents' inputs, in one
// transaction: agent a's, or every agent's when a is nil. An entry that is
// damaged, or whose records do not follow its agent's journal, marks its
// agent damaged (its Store, if open, refuses every call; Open refuses it),
// and stays in the log with the agent's later entries; Delete removes them.
func (f *Fleet) move(a *boltAgent) error {
	var (
		scope *boltScope
		keys  []uint64 // a's entries; nil: the whole log
	)
	f.pmu.Lock()
	if a != nil {
		scope = a.scope
		p := f.pending[a.scope.id]
		if p == nil {
			f.pmu.Unlock()
			return nil
		}
		keys = slices.Clone(p.keys)
	}
	f.pmu.Unlock()
	type moved struct {
		upTo  uint64 // the number of the agent's last entry moved, or left
		bytes int64
	}
	var (
		done     map[string]*moved
		damaged  map[string]*journal.CorruptError
		movedAny bool
	)
	err := f.file.guard(scope, "move", nil, func() error {
		return f.file.db.Update(func(tx *bbolt.Tx) error {
			done, damaged = map[string]*moved{}, map[string]*journal.CorruptError{}
			log := tx.Bucket(bucketLog)
			inputs := tx.Bucket(fleetJournalBuckets[0])
			if log == nil || inputs == nil {
				return &journal.CorruptError{Err: fmt.Errorf("%s: bucket %s or %s is missing", f.file.path, bucketLog, fleetJournalBuckets[0])}
			}
			var drop [][]byte
			entry := func(k, v []byte) error {
				id, records, err := decodeLogEntry(f.file.path, k, v)
				m := done[id]
				if m == nil {
					m = &moved{}
					done[id] = m
				}
				if m.bytes += int64(len(k) + len(v)); len(k) >= 8 {
					m.upTo = binary.BigEndian.Uint64(k)
				}
				f.mu.Lock()
				if damaged[id] == nil && f.damaged[id] != nil {
					damaged[id] = f.damaged[id]
				}
				f.mu.Unlock()
				if damaged[id] != nil {
					return nil // it stays, after its agent's damage
				}
				var home *bbolt.Bucket
				if err == nil {
					if home = inputs.Bucket([]byte(id)); home == nil {
						err = &journal.CorruptError{Err: fmt.Errorf("%s: agent %q: log entry %d: the agent has no bucket inputs", f.file.path, id, m.upTo)}
					}
				}
				if err == nil {
					last, ok := lastSeq(home)
					if err = checkAppend(last, ok, records); err != nil {
						err = &journal.CorruptError{Err: fmt.Errorf("%s: agent %q: log entry %d does not follow the agent's journal: %w", f.file.path, id, m.upTo, err)}
					}
				}
				if err == nil {
					err = putRecords(home, records)
					drop = append(drop, bytes.Clone(k))
				}
				var ce *journal.CorruptError
				if errors.As(err, &ce) {
					damaged[id] = ce
					return nil
				}
				return err
			}
			if keys == nil {
				c := log.Cursor()
				for k, v := c.First(); k != nil; k, v = c.Next() {
					if err := entry(k, v); err != nil {
						return err
					}
				}
			} else {
				for _, num := range keys {
					k := binary.BigEndian.AppendUint64(nil, num)
					k = append(k, a.scope.id...)
					v := log.Get(k)
					if v == nil {
						continue // moved with the whole log meanwhile
					}
					if err := entry(k, v); err != nil {
						return err
					}
				}
			}
			if movedAny = len(drop) > 0; !movedAny {
				return errNothingMoved // no commit, no write
			}
			for _, k := range drop {
				if err := log.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if errors.Is(err, errNothingMoved) {
		err = nil
	}
	if err != nil {
		if a != nil {
			return f.agentError("move the log of", a.scope.id, err)
		}
		return fmt.Errorf("journal: move the log of %s: %w", f.file.path, err)
	}
	if movedAny {
		f.moves.Add(1)
	}
	// The damaged are marked before their pending entries go, so that no
	// Store of theirs is taken for whole in between.
	if len(damaged) > 0 {
		f.mu.Lock()
		for id, ce := range damaged {
			f.damaged[id] = ce
			if open := f.open[id]; open != nil {
				open.scope.broken.CompareAndSwap(nil, ce)
			}
		}
		f.mu.Unlock()
	}
	f.pmu.Lock()
	for id, m := range done {
		p := f.pending[id]
		if p == nil {
			continue
		}
		n := 0
		for n < len(p.keys) && p.keys[n] <= m.upTo {
			n++
		}
		p.keys = p.keys[n:]
		p.bytes -= m.bytes
		f.logged -= m.bytes
		if len(p.keys) == 0 || damaged[id] != nil {
			f.logged -= p.bytes
			delete(f.pending, id)
		}
	}
	f.pmu.Unlock()
	if a != nil && damaged[a.scope.id] != nil {
		return damaged[a.scope.id]
	}
	return nil
}
