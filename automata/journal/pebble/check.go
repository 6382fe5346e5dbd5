package pebble

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/internal/backend"

	pdb "github.com/cockroachdb/pebble/v2"
)

// load reads the journal's recorded end, which every Append writes beside
// its records, and the seq of its last record, and checks that they agree:
// a journal whose records end before its recorded end was cut short, and
// one with records past it, or records but no end, was written by
// something else. It costs two reads, whatever the journal's length.
func (j *pebbleJournal) load() error {
	var (
		end, last       uint64
		hasEnd, hasLast bool
	)
	err := j.db.guard("open", nil, func() error {
		v, closer, err := j.db.p.Get(j.endKey())
		switch {
		case errors.Is(err, pdb.ErrNotFound):
		case err != nil:
			return err
		default:
			n := len(v)
			if n == 8 {
				end, hasEnd = binary.BigEndian.Uint64(v), true
			}
			closer.Close()
			if n != 8 {
				return &journal.CorruptError{Err: fmt.Errorf("%s: the recorded end holds %d bytes, expected 8", j.where(), n)}
			}
		}
		lower, upper := j.bounds(kindInput)
		it, err := j.db.p.NewIter(&pdb.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			return err
		}
		if it.Last() {
			k := it.Key()
			if len(k) != len(lower)+8 {
				it.Close()
				return &journal.CorruptError{Err: fmt.Errorf("%s: an input key of %d bytes (%x), expected %d", j.where(), len(k), k, len(lower)+8)}
			}
			last, hasLast = binary.BigEndian.Uint64(k[len(lower):]), true
		}
		return errors.Join(it.Error(), it.Close())
	})
	if err != nil {
		return j.wrap("open", err)
	}
	fail := func(format string, args ...any) error {
		return &journal.CorruptError{Err: fmt.Errorf("%s: "+format, append([]any{j.where()}, args...)...)}
	}
	switch {
	case hasLast && !hasEnd:
		return fail("the journal has records up to %d but no recorded end", last)
	case hasEnd && (!hasLast || last < end):
		at := "none"
		if hasLast {
			at = fmt.Sprint(last)
		}
		return fail("the journal is cut short: its last append ended at %d, its last record is %s", end, at)
	case hasEnd && last > end:
		return fail("the journal has records past its recorded end %d, up to %d", end, last)
	}
	j.last, j.hasLast = end, hasEnd
	return nil
}

// hasRecords says whether the journal has any key of its own: records,
// snapshots, quarantined records or an end.
func (j *pebbleJournal) hasRecords() (bool, error) {
	found := false
	err := j.db.guard("open", nil, func() error {
		for _, kind := range []byte{kindInput, kindSnapshot, kindQuarantine} {
			lower, upper := j.bounds(kind)
			it, err := j.db.p.NewIter(&pdb.IterOptions{LowerBound: lower, UpperBound: upper})
			if err != nil {
				return err
			}
			found = found || it.First()
			if err := errors.Join(it.Error(), it.Close()); err != nil || found {
				return err
			}
		}
		_, closer, err := j.db.p.Get(j.endKey())
		if err == nil {
			found = true
			return closer.Close()
		}
		if errors.Is(err, pdb.ErrNotFound) {
			return nil
		}
		return err
	})
	return found, err
}

// checkMetas reads every agent's meta, as OpenFleet says: a meta that does
// not decode strictly damages its agent alone, a meta key that is no
// agent's id the fleet.
func (d *db) checkMetas() (map[string]*journal.CorruptError, error) {
	damaged := map[string]*journal.CorruptError{}
	err := d.guard("open", nil, func() error {
		it, err := d.p.NewIter(&pdb.IterOptions{LowerBound: []byte{kindMeta}, UpperBound: []byte{kindMeta + 1}})
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			id := string(it.Key()[1:])
			if err := journal.CheckAgentID(id); err != nil {
				return &journal.CorruptError{Err: fmt.Errorf("%s: a meta key %q, which is no agent's id: %v", d.dir, id, err)}
			}
			v, err := it.ValueAndErr()
			if err != nil {
				return err
			}
			if _, err := backend.DecodeAgentInfo(v); err != nil {
				damaged[id] = &journal.CorruptError{Err: fmt.Errorf("%s: agent %q: its meta (%d bytes) %v", d.dir, id, len(v), err)}
			}
		}
		return it.Error()
	})
	return damaged, err
}
