// Package backend holds what the journal's backends (bolt, jetstream)
// share in their implementations of journal.Fleet, and no caller of a Fleet
// needs.
package backend

import (
	"errors"
	"fmt"

	"github.com/moora-go/moora/automata/journal"
)

// PassedOver gathers, for a Fleet's List, the damaged agents it passes over
// (listing the others) into the one error List returns once it is done.
type PassedOver struct {
	first *journal.CorruptError
	more  int
}

// Add notes a damaged agent passed over: err, or a *journal.CorruptError wrapping it.
func (p *PassedOver) Add(err error) {
	if p.first != nil {
		p.more++
		return
	}
	var ce *journal.CorruptError
	if !errors.As(err, &ce) {
		ce = &journal.CorruptError{Err: err}
	}
	p.first = ce
}

// Err returns nil when no agent was passed over; else the first one's
// *journal.CorruptError, saying how many more there were.
func (p *PassedOver) Err() error {
	switch {
	case p.first == nil:
		return nil
	case p.more == 0:
		return p.first
	}
	return &journal.CorruptError{Err: fmt.Errorf("%w; and %d more damaged agents were passed over", p.first.Err, p.more)}
}
