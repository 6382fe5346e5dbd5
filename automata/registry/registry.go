package registry

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/moora-go/moora/automata/journal"
)

// Config configures a Registry. Fleet and Open are required.
type Config[S, I any] struct {
	// Fleet keeps the agents' journals: bolt.OpenFleet's on one
	// machine.
	Fleet journal.Fleet
	// Open starts the durable machine of agent id on its store, as the
	// program opens one agent: journal.Open with its definition, codec,
	// effects and jobs. It is called on every activation; an error (or a
	// panic, turned into one) fails the Gets waiting for that activation
	// (the store is closed), and the next Get tries again.
	Open func(id string, store journal.Store) (*journal.Machine[S, I], error)

	// IdleTimeout is how long an agent stays active after its last use
	// ends (its last lease released, its last job returned) before it is
	// deactivated. Default 5 minutes; negative: never for idleness.
	IdleTimeout time.Duration
	// MaxActive caps the agents active at once: activating one more
	// deactivates the least recently used agent that is idle (no lease,
	// no job in flight), and a Get that finds none fails with
	// ErrTooManyActive. Default 1,000.
	MaxActive int
	// CloseTimeout bounds how long a deactivation waits for the agent's
	// jobs to end after cancelling them (see journal.Machine.Close).
	// Default 10 seconds.
	CloseTimeout time.Duration
	// Logger receives the errors of deactivations, which have no caller
	// to go to. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock of idleness. Default time.Now.
	Now func() time.Time
	// MeterProvider, if set, is given the registry's counts as
	// OpenTelemetry observable instruments: moora.agents.active (a gauge:
	// agents active now), moora.agents.activations and
	// moora.agents.deactivations (counters), read at each collection
	// from Stats. They are unregistered when the registry closes.
	MeterProvider metric.MeterProvider
}

var (
	// ErrTooManyActive: MaxActive agents are active and every one is in
	// use, so none can make room for another.
	ErrTooManyActive = errors.New("registry: too many agents active")
	// ErrClosed: the registry is closed.
	ErrClosed = errors.New("registry: closed")
)

// Registry activates agents by id on first use and deactivates them when
// idle. See the package documentation.
type Registry[S, I any] struct {
	cfg  Config[S, I]
	log  *slog.Logger
	stop chan struct{} // closed by Close: ends the sweeper
	done chan struct{} // closed when the sweeper has ended

	mu       sync.Mutex
	closed   bool
	active   map[string]*Agent[S, I]
	lru      list.List // of *Agent, most recently used first; only ready ones
	deleting map[string]chan struct{}
	// unobserve unregisters the metrics' callback (Config.MeterProvider).
	unobserve func() error

	activations, deactivations, fenced atomic.Uint64
}

// Agent is an active agent: the durable machine of one id, valid while the
// caller holds the lease Get gave with it.
type Agent[S, I any] struct {
	id   string
	info journal.AgentInfo
	m    *journal.Machine[S, I]
	err  error         // the activation's error; set before ready is closed
	done chan struct{} // closed once it is deactivated
	// ready is closed once the activation has finished, well or not.
	ready chan struct{}

	// Under the registry's mu.
	leases  int
	lastUse time.Time
	elem    *list.Element // in the LRU list once ready
	closing bool          // being deactivated: no new leases
	fenced  bool          // deactivated because its store was fenced
}

// ID returns the agent's id.
func (a *Agent[S, I]) ID() string { return a.id }

// Info returns what the fleet keeps about the agent: its owner, when it was
// created.
func (a *Agent[S, I]) Info() journal.AgentInfo { return a.info }

// Machine returns the agent's durable machine. Use it while the lease is
// held; once the agent is deactivated it answers automata.ErrClosed.
func (a *Agent[S, I]) Machine() *journal.Machine[S, I] { return a.m }

// Deactivated returns a channel closed when this activation of the agent
// ends: a stream that follows it ends there, and a new Get activates the
// agent again.
func (a *Agent[S, I]) Deactivated() <-chan struct{} { return a.done }

// New starts a registry over cfg.Fleet. Close it to deactivate every agent;
// the fleet stays the caller's to close after.
func New[S, I any](cfg Config[S, I]) (*Registry[S, I], error) {
	if cfg.Fleet == nil || cfg.Open == nil {
		return nil, errors.New("registry: Config.Fleet and Config.Open are required")
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 5 * time.Minute
	}
	if cfg.MaxActive <= 0 {
		cfg.MaxActive = 1000
	}
	if cfg.CloseTimeout <= 0 {
		cfg.CloseTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Registry[S, I]{
		cfg:      cfg,
		log:      cfg.Logger,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		active:   make(map[string]*Agent[S, I]),
		deleting: make(map[string]chan struct{}),
	}
	if cfg.MeterProvider != nil {
		if err := r.observe(cfg.MeterProvider); err != nil {
			return nil, fmt.Errorf("registry: MeterProvider: %w", err)
		}
	}
	if cfg.IdleTimeout > 0 {
		go r.sweeper(min(max(cfg.IdleTimeout/4, 10*time.Millisecond), 10*time.Second))
	} else {
		close(r.done)
	}
	return r, nil
}

// Create adds an agent owned by owner and returns its id: id itself, or a
// new random one when id is "". It does not activate the agent.
func (r *Registry[S, I]) Create(id, owner string) (string, error) {
	if id == "" {
		var b [16]byte
		rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	if err := r.cfg.Fleet.Create(id, journal.AgentInfo{Owner: owner, Created: r.cfg.Now().UTC()}); err != nil {
		return "", fmt.Errorf("registry: create %q: %w", id, err)
	}
	return id, nil
}

// CreateInfo adds agent id with info, as Create does (an empty Created is
// the registry's clock): a sub-agent names its parent so
// (AgentInfo.Delegated). It does not activate the agent.
func (r *Registry[S, I]) CreateInfo(id string, info journal.AgentInfo) error {
	if info.Created.IsZero() {
		info.Created = r.cfg.Now().UTC()
	}
	if err := r.cfg.Fleet.Create(id, info); err != nil {
		return fmt.Errorf("registry: create %q: %w", id, err)
	}
	return nil
}

// Put creates agent id for who (owned by who.Name), or finds it when who
// may already see it, as an owner who sends the same PUT again: created
// says which. An id journal.CheckAgentID refuses is that error; another
// owner's agent is an error wrapping journal.ErrNoAgent, as Owned answers,
// so that a front tells nothing of it. It does not activate the agent.
func (r *Registry[S, I]) Put(who Identity, id string) (info journal.AgentInfo, created bool, err error) {
	if err := journal.CheckAgentID(id); err != nil {
		return journal.AgentInfo{}, false, err
	}
	if !who.Operator && who.Name == "" {
		return journal.AgentInfo{}, false, errors.New("registry: an identity without a name owns no agents")
	}
	switch _, err := r.Create(id, who.Name); {
	case err == nil:
		created = true
	case !errors.Is(err, journal.ErrAgentExists):
		return journal.AgentInfo{}, false, err
	}
	info, err = r.Owned(who, id)
	return info, created && err == nil, err
}

// Info returns what the fleet keeps about agent id, or an error wrapping
// journal.ErrNoAgent. It activates nothing.
func (r *Registry[S, I]) Info(id string) (journal.AgentInfo, error) {
	return r.cfg.Fleet.Info(id)
}

// List calls fn with each agent whose id sorts after the given one, in
// order of id, as journal.Fleet.List. It activates nothing.
func (r *Registry[S, I]) List(after string, fn func(id string, info journal.AgentInfo) error) error {
	return r.cfg.Fleet.List(after, fn)
}

// Get returns agent id, activating it if it is not active: its store is
// opened, its state recovered from the newest snapshot and the journal after
// it, and the jobs its state calls for started (Config.Open). Concurrent
// Gets of one id activate it once; the others wait for that activation. The
// agent stays active at least until release is called (once; later calls do
// nothing). An id the fleet does not have is an error wrapping
// journal.ErrNoAgent.
func (r *Registry[S, I]) Get(ctx context.Context, id string) (a *Agent[S, I], release func(), err error) {
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil, nil, ErrClosed
		}
		if ch, ok := r.deleting[id]; ok {
			r.mu.Unlock()
			if err := wait(ctx, ch); err != nil {
				return nil, nil, err
			}
			continue
		}
		a = r.active[id]
		if a != nil && !a.closing && a.elem != nil && a.m.Err() != nil {
			// It failed (fail-stop): take it out, and open it again.
			a.closing = true
			r.mu.Unlock()
			r.deactivate(a)
			continue
		}
		if a != nil && a.closing {
			r.mu.Unlock()
			if err := wait(ctx, a.done); err != nil {
				return nil, nil, err
			}
			continue
		}
		if a != nil {
			a.leases++
			r.mu.Unlock()
			release = r.releaser(a)
			if err := wait(ctx, a.ready); err != nil {
				release()
				return nil, nil, err
			}
			if a.err != nil {
				release()
				return nil, nil, a.err
			}
			return a, release, nil
		}
		victim, leaving, err := r.makeRoomLocked()
		if err != nil {
			r.mu.Unlock()
			return nil, nil, err
		}
		if leaving != nil {
			// Room is being made already: wait for it, and look again.
			r.mu.Unlock()
			if err := wait(ctx, leaving); err != nil {
				return nil, nil, err
			}
			continue
		}
		a = &Agent[S, I]{id: id, leases: 1, ready: make(chan struct{}), done: make(chan struct{})}
		r.active[id] = a
		r.mu.Unlock()
		if victim != nil {
			r.deactivate(victim)
		}
		r.activate(a)
		if a.err != nil {
			return nil, nil, a.err
		}
		return a, r.releaser(a), nil
	}
}

// makeRoomLocked picks, when MaxActive agents are active, the least recently
// used idle one to deactivate (marked closing, still counted until it is
// gone); or, if none is idle but one is being deactivated already, returns
// its done channel, for the caller to wait on and look again; or says that
// every active agent is in use.
func (r *Registry[S, I]) makeRoomLocked() (victim *Agent[S, I], leaving <-chan struct{}, err error) {
	if len(r.active) < r.cfg.MaxActive {
		return nil, nil, nil
	}
	for e := r.lru.Back(); e != nil; e = e.Prev() {
		a := e.Value.(*Agent[S, I])
		if !a.closing && a.leases == 0 && a.m.Jobs() == 0 {
			a.closing = true
			return a, nil, nil
		}
	}
	for _, a := range r.active {
		if a.closing {
			return nil, a.done, nil
		}
	}
	return nil, nil, fmt.Errorf("%w: all %d are in use (Config.MaxActive)", ErrTooManyActive, r.cfg.MaxActive)
}

// activate opens a, which is in r.active and not ready, and makes it ready:
// in the LRU list, or out of r.active with its error.
func (r *Registry[S, I]) activate(a *Agent[S, I]) {
	var store journal.Store
	a.m, store, a.info, a.err = r.open(a.id)
	r.mu.Lock()
	if a.err != nil {
		delete(r.active, a.id)
		close(a.done)
	} else {
		r.activations.Add(1)
		a.lastUse = r.cfg.Now()
		a.elem = r.lru.PushFront(a)
	}
	close(a.ready)
	r.mu.Unlock()
	if f, ok := store.(fenceable); ok && a.err == nil {
		go r.dropWhenFenced(a, f.Fenced())
	}
}

// fenceable is a store that another process can take the agent from
// (jetstream's): Fenced is closed once it has, or once the store's lease
// ran out, and the store refuses every write from then on.
type fenceable interface{ Fenced() <-chan struct{} }

// dropWhenFenced deactivates a as soon as its store is fenced: the agent is
// another process's now, and its jobs here must stop. The leases held on it
// end (its machine answers errors), and the next Get activates it again,
// which fails while the other process has it.
func (r *Registry[S, I]) dropWhenFenced(a *Agent[S, I], fenced <-chan struct{}) {
	select {
	case <-a.done:
		return
	case <-fenced:
	}
	r.mu.Lock()
	mine := !a.closing
	a.closing = true
	r.mu.Unlock()
	if mine {
		r.log.Warn("registry: an agent's store was fenced: another process has it now; deactivated", "agent", a.id)
		r.fenced.Add(1)
		a.fenced = true
		r.deactivate(a)
	}
}

func (r *Registry[S, I]) open(id string) (*journal.Machine[S, I], journal.Store, journal.AgentInfo, error) {
	info, err := r.cfg.Fleet.Info(id)
	if err != nil {
		return nil, nil, info, fmt.Errorf("registry: activate %q: %w", id, err)
	}
	store, err := r.cfg.Fleet.Open(id)
	if err != nil {
		return nil, nil, info, fmt.Errorf("registry: activate %q: %w", id, err)
	}
	m, err := r.openMachine(id, store)
	if err != nil {
		store.Close()
		return nil, nil, info, fmt.Errorf("registry: activate %q: %w", id, err)
	}
	return m, store, info, nil
}

// openMachine calls Config.Open, and turns a panic in it into an error: a
// bug of the program's must not leave the id's activation under way for
// ever (every later Get of it waiting) with its store open, in a server
// that recovers from the panic.
func (r *Registry[S, I]) openMachine(id string, store journal.Store) (m *journal.Machine[S, I], err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("registry: Config.Open panicked", "agent", id, "panic", p, "stack", string(debug.Stack()))
			m, err = nil, fmt.Errorf("Config.Open panicked: %v", p)
		}
	}()
	return r.cfg.Open(id, store)
}

// releaser returns the release function of one lease of a.
func (r *Registry[S, I]) releaser(a *Agent[S, I]) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			a.leases--
			if a.leases == 0 && a.elem != nil && !a.closing {
				a.lastUse = r.cfg.Now()
				r.lru.MoveToFront(a.elem)
			}
			r.mu.Unlock()
		})
	}
}

// deactivate closes a, which is marked closing: its machine is closed
// (jobs cancelled, a snapshot taken, the store closed) and it leaves the
// registry.
func (r *Registry[S, I]) deactivate(a *Agent[S, I]) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.CloseTimeout)
	defer cancel()
	if err := a.m.Close(ctx); err != nil {
		level := slog.LevelError
		if a.fenced {
			level = slog.LevelDebug // its last snapshot refused, as expected
		}
		r.log.Log(ctx, level, "registry: deactivating an agent", "agent", a.id, "err", err)
	}
	r.mu.Lock()
	if r.active[a.id] == a {
		delete(r.active, a.id)
	}
	if a.elem != nil {
		r.lru.Remove(a.elem)
		a.elem = nil
	}
	close(a.done)
	r.mu.Unlock()
	r.deactivations.Add(1)
}

// Sweep deactivates the agents idle for at least Config.IdleTimeout: no
// lease held, no job in flight, and none for that long. The registry sweeps
// by itself every quarter of IdleTimeout (at most every 10 seconds); Sweep is
// for a program that wants it now. It returns how many it deactivated.
func (r *Registry[S, I]) Sweep() int {
	if r.cfg.IdleTimeout < 0 {
		return 0
	}
	now := r.cfg.Now()
	var idle []*Agent[S, I]
	r.mu.Lock()
	for e := r.lru.Back(); e != nil; {
		a, prev := e.Value.(*Agent[S, I]), e.Prev()
		if now.Sub(a.lastUse) < r.cfg.IdleTimeout {
			break // the rest were used more recently
		}
		switch {
		case a.closing || a.leases > 0:
		case a.m.Jobs() > 0:
			// A job in flight keeps it; its idleness counts from now.
			a.lastUse = now
			r.lru.MoveToFront(e)
		default:
			a.closing = true
			idle = append(idle, a)
		}
		e = prev
	}
	r.mu.Unlock()
	for _, a := range idle {
		r.deactivate(a)
	}
	return len(idle)
}

func (r *Registry[S, I]) sweeper(every time.Duration) {
	defer close(r.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.Sweep()
		}
	}
}

// Delete deactivates agent id if it is active, ending the leases held on it
// (their machine answers automata.ErrClosed, and Deactivated's channel is
// closed), and deletes it from the fleet with its whole journal.
func (r *Registry[S, I]) Delete(ctx context.Context, id string) error {
	return r.delete(ctx, id, nil)
}

// DeleteOwned is Delete of an agent that who may touch (Identity.May), and
// otherwise the error Owned returns. The owner is checked once no other
// Delete of id can run, and no Get can activate it, until this one is
// done, so that an agent deleted and created again under the same id by
// someone else between the check and the deletion is not deleted in its
// place.
func (r *Registry[S, I]) DeleteOwned(ctx context.Context, who Identity, id string) error {
	return r.delete(ctx, id, func() error {
		_, err := r.Owned(who, id)
		return err
	})
}

// delete deletes agent id, once check (if any) allows it.
func (r *Registry[S, I]) delete(ctx context.Context, id string, check func() error) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	if ch, ok := r.deleting[id]; ok {
		r.mu.Unlock()
		if err := wait(ctx, ch); err != nil {
			return err
		}
		if check != nil {
			if err := check(); err != nil {
				return err
			}
		}
		return fmt.Errorf("registry: delete %q: %w", id, journal.ErrNoAgent)
	}
	ch := make(chan struct{})
	r.deleting[id] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.deleting, id)
		close(ch)
		r.mu.Unlock()
	}()
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	r.mu.Lock()
	a := r.active[id]
	mine := a != nil && !a.closing // else it is being deactivated already
	if mine {
		a.closing = true
	}
	r.mu.Unlock()
	if a != nil {
		<-a.ready
		if mine && a.err == nil {
			r.deactivate(a)
		}
		<-a.done
	}
	if err := r.cfg.Fleet.Delete(id); err != nil {
		return fmt.Errorf("registry: delete %q: %w", id, err)
	}
	return nil
}

// Fork creates agent child (a new random id when child is ""), owned by who,
// as a fork of agent parent at input seq (0: its last input): its state is
// parent's after input seq, and its journal goes on from there, its own (see
// journal.Machine.Fork, which also says how its jobs are answered from what
// parent's answered). Its AgentInfo.Fork names parent and seq. who must
// be allowed to see parent (Owned's error otherwise). Parent is activated to read its
// journal, and is not changed; the fork is not activated, and no Get of it
// activates it before Fork is done. A fork that fails is deleted again.
func (r *Registry[S, I]) Fork(ctx context.Context, who Identity, parent string, seq uint64, child string) (id string, info journal.AgentInfo, err error) {
	if _, err := r.Owned(who, parent); err != nil {
		return "", info, err
	}
	if !who.Operator && who.Name == "" {
		return "", info, errors.New("registry: an identity without a name owns no agents")
	}
	if child == "" {
		var b [16]byte
		rand.Read(b[:])
		child = hex.EncodeToString(b[:])
	}
	if err := journal.CheckAgentID(child); err != nil {
		return "", info, err
	}
	a, release, err := r.Get(ctx, parent)
	if err != nil {
		return "", info, err
	}
	defer release()
	m := a.Machine()
	if seq == 0 {
		seq = m.Seq()
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return "", info, ErrClosed
	}
	if _, busy := r.deleting[child]; busy {
		r.mu.Unlock()
		return "", info, fmt.Errorf("registry: fork %q: %w", child, journal.ErrAgentExists)
	}
	ch := make(chan struct{}) // Gets of child wait for it, as for a Delete
	r.deleting[child] = ch
	early := r.active[child] // an activation begun before: it must fail, the id being free
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.deleting, child)
		close(ch)
		r.mu.Unlock()
	}()
	if early != nil {
		<-early.ready
		if early.err == nil {
			return "", info, fmt.Errorf("registry: fork %q: %w", child, journal.ErrAgentExists)
		}
	}
	info = journal.AgentInfo{Owner: who.Name, Created: r.cfg.Now().UTC(), Fork: &journal.ForkOrigin{Agent: parent, Seq: seq}}
	if who.Name == "" { // an operator without a name: the fork is the parent's owner's
		info.Owner = a.Info().Owner
	}
	if seq > m.Seq() {
		return "", info, fmt.Errorf("registry: fork %q at %d: it has inputs 1 to %d", parent, seq, m.Seq())
	}
	if err := r.cfg.Fleet.Create(child, info); err != nil {
		return "", info, fmt.Errorf("registry: fork %q: %w", child, err)
	}
	store, err := r.cfg.Fleet.Open(child)
	if err == nil {
		_, err = m.Fork(seq, store)
		err = errors.Join(err, store.Close())
	}
	if err != nil {
		return "", info, errors.Join(fmt.Errorf("registry: fork %q of %q at %d: %w", child, parent, seq, err), r.cfg.Fleet.Delete(child))
	}
	return child, info, nil
}

// Close deactivates every active agent, as Delete does but keeping them,
// and refuses every later call. It waits for the deactivations, each bounded
// by Config.CloseTimeout, and for the Deletes under way; ctx only bounds
// waiting for activations and Deletes under way. A Close that returns ctx's
// error leaves them to finish: call Close again to deactivate what they
// leave, before closing the fleet.
func (r *Registry[S, I]) Close(ctx context.Context) error {
	r.mu.Lock()
	first := !r.closed
	r.closed = true
	var all []*Agent[S, I]
	for _, a := range r.active {
		all = append(all, a)
	}
	var deletes []chan struct{}
	for _, ch := range r.deleting {
		deletes = append(deletes, ch)
	}
	r.mu.Unlock()
	if first {
		close(r.stop)
		if r.unobserve != nil {
			r.unobserve() // an error here is the SDK's, for a meter shut down
		}
	}
	<-r.done
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8) // deactivations at once
	for _, a := range all {
		if err := wait(ctx, a.ready); err != nil {
			return err
		}
		r.mu.Lock()
		closing := a.closing || a.err != nil
		a.closing = true
		r.mu.Unlock()
		if closing {
			continue // someone else deactivates it; waited for below
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r.deactivate(a)
		})
	}
	wg.Wait()
	for _, a := range all {
		if err := wait(ctx, a.done); err != nil {
			return err
		}
	}
	for _, ch := range deletes {
		if err := wait(ctx, ch); err != nil {
			return err
		}
	}
	return nil
}

// IsActive reports whether agent id is active here, or being activated or
// deactivated: whether a Get of it finds it here rather than opening it.
func (r *Registry[S, I]) IsActive(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.active[id]
	return ok
}

// Stats are counts of a registry's work since New.
type Stats struct {
	Active        int    // agents active now
	Activations   uint64 // agents activated
	Deactivations uint64 // agents deactivated: idle, evicted, deleted, closed, fenced
	// Fenced counts the deactivations of agents whose store another
	// process fenced (it took the agent over), or whose lease ran out.
	Fenced uint64
}

// Stats returns the registry's counts.
func (r *Registry[S, I]) Stats() Stats {
	r.mu.Lock()
	n := len(r.active)
	r.mu.Unlock()
	return Stats{Active: n, Activations: r.activations.Load(), Deactivations: r.deactivations.Load(), Fenced: r.fenced.Load()}
}

// Dispatch journals and applies input to agent id, activating it if need
// be, and returns the input's sequence number in the agent's journal (see
// journal.Machine.DispatchSeq).
func (r *Registry[S, I]) Dispatch(ctx context.Context, id string, input I) (uint64, error) {
	a, release, err := r.Get(ctx, id)
	if err != nil {
		return 0, err
	}
	defer release()
	return a.m.DispatchSeq(ctx, input)
}

func wait(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Identity is who calls, as an HTTP front tells from a request: the owner of
// the agents it creates, and the only one besides an operator who sees and
// touches them.
type Identity struct {
	// Name identifies the caller; it is kept as the owner of the agents
	// it creates.
	Name string
	// Operator sees and touches every agent, whoever owns it.
	Operator bool
}

// May reports whether who may see and touch an agent with info: its owner,
// or an operator.
func (who Identity) May(info journal.AgentInfo) bool {
	return who.Operator || (who.Name != "" && info.Owner == who.Name)
}

// Owned returns the info of agent id if who may see it, and otherwise an
// error wrapping journal.ErrNoAgent, the same for an agent that does not
// exist and for another identity's, so that a front that answers it tells
// nothing of other identities' agents.
func (r *Registry[S, I]) Owned(who Identity, id string) (journal.AgentInfo, error) {
	if err := journal.CheckAgentID(id); err != nil {
		return journal.AgentInfo{}, fmt.Errorf("registry: agent %q: %w", id, journal.ErrNoAgent)
	}
	info, err := r.cfg.Fleet.Info(id)
	if err == nil && !who.May(info) {
		err = journal.ErrNoAgent
	}
	if err != nil {
		return journal.AgentInfo{}, fmt.Errorf("registry: agent %q: %w", id, err)
	}
	return info, nil
}

// ListOwned calls fn with each agent who may see whose id sorts after the
// given one, in order of id, until fn returns an error (ErrStop ends it
// quietly). It walks every agent of the fleet: its cost follows the fleet's
// size, not the caller's share of it.
func (r *Registry[S, I]) ListOwned(who Identity, after string, fn func(id string, info journal.AgentInfo) error) error {
	return r.cfg.Fleet.List(after, func(id string, info journal.AgentInfo) error {
		if !who.May(info) {
			return nil
		}
		return fn(id, info)
	})
}

// observe registers the registry's counts with mp (Config.MeterProvider).
func (r *Registry[S, I]) observe(mp metric.MeterProvider) error {
	m := mp.Meter("github.com/moora-go/moora/automata/registry")
	active, err := m.Int64ObservableGauge("moora.agents.active", metric.WithDescription("Agents active now."), metric.WithUnit("{agent}"))
	if err != nil {
		return err
	}
	activations, err := m.Int64ObservableCounter("moora.agents.activations", metric.WithDescription("Agents activated."), metric.WithUnit("{agent}"))
	if err != nil {
		return err
	}
	deactivations, err := m.Int64ObservableCounter("moora.agents.deactivations", metric.WithDescription("Agents deactivated: idle, evicted, deleted or closed."), metric.WithUnit("{agent}"))
	if err != nil {
		return err
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := r.Stats()
		o.ObserveInt64(active, int64(st.Active))
		o.ObserveInt64(activations, int64(st.Activations))
		o.ObserveInt64(deactivations, int64(st.Deactivations))
		return nil
	}, active, activations, deactivations)
	if err != nil {
		return err
	}
	r.unobserve = reg.Unregister
	return nil
}
