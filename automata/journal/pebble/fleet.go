package pebble

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/internal/backend"

	pdb "github.com/cockroachdb/pebble/v2"
)

// Fleet is the pebble Fleet: the journals of many agents in one pebble
// database, a directory. The Appends of many agents that arrive while a
// commit is in flight are committed together, in one pebble batch, synced:
// one write of the log and one fdatasync for all, as the bbolt fleet
// commits them in one transaction, with no log of the fleet's own to move.
// Each agent's records are checked on their own (consecutive, following its
// journal) before they join, so an Append refused fails alone.
//
// The keys: m<id> holds the agent's AgentInfo (as JSON); i, s and q, then
// the id's length (one byte) and the id, then the seq, hold its journal
// records, snapshots and quarantined records (the last with the time it was
// moved after the seq); e, the id's length and the id hold the seq of its
// journal's last record.
//
// Damage is confined to the agent it is found in where the database allows
// it: OpenFleet reads every agent's meta, and an agent's Open checks its
// journal's end as a Store's Open does. An agent whose meta does not decode
// strictly, whose journal does not end where its last Append left it, or
// which has records but no meta, is damaged alone: its Open is a
// *journal.CorruptError naming it, List lists the others and then reports
// it (when its meta is what is damaged), Delete removes it, and every other
// agent works as before. Damage pebble finds (a block whose checksum fails,
// a manifest that does not read) breaks the whole fleet, at the open or at
// the read that meets it.
type Fleet struct {
	db *db

	mu      sync.Mutex
	open    map[string]*fleetAgent // nil: being opened, or deleted
	damaged map[string]*journal.CorruptError
	closed  bool
	cmu     sync.Mutex // Create and Delete, one at a time

	appends, records atomic.Int64
}

// FleetStats counts what a Fleet's agents appended.
type FleetStats struct {
	// Commits is the pebble batches that appended inputs, each synced:
	// Appends/Commits agents' Appends shared a commit, on average.
	Commits int64
	// Appends is the Store.Append calls committed in them, of every agent.
	Appends int64
	// Records is the journal records those Appends held.
	Records int64
}

// OpenFleet opens (creating if needed) the fleet in directory dir. It fails
// at once with an error wrapping journal.ErrInUse if another OpenFleet has
// it open, in this process or another, and refuses a store's directory,
// saying so.
func OpenFleet(dir string) (*Fleet, error) {
	d, err := openDB(dir, layoutFleet, "OpenFleet", "Open")
	if err != nil {
		return nil, err
	}
	damaged, err := d.checkMetas()
	if err != nil {
		d.close()
		return nil, err
	}
	return &Fleet{db: d, open: map[string]*fleetAgent{}, damaged: damaged}, nil
}

func metaKey(id string) []byte { return append([]byte{kindMeta}, id...) }

func agentPrefix(id string) []byte { return append([]byte{byte(len(id))}, id...) }

// meta reads agent id's meta: found false when it has none.
func (f *Fleet) meta(id string) (info journal.AgentInfo, found bool, err error) {
	err = f.db.guard("info", nil, func() error {
		v, closer, err := f.db.p.Get(metaKey(id))
		if errors.Is(err, pdb.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		defer closer.Close()
		found = true
		if info, err = backend.DecodeAgentInfo(v); err != nil {
			return &journal.CorruptError{Err: fmt.Errorf("%s: agent %q: its meta (%d bytes) %v", f.db.dir, id, len(v), err)}
		}
		return nil
	})
	return info, found, err
}

// noMeta is the error of an id without meta: ErrNoAgent, unless journal
// records are left under it, which is damage (Delete removes them).
func (f *Fleet) noMeta(id string) error {
	j := pebbleJournal{db: f.db, id: id, prefix: agentPrefix(id)}
	switch found, err := j.hasRecords(); {
	case err != nil:
		return err
	case found:
		return &journal.CorruptError{Err: fmt.Errorf("%s: agent %q has journal records but no meta (its meta was lost; Delete removes the rest)", f.db.dir, id)}
	}
	return journal.ErrNoAgent
}

// Create adds agent id, with no records, and info, synced.
func (f *Fleet) Create(id string, info journal.AgentInfo) error {
	if err := journal.CheckAgentID(id); err != nil {
		return fmt.Errorf("journal: create agent in %s: %w", f.db.dir, err)
	}
	data, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("journal: create agent %q in %s: %w", id, f.db.dir, err)
	}
	f.cmu.Lock()
	defer f.cmu.Unlock()
	f.mu.Lock()
	closed, damaged := f.closed, f.damaged[id]
	f.mu.Unlock()
	switch {
	case closed:
		return fmt.Errorf("journal: create agent %q: the fleet %s is closed", id, f.db.dir)
	case damaged != nil:
		return damaged
	}
	_, found, err := f.meta(id)
	if err == nil && found {
		err = journal.ErrAgentExists
	}
	if err == nil {
		if err = f.noMeta(id); errors.Is(err, journal.ErrNoAgent) {
			err = nil
		}
	}
	if err == nil {
		err = f.db.guard("create", nil, func() error { return f.db.p.Set(metaKey(id), data, pdb.Sync) })
	}
	return f.agentError("create", id, err)
}

// agentError is err of op on agent id, as returned: a *CorruptError as it
// is, any other error wrapped with where it came from.
func (f *Fleet) agentError(op, id string, err error) error {
	var ce *journal.CorruptError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("journal: %s agent %q of %s: %w", op, id, f.db.dir, err)
}

// take marks id in use for op (open or delete), or says why it cannot be.
func (f *Fleet) take(id, op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch _, inUse := f.open[id]; {
	case f.closed:
		return fmt.Errorf("journal: %s agent %q: the fleet %s is closed", op, id, f.db.dir)
	case inUse:
		return fmt.Errorf("journal: %s agent %q of %s: %w: its Store is open (or it is being opened or deleted); an agent has one Machine at a time", op, id, f.db.dir, journal.ErrInUse)
	case f.damaged[id] != nil && op == "open":
		return f.damaged[id]
	}
	f.open[id] = nil
	return nil
}

// Open returns the Store of agent id. It fails with ErrInUse while the id's
// Store is open (or the id is being deleted), and with the *CorruptError of
// an agent found damaged.
func (f *Fleet) Open(id string) (journal.Store, error) {
	if err := journal.CheckAgentID(id); err != nil {
		return nil, fmt.Errorf("journal: open agent in %s: %w", f.db.dir, err)
	}
	if err := f.take(id, "open"); err != nil {
		return nil, err
	}
	a := &fleetAgent{pebbleJournal: pebbleJournal{db: f.db, id: id, prefix: agentPrefix(id)}, fleet: f}
	_, found, err := f.meta(id)
	if err == nil && !found {
		err = f.noMeta(id)
	}
	if err == nil {
		err = a.load()
	}
	var ce *journal.CorruptError
	if errors.As(err, &ce) {
		f.mu.Lock()
		f.damaged[id] = ce
		f.mu.Unlock()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		delete(f.open, id)
		return nil, f.agentError("open", id, err)
	}
	f.open[id] = a
	return a, nil
}

// Info returns what Create was given for id. An agent whose meta is damaged
// is a *CorruptError naming it.
func (f *Fleet) Info(id string) (journal.AgentInfo, error) {
	info, found, err := f.meta(id)
	if err == nil && !found {
		err = f.noMeta(id)
	}
	if err != nil {
		return journal.AgentInfo{}, f.agentError("info", id, err)
	}
	return info, nil
}

// listPage is how many agents List reads with one iterator: it calls its
// callback with none open, so that the callback may use the fleet, and
// holds no more than that many in memory.
const listPage = 256

// List calls fn with each agent whose id sorts after the given one, in order
// of id, as Fleet says. An agent whose meta does not read is passed over,
// and the walk goes on: once it ends, List returns the *CorruptError of the
// first one passed over, which says how many more there were; nil if there
// was none (or fn's own error). An agent whose journal alone is damaged is
// listed: its Open says what is wrong.
func (f *Fleet) List(after string, fn func(id string, info journal.AgentInfo) error) error {
	return backend.List(after, listPage, func(after string) ([]backend.ListEntry, error) {
		var page []backend.ListEntry
		err := f.db.guard("list", nil, func() error {
			it, err := f.db.p.NewIter(&pdb.IterOptions{LowerBound: metaKey(after), UpperBound: []byte{kindMeta + 1}})
			if err != nil {
				return err
			}
			for ok := it.First(); ok && len(page) < listPage; ok = it.Next() {
				e := backend.ListEntry{ID: string(it.Key()[1:])}
				if e.ID == after {
					continue
				}
				v, err := it.ValueAndErr()
				if err != nil {
					it.Close()
					return err
				}
				if err := journal.CheckAgentID(e.ID); err != nil {
					e.Err = &journal.CorruptError{Err: fmt.Errorf("%s: a meta key %q, which is no agent's id: %v", f.db.dir, e.ID, err)}
				} else if e.Info, err = backend.DecodeAgentInfo(v); err != nil {
					e.Err = &journal.CorruptError{Err: fmt.Errorf("%s: agent %q: its meta (%d bytes) %v", f.db.dir, e.ID, len(v), err)}
				}
				page = append(page, e)
			}
			return errors.Join(it.Error(), it.Close())
		})
		var ce *journal.CorruptError
		if err != nil && !errors.As(err, &ce) {
			err = fmt.Errorf("journal: list the agents of %s: %w", f.db.dir, err)
		}
		return page, err
	}, fn)
}

// Delete removes agent id, its journal and its meta, in one synced batch.
// An agent found damaged can be deleted, and so can what is left of one
// whose meta was lost.
func (f *Fleet) Delete(id string) error {
	if id == "" || len(id) > journal.MaxAgentIDLen {
		return fmt.Errorf("journal: delete agent %q of %s: %w", id, f.db.dir, journal.ErrNoAgent)
	}
	f.cmu.Lock()
	defer f.cmu.Unlock()
	if err := f.take(id, "delete"); err != nil {
		return err
	}
	_, found, err := f.meta(id)
	var ce *journal.CorruptError
	if errors.As(err, &ce) {
		found, err = true, nil // a damaged meta goes too
	}
	if err == nil && !found {
		err = f.noMeta(id)
		if errors.As(err, &ce) {
			found, err = true, nil // what is left of it goes
		}
	}
	if err == nil {
		err = f.db.guard("delete", nil, func() error {
			b := f.db.p.NewBatch()
			defer b.Close()
			if err := b.Delete(metaKey(id), nil); err != nil {
				return err
			}
			j := pebbleJournal{prefix: agentPrefix(id)}
			for _, kind := range []byte{kindInput, kindSnapshot, kindQuarantine} {
				lower, upper := j.bounds(kind)
				if err := b.DeleteRange(lower, upper, nil); err != nil {
					return err
				}
			}
			if err := b.Delete(j.endKey(), nil); err != nil {
				return err
			}
			return b.Commit(pdb.Sync)
		})
	}
	if err == nil {
		// Its keys are gone: so are its snapshots' files.
		j := pebbleJournal{db: f.db, id: id, prefix: agentPrefix(id)}
		err = os.RemoveAll(j.snapshotFolder())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.open, id)
	if err != nil {
		return f.agentError("delete", id, err)
	}
	delete(f.damaged, id)
	return nil
}

// Stats returns the counts of the fleet's Appends.
func (f *Fleet) Stats() FleetStats {
	return FleetStats{Commits: f.db.commits.Load(), Appends: f.appends.Load(), Records: f.records.Load()}
}

// Close closes the fleet's database. It fails, leaving the fleet open,
// while any agent's Store is open.
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
		return fmt.Errorf("journal: close %s: the Stores of %d agents are open (%q): close them first", f.db.dir, n, ids[:min(n, 5)])
	}
	f.closed = true
	f.mu.Unlock()
	return f.db.close()
}

var _ journal.Fleet = (*Fleet)(nil)

// fleetAgent is the Store of one agent of a Fleet.
type fleetAgent struct {
	pebbleJournal
	fleet *Fleet
}

// Append stores the records in one synced batch of the agent's, which
// pebble syncs together with the batches of the other agents committed at
// the same time.
func (a *fleetAgent) Append(records []journal.Record) error {
	err := a.pebbleJournal.Append(records)
	if err == nil && len(records) > 0 {
		a.fleet.appends.Add(1)
		a.fleet.records.Add(int64(len(records)))
	}
	return err
}

// Close releases the agent's Store; a second Close does nothing.
func (a *fleetAgent) Close() error {
	if a.closed.Swap(true) {
		return nil
	}
	// An Append of the agent's in flight finishes first: once Close
	// returns, nothing of the agent's is committed, and it can be deleted.
	a.mu.Lock()
	a.mu.Unlock()
	a.fleet.mu.Lock()
	if a.fleet.open[a.id] == a {
		delete(a.fleet.open, a.id)
	}
	a.fleet.mu.Unlock()
	return nil
}

var _ journal.Store = (*fleetAgent)(nil)
