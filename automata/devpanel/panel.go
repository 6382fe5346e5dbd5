package devpanel

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/internal/jsonpatch"
	"github.com/moora-go/moora/automata/internal/wire"
	"github.com/moora-go/moora/automata/journal"
)

//go:embed web
var webFiles embed.FS

// Agent is what the panel needs of an agent: a durable one, as
// *journal.Machine is, whose journal the timeline and time travel read.
type Agent[S, I any] interface {
	Current() S
	Seq() uint64
	StateAt(seq uint64) (S, error)
	Inputs(from, to uint64) ([]journal.Entry[I], error)
	Dispatch(ctx context.Context, input I) error
	Subscribe(fn func(state S)) (unsubscribe func())
}

// Config configures a Panel. Definition, Decode, Auth and InputSchema are
// required.
type Config[S, I any] struct {
	// Definition is the agent's pure machine (agent.Definition()): the
	// panel folds the journal's inputs with it to show what each changed.
	Definition automata.Definition[S, I]
	// Decode decodes and validates an input sent from the form: the
	// generated decl.DecodeClientInput, which accepts absent the
	// properties the spec marks readOnly, for the admission step to
	// assign (decl.DecodeInput requires them).
	Decode func(data []byte) (I, error)
	// InputSchema is the JSON Schema document of the inputs: one schema
	// per input type under "inputs", the types they share under "$defs",
	// as agentgen generates it: decl.InputSchema(). The page makes
	// its form from it, with the fields in the order of each schema's
	// "properties" in the document (it is served as it is given), which
	// agentgen writes in the order of the spec.
	InputSchema []byte
	// Auth accepts or refuses a request (its error is the 401 message),
	// as in package httpbridge: httpbridge.Bearer(token), or the program's
	// own. The page's files need none; everything else does.
	Auth func(r *http.Request) error

	// Jobs returns the keys of the jobs a state calls for, as the agent's
	// jobs functions would return them (with the actors' prefixes). It is
	// called on states of the past and never runs a job. Optional: without
	// it, the timeline and time travel show no jobs.
	Jobs func(state S) []string
	// Actor names the actor that dispatched an input, for the timeline's
	// filter. Optional.
	Actor func(input I) string
	// Notes labels what an input did, for the timeline: an agent's own
	// event vocabulary (seed 002's tool.request, agent.transition, ...).
	// Optional.
	Notes func(before, after S, input I) []Note
	// Extensions are the URLs of ES modules the page imports: views of
	// the agent's own (a task tree, a tool monitor). Each exports
	// mount(element, panel); see the package documentation.
	Extensions []string

	// History is how many of the latest inputs the timeline starts with,
	// and how many it keeps. Default 1000.
	History int
	// Heartbeat is the interval of the comment lines that keep an idle
	// event stream open. Default 15 s.
	Heartbeat time.Duration
	// WriteTimeout bounds each write to an event stream's client. Default
	// 10 s.
	WriteTimeout time.Duration
	// Logger receives the errors that have no client to go to. Default
	// slog.Default().
	Logger *slog.Logger

	// Traces, when set, gives the panel its trace view (GET /trace, and a
	// waterfall under a chosen input): the spans of the input's trace,
	// recorded by Traces, with the journal's entry of each input in it.
	// The TracerProvider is the program's: add Traces to it as a span
	// processor, and open the agent with automata.WithTelemetry(tp, nil),
	// among the options given to Open (see the example of NewTraces):
	//
	//	traces := devpanel.NewTraces(0)
	//	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(traces))
	//	m, panel, err := devpanel.Open(store, devpanel.Config[S, I]{..., Traces: traces},
	//		opts, automata.WithTelemetry[S, I](tp, nil), agent.WithJobs(jobs))
	//
	// Without automata.WithTelemetry, or with a provider that does not
	// have Traces, the view of every input answers that no span is
	// recorded for it.
	Traces *Traces
	// AgentID names the agent in its spans: the panel's options add it to
	// every span of the agent as moora.agent.id
	// (automata.WithTelemetryAttributes), and the trace view finds an
	// input by its id and seq. Fleet.OpenAgent sets it to the agent's id.
	// Optional for one agent: without it, the view finds an input by its
	// seq alone, which is ambiguous when other agents share the
	// TracerProvider.
	AgentID string
}

// Note is a label of an input in the timeline: a type and a text.
type Note struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Panel is the devpanel of one agent: an http.Handler. Its methods are safe
// for concurrent use.
//
// The panel keeps, under mu, the timeline it has built from the journal
// (seq is the last input folded into state, and log holds the events in the
// order they are sent, their ids increasing), the jobs it has seen start and
// the hold. Readers of the event stream wait on changed, which is closed and
// replaced whenever log grows.
type Panel[S, I any] struct {
	cfg   Config[S, I]
	page  fs.FS
	kick  chan struct{}
	done  chan struct{}
	ready chan struct{}

	mu        sync.Mutex
	agent     Agent[S, I]
	unsub     func()
	seq       uint64
	state     S
	log       []entry
	dropped   *entry // the newest event dropped from the log, if any
	changed   chan struct{}
	n         int                  // events sent since the input seq
	pending   []queued             // events of inputs not folded yet
	started   map[string]time.Time // running jobs, by key
	held      bool
	waiting   []*waiter // jobs at the gate and inputs at the route, oldest first
	stepping  *step     // the step that holds the token, if any
	underway  *step     // the step under way, of either kind
	closed    bool
	syncError error

	// traceRefusal, when not empty, is why the trace view is off: set once
	// before the panel serves (Fleet.Open, which does not know the id).
	traceRefusal string
}

// entry is one event of the stream.
type entry struct {
	seq   uint64
	n     int // 0 for an input, then 1, 2, ... for the events after it
	event string
	data  []byte
}

func (e entry) id() string {
	if e.n == 0 {
		return strconv.FormatUint(e.seq, 10)
	}
	return strconv.FormatUint(e.seq, 10) + "." + strconv.Itoa(e.n)
}

// after reports whether e comes after position (seq, n).
func (e entry) after(seq uint64, n int) bool {
	return e.seq > seq || e.seq == seq && e.n > n
}

// queued is an event that waits for the panel to fold the input it follows.
type queued struct {
	seq   uint64
	event string
	v     any
}

// beforeAttach marks events that came before the agent was attached: they
// follow its last input at that time.
const beforeAttach = ^uint64(0)

// New returns the panel configured by cfg. It shows nothing until
// Attach gives it the agent, whose options (Options) must include the
// panel's.
func New[S, I any](cfg Config[S, I]) (*Panel[S, I], error) {
	if cfg.Auth == nil {
		return nil, errors.New("devpanel: Config.Auth is required (httpbridge.Bearer, or the program's own)")
	}
	return newPanel(cfg)
}

// newPanel is New without its front's Auth: a Fleet's panel is reached only
// through serveAPI, behind the Fleet's own front.
func newPanel[S, I any](cfg Config[S, I]) (*Panel[S, I], error) {
	switch {
	case cfg.Definition.Initial == nil || cfg.Definition.Transition == nil:
		return nil, errors.New("devpanel: Config.Definition is required")
	case cfg.Decode == nil:
		return nil, errors.New("devpanel: Config.Decode is required")
	}
	var schema struct {
		Inputs map[string]json.RawMessage `json:"inputs"`
	}
	if err := json.Unmarshal(cfg.InputSchema, &schema); err != nil || len(schema.Inputs) == 0 {
		return nil, errors.New(`devpanel: Config.InputSchema is not a JSON Schema document with the inputs under "inputs"`)
	}
	if cfg.History <= 0 {
		cfg.History = 1000
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	page, err := fs.Sub(webFiles, "web")
	if err != nil {
		return nil, err
	}
	return &Panel[S, I]{
		cfg: cfg, page: page,
		kick: make(chan struct{}, 1), done: make(chan struct{}), ready: make(chan struct{}),
		changed: make(chan struct{}), started: map[string]time.Time{},
	}, nil
}

// Options returns the automata options the agent must be opened with: the
// lifecycle events the panel shows, the gate that holds jobs and the route
// that holds what they dispatch, and the agent's id in its spans
// (Config.AgentID). Open passes them, after the program's. A machine has
// one route (automata.WithJobDispatch: the last one given is used), so a
// program that routes its jobs' inputs itself cannot mount a panel as
// well.
func (p *Panel[S, I]) Options() automata.Option[S, I] {
	opts := []automata.Option[S, I]{
		automata.WithEvents(p.event),
		automata.WithJobGate[S, I](p.gate),
		automata.WithJobDispatch[S, I](p.route),
	}
	if p.cfg.AgentID != "" {
		opts = append(opts, automata.WithTelemetryAttributes[S, I](attribute.String(keyAgentID, p.cfg.AgentID)))
	}
	return automata.Join(opts...)
}

// Attach starts showing agent a, which must have been opened with
// Options: the timeline starts with its latest History inputs.
func (p *Panel[S, I]) Attach(a Agent[S, I]) error {
	p.mu.Lock()
	if p.agent != nil {
		p.mu.Unlock()
		return errors.New("devpanel: an agent is attached already")
	}
	p.agent = a
	p.mu.Unlock()
	last := a.Seq()
	from := uint64(0)
	if last > uint64(p.cfg.History) {
		from = last - uint64(p.cfg.History)
	}
	s, err := a.StateAt(from)
	if err != nil {
		return fmt.Errorf("devpanel: reading the state after input %d: %w", from, err)
	}
	p.mu.Lock()
	p.seq, p.state = from, s
	p.mu.Unlock()
	if err := p.sync(); err != nil {
		return fmt.Errorf("devpanel: reading the journal: %w", err)
	}
	p.mu.Lock()
	for i := range p.pending {
		if p.pending[i].seq == beforeAttach {
			p.pending[i].seq = p.seq
		}
	}
	p.flushLocked()
	p.mu.Unlock()
	unsub := a.Subscribe(func(S) {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	})
	p.mu.Lock()
	p.unsub = unsub
	p.mu.Unlock()
	close(p.ready)
	go p.follow()
	return nil
}

// follow folds the journal's new inputs into the timeline whenever the
// agent applies one, until Close.
func (p *Panel[S, I]) follow() {
	for {
		select {
		case <-p.done:
			return
		case <-p.kick:
			err := p.sync()
			if errors.Is(err, automata.ErrClosed) {
				return // the agent closed: the panel closes with it
			}
			if err != nil {
				p.mu.Lock()
				p.syncError = err
				p.mu.Unlock()
				p.cfg.Logger.Error("devpanel: reading the journal", "err", err)
			}
		}
	}
}

// row is an input of the timeline: what it was, and what it changed.
// Version is the version of the agent's spec the input was journaled
// under; Dropped, when not empty, says that a migration to a later version
// dropped the input: it is kept in the journal, not applied, and the row
// changes nothing (Input is null).
type row struct {
	Seq       uint64          `json:"seq"`
	Time      int64           `json:"time"`
	Version   int             `json:"version"`
	Dropped   string          `json:"dropped,omitempty"`
	Type      string          `json:"type"`
	Actor     string          `json:"actor,omitempty"`
	Input     json.RawMessage `json:"input"`
	Diff      []Op            `json:"diff"`
	Started   []string        `json:"started"`
	Cancelled []string        `json:"cancelled"`
	Notes     []Note          `json:"notes"`
}

// sync folds the inputs journaled after p.seq into the timeline.
func (p *Panel[S, I]) sync() error {
	p.mu.Lock()
	from, s := p.seq, p.state
	p.mu.Unlock()
	return p.fold(from, s, p.agent.Seq(), func(e entry, next S) {
		p.mu.Lock()
		p.seq, p.state, p.n = e.seq, next, 0
		p.appendLocked(e)
		p.flushLocked()
		p.mu.Unlock()
	})
}

// fold reads the inputs after from up to to from the journal, applies each
// to s (the state after from) and hands each one's timeline entry to add,
// with the state after it. An input of an earlier spec version that a
// migration dropped is not applied, as replay does not apply it: its row
// says so, and the state after it is the state before.
func (p *Panel[S, I]) fold(from uint64, s S, to uint64, add func(e entry, next S)) error {
	if to <= from {
		return nil
	}
	entries, err := p.agent.Inputs(from+1, to)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Seq != from+1 {
			return fmt.Errorf("the journal skips from input %d to %d", from, e.Seq)
		}
		next := s
		if e.Dropped == nil {
			next = p.cfg.Definition.Transition(s, e.Input)
		}
		r, err := p.row(e, s, next)
		if err != nil {
			return fmt.Errorf("input %d: %w", e.Seq, err)
		}
		data, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("input %d: %w", e.Seq, err)
		}
		add(entry{seq: e.Seq, event: "input", data: data}, next)
		s, from = next, e.Seq
	}
	return nil
}

func (p *Panel[S, I]) row(e journal.Entry[I], before, after S) (row, error) {
	if e.Dropped != nil {
		// Input is the zero value, which the program's hooks are not
		// made for: the row is the journal's word alone.
		return row{Seq: e.Seq, Time: e.Time.UnixMilli(), Version: e.Version, Dropped: e.Dropped.Error(),
			Type: e.Dropped.Type, Input: json.RawMessage("null"), Diff: []Op{},
			Started: []string{}, Cancelled: []string{}, Notes: []Note{}}, nil
	}
	in, err := json.Marshal(e.Input)
	if err != nil {
		return row{}, err
	}
	// What changed, walking the Go values: its cost follows the change,
	// not the state, which grows with the history (Diff, on the JSON of
	// both, cost the whole state twice per input).
	ops, err := jsonpatch.DiffNilAsEmpty(before, after)
	if err != nil {
		return row{}, err
	}
	diff := make([]Op, len(ops))
	for i, o := range ops {
		diff[i] = Op(o)
	}
	r := row{Seq: e.Seq, Time: e.Time.UnixMilli(), Version: e.Version, Type: inputType(e.Input), Input: in, Diff: diff,
		Started: []string{}, Cancelled: []string{}, Notes: []Note{}}
	if p.cfg.Actor != nil {
		r.Actor = p.cfg.Actor(e.Input)
	}
	if p.cfg.Jobs != nil {
		was, is := p.cfg.Jobs(before), p.cfg.Jobs(after)
		for _, k := range is {
			if !slices.Contains(was, k) {
				r.Started = append(r.Started, k)
			}
		}
		for _, k := range was {
			if !slices.Contains(is, k) {
				r.Cancelled = append(r.Cancelled, k)
			}
		}
		slices.Sort(r.Started)
		slices.Sort(r.Cancelled)
	}
	if p.cfg.Notes != nil {
		r.Notes = append(r.Notes, p.cfg.Notes(before, after, e.Input)...)
	}
	return r, nil
}

// inputType is the input's type discriminator, as generated inputs report
// it, else its Go type.
func inputType(in any) string {
	if t, ok := in.(interface{ InputType() string }); ok {
		return t.InputType()
	}
	return fmt.Sprintf("%T", in)
}

// appendLocked adds an event to the log, dropping the oldest beyond the
// bound, and wakes the streams.
func (p *Panel[S, I]) appendLocked(e entry) {
	p.log = append(p.log, e)
	if limit := 8 * p.cfg.History; len(p.log) > limit {
		d := p.log[len(p.log)-limit-1]
		p.dropped = &d
		p.log = slices.Delete(p.log, 0, len(p.log)-limit)
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// queueLocked adds an event that is not an input after the input the agent
// has journaled last: at once if the panel has folded it, else once it has.
func (p *Panel[S, I]) queueLocked(event string, v any) {
	seq := beforeAttach
	if p.agent != nil {
		seq = p.agent.Seq()
	}
	if seq <= p.seq && len(p.pending) == 0 {
		p.emitLocked(event, v)
		return
	}
	p.pending = append(p.pending, queued{seq, event, v})
}

// flushLocked emits the queued events that follow inputs up to p.seq.
func (p *Panel[S, I]) flushLocked() {
	i := 0
	for ; i < len(p.pending) && p.pending[i].seq <= p.seq; i++ {
		p.emitLocked(p.pending[i].event, p.pending[i].v)
	}
	p.pending = slices.Delete(p.pending, 0, i)
}

// emitLocked adds an event that is not an input: it is numbered after the
// last input folded.
func (p *Panel[S, I]) emitLocked(event string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		p.cfg.Logger.Error("devpanel: encoding an event", "event", event, "err", err)
		return
	}
	p.n++
	p.appendLocked(entry{seq: p.seq, n: p.n, event: event, data: data})
}

// jobEvent is a job's lifecycle, as the stream reports it.
type jobEvent struct {
	Key        string `json:"key"`
	Kind       string `json:"kind"`           // started, held, input-held, released, input-dropped, completed, failed, cancelled
	Type       string `json:"type,omitempty"` // of the input, for input-held, input-dropped and its release
	At         int64  `json:"at"`
	DurationMs *int64 `json:"durationMs,omitempty"`
	Error      string `json:"error,omitempty"`
}

// lifecycle is an event of the agent or the panel that is not a job's.
type lifecycle struct {
	Kind  string          `json:"kind"` // rejected, failed, hold, step, release
	At    int64           `json:"at"`
	Error string          `json:"error,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	Held  *holdState      `json:"hold,omitempty"`
	Step  *stepResult     `json:"step,omitempty"`
}

// event receives the agent's lifecycle events (automata.WithEvents).
func (p *Panel[S, I]) event(e automata.Event[S, I]) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	ended := func(kind string) {
		je := jobEvent{Key: e.Key, Kind: kind, At: now.UnixMilli()}
		if t, ok := p.started[e.Key]; ok {
			d := now.Sub(t).Milliseconds()
			je.DurationMs = &d
			delete(p.started, e.Key)
		}
		if e.Err != nil {
			je.Error = e.Err.Error()
		}
		p.queueLocked("job", je)
		p.stepStuckLocked()
	}
	switch e.Kind {
	case automata.EffectStarted:
		p.started[e.Key] = now
		p.queueLocked("job", jobEvent{Key: e.Key, Kind: "started", At: now.UnixMilli()})
	case automata.EffectCompleted:
		ended("completed")
	case automata.EffectFailed:
		ended("failed")
	case automata.EffectCancelled:
		ended("cancelled")
	case automata.InputRejected, automata.MachineFailed:
		kind := "rejected"
		if e.Kind == automata.MachineFailed {
			kind = "failed"
		}
		l := lifecycle{Kind: kind, At: now.UnixMilli()}
		if e.Err != nil {
			l.Error = e.Err.Error()
		}
		if in, err := json.Marshal(e.Input); err == nil {
			l.Input = in
		}
		p.queueLocked("lifecycle", l)
	}
}

// Close ends the event streams and lets every held job go; the agent goes
// on without the panel, which shows nothing more.
func (p *Panel[S, I]) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	unsub := p.unsub
	p.held = false
	for _, w := range p.waiting {
		close(w.release)
	}
	p.waiting = nil
	if p.underway != nil {
		p.endStepLocked(p.underway, stepResult{Error: "the panel closed"})
	}
	close(p.done)
	p.mu.Unlock()
	if unsub != nil {
		unsub()
	}
}

// ServeHTTP serves the panel's page and API; see the package
// documentation. The page's files are open; the API is behind Config.Auth.
func (p *Panel[S, I]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/", "/index.html", "/app.js", "/form.js", "/token.js", "/style.css":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			wire.WriteError(w, http.StatusMethodNotAllowed, "%s %s: use GET", r.Method, r.URL.Path)
			return
		}
		pageHeaders(w)
		http.FileServerFS(p.page).ServeHTTP(w, r)
		return
	}
	if err := p.cfg.Auth(r); err != nil {
		wire.WriteError(w, http.StatusUnauthorized, "%v", err)
		return
	}
	p.serveAPI(w, r)
}

// serveAPI serves the panel's API to a request its front let through: the
// panel's Auth, or a Fleet's identity and ownership checks.
func (p *Panel[S, I]) serveAPI(w http.ResponseWriter, r *http.Request) {
	route := r.Method + " " + r.URL.Path
	switch route {
	case "GET /health":
		wire.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return
	case "GET /config":
		wire.WriteJSON(w, http.StatusOK, map[string]any{"extensions": orEmpty(p.cfg.Extensions)})
		return
	case "GET /schema":
		w.Header().Set("Content-Type", "application/json")
		w.Write(p.cfg.InputSchema)
		return
	}
	select {
	case <-p.ready:
	default:
		wire.WriteError(w, http.StatusServiceUnavailable, "no agent is attached to the panel yet")
		return
	}
	switch route {
	case "GET /events":
		p.events(w, r)
	case "GET /state":
		p.stateAt(w, r)
	case "GET /trace":
		p.traceFor(w, r)
	case "POST /inputs":
		p.postInput(w, r)
	case "GET /hold":
		wire.WriteJSON(w, http.StatusOK, p.holdState())
	case "POST /hold":
		wire.WriteJSON(w, http.StatusOK, p.hold())
	case "POST /release":
		wire.WriteJSON(w, http.StatusOK, p.release())
	case "POST /step":
		res, err := p.step(r.Context())
		var no errNoStep
		switch {
		case errors.As(err, &no):
			wire.WriteError(w, http.StatusConflict, "%v", err)
		case err != nil:
			return // the client went away; the step goes on
		default:
			wire.WriteJSON(w, http.StatusOK, stepAnswer{p.holdState(), res})
		}
	default:
		wire.WriteError(w, http.StatusNotFound, "%s: no such route", route)
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// stateAt answers GET /state?seq=N: the state after input N (the latest
// when seq is absent), rebuilt from the journal, and the jobs it calls for,
// which are not run.
func (p *Panel[S, I]) stateAt(w http.ResponseWriter, r *http.Request) {
	last := p.agent.Seq()
	seq := last
	if q := r.URL.Query().Get("seq"); q != "" {
		n, err := strconv.ParseUint(q, 10, 64)
		if err != nil {
			wire.WriteError(w, http.StatusBadRequest, "seq %q is not a sequence number", q)
			return
		}
		if n > last {
			wire.WriteError(w, http.StatusNotFound, "no input %d yet: the journal ends at %d", n, last)
			return
		}
		seq = n
	}
	s, err := p.agent.StateAt(seq)
	if err != nil {
		wire.WriteError(w, http.StatusNotFound, "the state after input %d: %v", seq, err)
		return
	}
	jobs := []string{}
	if p.cfg.Jobs != nil {
		jobs = append(jobs, p.cfg.Jobs(s)...)
		slices.Sort(jobs)
	}
	wire.WriteJSON(w, http.StatusOK, map[string]any{"seq": seq, "state": s, "jobs": jobs})
}

// maxBody bounds a posted input.
const maxBody = 256 << 10

// postInput answers POST /inputs: the input, decoded and validated by
// Config.Decode, is dispatched and journaled; the answer is its position.
func (p *Panel[S, I]) postInput(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		wire.WriteError(w, http.StatusRequestEntityTooLarge, "reading the input: %v", err)
		return
	}
	in, err := p.cfg.Decode(data)
	if err != nil {
		wire.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if err := p.agent.Dispatch(r.Context(), in); err != nil {
		wire.WriteError(w, http.StatusUnprocessableEntity, "the agent refused the input: %v", err)
		return
	}
	wire.WriteJSON(w, http.StatusOK, map[string]any{"seq": p.agent.Seq()})
}

// stepAnswer is the answer to POST /step: the hold after it, and what it
// did.
type stepAnswer struct {
	holdState
	Step stepResult `json:"step"`
}

// pageHeaders are the headers of the panel's pages and their files: checked
// again at each load (no-cache), and no Referer from them (no-referrer): a
// page opened with ?token= in its address sends it to no other site, in
// the moment before the page takes it out (token.js).
func pageHeaders(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Referrer-Policy", "no-referrer")
}
