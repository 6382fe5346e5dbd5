package pebble

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/internal/backend"
)

// journalCheck is what the open-time walk found of one journal.
type journalCheck struct {
	meta     bool   // a fleet's agent: its meta key is there
	lastIn   uint64 // the seq of its last input record
	hasInput bool
	end      uint64 // its recorded end
	hasEnd   bool
	err      *journal.CorruptError // the first damage found in it
}

// fail notes damage to the journal, the first of which is reported.
func (c *journalCheck) fail(format string, args ...any) {
	if c.err == nil {
		c.err = &journal.CorruptError{Err: fmt.Errorf(format, args...)}
	}
}

// finish checks the journal's recorded end against its last record.
func (c *journalCheck) finish(where string) {
	switch {
	case c.hasInput && !c.hasEnd:
		c.fail("%s: the journal has records up to %d but no recorded end", where, c.lastIn)
	case c.hasEnd && (!c.hasInput || c.lastIn < c.end):
		last := "none"
		if c.hasInput {
			last = fmt.Sprint(c.lastIn)
		}
		c.fail("%s: the journal is cut short: its last append ended at %d, its last record is %s", where, c.end, last)
	case c.hasEnd && c.lastIn > c.end:
		c.fail("%s: the journal has records past its recorded end %d, up to %d", where, c.end, c.lastIn)
	}
}

// checked is what the open-time walk found: the store's journal, or a
// fleet's agents by id.
type checked struct {
	store  journalCheck
	agents map[string]*journalCheck
}

// suffixLen is the length of what follows the prefix in a key of kind.
var suffixLen = map[byte]int{kindInput: 8, kindSnapshot: 8, kindQuarantine: 16, kindEnd: 0}

// check reads every key and value of the database, which makes pebble
// verify every block it reads, and checks the keys as Open and OpenFleet
// say. Damage to the database itself (pebble reports corruption, a key no
// journal holds) is the error; damage confined to one agent of a fleet is in
// its journalCheck.
func (d *db) check(fleet bool) (checked, error) {
	c := checked{agents: map[string]*journalCheck{}}
	agent := func(id string) *journalCheck {
		a := c.agents[id]
		if a == nil {
			a = &journalCheck{}
			c.agents[id] = a
		}
		return a
	}
	err := d.guard("open", nil, func() error {
		it, err := d.p.NewIter(nil)
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			k := it.Key()
			v, err := it.ValueAndErr()
			if err != nil {
				return err
			}
			if bytes.Equal(k, layoutKey) {
				continue
			}
			if len(k) == 0 {
				return &journal.CorruptError{Err: fmt.Errorf("%s: an empty key, which no journal holds", d.dir)}
			}
			if !fleet {
				if err := c.store.add(k, v, d.dir); err != nil {
					return err
				}
				continue
			}
			if k[0] == kindMeta {
				id := string(k[1:])
				if err := journal.CheckAgentID(id); err != nil {
					return &journal.CorruptError{Err: fmt.Errorf("%s: a meta key %q, which is no agent's id: %v", d.dir, id, err)}
				}
				a := agent(id)
				a.meta = true
				if _, err := backend.DecodeAgentInfo(v); err != nil {
					a.fail("%s: agent %q: its meta (%d bytes) %v", d.dir, id, len(v), err)
				}
				continue
			}
			if _, known := suffixLen[k[0]]; !known || len(k) < 2 || len(k) < 2+int(k[1]) {
				return &journal.CorruptError{Err: fmt.Errorf("%s: a key no journal holds (%x)", d.dir, k)}
			}
			id := string(k[2 : 2+int(k[1])])
			if err := journal.CheckAgentID(id); err != nil {
				return &journal.CorruptError{Err: fmt.Errorf("%s: a key no journal holds (%x): %v", d.dir, k, err)}
			}
			a := agent(id)
			if err := a.add(append([]byte{k[0]}, k[2+int(k[1]):]...), v, fmt.Sprintf("%s: agent %q", d.dir, id)); err != nil {
				var ce *journal.CorruptError
				if errors.As(err, &ce) && a.err == nil {
					a.err = ce
				}
			}
		}
		return it.Error()
	})
	if err != nil {
		return checked{}, err
	}
	c.store.finish(d.dir)
	if c.store.err != nil {
		return checked{}, c.store.err
	}
	for id, a := range c.agents {
		where := fmt.Sprintf("%s: agent %q", d.dir, id)
		if !a.meta {
			a.fail("%s has journal records but no meta (its meta was lost; Delete removes the rest)", where)
		}
		a.finish(where)
	}
	return c, nil
}

// add notes k (the kind and what follows the prefix) and its value v in
// the journal; a key the journal never holds is damage, the error.
func (c *journalCheck) add(k, v []byte, where string) error {
	n, known := suffixLen[k[0]]
	if !known || len(k) != 1+n {
		return &journal.CorruptError{Err: fmt.Errorf("%s: a key no journal holds (%x)", where, k)}
	}
	switch k[0] {
	case kindInput:
		c.lastIn, c.hasInput = binary.BigEndian.Uint64(k[1:]), true
	case kindEnd:
		if len(v) != 8 {
			return &journal.CorruptError{Err: fmt.Errorf("%s: the recorded end holds %d bytes, expected 8", where, len(v))}
		}
		c.end, c.hasEnd = binary.BigEndian.Uint64(v), true
	}
	return nil
}
