package persistent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/agents/persistent/decl"
	"github.com/moora-go/moora/automata/agents/persistent/impl/agent"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
)

// Config is what New makes an agent of. Model and Store are required; every
// other field has a default.
type Config struct {
	// System is the system prompt, the instructions the llm is given before
	// the conversation. New sets it when the agent's differs (on the first
	// run, or when it changed since the last): it is an input of the
	// journal like any other. Empty leaves the agent's as it is. It
	// applies from the next call of the llm: a call New resumes (cut by a
	// crash) is made again as it was first made, with the prompt it had.
	System string
	// Tools are the tools the llm may call, and what guards their calls
	// (package automata/toolkit). Nil: none.
	Tools *toolkit.Kit
	// Model is the llm: llm.Scripted offline, or a provider such as
	// automata/llm/openai.
	Model llm.Model
	// Store keeps the agent's journal and snapshots: bolt.Open's
	// file, or an agent's journal on NATS JetStream. The agent owns it from
	// New on, and Close closes it (so does New when it fails).
	Store journal.Store
	// PromptBytes bounds the conversation each call of the llm is sent
	// (see Prompt). Default DefaultPromptBytes.
	PromptBytes int
	// Now tells the time messages are stamped with. Default time.Now.
	Now func() time.Time
	// Token is the bearer token that Handler's clients present
	// (httpbridge.Bearer). Empty: Handler accepts every request
	// (httpbridge.AllowAll), for a loopback address or behind a proxy
	// that authenticates.
	Token string
	// Logger gets a warning for each call of the llm that failed, with its
	// error, as the conversation gets the failed reply (default
	// slog.Default()).
	Logger *slog.Logger
	// Options are given to the agent's machine after its own (the
	// admission step, the jobs, the events Resumed and Wait follow):
	// automata.WithEvents to watch it, automata.WithJobGate to hold its
	// jobs until the program is ready for what they add.
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

// Agent is a running persistent agent: its state is in the journal, and
// the work that state calls for runs as jobs. Its methods are safe for
// concurrent use.
type Agent struct {
	m      *journal.Machine[decl.AgentState, decl.AgentInput]
	work   work
	bridge *httpbridge.Bridge[decl.AgentState, decl.AgentInput, decl.ContextOfUser]
	// closeOnce makes Close's work happen once; closeErr is what it
	// returned.
	closeOnce sync.Once
	closeErr  error

	// mu guards resumed, failed and changed. resumed are the jobs started
	// while New opened the journal. failed holds the error of each job
	// that failed, by key, until a job of that key starts again or Wait
	// finds that the state no longer calls for it. changed is closed, and
	// replaced, when a state is applied or a job fails: what Wait waits on.
	mu      sync.Mutex
	resumed []string
	failed  map[string]error
	changed chan struct{}
}

// New recovers the agent from cfg.Store — the newest snapshot and the
// journal after it, records of earlier versions of the spec migrated as
// they are read — starts the work its state calls for (an llm call or tool
// calls that a crash cut: Resumed lists them), sets cfg.System, and serves
// it at Handler.
func New(cfg Config) (a *Agent, err error) {
	if cfg.Store == nil {
		return nil, errors.New("persistent: no store")
	}
	opened := false
	defer func() {
		if err != nil && !opened {
			err = errors.Join(err, cfg.Store.Close())
		}
	}()
	if cfg.Model == nil {
		return nil, errors.New("persistent: no model")
	}
	kit := cfg.Tools
	if kit == nil {
		if kit, err = toolkit.New(toolkit.Config{}); err != nil {
			return nil, fmt.Errorf("persistent: %w", err)
		}
	}
	a = &Agent{
		work: work{
			model:       cfg.Model,
			kit:         kit,
			tools:       kit.LLMTools(),
			now:         cfg.Now,
			promptBytes: cfg.PromptBytes,
			logger:      cfg.Logger,
		},
		failed:  map[string]error{},
		changed: make(chan struct{}),
	}
	if a.work.now == nil {
		a.work.now = time.Now
	}
	if a.work.promptBytes <= 0 {
		a.work.promptBytes = DefaultPromptBytes
	}
	// opening is true while Open starts the jobs of the recovered state:
	// from Open's start to the first input applied after it (a resumed job
	// that ends fast dispatches one while Open has yet to return, and the
	// jobs that input calls for are not resumed ones).
	var opening atomic.Bool
	opening.Store(true)
	opts := []automata.Option[decl.AgentState, decl.AgentInput]{
		automata.WithAdmission(a.work.stamp),
		agent.WithJobs(a.work.jobFns()),
		automata.WithEvents(func(e automata.Event[decl.AgentState, decl.AgentInput]) {
			if e.Kind == automata.InputReceived || e.Kind == automata.InputRejected {
				opening.Store(false)
			}
			a.event(e, opening.Load())
		}),
	}
	if cfg.TracerProvider != nil || cfg.MeterProvider != nil {
		opts = append(opts, automata.WithTelemetry[decl.AgentState, decl.AgentInput](cfg.TracerProvider, cfg.MeterProvider))
	}
	a.m, err = journal.Open(cfg.Store, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
		Codec:         journal.JSONGob[decl.AgentState](decl.DecodeInput),
		SnapshotEvery: 1_000,
	}, append(opts, cfg.Options...)...)
	opening.Store(false)
	if err != nil {
		return nil, fmt.Errorf("persistent: opening the journal: %w", err)
	}
	opened = true
	defer func() {
		if err != nil {
			err = errors.Join(err, a.m.Close(context.Background()))
		}
	}()
	auth := httpbridge.AllowAll
	if cfg.Token != "" {
		auth = httpbridge.Bearer(cfg.Token)
	}
	a.bridge, err = httpbridge.New(a.m, httpbridge.Config[decl.AgentState, decl.AgentInput, decl.ContextOfUser]{
		Decode:  decl.DecodeClientInput,
		View:    decl.AgentState.ContextOfUser,
		Auth:    auth,
		InputID: inputID,
		// Over MCP too, at mcp: for MCP clients (Claude Desktop, IDEs,
		// other agents).
		Fronts: map[string]httpbridge.Front[decl.AgentState, decl.AgentInput, decl.ContextOfUser]{"/mcp": mcpFront()},

		TracerProvider: cfg.TracerProvider,
		MeterProvider:  cfg.MeterProvider,
	})
	if err != nil {
		return nil, fmt.Errorf("persistent: %w", err)
	}
	a.m.Subscribe(func(decl.AgentState) { a.signal() })
	if cfg.System != "" && a.m.Current().SystemPrompt != cfg.System {
		if err := a.m.Dispatch(context.Background(), decl.SetSystemPrompt{Content: cfg.System}); err != nil {
			a.bridge.Close()
			return nil, fmt.Errorf("persistent: setting the system prompt: %w", err)
		}
	}
	return a, nil
}

// inputID is the id a client gives an input, for the bridge to answer a
// retry as it answered the first: a user message's.
func inputID(in decl.AgentInput) string {
	if in, ok := in.(decl.SendUserMessage); ok {
		return in.Message.ID
	}
	return ""
}

// event keeps the jobs started while the journal opens, for Resumed, and
// the errors of the jobs that fail, for Wait.
func (a *Agent) event(e automata.Event[decl.AgentState, decl.AgentInput], opening bool) {
	switch e.Kind {
	case automata.EffectStarted:
		a.mu.Lock()
		if opening {
			a.resumed = append(a.resumed, e.Key)
		}
		delete(a.failed, e.Key)
		a.mu.Unlock()
	case automata.EffectFailed:
		a.mu.Lock()
		a.failed[e.Key] = fmt.Errorf("%s failed: %w", e.Key, e.Err)
		a.mu.Unlock()
		a.signal()
	}
}

// signal wakes the Waits.
func (a *Agent) signal() {
	a.mu.Lock()
	defer a.mu.Unlock()
	close(a.changed)
	a.changed = make(chan struct{})
}

// Send dispatches a message of the user's, typed at channel ("terminal",
// "api"), and returns once it is in the journal. The agent gives it its
// id and time; the llm's answer comes as jobs do their work: Wait for it,
// or Subscribe.
func (a *Agent) Send(ctx context.Context, channel, text string) error {
	return a.m.Dispatch(ctx, decl.SendUserMessage{Message: decl.UserMessage{Content: text, Channel: channel}})
}

// Wait waits until the agent is Idle, everything it was sent answered, and
// returns nil then: a call of the llm that failed is answered too, with a
// failed reply (decl.AssistantMessage's Error). It returns the error of a
// job that failed otherwise, which is not tried again until the state
// changes or the agent is opened again, or ctx's error when ctx ends first.
func (a *Agent) Wait(ctx context.Context) error {
	for {
		// changed is taken before the state is read: a state applied
		// after the read closes it, and the loop reads again.
		a.mu.Lock()
		changed := a.changed
		a.mu.Unlock()
		s := a.m.Current()
		if Idle(s) {
			return nil
		}
		wanted := a.work.keys(s)
		a.mu.Lock()
		var failed []string
		for key := range a.failed {
			if !wanted[key] {
				delete(a.failed, key) // work the state no longer calls for
				continue
			}
			failed = append(failed, key)
		}
		slices.Sort(failed)
		var err error
		for _, key := range failed {
			err = errors.Join(err, a.failed[key])
		}
		a.mu.Unlock()
		if err != nil {
			return err
		}
		select {
		case <-changed:
		case <-a.m.Done():
			return errors.Join(errors.New("persistent: the agent stopped"), a.m.Err())
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// State returns the agent's current state: the conversation (Conversation
// puts its messages in order) and the system prompt.
func (a *Agent) State() decl.AgentState { return a.m.Current() }

// Subscribe calls fn with the current state, then with the state after each
// input, in order, on the goroutine applying them: fn must not wait for the
// agent.
func (a *Agent) Subscribe(fn func(decl.AgentState)) (unsubscribe func()) { return a.m.Subscribe(fn) }

// Resumed returns the keys of the jobs New started on the state it
// recovered: the work that a crash, or a Close during the work, cut
// (llm/llm-{messageId}, toolkit/tool-{assistantMessageId}-{toolCallId}),
// done again under the same keys.
func (a *Agent) Resumed() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.resumed)
}

// Machine returns the agent's durable machine, for what the methods of
// Agent do not do: dispatching an input of any actor, reading the journal
// (Inputs, StateAt), mounting automata/devpanel.
func (a *Agent) Machine() *journal.Machine[decl.AgentState, decl.AgentInput] { return a.m }

// Handler returns the agent's HTTP interface, package automata/httpbridge's
// bridge: POST inputs of the user's (other actors' inputs are refused),
// GET state, the user's view of the state (its ContextOfUser) as server-sent
// events, GET client.js, the client module; and mcp, the agent over MCP
// Streamable HTTP for MCP clients (the user's inputs as tools, of which
// send-user-message may wait for the reply, "waitFor": "replied"; the
// view as the resource agent://self/state; see
// automata/httpbridge/mcpserve). Mount it under any prefix with
// http.StripPrefix:
//
//	mux.Handle("/chat/", http.StripPrefix("/chat", a.Handler()))
//
// Its clients present Config.Token as a bearer token.
func (a *Agent) Handler() http.Handler { return a.bridge }

// CloseStreams ends the streams the Handler has open, each with its close
// event, for a server to shut down: http.Server.Shutdown waits for the
// requests under way, and a stream does not end by itself. Register it
// with the server's RegisterOnShutdown. Clients reconnect; what they post
// is still served until Close.
func (a *Agent) CloseStreams() { a.bridge.Close() }

// Close ends the Handler's streams, stops the agent — the jobs under way
// are cancelled, to be done again by the next New on the store; Close
// waits for them until ctx ends — takes a snapshot and closes the store.
// Closing it again returns what the first Close did.
func (a *Agent) Close(ctx context.Context) error {
	a.closeOnce.Do(func() {
		a.bridge.Close()
		a.closeErr = a.m.Close(ctx)
	})
	return a.closeErr
}
