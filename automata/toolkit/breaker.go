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
// end (record with trial) moves it on.
type breaker struct {
	state     BreakerState
	failures  int
	openUntil time.Time
	trial     bool
	last      error // the failure that opened it
}

// Breaker returns the state of the circuit breaker of the tool named name
// ("" when the kit has no such tool). With BreakerFailures -1 it is always
// Closed.
func (k *Kit) Breaker(name string) BreakerState {
	e, ok := k.byName[name]
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

// admit asks the breaker to let a call through at now, and says whether it
// is the trial of a half-open breaker.
func (e *entry) admit(now time.Time) (trial bool, err error) {
	if e.policy.BreakerFailures < 0 {
		return false, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch e.br.state {
	case Open:
		if now.Before(e.br.openUntil) {
			return false, fmt.Errorf("%s is unavailable: its circuit breaker opened after %d failures in a row (the last: %v); it is tried again in %s",
				e.name, e.policy.BreakerFailures, e.br.last, e.br.openUntil.Sub(now).Round(time.Millisecond))
		}
		e.br.state, e.br.trial = HalfOpen, true
		return true, nil
	case HalfOpen:
		if e.br.trial {
			return false, fmt.Errorf("%s is unavailable: its circuit breaker is half-open and a trial call is under way", e.name)
		}
		e.br.trial = true
		return true, nil
	}
	return false, nil
}

// record tells the breaker how a call it let through ended at now.
func (e *entry) record(trial bool, kind Kind, err error, now time.Time) {
	if e.policy.BreakerFailures < 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	failed := kind == KindFailure || kind == KindTimeout
	switch {
	case kind == KindCancelled:
		if trial {
			e.br.trial = false // the next call is the trial
		}
	case trial && failed:
		e.br.state, e.br.trial, e.br.openUntil, e.br.last = Open, false, now.Add(e.policy.BreakerCooldown), err
	case trial:
		e.br = breaker{state: Closed}
	case e.br.state != Closed && e.br.state != "":
		// A call let through before the breaker opened: its end says
		// nothing the trial will not.
	case failed:
		e.br.failures++
		if e.br.failures >= e.policy.BreakerFailures {
			e.br.state, e.br.openUntil, e.br.last = Open, now.Add(e.policy.BreakerCooldown), err
		}
	default:
		e.br.failures = 0
	}
}
