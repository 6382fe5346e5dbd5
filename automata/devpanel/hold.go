package devpanel

import (
	"context"
	"time"

	"github.com/moora-go/moora/automata"
)

// holdState is the hold as the API reports it.
type holdState struct {
	Held    bool     `json:"held"`
	Waiting []string `json:"waiting"`
}

// gate is the panel's job gate (automata.WithJobGate): while the hold is
// on, a job that starts waits here until step or release lets it through,
// or its key vanishes.
func (p *Panel[S, I]) gate(ctx context.Context) error {
	p.mu.Lock()
	if !p.held || p.closed {
		p.mu.Unlock()
		return nil
	}
	w := &waiter{key: automata.JobKey(ctx), release: make(chan struct{})}
	p.waiting = append(p.waiting, w)
	p.queueLocked("job", jobEvent{Key: w.key, Kind: "held", At: time.Now().UnixMilli()})
	p.mu.Unlock()
	select {
	case <-w.release:
		return nil
	case <-ctx.Done():
		p.mu.Lock()
		for i, x := range p.waiting {
			if x == w {
				p.waiting = append(p.waiting[:i:i], p.waiting[i+1:]...)
				break
			}
		}
		p.mu.Unlock()
		return ctx.Err()
	}
}

func (p *Panel[S, I]) holdState() holdState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holdStateLocked()
}

func (p *Panel[S, I]) holdStateLocked() holdState {
	h := holdState{Held: p.held, Waiting: []string{}}
	for _, w := range p.waiting {
		h.Waiting = append(h.Waiting, w.key)
	}
	return h
}

// control applies hold (hold the jobs that start from now on), step (let
// the oldest held job run) or release (let them all run, and hold no more).
func (p *Panel[S, I]) control(op string) holdState {
	p.mu.Lock()
	defer p.mu.Unlock()
	let := func(w *waiter) {
		close(w.release)
		p.queueLocked("job", jobEvent{Key: w.key, Kind: "released", At: time.Now().UnixMilli()})
	}
	switch op {
	case "hold":
		p.held = !p.closed
	case "step":
		if len(p.waiting) > 0 {
			w := p.waiting[0]
			p.waiting = p.waiting[1:]
			let(w)
		}
	case "release":
		p.held = false
		for _, w := range p.waiting {
			let(w)
		}
		p.waiting = nil
	}
	h := p.holdStateLocked()
	p.queueLocked("lifecycle", lifecycle{Kind: op, At: time.Now().UnixMilli(), Held: &h})
	return h
}
