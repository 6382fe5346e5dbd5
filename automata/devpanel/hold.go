package devpanel

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"time"

	"github.com/moora-go/moora/automata"
)

// The hold has two doors, both on the jobs' goroutines: the gate
// (automata.WithJobGate), where a job that starts waits before it runs, and
// the route (automata.WithJobDispatch), where an input a job dispatches
// waits before it is handed to the agent. While the hold is on, nothing a
// job does gets past either door unless a step or the release lets it.
//
// A step applies exactly one input. When inputs wait at the route, the
// oldest is delivered, the step waits until it is applied, and its job
// runs on to its next dispatch (which waits in turn) or its end. When none
// waits, the step takes a token: it lets every job waiting at the gate run,
// and the first input any running job dispatches takes the token and is
// applied; the inputs that come after it wait at the route for the next
// steps. A step ends early, having applied nothing, when its input is
// rejected (by admission or the journal), or when every job that could
// dispatch one has ended without doing so.

// holdState is the hold as the API reports it.
type holdState struct {
	Held bool `json:"held"`
	// Waiting are the jobs at the gate and the inputs at the route,
	// oldest first.
	Waiting []heldItem `json:"waiting"`
	// Running are the jobs that run: let through, or started before the
	// hold, and not waiting at either door.
	Running []string `json:"running"`
	// Stepping: a step waits for its input.
	Stepping bool `json:"stepping"`
}

// heldItem is a job at the gate (kind "job") or an input at the route
// (kind "input", with the input and its type).
type heldItem struct {
	Key   string          `json:"key"`
	Kind  string          `json:"kind"`
	Type  string          `json:"type,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

// waiter is what waits at a door.
type waiter struct {
	heldItem
	release chan struct{}
	step    *step // for an input let through by a step
}

// step is a step in progress: done is closed once result is set.
type step struct {
	done   chan struct{}
	result stepResult
}

// stepResult is what a step did: the input it applied (Applied, with its
// type, the job that dispatched it and Seq, the journal's last sequence
// number once it was applied), or why it applied none (Error).
type stepResult struct {
	Applied bool   `json:"applied"`
	Key     string `json:"key,omitempty"`
	Type    string `json:"type,omitempty"`
	// Seq is the journal's last position right after the input was
	// applied: the input's own unless an outside input came at once.
	Seq   uint64 `json:"seq,omitempty"`
	Error string `json:"error,omitempty"`
}

// gate is the panel's job gate (automata.WithJobGate): while the hold is
// on, a job that starts waits here until a step or the release lets it
// through, or its key vanishes.
func (p *Panel[S, I]) gate(ctx context.Context) error {
	p.mu.Lock()
	if !p.held || p.closed {
		p.mu.Unlock()
		return nil
	}
	w := &waiter{heldItem: heldItem{Key: automata.JobKey(ctx), Kind: "job"}, release: make(chan struct{})}
	p.waiting = append(p.waiting, w)
	p.queueLocked("job", jobEvent{Key: w.Key, Kind: "held", At: time.Now().UnixMilli()})
	p.controlledLocked("waiting")
	p.mu.Unlock()
	select {
	case <-w.release:
		return nil
	case <-ctx.Done():
		p.mu.Lock()
		if p.unwaitLocked(w) {
			p.controlledLocked("waiting")
		}
		p.mu.Unlock()
		return ctx.Err()
	}
}

// route is the panel's route for what jobs dispatch
// (automata.WithJobDispatch): while the hold is on, an input waits here
// until a step or the release lets it through, or its job's key vanishes
// (it is then dropped, as the agent drops what a cancelled job dispatches).
// The first input to come while a step holds the token is the step's.
func (p *Panel[S, I]) route(ctx context.Context, in I, deliver func(I) <-chan error) {
	key := automata.JobKey(ctx)
	p.mu.Lock()
	if st := p.stepping; st != nil && !p.closed {
		p.stepping = nil
		p.mu.Unlock()
		p.finishStep(st, key, in, <-deliver(in))
		return
	}
	if !p.held || p.closed {
		p.mu.Unlock()
		deliver(in)
		return
	}
	data, _ := json.Marshal(in)
	w := &waiter{heldItem: heldItem{Key: key, Kind: "input", Type: inputType(in), Input: data}, release: make(chan struct{})}
	p.waiting = append(p.waiting, w)
	p.queueLocked("job", jobEvent{Key: key, Kind: "input-held", Type: w.Type, At: time.Now().UnixMilli()})
	p.controlledLocked("waiting")
	p.mu.Unlock()
	select {
	case <-w.release:
		if w.step != nil {
			p.finishStep(w.step, key, in, <-deliver(in))
		} else {
			deliver(in)
		}
	case <-ctx.Done():
		p.mu.Lock()
		dropped := p.unwaitLocked(w)
		if dropped {
			p.queueLocked("job", jobEvent{Key: key, Kind: "input-dropped", Type: w.Type, At: time.Now().UnixMilli()})
			p.controlledLocked("waiting")
		}
		st := w.step
		p.mu.Unlock()
		if !dropped {
			// A step or the release let it go as its job's key vanished:
			// deliver it all the same (the agent drops it, as its job is
			// cancelled), so that a step learns how its input ended.
			if err := <-deliver(in); st != nil {
				p.finishStep(st, key, in, err)
			}
		}
	}
}

// unwaitLocked removes w from the waiting, if it is there still.
func (p *Panel[S, I]) unwaitLocked(w *waiter) bool {
	i := slices.Index(p.waiting, w)
	if i < 0 {
		return false
	}
	p.waiting = slices.Delete(p.waiting, i, i+1)
	return true
}

// finishStep records what became of the step's input, dispatched by job key.
func (p *Panel[S, I]) finishStep(st *step, key string, in I, err error) {
	r := stepResult{Key: key, Type: inputType(in)}
	if err != nil {
		r.Error = "the input was not applied: " + err.Error()
	} else {
		r.Applied, r.Seq = true, p.agent.Seq()
	}
	p.mu.Lock()
	p.endStepLocked(st, r)
	p.mu.Unlock()
}

func (p *Panel[S, I]) endStepLocked(st *step, r stepResult) {
	select {
	case <-st.done:
		return
	default:
	}
	if p.stepping == st {
		p.stepping = nil
	}
	if p.underway == st {
		p.underway = nil
	}
	st.result = r
	close(st.done)
	h := p.holdStateLocked()
	p.queueLocked("lifecycle", lifecycle{Kind: "step", At: time.Now().UnixMilli(), Held: &h, Step: &st.result})
}

// stepStuckLocked ends a step that holds the token when no job is left that
// could take it: every one it let run has ended without dispatching.
func (p *Panel[S, I]) stepStuckLocked() {
	if p.stepping == nil || len(p.runningLocked()) > 0 {
		return
	}
	p.endStepLocked(p.stepping, stepResult{Error: "no input: the jobs the step let run ended without dispatching one"})
}

func (p *Panel[S, I]) holdState() holdState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holdStateLocked()
}

func (p *Panel[S, I]) holdStateLocked() holdState {
	h := holdState{Held: p.held, Waiting: []heldItem{}, Running: p.runningLocked(), Stepping: p.underway != nil}
	for _, w := range p.waiting {
		h.Waiting = append(h.Waiting, w.heldItem)
	}
	return h
}

// runningLocked returns the keys of the jobs that run: started, not ended,
// and waiting at neither door.
func (p *Panel[S, I]) runningLocked() []string {
	keys := []string{}
	for k := range p.started {
		if !slices.ContainsFunc(p.waiting, func(w *waiter) bool { return w.Key == k }) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// errNoStep is why a step cannot start.
type errNoStep string

func (e errNoStep) Error() string { return string(e) }

// hold holds what jobs do from now on.
func (p *Panel[S, I]) hold() holdState {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = !p.closed
	return p.controlledLocked("hold")
}

// release lets every job and input that waits go, and holds no more.
func (p *Panel[S, I]) release() holdState {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = false
	for _, w := range p.waiting {
		p.letLocked(w)
	}
	p.waiting = nil
	return p.controlledLocked("release")
}

func (p *Panel[S, I]) letLocked(w *waiter) {
	close(w.release)
	p.queueLocked("job", jobEvent{Key: w.Key, Kind: "released", Type: w.Type, At: time.Now().UnixMilli()})
}

func (p *Panel[S, I]) controlledLocked(op string) holdState {
	h := p.holdStateLocked()
	p.queueLocked("lifecycle", lifecycle{Kind: op, At: time.Now().UnixMilli(), Held: &h})
	return h
}

// step applies one input (see the top of this file) and waits until it is
// applied, or the step ends without one, or ctx ends (the step goes on).
func (p *Panel[S, I]) step(ctx context.Context) (stepResult, error) {
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		return stepResult{}, errNoStep("the panel is closed")
	case !p.held:
		p.mu.Unlock()
		return stepResult{}, errNoStep("not held: hold first, then step")
	case p.underway != nil:
		p.mu.Unlock()
		return stepResult{}, errNoStep("the previous step has not applied its input yet")
	}
	st := &step{done: make(chan struct{})}
	p.underway = st
	if i := slices.IndexFunc(p.waiting, func(w *waiter) bool { return w.Kind == "input" }); i >= 0 {
		w := p.waiting[i]
		p.waiting = slices.Delete(p.waiting, i, i+1)
		w.step = st
		p.letLocked(w)
	} else {
		var jobs []*waiter
		p.waiting = slices.DeleteFunc(p.waiting, func(w *waiter) bool {
			if w.Kind == "job" {
				jobs = append(jobs, w)
				return true
			}
			return false
		})
		if len(jobs) == 0 && len(p.runningLocked()) == 0 {
			p.underway = nil
			p.mu.Unlock()
			return stepResult{}, errNoStep("nothing to step: no job waits or runs")
		}
		p.stepping = st
		for _, w := range jobs {
			p.letLocked(w)
		}
	}
	p.mu.Unlock()
	select {
	case <-st.done:
		return st.result, nil
	case <-ctx.Done():
		return stepResult{}, ctx.Err()
	}
}
