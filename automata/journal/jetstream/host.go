package jetstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// HostOptions configure a Host.
type HostOptions[S, I any] struct {
	// ID names the host; it is the owner recorded in leases and
	// owner-epoch records. Required, and unique among running hosts.
	ID string
	// Config names the JetStream resources; the same for every host.
	Config Config
	// Definition is the agents' machine, and Journal the options of their
	// journals (Codec required).
	Definition automata.Definition[S, I]
	Journal    journal.Options[S, I]
	// Options returns the automata options of an agent as it is opened:
	// its effects, jobs, admission, events.
	Options func(agent string) []automata.Option[S, I]
	// OnChange, if set, is called when the host starts running an agent
	// (owned true) and when it has stopped running one (owned false, with
	// why: fenced, lease lost, failed, or nil on Close).
	OnChange func(agent string, owned bool, err error)
	// Logger receives what has no caller: failed claims, dropped agents.
	// Default: slog.Default().
	Logger *slog.Logger
}

// Host runs the agents it owns, out of all the agents listed in the agents
// bucket (Add), and claims every agent whose lease has expired or been
// released: it takes the lease, fences the journal with an owner-epoch
// record, and opens the agent's journal.Machine, which replays the newest
// snapshot and the journal after it and restarts the jobs the state calls
// for (at least once: pass automata.JobKey as the idempotency key).
//
// An agent whose store is fenced (another host took it over while this one
// was paused or cut off) or whose lease cannot be renewed in time is
// dropped: its machine is closed, its jobs cancelled, and whatever they
// dispatch later is refused, never journaled.
//
// Dispatch to an agent the host does not run is refused with a
// *NotOwnerError naming the owner: requests are not routed between hosts.
// A caller routes by asking Owner, or by sending to any host and retrying
// the one named in the error.
type Host[S, I any] struct {
	opts  HostOptions[S, I]
	cfg   Config
	nc    *nats.Conn
	res   resources
	log   *slog.Logger
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	claim chan string // agents to try to claim now

	mu     sync.Mutex // guards agents and closed
	agents map[string]*hosted[S, I]
	closed bool
}

type hosted[S, I any] struct {
	m     *journal.Machine[S, I]
	store *Store
	done  chan struct{} // closed when the agent has been dropped or closed
}

// StartHost starts a host on nc, which it uses and does not close.
func StartHost[S, I any](ctx context.Context, nc *nats.Conn, opts HostOptions[S, I]) (*Host[S, I], error) {
	if opts.ID == "" {
		return nil, errors.New("jetstream: HostOptions.ID is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Journal.Logger == nil {
		opts.Journal.Logger = opts.Logger
	}
	cfg := opts.Config.withDefaults()
	res, err := setup(ctx, nc, cfg)
	if err != nil {
		return nil, err
	}
	h := &Host[S, I]{opts: opts, cfg: cfg, nc: nc, res: res, log: opts.Logger.With("host", opts.ID),
		claim: make(chan string, 64), agents: map[string]*hosted[S, I]{}}
	h.ctx, h.stop = context.WithCancel(context.Background())
	// Expired and released leases are delete markers: watch them, so that
	// an orphan is claimed as soon as it is one.
	watch, err := res.leases.WatchAll(h.ctx, js.MetaOnly(), js.UpdatesOnly())
	if err != nil {
		h.stop()
		return nil, fmt.Errorf("jetstream: watching the leases: %w", err)
	}
	h.wg.Go(func() { h.watchLeases(watch) })
	h.wg.Go(h.loop)
	return h, nil
}

// Add lists agent among those hosts run; some host claims it.
func (h *Host[S, I]) Add(ctx context.Context, agent string) error {
	if err := checkAgent(agent); err != nil {
		return err
	}
	if _, err := h.res.index.Put(ctx, agent, nil); err != nil {
		return fmt.Errorf("jetstream: adding agent %s: %w", agent, err)
	}
	h.poke(agent)
	return nil
}

func (h *Host[S, I]) poke(agent string) {
	select {
	case h.claim <- agent:
	default: // the next round of the loop sees it
	}
}

func (h *Host[S, I]) watchLeases(w js.KeyWatcher) {
	defer w.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil && e.Operation() != js.KeyValuePut {
				h.poke(e.Key())
			}
		}
	}
}

// loop claims orphans: those a watch event names at once, and every agent
// without a live lease every TTL/4 or so.
func (h *Host[S, I]) loop() {
	for {
		wait := h.cfg.TTL/4 + time.Duration(rand.Int64N(int64(h.cfg.TTL/8)+1))
		select {
		case <-h.ctx.Done():
			return
		case agent := <-h.claim:
			h.tryClaim(agent)
		case <-time.After(wait):
			ctx, cancel := context.WithTimeout(h.ctx, h.cfg.Timeout)
			keys, err := h.res.index.ListKeys(ctx)
			if err != nil {
				cancel()
				continue
			}
			var agents []string
			for k := range keys.Keys() {
				agents = append(agents, k)
			}
			cancel()
			for _, a := range agents {
				h.tryClaim(a)
			}
		}
	}
}

func (h *Host[S, I]) owns(agent string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.agents[agent] != nil
}

// tryClaim claims agent if no one holds its lease, and runs it.
func (h *Host[S, I]) tryClaim(agent string) {
	if h.owns(agent) || h.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(h.ctx, h.cfg.Timeout)
	defer cancel()
	if e, err := h.res.leases.Get(ctx, agent); err == nil && e.Operation() == js.KeyValuePut {
		return // held
	}
	store, err := Claim(ctx, h.nc, h.cfg, agent, h.opts.ID)
	if err != nil {
		if !errors.As(err, new(*NotOwnerError)) {
			h.log.Warn("jetstream: claiming an agent failed", "agent", agent, "err", err)
		}
		return
	}
	var options []automata.Option[S, I]
	if h.opts.Options != nil {
		options = h.opts.Options(agent)
	}
	m, err := journal.Open(store, h.opts.Definition, h.opts.Journal, options...)
	if err != nil {
		h.log.Error("jetstream: opening a claimed agent failed; releasing it", "agent", agent, "err", err)
		store.Close()
		return
	}
	a := &hosted[S, I]{m: m, store: store, done: make(chan struct{})}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		m.Close(context.Background())
		return
	}
	h.agents[agent] = a
	h.mu.Unlock()
	h.log.Info("jetstream: running agent", "agent", agent)
	if h.opts.OnChange != nil {
		h.opts.OnChange(agent, true, nil)
	}
	h.wg.Go(func() { h.supervise(agent, a) })
}

// supervise drops agent when its store is fenced or its machine fails, and
// closes it when the host closes.
func (h *Host[S, I]) supervise(agent string, a *hosted[S, I]) {
	var why error
	select {
	case <-a.store.Fenced():
		why = a.store.Err()
	case <-a.m.Done():
		why = a.m.Err()
	case <-h.ctx.Done():
	}
	h.mu.Lock()
	delete(h.agents, agent)
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Timeout)
	err := a.m.Close(ctx) // cancels the jobs; Close's snapshot is refused once fenced
	cancel()
	if why != nil {
		h.log.Warn("jetstream: dropped agent", "agent", agent, "err", why)
	} else if err != nil && !errors.Is(err, ErrFenced) {
		h.log.Warn("jetstream: closing agent", "agent", agent, "err", err)
	}
	close(a.done)
	if h.opts.OnChange != nil {
		h.opts.OnChange(agent, false, why)
	}
}

// Dispatch dispatches input to agent, as journal.Machine.Dispatch does, if
// this host runs it; otherwise it returns a *NotOwnerError naming the owner.
func (h *Host[S, I]) Dispatch(ctx context.Context, agent string, input I) error {
	h.mu.Lock()
	a := h.agents[agent]
	h.mu.Unlock()
	if a == nil {
		return &NotOwnerError{Agent: agent, Owner: h.Owner(ctx, agent)}
	}
	return a.m.Dispatch(ctx, input)
}

// Owner returns the id of the host holding agent's lease, or "".
func (h *Host[S, I]) Owner(ctx context.Context, agent string) string {
	e, err := h.res.leases.Get(ctx, agent)
	if err != nil {
		return ""
	}
	return string(e.Value())
}

// Machine returns the machine of agent if this host runs it.
func (h *Host[S, I]) Machine(agent string) (*journal.Machine[S, I], bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.agents[agent]
	if a == nil {
		return nil, false
	}
	return a.m, true
}

// Agents returns the agents this host runs, sorted.
func (h *Host[S, I]) Agents() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var names []string
	for name := range h.agents {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Close stops claiming, closes every agent (snapshot taken, jobs
// cancelled) and releases their leases, so that other hosts take them over
// at once.
func (h *Host[S, I]) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.stop()
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("jetstream: closing host %s: %w", h.opts.ID, ctx.Err())
	}
}
