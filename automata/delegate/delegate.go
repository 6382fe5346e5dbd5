// Package delegate lets an agent's job hand work to a sub-agent: an agent of
// its own, by id, with its own journal, started by the job and followed until
// its state holds the result, which the job dispatches to its parent.
//
// A delegation is durable because everything in it is keyed: the child's id
// is derived from the parent's id and the job's key (ChildID), and the task
// is the child's first input, sent only to a child whose journal is empty.
// Kill the process at any point and, on restart, the parent's state calls for
// the same job under the same key, whose run finds the same child: a child
// not yet created is created, one that has not had its task gets it, one at
// work goes on (its own state calls for its own jobs), and one that finished
// gives its result at once. So there is one child per job key, and the result
// reaches the parent's journal as a job's input does: once the parent's state
// stops calling for the job.
//
// A job whose key vanishes from the parent's state (the parent no longer
// wants the work) tells its child with Config.Cancel's input; a job cut off
// by its machine closing does not: the work is still wanted, and goes on
// when the parent is opened again.
//
// The child's AgentInfo.Delegated names its parent and the job, with its
// depth below the agent nobody delegated to; a fleet's devpanel shows it.
// Limits: Config.MaxDepth, MaxChildren (children of one parent at work at
// once, in this process), Timeout (of one delegation).
//
// Job makes a job that delegates, for an agent that delegates without a
// model; Tool makes a toolkit tool that does, for a model to call.
package delegate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/registry"
	"github.com/moora-go/moora/automata/toolkit"
)

// Config is what a Delegator is made of. Registry and Owner are required.
type Config[CS, CI any] struct {
	// Registry holds the children: agents of their own spec, in their
	// own fleet (or the parents', under other ids).
	Registry *registry.Registry[CS, CI]
	// Owner owns the children (their AgentInfo.Owner): the identity a
	// front lets see them.
	Owner string
	// Parents, if set, tells a parent's AgentInfo (its registry's Info),
	// for the depth of a delegation: a parent delegated to itself passes
	// its depth on. Nil: every parent is at depth 0.
	Parents func(id string) (journal.AgentInfo, error)
	// Cancel, if set, is the input that tells a child its work is no
	// longer wanted, sent when the parent's job is cancelled because its
	// key vanished from the parent's state.
	Cancel func() CI
	// MaxDepth bounds how deep delegations nest: a child at a greater
	// depth is not created (ErrTooDeep). Default 4.
	MaxDepth int
	// MaxChildren bounds the children of one parent at work at once in
	// this process: a delegation past it waits for one to end. Default 16.
	MaxChildren int
	// Timeout bounds one delegation, from the job's start until the
	// child's result (ErrTimeout, and the child is told with Cancel).
	// Default 1 hour; negative: none.
	Timeout time.Duration
}

var (
	// ErrTooDeep: the child would be deeper than Config.MaxDepth.
	ErrTooDeep = errors.New("delegate: delegations nested too deep")
	// ErrTimeout: the child did not give its result within Config.Timeout.
	ErrTimeout = errors.New("delegate: the sub-agent did not finish in time")
	// ErrNotAJob: Run was called with a context that is no job's.
	ErrNotAJob = errors.New("delegate: not a job's context: the child's id is derived from the job's key")
)

// Delegator starts children and follows them, for the jobs of many parents.
type Delegator[CS, CI any] struct {
	cfg Config[CS, CI]

	mu   sync.Mutex
	busy map[string]chan struct{} // by parent: a token per child at work
}

// New checks cfg and returns a Delegator.
func New[CS, CI any](cfg Config[CS, CI]) (*Delegator[CS, CI], error) {
	if cfg.Registry == nil {
		return nil, errors.New("delegate: Config.Registry is required")
	}
	if cfg.Owner == "" {
		return nil, errors.New("delegate: Config.Owner is required: someone owns the children")
	}
	if cfg.MaxDepth <= 0 {
		cfg.MaxDepth = 4
	}
	if cfg.MaxChildren <= 0 {
		cfg.MaxChildren = 16
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Hour
	}
	return &Delegator[CS, CI]{cfg: cfg, busy: map[string]chan struct{}{}}, nil
}

// ChildID is the id of the child the job under key of agent parent
// delegates to: the same for the same two, whatever the process, and a
// valid agent id whatever their lengths.
func ChildID(parent, key string) string {
	sum := sha256.Sum256([]byte(parent + "\x00" + key))
	return "sub-" + hex.EncodeToString(sum[:20])
}

// Run delegates task to the child of agent parent for the job whose context
// ctx is (or derives from): it creates the child if there is none, sends it
// task if its journal is empty, and waits until done holds of its state,
// which it returns. Call it from the parent's job; the job dispatches what
// it makes of the state.
func (d *Delegator[CS, CI]) Run(ctx context.Context, parent string, task CI, done func(CS) bool) (CS, error) {
	return d.RunKey(ctx, parent, automata.JobKey(ctx), task, done)
}

// RunKey is Run under key, in place of the job's key: a tool delegates
// under its call's idempotency key (toolkit.Key), which is the same after a
// restart. A job cancelled because its key vanished (automata.JobCancelCause
// of ctx) cancels the child.
func (d *Delegator[CS, CI]) RunKey(ctx context.Context, parent, key string, task CI, done func(CS) bool) (CS, error) {
	var zero CS
	if key == "" {
		return zero, ErrNotAJob
	}
	release, err := d.slot(ctx, parent)
	if err != nil {
		return zero, err
	}
	defer release()
	id := ChildID(parent, key)
	if err := d.create(id, parent, key); err != nil {
		return zero, err
	}
	a, leave, err := d.cfg.Registry.Get(ctx, id)
	if err != nil {
		return zero, fmt.Errorf("delegate: the sub-agent %s: %w", id, err)
	}
	defer leave()
	m := a.Machine()
	if m.Seq() == 0 {
		if err := m.Dispatch(ctx, task); err != nil {
			return zero, fmt.Errorf("delegate: sending the sub-agent %s its task: %w", id, err)
		}
	}
	kick := make(chan struct{}, 1)
	unsubscribe := m.Subscribe(func(CS) {
		select {
		case kick <- struct{}{}:
		default:
		}
	})
	defer unsubscribe()
	var timeout <-chan time.Time
	if d.cfg.Timeout > 0 {
		t := time.NewTimer(d.cfg.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	for {
		if s := m.Current(); done(s) {
			return s, nil
		}
		select {
		case <-kick:
		case <-a.Deactivated():
			return zero, fmt.Errorf("delegate: the sub-agent %s was deactivated: %w", id, m.Err())
		case <-timeout:
			d.cancel(m)
			return zero, fmt.Errorf("%w: %s after %v", ErrTimeout, id, d.cfg.Timeout)
		case <-ctx.Done():
			if errors.Is(automata.JobCancelCause(ctx), automata.ErrJobKeyVanished) {
				d.cancel(m)
			}
			return zero, ctx.Err()
		}
	}
}

// cancel tells the child its work is not wanted, if Config.Cancel says how.
func (d *Delegator[CS, CI]) cancel(m *journal.Machine[CS, CI]) {
	if d.cfg.Cancel == nil {
		return
	}
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	m.Dispatch(ctx, d.cfg.Cancel()) // a child closed or failed is told nothing: it does no work
}

// create creates the child id of parent's job key, unless it exists.
func (d *Delegator[CS, CI]) create(id, parent, key string) error {
	switch _, err := d.cfg.Registry.Info(id); {
	case err == nil:
		return nil
	case !errors.Is(err, journal.ErrNoAgent):
		return fmt.Errorf("delegate: the sub-agent %s: %w", id, err)
	}
	depth := 1
	if d.cfg.Parents != nil {
		info, err := d.cfg.Parents(parent)
		if err != nil {
			return fmt.Errorf("delegate: the parent %s: %w", parent, err)
		}
		if info.Delegated != nil {
			depth = info.Delegated.Depth + 1
		}
	}
	if depth > d.cfg.MaxDepth {
		return fmt.Errorf("%w: %s would be at depth %d, the limit is %d", ErrTooDeep, id, depth, d.cfg.MaxDepth)
	}
	err := d.cfg.Registry.CreateInfo(id, journal.AgentInfo{Owner: d.cfg.Owner, Delegated: &journal.Delegation{Agent: parent, Job: key, Depth: depth}})
	if err != nil && !errors.Is(err, journal.ErrAgentExists) {
		return fmt.Errorf("delegate: creating the sub-agent %s: %w", id, err)
	}
	return nil
}

// slot waits until parent has fewer than MaxChildren children at work here,
// and takes one; release gives it back.
func (d *Delegator[CS, CI]) slot(ctx context.Context, parent string) (release func(), err error) {
	d.mu.Lock()
	tokens, ok := d.busy[parent]
	if !ok {
		tokens = make(chan struct{}, d.cfg.MaxChildren)
		d.busy[parent] = tokens
	}
	d.mu.Unlock()
	select {
	case tokens <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return func() {
		d.mu.Lock()
		<-tokens
		if len(tokens) == 0 {
			delete(d.busy, parent) // the map holds only parents at work
		}
		d.mu.Unlock()
	}, nil
}

// Job is a job of agent parent that delegates task and dispatches to the
// parent what result makes of the child's state once it is done (ok); a
// delegation that fails (a limit, a child that failed, a timeout) is
// dispatched as fail(err), and a cancelled one dispatches nothing.
func Job[CS, CI, PI any](d *Delegator[CS, CI], parent string, task CI, result func(CS) (PI, bool), fail func(error) PI) automata.Job[PI] {
	return func(ctx context.Context, dispatch automata.Dispatch[PI]) error {
		var out PI
		_, err := d.Run(ctx, parent, task, func(s CS) bool {
			var ok bool
			out, ok = result(s)
			return ok
		})
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			dispatch(fail(err))
			return nil
		}
		dispatch(out)
		return nil
	}
}

// Tool is a toolkit tool of agent parent that delegates to a child: the
// model's arguments make the child's task, and answer makes the tool's
// output of the child's state once it holds one (ok). The child's id comes
// from the call's idempotency key (toolkit.Key), so that a call run again
// after a restart finds the same child. A tool is made per parent: give
// each agent's kit its own. A delegation takes as long as the child's work:
// give the tool a Policy whose Timeout allows it (toolkit's default is
// meant for quick calls).
func Tool[A, CS, CI any](d *Delegator[CS, CI], parent, name, description string, task func(A) CI, answer func(CS) (string, bool)) toolkit.Tool {
	return toolkit.Func(name, description, func(ctx context.Context, args A) (string, error) {
		key := toolkit.Key(ctx)
		if key == "" {
			key = automata.JobKey(ctx)
		}
		var out string
		_, err := d.RunKey(ctx, parent, key, task(args), func(s CS) bool {
			var ok bool
			out, ok = answer(s)
			return ok
		})
		return out, err
	})
}
