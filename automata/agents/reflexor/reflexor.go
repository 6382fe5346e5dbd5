package reflexor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/agents/reflexor/impl/agent"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
)

// The defaults of Config.
const (
	// DefaultSystem is the brain's system prompt when Config.System is
	// empty.
	DefaultSystem = "You are Reflexor, a helpful assistant. Use the tools when they help."
	// DefaultCompressAfter is Config.CompressAfter's default.
	DefaultCompressAfter = 8
)

// Config is what a Reflexor is made of. Model is required, and Store for
// New; the zero value of every other field is its default.
type Config struct {
	// Model is the brain: the language model that answers (automata/llm:
	// llm.Scripted offline, automata/llm/openai for a real one).
	Model llm.Model
	// Store keeps the conversation's journal: bolt.Open's, or an
	// agent's on NATS JetStream. New recovers the conversation from it,
	// and from then on the agent owns it: Close closes it, and so does New
	// when it fails. NewFleet refuses it: each conversation has its store
	// in FleetConfig.Fleet.
	Store journal.Store
	// System is the brain's system prompt (default DefaultSystem). It is
	// configuration, not state: it is not journaled, and every ask of the
	// brain is sent the System of the Config the agent was made with, so
	// that a program started again with another prompt answers the whole
	// conversation with it from the next ask. (The persistent agent keeps
	// its prompt in its journal instead.)
	System string
	// Tools are the tools the brain may call, and what guards their calls
	// (package automata/toolkit). Nil: none. The names compress_history
	// and load_tool_call are the brain's own.
	Tools *toolkit.Kit
	// CompressAfter is how many messages after the summary's cut make the
	// brain compress the history before it answers (default
	// DefaultCompressAfter; negative: never).
	CompressAfter int
	// Token is the bearer token every client of the handler presents:
	// the page carries it in its address (?token=…). "": none, anyone who
	// reaches the handler talks to the agent (put it behind the host
	// application's own authentication then). NewFleet does not use it.
	Token string
	// Now is the server's clock, which stamps every input with the time
	// it arrives (default time.Now).
	Now func() time.Time
	// Streams, if set, receives the text of the brain's replies as it
	// streams, besides the page: a terminal shows it so. NewFleet does
	// not use it.
	Streams Streams
	// Logger gets a warning for each call of the brain's model that
	// failed, with its error, as the user gets the failed reply (default
	// slog.Default()).
	Logger *slog.Logger
	// Prices is the price table of the brain's models, by the name a
	// model gives itself (llm.Named; "scripted" for llm.Scripted), in US
	// dollars per million tokens. Each call's job prices the call with it
	// and hands in its cost with its tokens (brain-record-usage), so that
	// the journal keeps what each call cost when it was made; a model
	// without a price costs 0. Nil: every call costs 0.
	Prices llm.Prices
	// Budget bounds what the conversation spends on calls of the model,
	// in tokens and in US dollars (by Prices); the zero value: no limit.
	// The brain asks for no more calls once the usage in its state has
	// reached it: the call that crosses it is made (the totals were under
	// it) and counted, then the brain stops, and the user sees
	// budgetExhausted, with the totals and the limits, in the state, until
	// a Budget raised lets the next message be answered. (An ask makes one
	// call, and one more when it compresses the history or loads old tool
	// calls back; the budget is checked before each ask.)
	Budget llm.Budget
	// PageApproves lets the page (a client of the bridge) speak for the
	// approver too, and not only for the user: the person in the chat
	// approves or denies the tool calls whose tools' policies ask for
	// approval (toolkit.Policy.Approval), on a card with the arguments.
	// Default false: the page shows the card, and the server refuses its
	// approval with 403; the operator approves on the devpanel.
	PageApproves bool
	// Options are more options of the machine, after the agent's own
	// (its admission step and its jobs): automata.WithEvents to watch
	// it, automata.WithPurityCheck in tests.
	Options []automata.Option[decl.AgentState, decl.AgentInput]
	// TracerProvider and MeterProvider, if set, trace and measure the
	// agent with OpenTelemetry: its machine (automata.WithTelemetry: a
	// span per input and per job) and its bridge (httpbridge.Config's: a
	// span per POST, continuing the caller's traceparent; the streams).
	// The model and the tools are the caller's: wrap the model with
	// llm.Traced and give the kit's toolkit.Config the same providers,
	// and their spans join the agent's, under the job that called them.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

// withDefaults fills in Config's defaults and checks what is required but
// Store.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Model == nil {
		return cfg, errors.New("reflexor: Config.Model is nil: the brain needs a model")
	}
	if cfg.System == "" {
		cfg.System = DefaultSystem
	}
	if cfg.CompressAfter == 0 {
		cfg.CompressAfter = DefaultCompressAfter
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Tools == nil {
		none, err := toolkit.New(toolkit.Config{})
		if err != nil {
			return cfg, fmt.Errorf("reflexor: an empty toolkit: %w", err)
		}
		cfg.Tools = none
	}
	for _, name := range cfg.Tools.Names() {
		if name == CompressTool || name == LoadTool {
			return cfg, fmt.Errorf("reflexor: Config.Tools has a tool named %q, a name of the brain's own tools (%s, %s): rename it", name, CompressTool, LoadTool)
		}
	}
	return cfg, nil
}

// work is the jobs of an agent of cfg (with its defaults), its brain's text
// streaming into streams.
func (cfg Config) work(streams Streams) work {
	return work{
		model:         cfg.Model,
		system:        cfg.System,
		tools:         cfg.Tools,
		compressAfter: max(cfg.CompressAfter, 0),
		streams:       streams,
		logger:        cfg.Logger,
		prices:        cfg.Prices,
		budget:        cfg.Budget,
		now:           cfg.Now,
	}
}

// options are the machine's options: the server's admission step, the
// jobs, then cfg.Options.
func (cfg Config) options(streams Streams) []automata.Option[decl.AgentState, decl.AgentInput] {
	opts := []automata.Option[decl.AgentState, decl.AgentInput]{
		automata.WithAdmission(stamp(cfg.Now)),
		agent.WithJobs(cfg.work(streams).jobFns()),
	}
	if cfg.TracerProvider != nil || cfg.MeterProvider != nil {
		opts = append(opts, automata.WithTelemetry[decl.AgentState, decl.AgentInput](cfg.TracerProvider, cfg.MeterProvider))
	}
	return append(opts, cfg.Options...)
}

// telemetry gives the bridge's config cfg's providers.
func (cfg Config) telemetry(b *httpbridge.Config[decl.AgentState, decl.AgentInput, decl.ContextOfUser]) {
	b.TracerProvider, b.MeterProvider = cfg.TracerProvider, cfg.MeterProvider
}

// Agent is one Reflexor conversation: its durable machine, recovered from
// Config.Store and working, and the handler that serves it to browsers.
type Agent struct {
	machine *journal.Machine[decl.AgentState, decl.AgentInput]
	bridge  *httpbridge.Bridge[decl.AgentState, decl.AgentInput, decl.ContextOfUser]
	handler http.Handler
}

// New recovers the conversation in cfg.Store — the newest snapshot, then
// the journal after it — and starts the work its state calls for: an
// answer a crash interrupted is asked for again, a tool call without a
// result runs again under the same idempotency key. See Config for what is
// required and the defaults.
func New(cfg Config) (a *Agent, err error) {
	if cfg.Store == nil {
		return nil, errors.New("reflexor: Config.Store is nil: the conversation needs a journal")
	}
	opened := false // from then on, closing the machine closes the store
	defer func() {
		if err != nil && !opened {
			err = errors.Join(err, cfg.Store.Close())
		}
	}()
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	streams := httpbridge.NewStreams(httpbridge.StreamOptions{})
	m, err := journal.Open(cfg.Store, agent.Definition(), journalOptions(), cfg.options(bridgeStreams{streams, cfg.Streams})...)
	if err != nil {
		return nil, fmt.Errorf("reflexor: opening the conversation: %w", err)
	}
	opened = true
	bcfg := bridgeConfig(cfg.PageApproves)
	cfg.telemetry(&bcfg)
	bcfg.Streams = streams
	bcfg.Auth = httpbridge.AllowAll
	if cfg.Token != "" {
		bcfg.Auth = httpbridge.Bearer(cfg.Token)
	}
	b, err := httpbridge.New(m, bcfg)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("reflexor: the bridge: %w", err), m.Close(context.Background()))
	}
	return &Agent{machine: m, bridge: b, handler: handler(b)}, nil
}

// Machine is the agent's durable machine: Dispatch a user's message to it
// (decl.UserSendMessage, whose timestamp the agent stamps), Subscribe to
// its state, read Current. Close the Agent, not the machine.
func (a *Agent) Machine() *journal.Machine[decl.AgentState, decl.AgentInput] {
	return a.machine
}

// Handler serves the conversation to browsers: the page at /, the bridge
// under agent/ (see the package documentation). Mount it under any prefix
// with http.StripPrefix.
func (a *Agent) Handler() http.Handler { return a.handler }

// CloseStreams ends the streams the handler has open, each with its close
// event, for a server to shut down: http.Server.Shutdown waits for the
// requests under way, and a stream does not end by itself. Register it
// with the server's RegisterOnShutdown. Pages reconnect; what they post is
// still served until Close.
func (a *Agent) CloseStreams() { a.bridge.Close() }

// Close ends the handler's streams, stops the agent's jobs (waiting for
// them until ctx ends), takes a snapshot and closes the machine and its
// store.
func (a *Agent) Close(ctx context.Context) error {
	a.bridge.Close()
	return a.machine.Close(ctx)
}

// Idle reports whether state s calls for no work: no answer to ask the
// brain for, no tool call to run. A program that stops once the
// conversation is done (a terminal's, at the end of its input) waits for
// it.
func Idle(s decl.AgentState) bool {
	var w work
	return len(w.brainJobs(s.ContextOfBrain())) == 0 && len(w.toolkitJobs(s.ContextOfToolkit())) == 0
}

// stamp is the server's admission step (seed 000: the backend overwrites
// every input's timestamp): each input is stamped with the time it arrives
// in Unix milliseconds, and always after the newest input the state has
// applied, so that time never runs backwards, whatever a browser's clock or
// a slow job says, and no input is ever rejected as stale. No two inputs
// share a time: two messages sent in the same millisecond are two signals,
// and answering the first is not answering the second (the brain answers
// the signals newer than calledBrainAt). Under a burst of inputs the stamps
// run ahead of the clock by at most one millisecond per input.
func stamp(now func() time.Time) func(decl.AgentState, decl.AgentInput) (decl.AgentInput, error) {
	return func(s decl.AgentState, in decl.AgentInput) (decl.AgentInput, error) {
		ts := max(now().UnixMilli(), max(s.UserUpdatedAt, s.BrainUpdatedAt, s.ToolkitUpdatedAt)+1)
		t, ok := in.(decl.Timestamped)
		if !ok {
			return in, fmt.Errorf("reflexor: no timestamp to stamp on %T", in)
		}
		return t.WithTimestamp(ts), nil
	}
}

// journalOptions are the agent's journal settings.
func journalOptions() journal.Options[decl.AgentState, decl.AgentInput] {
	return journal.Options[decl.AgentState, decl.AgentInput]{
		Codec:         journal.JSONGob[decl.AgentState](decl.DecodeInput),
		SnapshotEvery: 1_000,
		// The brain's and the tools' answers carry their job's key, so
		// that a fork of a conversation is answered from what they
		// answered (journal.Machine.Fork).
		JobKeys: true,
	}
}
