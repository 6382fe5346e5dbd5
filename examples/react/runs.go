package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/registry"
	"github.com/moora-go/moora/examples/react/decl"
	"github.com/moora-go/moora/examples/react/impl/agent"
	"github.com/moora-go/moora/examples/react/impl/transitions"
)

// Agent is an active run's agent, as the registry lends it.
type Agent = registry.Agent[decl.AgentState, decl.AgentInput]

// runs are the command's runs, each an agent of its own in a fleet (one
// bbolt file, -data/agents.db), by id (agentID), owned by the operator,
// activated on first use and deactivated when idle (package
// automata/registry). An agent's state is that of the model, which can hold
// many runs: a run's agent holds one, the admission step (oneRun) refusing
// the inputs of any other.
//
// Runs proceed in parallel, at most maxRuns at once (turns): a run's start
// job takes a turn before it plans, and the run gives it back when it ends,
// or when its agent is deactivated; a run waiting for the user's reply keeps
// it.
//
// Each agent runs under the configuration in force (Config): an agent
// activated with a run in progress, or not started yet, is given it as an
// agent-configure input when its own is another, and reconfigure gives a
// new one to every such agent active.
type runs struct {
	reg    *registry.Registry[decl.AgentState, decl.AgentInput]
	turns  *turns
	log    *slog.Logger
	config func() decl.Config

	mu          sync.Mutex
	active      map[string]*journal.Machine[decl.AgentState, decl.AgentInput] // by agent id
	configuring sync.Mutex                                                    // see configure
}

// runsConfig configures openRuns. Fleet and Work are required.
type runsConfig struct {
	Fleet journal.Fleet
	Work  Work
	// MaxRuns bounds the runs in progress at once; 0 or less: no bound.
	MaxRuns int
	// IdleTimeout and Now are the registry's (registry.Config): how long
	// an agent with nothing to do stays active, on which clock; zero: the
	// registry's defaults.
	IdleTimeout time.Duration
	Now         func() time.Time
	// Open opens an agent on its store with the options given, as
	// journal.Open does with the agent's definition: devpanel's
	// Fleet.OpenAgent gives each agent its panel (and its id to its
	// spans). Nil: journal.Open.
	Open func(id string, store journal.Store, jopts journal.Options[decl.AgentState, decl.AgentInput], opts ...automata.Option[decl.AgentState, decl.AgentInput]) (*journal.Machine[decl.AgentState, decl.AgentInput], error)
	// Options, if set, are more options of agent id, after the command's.
	Options func(id string) []automata.Option[decl.AgentState, decl.AgentInput]
	// Logger receives the errors of deactivations. Nil: slog.Default().
	Logger *slog.Logger
	// Config returns the configuration in force. Nil: the built-in one.
	Config func() decl.Config
}

// openRuns starts the registry of the runs over cfg.Fleet. Close the runs
// before the fleet.
func openRuns(cfg runsConfig) (*runs, error) {
	rs := &runs{turns: &turns{max: cfg.MaxRuns}, log: cfg.Logger, config: cfg.Config,
		active: map[string]*journal.Machine[decl.AgentState, decl.AgentInput]{}}
	if rs.log == nil {
		rs.log = slog.Default()
	}
	if rs.config == nil {
		rs.config = builtinConfig
	}
	open := cfg.Open
	if open == nil {
		open = func(_ string, store journal.Store, jopts journal.Options[decl.AgentState, decl.AgentInput], opts ...automata.Option[decl.AgentState, decl.AgentInput]) (*journal.Machine[decl.AgentState, decl.AgentInput], error) {
			return journal.Open(store, agent.Definition(), jopts, opts...)
		}
	}
	var err error
	rs.reg, err = registry.New(registry.Config[decl.AgentState, decl.AgentInput]{
		Fleet:         cfg.Fleet,
		IdleTimeout:   cfg.IdleTimeout,
		MeterProvider: cfg.Work.Telemetry.Meter,
		Now:           cfg.Now,
		Logger:        cfg.Logger,
		Open: func(id string, store journal.Store) (*journal.Machine[decl.AgentState, decl.AgentInput], error) {
			turn := &turn{turns: rs.turns}
			work := cfg.Work
			work.Begin = turn.take
			jopts, opts := agentOptions(work, time.Now)
			// What goes wrong is logged, and traced when telemetry is
			// on, with the agent's id.
			opts = append(opts, automata.WithAdmission(oneRun(id)),
				automata.WithLogger[decl.AgentState, decl.AgentInput](rs.log),
				automata.WithTelemetryAttributes[decl.AgentState, decl.AgentInput](attribute.String("moora.agent.id", id)))
			if t := cfg.Work.Telemetry; t.Tracer != nil || t.Meter != nil {
				opts = append(opts, automata.WithTelemetry[decl.AgentState, decl.AgentInput](t.Tracer, t.Meter))
			}
			if cfg.Options != nil {
				opts = append(opts, cfg.Options(id)...)
			}
			m, err := open(id, store, jopts, opts...)
			if err != nil {
				return nil, err
			}
			// A run in progress when its agent was deactivated (the
			// command stopped) has its turn already: it started.
			if inProgress(m.Current()) {
				turn.claim()
			}
			m.Subscribe(func(s decl.AgentState) {
				if Idle(s) {
					turn.give()
				}
			})
			rs.mu.Lock()
			rs.active[id] = m
			rs.mu.Unlock()
			go func() {
				<-m.Done()
				turn.end()
				rs.mu.Lock()
				if rs.active[id] == m {
					delete(rs.active, id)
				}
				rs.mu.Unlock()
			}()
			rs.configure(id, m)
			return m, nil
		},
	})
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// configure gives agent id the configuration in force, unless it has it,
// or its run is over: a run over keeps the configuration it ran under. The
// configuration is read, and dispatched, under configuring: one put in
// force meanwhile is dispatched after it, never before.
func (rs *runs) configure(id string, m *journal.Machine[decl.AgentState, decl.AgentInput]) {
	rs.configuring.Lock()
	defer rs.configuring.Unlock()
	cfg := rs.config()
	s := m.Current()
	if s.Config.Digest == cfg.Digest && s.Config.Source == cfg.Source || len(s.Requests) > 0 && Idle(s) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Dispatch(ctx, decl.AgentConfigure{Config: cfg}); err != nil && !errors.Is(err, automata.ErrClosed) {
		rs.log.Error("react: configuring a run", "agent", id, "err", err)
	}
}

// reconfigure gives the configuration in force to every active agent whose
// run is in progress or not started yet.
func (rs *runs) reconfigure() {
	rs.mu.Lock()
	active := make(map[string]*journal.Machine[decl.AgentState, decl.AgentInput], len(rs.active))
	for id, m := range rs.active {
		active[id] = m
	}
	rs.mu.Unlock()
	for id, m := range active {
		rs.configure(id, m)
	}
}

// agentID returns the id of the agent of run runID: the run id itself when
// it may name an agent (journal.CheckAgentID: ASCII letters, digits, '-'
// and '_', at most 64 bytes), else "run_" and 24 hex digits of its SHA-256
// (a run id may have a '.', which an agent id may not).
func agentID(runID string) string {
	if journal.CheckAgentID(runID) == nil {
		return runID
	}
	sum := sha256.Sum256([]byte(runID))
	return "run_" + hex.EncodeToString(sum[:12])
}

// errOtherRun is the admission's refusal of an input about a run the agent
// does not run.
var errOtherRun = errors.New("another run's input")

// oneRun is the admission step of agent id, which runs one run: the run
// whose agent id is id, and once asked for, the run it was asked for
// (another run id of the same agent id is refused); a reply must answer
// that run.
func oneRun(id string) func(decl.AgentState, decl.AgentInput) (decl.AgentInput, error) {
	return func(s decl.AgentState, in decl.AgentInput) (decl.AgentInput, error) {
		switch in := in.(type) {
		case decl.UserRunTask:
			if agentID(in.RunID) != id {
				return in, fmt.Errorf("%w: run %q has an agent of its own, %q, not this one, %q", errOtherRun, in.RunID, agentID(in.RunID), id)
			}
			if len(s.Requests) > 0 && s.Requests[0].RunID != in.RunID {
				return in, fmt.Errorf("%w: agent %q runs run %q, not %q", errOtherRun, id, s.Requests[0].RunID, in.RunID)
			}
		case decl.UserReply:
			if !slices.ContainsFunc(s.Requests, func(r decl.TaskRequest) bool { return r.RunID == in.RunID }) {
				return in, fmt.Errorf("%w: agent %q has no run %q to reply to", errOtherRun, id, in.RunID)
			}
		}
		return in, nil
	}
}

// inProgress reports whether a run has started and not ended.
func inProgress(s decl.AgentState) bool {
	switch s.Phase {
	case decl.PhasePlan, decl.PhaseAct, decl.PhaseReflect, decl.PhaseWaiting:
		return true
	}
	return transitions.Recovering(s.Phase, s.RunID, s.Runs)
}

// open returns the agent of run runID, activated, creating it (owned by the
// operator) if the fleet has none; the agent stays active at least until
// release is called. A run asked for again finds its agent.
func (rs *runs) open(ctx context.Context, runID string) (*Agent, func(), error) {
	id := agentID(runID)
	if _, err := rs.reg.Create(id, httpbridge.OperatorName); err != nil && !errors.Is(err, journal.ErrAgentExists) {
		return nil, nil, err
	}
	return rs.reg.Get(ctx, id)
}

// get returns the agent of run runID, activated, or an error wrapping
// journal.ErrNoAgent when there is none.
func (rs *runs) get(ctx context.Context, runID string) (*Agent, func(), error) {
	return rs.reg.Get(ctx, agentID(runID))
}

// resume activates, one after another, the agents of the runs that a stop
// interrupted (in progress, or asked for and not started), so that they go
// on: their jobs keep them active until they end. It activates every agent
// of the fleet to look; the others are deactivated again once idle. keep,
// if set, is given each agent resumed with its lease, to release; resume
// returns how many agents the fleet has.
func (rs *runs) resume(ctx context.Context, keep func(a *Agent, release func())) (agents int, err error) {
	var ids []string
	err = rs.reg.List("", func(id string, _ journal.AgentInfo) error {
		ids = append(ids, id)
		return nil
	})
	if err != nil && !errors.As(err, new(*journal.CorruptError)) {
		return 0, err
	}
	if err != nil {
		// A damaged agent is its own: List listed the others.
		rs.log.Error("react: runs passed over at start", "err", err)
	}
	for _, id := range ids {
		a, release, err := rs.reg.Get(ctx, id)
		if errors.Is(err, journal.ErrNoAgent) {
			continue // deleted meanwhile
		}
		var ce *journal.CorruptError
		if errors.As(err, &ce) || errors.Is(err, registry.ErrTooManyActive) {
			// One run's damage, or no room for it now, stops none of
			// the others; it goes on when someone opens it.
			rs.log.Error("react: a run not resumed at start", "agent", id, "err", err)
			continue
		}
		if err != nil {
			return len(ids), err
		}
		if keep != nil && !Idle(a.Machine().Current()) {
			keep(a, release)
		} else {
			release()
		}
	}
	return len(ids), nil
}

// close deactivates every active agent: each one's jobs are cancelled and
// a snapshot taken. The runs in progress go on at the next resume.
func (rs *runs) close(ctx context.Context) error { return rs.reg.Close(ctx) }

// turns bounds the runs in progress at once (-max-runs): a run takes a turn
// before it plans its first step and gives it back when it ends. The runs
// that ask for a turn when none is free wait, and get one in the order they
// asked.
type turns struct {
	mu      sync.Mutex
	max     int // 0 or less: no bound
	taken   int
	waiting []chan struct{}
}

// take waits for a turn, until ctx ends.
func (t *turns) take(ctx context.Context) error {
	t.mu.Lock()
	if t.max <= 0 || t.taken < t.max && len(t.waiting) == 0 {
		t.taken++
		t.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	t.waiting = append(t.waiting, ready)
	t.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	if i := slices.Index(t.waiting, ready); i >= 0 {
		t.waiting = slices.Delete(t.waiting, i, i+1)
		t.mu.Unlock()
		return ctx.Err()
	}
	t.mu.Unlock()
	t.give() // handed over meanwhile
	return ctx.Err()
}

// claim takes a turn at once, even past the bound: a run resumed in
// progress had one.
func (t *turns) claim() {
	t.mu.Lock()
	t.taken++
	t.mu.Unlock()
}

// give gives a turn back, handing it over to the oldest run waiting.
func (t *turns) give() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.taken--
	for len(t.waiting) > 0 && (t.max <= 0 || t.taken < t.max) {
		t.taken++
		close(t.waiting[0])
		t.waiting = t.waiting[1:]
	}
}

// inUse returns the turns taken.
func (t *turns) inUse() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.taken
}

// turn is the turn of one activation of a run's agent: taken at most once
// at a time, and given back when the run ends or the agent is deactivated.
type turn struct {
	turns *turns
	mu    sync.Mutex
	held  bool
	ended bool // the agent was deactivated: it takes no turn any more
}

// take is the start job's Work.Begin: it waits for a turn, unless the run
// has one.
func (u *turn) take(ctx context.Context) error {
	u.mu.Lock()
	held := u.held
	u.mu.Unlock()
	if held {
		return nil
	}
	if err := u.turns.take(ctx); err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.held || u.ended {
		u.turns.give()
		if u.ended {
			return errors.New("react: the run's agent was deactivated")
		}
		return nil
	}
	u.held = true
	return nil
}

// claim takes a turn at once for a run resumed in progress.
func (u *turn) claim() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.held && !u.ended {
		u.held = true
		u.turns.claim()
	}
}

// give gives the turn back once the run has ended.
func (u *turn) give() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.held {
		u.held = false
		u.turns.give()
	}
}

// end gives the turn back once the agent is deactivated, and takes no
// other.
func (u *turn) end() {
	u.mu.Lock()
	u.ended = true
	u.mu.Unlock()
	u.give()
}
