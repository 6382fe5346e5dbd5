package toolkit

import (
	"fmt"
	"time"
)

// BreakerState is the state of a tool's circuit breaker.
type BreakerState string

// The states of a circuit breaker.
const (
	// Closed: calls go through; failures in a row are counted.
	Closed BreakerState = "closed"
	// Open: calls fail at once with KindUnavailable until the cooldown
	// is over.
	Open BreakerState = "open"
	// HalfOpen: the cooldown is over; the next call is let through as a
	// trial, and the others fail at once until it ends.
	HalfOpen BreakerState = "half-open"
)

// breaker is a tool's circuit breaker. It is guarded by its entry's mu.
// Between calls: failures counts the calls in a row that failed while
// Closed; openUntil is when an Open breaker lets a trial through; trial
// says a HalfOpen breaker's trial call is running, and only that call's
// end (record with its ticket) moves it on.
//
// gen is the breaker's generation: it grows at each change of state, and a
// call carries the generation it was let through in (its ticket). A call's
// end moves the breaker only if the breaker is still in that generation,
// so that a call let through before the breaker opened, which ends after a
// trial closed it again, says nothing of the tool as it is now; and a call
// asks again (check) once it has its slots and before each retry, so that
// the calls let through while the breaker was closed do not run once it
// opened.
type breaker struct {
	state     BreakerState
	failures  int
	openUntil time.Time
	trial     bool
	gen       uint64
	last      error // the failure that opened it
	reopened  bool  // last is a failed trial's
}

// ticket is what the breaker let a call through with.
type ticket struct {
	gen   uint64
	trial bool // the call is the half-open breaker's trial
}

// maxLastError bounds how much of the failure that opened a breaker its
// message quotes.
const maxLastError = 256

// Breaker returns the state of the circuit breaker of the tool named name
// ("" when the kit has no such tool). With BreakerFailures -1 it is always
// Closed.
func (k *Kit) Breaker(name string) BreakerState {
	e, ok := k.toolset().byName[name]
	if !ok {
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.br.state == Open && !k.cfg.Clock().Before(e.br.openUntil) {
		return HalfOpen
	}
	return or(e.br.state, Closed)
}

// admit asks the breaker to let a call through at now.
func (e *entry) admit(now time.Time) (ticket, error) {
	if e.policy.BreakerFailures < 0 {
		return ticket{}, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.admitLocked(now)
}

func (e *entry) admitLocked(now time.Time) (ticket, error) {
	switch e.br.state {
	case Open:
		if now.Before(e.br.openUntil) {
			last := "unknown"
			if e.br.last != nil {
				last = clip(e.br.last.Error(), maxLastError)
			}
			why := fmt.Sprintf("opened after %d failures in a row (the last: %s)", e.policy.BreakerFailures, last)
			if e.br.reopened {
				why = fmt.Sprintf("opened again when its trial call failed (%s)", last)
			}
			return ticket{}, fmt.Errorf("%s is unavailable: its circuit breaker %s; it is tried again in %s",
				e.name, why, e.br.openUntil.Sub(now).Round(time.Millisecond))
		}
		e.br.state, e.br.trial = HalfOpen, true
		e.br.gen++
		return ticket{gen: e.br.gen, trial: true}, nil
	case HalfOpen:
		if e.br.trial {
			return ticket{}, fmt.Errorf("%s is unavailable: its circuit breaker is half-open and a trial call is under way", e.name)
		}
		e.br.trial = true
		return ticket{gen: e.br.gen, trial: true}, nil
	}
	return ticket{gen: e.br.gen}, nil
}

// check asks the breaker again at now, for a call it let through with t
// that is about to run (again): t, when the breaker is as it let the call
// through; otherwise what admit says now.
func (e *entry) check(t ticket, now time.Time) (ticket, error) {
	if e.policy.BreakerFailures < 0 {
		return t, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.current(t) {
		return t, nil
	}
	return e.admitLocked(now)
}

// current says whether the breaker is still as it let a call through with
// t.
func (e *entry) current(t ticket) bool {
	if t.gen != e.br.gen {
		return false
	}
	if t.trial {
		return e.br.state == HalfOpen && e.br.trial
	}
	return e.br.state == Closed || e.br.state == ""
}

// record tells the breaker how a call it let through with t ended at now.
// A call let through in another generation of the breaker moves nothing,
// and nor does one that did not run for the breaker (KindUnavailable).
func (e *entry) record(t ticket, kind Kind, err error, now time.Time) {
	if e.policy.BreakerFailures < 0 || kind == KindUnavailable {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.current(t) {
		return
	}
	failed := kind == KindFailure || kind == KindTimeout
	switch {
	case kind == KindCancelled:
		if t.trial {
			e.br.trial = false // the next call is the trial
		}
	case t.trial && failed:
		e.br = breaker{state: Open, openUntil: now.Add(e.policy.BreakerCooldown), gen: e.br.gen + 1, last: err, reopened: true}
	case t.trial:
		e.br = breaker{state: Closed, gen: e.br.gen + 1}
	case failed:
		e.br.failures++
		if e.br.failures >= e.policy.BreakerFailures {
			e.br = breaker{state: Open, openUntil: now.Add(e.policy.BreakerCooldown), gen: e.br.gen + 1, last: err}
		}
	default:
		e.br.failures = 0
	}
}
