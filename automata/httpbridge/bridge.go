package httpbridge

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/internal/jsonpatch"
	"github.com/moora-go/moora/automata/internal/wire"
	"github.com/moora-go/moora/automata/journal"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Agent is a running agent the bridge serves. A *journal.Machine is one;
// Memory adapts an *automata.Machine whose output is its state (a generated
// agent's agent.Create).
type Agent[S, I any] interface {
	// Dispatch applies input and returns nil once it is applied (and, for
	// a durable agent, journaled), or an error if it never will be.
	Dispatch(ctx context.Context, input I) error
	// Subscribe calls fn with the current state, then with the state
	// after each applied input, in order, on the goroutine applying them.
	Subscribe(fn func(state S)) (unsubscribe func())
}

// durable is what a journal adds to an Agent: sequence numbers that survive
// restarts, and the history to resume from.
type durable[S, I any] interface {
	DispatchSeq(ctx context.Context, input I) (uint64, error)
	Seq() uint64
	StateAt(seq uint64) (S, error)
	Inputs(from, to uint64) ([]journal.Entry[I], error)
	Version() int
}

var _ durable[int, int] = (*journal.Machine[int, int])(nil)

// Memory adapts an in-memory machine to Agent: Dispatch is its DispatchWait.
// Its inputs have no sequence numbers that survive a restart, so the bridge
// numbers them itself, from its start, and tags its event ids with an epoch
// that changes when the process restarts (a client that comes back then gets
// a resync, never deltas from another history).
func Memory[S, I any](m *automata.Machine[S, I, S]) Agent[S, I] { return memory[S, I]{m} }

type memory[S, I any] struct{ m *automata.Machine[S, I, S] }

func (a memory[S, I]) Dispatch(ctx context.Context, in I) error { return a.m.DispatchWait(ctx, in) }
func (a memory[S, I]) Subscribe(fn func(S)) func()              { return a.m.Subscribe(fn) }
func (a memory[S, I]) Done() <-chan struct{}                    { return a.m.Done() }

// Config configures a Bridge. Decode, View and Auth are required.
type Config[S, I, V any] struct {
	// Decode decodes and validates a posted input: the agent's generated
	// decl.DecodeClientInput, which accepts absent the properties the spec
	// marks readOnly, for the admission step to assign.
	Decode func(data []byte) (I, error)
	// View is the projection of the state that browsers see, such as
	// decl.AgentState.ContextOfUser: what the user actor observes.
	View func(state S) V
	// Auth accepts or refuses a request (its error is the 401 message):
	// Bearer(token), AllowAll, or a hook of the program's own (a session
	// cookie, say). GET streams also accept a query token from /token.
	Auth func(r *http.Request) error

	// ClientActors names the actors clients play, by their names in the
	// spec: a client may POST the inputs of these actors only, and an input
	// of any other is refused with 403 before it reaches the agent. An input
	// names its actor with a method InputActor() string, which every input
	// of a generated decl package has. Default (nil): []string{"user"}, the
	// user's inputs; an agent without an actor "user" names its own. An
	// input that names no actor (a hand-written agent's input type without
	// InputActor) is refused whatever the list, unless ClientActors is
	// []string{"*"}: any input, of any actor or of none, as an operator's
	// tool may dispatch (automata/devpanel does), never a page a user
	// plays. New refuses an empty (non-nil) list, an empty name or one with
	// spaces or control characters, a name given twice, and "*" beside
	// names.
	ClientActors []string

	// InputID returns the client-chosen id inside an input (such as a
	// message's id), or "" if it has none: a POST whose input has the id of
	// one applied recently is answered as that one was, not applied again.
	// For a durable agent the window survives a restart: the last
	// DedupWindow journaled inputs are read back when the bridge starts.
	// Without InputID, the Idempotency-Key header plays that role, in
	// memory only.
	InputID func(input I) string
	// DedupWindow is how many recent input ids are remembered. Default 4096.
	DedupWindow int

	// AllowOrigins lists the origins (scheme://host[:port]) other than the
	// bridge's own whose pages may call it. Default: none, same origin only.
	AllowOrigins []string
	// MaxBody bounds a POSTed input, in bytes (413 beyond). Default 64 KiB.
	MaxBody int64
	// InputTimeout bounds how long a POST waits for its input to be taken
	// up by the agent (503 after). Default 30 s.
	InputTimeout time.Duration

	// Ring is how many deltas are kept for reconnecting clients, and
	// RingBytes how many bytes of them; the older are dropped first.
	// Defaults 4096 and 16 MiB. A durable agent resumes older ids from its
	// journal (one delta); an in-memory one sends a resync.
	Ring      int
	RingBytes int
	// Heartbeat is the interval of the comment lines that keep idle
	// streams open through proxies. Default 15 s.
	Heartbeat time.Duration
	// WriteTimeout bounds each write to an SSE client: one that does not
	// take its bytes in that time is dropped (and resumes when it
	// reconnects). It replaces the server's WriteTimeout for streams,
	// which last longer. Default 10 s.
	WriteTimeout time.Duration

	// MaxStreams bounds the streams (state and token streams) open at
	// once, and MaxStreamsPerClient those of one client, as ClientID
	// tells clients apart; a stream beyond either gets 503 with
	// Retry-After, and a message naming the limit. Defaults 10,000 and
	// 100.
	MaxStreams          int
	MaxStreamsPerClient int
	// ClientID names the client a request comes from, for
	// MaxStreamsPerClient. Default: its remote IP address. Behind a
	// reverse proxy every request comes from the proxy's: name the client
	// from what the proxy adds (X-Forwarded-For, say) if it is trusted,
	// or from the credentials Auth checked.
	ClientID func(r *http.Request) string

	// Streams are the token streams served at /streams/{name}. Optional.
	Streams *Streams
	// Chat, if set, serves the agent as a chat in the AI SDK's UI message
	// stream protocol, at /chat (see Chat). Optional.
	Chat *Chat[S, I]
	// Fronts are protocol front-ends served beside the bridge's routes, by
	// path ("/mcp": automata/httpbridge/mcpserve): New calls each once with
	// the bridge and serves what it returns at that path, behind the same
	// front as every route (see Front). Optional.
	Fronts map[string]Front[S, I, V]
	// Logger receives the errors that have no client to go to. Default
	// slog.Default().
	Logger *slog.Logger

	// TracerProvider, if set, traces each POST /inputs with a server
	// span, a child of the span the caller names in its request's
	// headers (see Propagator), and the parent of the span the agent
	// makes for the input when the agent traces its inputs
	// (automata.WithTelemetry). See "Telemetry" in the package
	// documentation. Default (nil): no spans, at the cost of a nil check.
	TracerProvider trace.TracerProvider
	// MeterProvider, if set, measures the POSTs of inputs
	// (http.server.request.duration) and the streams (moora.sse.clients,
	// moora.sse.bytes, moora.sse.events). Default (nil): no metrics, at
	// the cost of a nil check.
	MeterProvider metric.MeterProvider
	// Propagator reads the caller's trace context from a POST's headers.
	// Default, when TracerProvider is set: propagation.TraceContext{}, the
	// W3C traceparent and tracestate headers. A bridge whose clients are
	// not trusted to choose its traces (nor, with a parent-based sampler,
	// which of them are sampled) sets an empty
	// propagation.NewCompositeTextMapPropagator(): each POST then starts a
	// trace of its own. Unused without TracerProvider.
	Propagator propagation.TextMapPropagator
}

// Bridge serves an agent over HTTP: see the package documentation for its
// routes. It is an http.Handler; Close ends its streams.
type Bridge[S, I, V any] struct {
	agent   Agent[S, I]
	durable durable[S, I] // nil for an in-memory agent
	cfg     Config[S, I, V]
	actors  clientActors
	epoch   string     // "" when ids are journal sequence numbers
	tel     *telemetry // nil without providers
	cors    string     // Access-Control-Allow-Headers
	tokens  queryTokens
	mux     *http.ServeMux
	log     *slog.Logger
	unsub   func()

	dedup dedup

	agentID string // a Fleet's agent's id; "" for one agent

	closing   chan struct{}
	closeOnce sync.Once
	active    atomic.Int64 // state streams being served
	limits    streamLimits
	hub       hub

	snapMu     sync.Mutex // the view at snapSeq, for snapshotEvent: its JSON, its events by kind
	snapSeq    uint64
	snapData   []byte
	snapEvents map[string][]byte

	// Guarded by mu, written by the subscriber (on the goroutine applying
	// inputs) and read by the streams:
	//   - view is the projection of the state after input seq;
	//   - ring holds the deltas, oldest first, each from its base to its
	//     seq, the base of each the seq of the one before (views in between
	//     are equal); a client at any seq in [floor, seq] can be brought up
	//     to date from the ring;
	//   - changed is closed and replaced when the view changes, and moved
	//     whenever seq moves.
	mu        sync.Mutex
	started   bool
	seq       uint64
	state     S // after seq, for Config.Chat
	view      V
	last      uint64 // seq of the newest delta, or floor
	ring      []delta
	ringBytes int
	floor     uint64
	changed   chan struct{}
	moved     chan struct{}
}

// delta is one state event, encoded once for every client.
type delta struct {
	base, seq uint64
	event     []byte
}

//go:embed client.js
var clientFS embed.FS

// New starts serving agent. It subscribes to the agent at once; call Close
// when done.
func New[S, I, V any](agent Agent[S, I], cfg Config[S, I, V]) (*Bridge[S, I, V], error) {
	if cfg.Auth == nil {
		return nil, errors.New("httpbridge: Config.Auth is required (Bearer(token), AllowAll on a trusted network, or a hook of your own)")
	}
	return newBridge(agent, cfg)
}

// checkOrigins says whether every entry of Config.AllowOrigins is an
// origin.
func checkOrigins(allow []string) error {
	for _, o := range allow {
		if o == "*" || !strings.Contains(o, "://") || strings.HasSuffix(o, "/") {
			return fmt.Errorf("httpbridge: Config.AllowOrigins: %q is not scheme://host[:port]", o)
		}
	}
	return nil
}

// newBridge is New without its front's Auth: a Fleet's bridge is reached
// only through serveAgent, behind the Fleet's own front.
func newBridge[S, I, V any](agent Agent[S, I], cfg Config[S, I, V]) (*Bridge[S, I, V], error) {
	if cfg.Decode == nil || cfg.View == nil {
		return nil, errors.New("httpbridge: Config.Decode and Config.View are required")
	}
	if err := checkOrigins(cfg.AllowOrigins); err != nil {
		return nil, err
	}
	if cfg.Chat != nil {
		chat := *cfg.Chat // its defaults are the bridge's own
		cfg.Chat = &chat
		if err := checkChat(cfg.Chat); err != nil {
			return nil, err
		}
	}
	actors, err := newClientActors(cfg.ClientActors)
	if err != nil {
		return nil, err
	}
	cfg.ClientActors = actors.names
	setDefault(&cfg.DedupWindow, 4096)
	setDefault(&cfg.MaxBody, 64<<10)
	setDefault(&cfg.InputTimeout, 30*time.Second)
	setDefault(&cfg.Ring, 4096)
	setDefault(&cfg.RingBytes, 16<<20)
	setDefault(&cfg.Heartbeat, 15*time.Second)
	setDefault(&cfg.WriteTimeout, 10*time.Second)
	setDefault(&cfg.MaxStreams, 10_000)
	setDefault(&cfg.MaxStreamsPerClient, 100)
	if cfg.ClientID == nil {
		cfg.ClientID = remoteIP
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	tel, err := newTelemetry(cfg.TracerProvider, cfg.MeterProvider, cfg.Propagator)
	if err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	rand.Read(key)
	b := &Bridge[S, I, V]{
		agent:   agent,
		cfg:     cfg,
		actors:  actors,
		tokens:  queryTokens{key: key, now: time.Now},
		log:     cfg.Logger,
		closing: make(chan struct{}),
		changed: make(chan struct{}),
		moved:   make(chan struct{}),
		dedup:   newDedup(cfg.DedupWindow),
		limits:  streamLimits{max: cfg.MaxStreams, perClient: cfg.MaxStreamsPerClient, byClient: map[string]int{}},
		hub:     newHub(),
		tel:     tel,
		cors:    corsAllowHeaders(cfg.TracerProvider, cfg.Propagator),
	}
	if d, ok := agent.(durable[S, I]); ok {
		b.durable = d
	} else {
		epoch := make([]byte, 4)
		rand.Read(epoch)
		b.epoch = hex.EncodeToString(epoch) // a fresh random value per bridge
	}
	if b.durable != nil && cfg.InputID != nil {
		if err := b.loadRecentIDs(); err != nil {
			return nil, err
		}
	}
	ready := make(chan struct{})
	var over <-chan struct{} // the agent's end, if it tells (its Done)
	if d, ok := agent.(interface{ Done() <-chan struct{} }); ok {
		over = d.Done()
	}
	b.unsub = agent.Subscribe(func(state S) { b.observe(state, ready) })
	select {
	case <-ready:
	case <-over:
		// Closed or failed: a machine that is no longer running calls
		// no subscriber.
		b.unsub()
		return nil, errors.New("httpbridge: the agent closed before it delivered its state")
	case <-time.After(time.Minute): // only if the agent is stuck
		b.unsub()
		return nil, errors.New("httpbridge: the agent did not deliver its state within a minute")
	}
	go b.fanOut()
	b.mux = http.NewServeMux()
	b.mux.HandleFunc("POST /inputs", b.postInput)
	b.mux.HandleFunc("GET /state", b.getState)
	b.mux.HandleFunc("GET /streams/{name}", b.getStream)
	b.mux.HandleFunc("GET /token", b.getToken)
	b.mux.HandleFunc("GET /client.js", b.getClient)
	b.mux.HandleFunc("POST /chat", b.postChat)
	b.mux.HandleFunc("GET /chat", b.getChat)
	b.mux.HandleFunc("GET /chat/{chat}/stream", b.getChatStream)
	if err := b.mountFronts(); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

func setDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// loadRecentIDs reads the ids of the last DedupWindow journaled inputs.
// An input of an earlier spec version that a migration dropped has none:
// it was never applied, and its Input is the zero value.
func (b *Bridge[S, I, V]) loadRecentIDs() error {
	to := b.durable.Seq()
	from := uint64(1)
	if to > uint64(b.cfg.DedupWindow) {
		from = to - uint64(b.cfg.DedupWindow) + 1
	}
	entries, err := b.durable.Inputs(from, to)
	if err != nil {
		return fmt.Errorf("httpbridge: reading the recent input ids from the journal: %w", err)
	}
	for _, e := range entries {
		if e.Dropped != nil {
			continue
		}
		if id := b.cfg.InputID(e.Input); id != "" {
			b.dedup.remember(id, e.Seq)
		}
	}
	return nil
}

// observe is the bridge's subscriber: the first call is the current state,
// each later one the state after one more input.
func (b *Bridge[S, I, V]) observe(state S, ready chan struct{}) {
	view := b.cfg.View(state)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state = state
	if !b.started {
		b.started = true
		if b.durable != nil {
			// The replay runs between two commits, so the journal's
			// sequence number is the state's.
			b.seq = b.durable.Seq()
		}
		b.view, b.floor, b.last = view, b.seq, b.seq
		close(ready)
		return
	}
	b.seq++
	ops, err := jsonpatch.Diff(b.view, view)
	b.view = view
	if err != nil {
		// No delta can describe it: every client resyncs.
		b.log.Error("httpbridge: the view would not encode; clients resync", "seq", b.seq, "err", err)
		b.ring, b.ringBytes = nil, 0
		b.floor, b.last = b.seq, b.seq
		b.notifyLocked()
		return
	}
	if len(ops) == 0 {
		// The view did not change: no event, but every id from last on is
		// current. Only the POSTs waiting for seq are told.
		close(b.moved)
		b.moved = make(chan struct{})
		return
	}
	d := delta{base: b.last, seq: b.seq}
	data, err := json.Marshal(struct {
		Base  uint64         `json:"base"`
		Seq   uint64         `json:"seq"`
		Patch []jsonpatch.Op `json:"patch"`
	}{d.base, d.seq, ops})
	if err != nil { // cannot happen: the values are already JSON
		panic(err)
	}
	d.event = wire.AppendEvent(nil, b.id(d.seq), "delta", data)
	b.last = d.seq
	b.ring = append(b.ring, d)
	b.ringBytes += len(d.event)
	drop := 0
	for len(b.ring)-drop > b.cfg.Ring || (b.ringBytes > b.cfg.RingBytes && len(b.ring)-drop > 1) {
		b.ringBytes -= len(b.ring[drop].event)
		b.floor = b.ring[drop].seq
		drop++
	}
	if drop > 0 {
		// Compact rarely: only when the dropped half is worth moving.
		if drop*2 >= len(b.ring) || cap(b.ring) > 2*b.cfg.Ring {
			b.ring = append(b.ring[:0:0], b.ring[drop:]...)
		} else {
			clear(b.ring[:drop])
			b.ring = b.ring[drop:]
		}
	}
	b.notifyLocked()
}

func (b *Bridge[S, I, V]) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
	close(b.moved)
	b.moved = make(chan struct{})
}

func (b *Bridge[S, I, V]) id(seq uint64) string { return eventID{seq: seq, epoch: b.epoch}.String() }

// Close ends every stream the bridge serves (the clients get a "close"
// event) and unsubscribes from the agent. Give it to
// http.Server.RegisterOnShutdown, so that Shutdown, which waits for
// handlers to return, does not wait for the streams' clients to leave; and
// call it once Shutdown has returned, too: Shutdown runs its hooks without
// waiting for them, and knows nothing of the state streams the bridge took
// over from net/http. Close returns when those have had their close event
// (or a second to take it) and their connections are closed.
func (b *Bridge[S, I, V]) Close() {
	b.closeOnce.Do(func() {
		b.hub.mu.Lock()
		close(b.closing)
		b.hub.mu.Unlock()
		b.unsub()
	})
	<-b.hub.done
	b.hub.joining.Wait() // each sees closing, and sends its close event
}

// ServeHTTP serves the bridge's routes: see the package documentation. It
// is the bridge's front: the CORS allow-list and preflight, the Auth hook
// (or a query token) and the bound on the body, applied once, before the
// agent's routes.
func (b *Bridge[S, I, V]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.traced(w, r, b.front)
}

// front is ServeHTTP without the span and the measure of a POST /inputs.
func (b *Bridge[S, I, V]) front(w http.ResponseWriter, r *http.Request) {
	if !checkOrigin(w, r, b.cfg.AllowOrigins, b.cors) {
		return
	}
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.URL.Path != "/client.js" && !b.authorize(w, r) {
		return
	}
	limitBody(w, r, b.bodyLimit(r, r.URL.Path))
	b.mux.ServeHTTP(w, r)
}

// serveAgent serves the agent's routes to a request that the Fleet's front
// has let through (origin, identity, ownership, the body's bound): the same
// routes as ServeHTTP, with none of its checks made again.
func (b *Bridge[S, I, V]) serveAgent(w http.ResponseWriter, r *http.Request) {
	b.traced(w, r, b.mux.ServeHTTP)
}

// traced serves r with next, inside the span and the measure of a POST
// /inputs when the bridge has telemetry.
func (b *Bridge[S, I, V]) traced(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	if b.tel != nil && r.Method == http.MethodPost && r.URL.Path == "/inputs" {
		b.tel.serveInput(w, r, next)
		return
	}
	next(w, r)
}

// limitBody bounds the body of r to max bytes: a read beyond fails with an
// *http.MaxBytesError, which the route that reads it answers with 413.
func limitBody(w http.ResponseWriter, r *http.Request, max int64) {
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(unwrapRecorder(w), r.Body, max)
	}
}

// checkOrigin enforces the CORS allow-list. A request without Origin (not
// from a browser, or a same-origin GET) passes; one from the bridge's own
// origin passes; one from a listed origin passes with the CORS headers;
// every other is refused with 403. A preflight is told the request headers
// allowed: allowHeaders.
func checkOrigin(w http.ResponseWriter, r *http.Request, allow []string, allowHeaders string) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if origin == scheme+"://"+r.Host {
		return true
	}
	if !slices.Contains(allow, origin) {
		wire.WriteError(w, http.StatusForbidden, "origin %q is not allowed (Config.AllowOrigins)", wire.Truncate(origin, 100))
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Allow-Credentials", "true")
	if r.Method == http.MethodOptions {
		h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
		h.Set("Access-Control-Allow-Headers", allowHeaders)
		h.Set("Access-Control-Max-Age", "600")
	}
	return true
}

// authorize runs the Auth hook; GET requests may instead carry a query
// token from /token in access_token.
func (b *Bridge[S, I, V]) authorize(w http.ResponseWriter, r *http.Request) bool {
	if tok := r.URL.Query().Get("access_token"); tok != "" && r.Method == http.MethodGet && r.URL.Path != "/token" {
		if err := b.tokens.check(tok); err != nil {
			wire.WriteError(w, http.StatusUnauthorized, "%v", err)
			return false
		}
		return true
	}
	if err := b.cfg.Auth(r); err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="httpbridge"`)
		wire.WriteError(w, http.StatusUnauthorized, "unauthorized: %v", err)
		return false
	}
	return true
}

// getToken issues a query token, for clients that cannot set headers
// (EventSource).
func (b *Bridge[S, I, V]) getToken(w http.ResponseWriter, r *http.Request) {
	tok, exp := b.tokens.issue()
	wire.WriteJSON(w, http.StatusOK, struct {
		Token   string `json:"token"`
		Expires int64  `json:"expires"`
	}{tok, exp.Unix()})
}

func (b *Bridge[S, I, V]) getClient(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	http.ServeFileFS(w, r, clientFS, "client.js")
}

// postResult is the body of a successful POST /inputs.
type postResult struct {
	// Seq is the input's sequence number in the journal
	// (journal.Machine.DispatchSeq). Absent for an in-memory agent.
	Seq *uint64 `json:"seq,omitempty"`
	// Duplicate says the input id was seen already: nothing was applied.
	Duplicate bool `json:"duplicate,omitempty"`
}

func (b *Bridge[S, I, V]) postInput(w http.ResponseWriter, r *http.Request) {
	if !jsonBody(w, r) {
		return
	}
	body, err := io.ReadAll(r.Body) // bounded by the front (Config.MaxBody)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			wire.WriteError(w, http.StatusRequestEntityTooLarge, "the input is over %d bytes (Config.MaxBody)", tooBig.Limit)
			return
		}
		wire.WriteError(w, http.StatusBadRequest, "reading the input: %v", err)
		return
	}
	in, err := b.cfg.Decode(body)
	if err != nil {
		wire.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	b.tel.inputKnown(r.Context(), in)
	if err := b.actors.check(in); err != nil {
		wire.WriteError(w, http.StatusForbidden, "%v", err)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if b.cfg.InputID != nil {
		key = b.cfg.InputID(in)
	} else if err := checkKey(key); err != nil {
		wire.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	seq, dup, ok := b.apply(w, r, in, key)
	if !ok {
		return
	}
	res := b.result(seq, dup)
	b.tel.answered(r.Context(), res)
	wire.WriteJSON(w, http.StatusOK, res)
}

// jsonBody answers 415 unless r's body is JSON.
func jsonBody(w http.ResponseWriter, r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		wire.WriteError(w, http.StatusUnsupportedMediaType, "missing Content-Type: want application/json")
		return false
	}
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		wire.WriteError(w, http.StatusUnsupportedMediaType, "content type %q: want application/json", wire.Truncate(ct, 100))
		return false
	}
	return true
}

// bodyLimit is the bound on the body of r, whose path in the bridge's
// routes is path: Config.MaxBody, or Config.Chat.MaxBody for a POST /chat.
func (b *Bridge[S, I, V]) bodyLimit(r *http.Request, path string) int64 {
	if b.cfg.Chat != nil && isChatPost(r, path) {
		return b.cfg.Chat.MaxBody
	}
	return b.cfg.MaxBody
}

// apply dispatches in, a client's, once within the dedup window of key
// (Config.InputID's, or an Idempotency-Key): it returns the input's
// sequence number (of the one applied before it, when dup), or answers the
// error and reports false.
func (b *Bridge[S, I, V]) apply(w http.ResponseWriter, r *http.Request, in I, key string) (seq uint64, dup, ok bool) {
	ctx, cancel := context.WithTimeout(r.Context(), b.cfg.InputTimeout)
	defer cancel()
	for {
		seq, dup, wait := b.dedup.begin(key)
		if dup {
			return seq, true, true
		}
		if wait != nil { // the same id is in flight: wait for its outcome
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				wire.WriteError(w, http.StatusServiceUnavailable, "an input with the same id is still being applied")
				return 0, false, false
			}
		}
		break
	}
	var err error
	if b.durable != nil {
		seq, err = b.durable.DispatchSeq(ctx, in)
	} else {
		err = b.agent.Dispatch(ctx, in)
	}
	b.dedup.end(key, seq, err == nil)
	if err != nil && (errors.Is(err, automata.ErrClosed) || errors.Is(err, journal.ErrInUse)) {
		if rr, ok := r.Context().Value(rerouteKey{}).(*reroute); ok {
			// A Fleet's input with an id its journal keeps: the Fleet
			// sends it to the process that has the agent now, which
			// applies it once, whether or not it was journaled here.
			rr.asked = true
			return 0, false, false
		}
	}
	if err != nil {
		status := http.StatusUnprocessableEntity
		var failed *automata.FailError
		switch {
		case errors.Is(err, automata.ErrClosed):
			// Closed as the input came (deactivated, or its journal lost
			// to another process): sent again, it finds the agent again.
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "1")
		case errors.As(err, &failed):
			status = http.StatusInternalServerError
			err = errors.New("the agent has failed")
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
			status = http.StatusServiceUnavailable
			err = errors.New("the agent did not take the input up in time; it was not applied")
		case errors.Is(err, journal.ErrInUse), errors.Is(err, journal.ErrUnavailable):
			// Its journal is another process's now (a fenced store), or
			// its server did not answer: sent again, it finds the agent
			// where it is (an input with an id is applied once).
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "1")
		}
		wire.WriteError(w, status, "input not applied: %v", err)
		return 0, false, false
	}
	if b.durable != nil {
		b.waitSeq(ctx, seq) // so that a client that reads the state stream next finds it
	}
	return seq, false, true
}

func (b *Bridge[S, I, V]) result(seq uint64, dup bool) postResult {
	r := postResult{Duplicate: dup}
	if b.durable != nil {
		r.Seq = &seq
	}
	return r
}

// rerouteKey's value, a *reroute, is in the context of an input a Fleet
// may send to another process if this one cannot apply it: one with an id
// the agent's journal keeps (Config.InputID), so that the process that
// applies it next finds it among the journaled ones if it was.
type rerouteKey struct{}

// reroute: asked is set, and nothing answered, when the agent's journal
// refused the input because another process has taken the agent over, or
// the agent closed as it came.
type reroute struct{ asked bool }

// waitSeq waits until the bridge has observed the state after seq.
func (b *Bridge[S, I, V]) waitSeq(ctx context.Context, seq uint64) {
	for {
		b.mu.Lock()
		at, ch := b.seq, b.moved
		b.mu.Unlock()
		if at >= seq {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-b.closing:
			return
		}
	}
}

// checkKey accepts an absent Idempotency-Key or 1 to 128 printable ASCII
// characters.
func checkKey(k string) error {
	if len(k) > 128 {
		return fmt.Errorf("Idempotency-Key of %d bytes: want at most 128", len(k))
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return fmt.Errorf("Idempotency-Key: byte %d is not printable ASCII", i)
		}
	}
	return nil
}

// inputActor is what an input that names its actor implements: every input
// of a generated decl package, whose InputActor is the actor's name in the
// spec.
type inputActor interface{ InputActor() string }

// clientActors is Config.ClientActors, checked by New.
type clientActors struct {
	names []string // as configured, or the default
	any   bool     // names is ["*"]: any input
}

// defaultClientActors is Config.ClientActors when it is nil.
var defaultClientActors = []string{"user"}

func newClientActors(names []string) (clientActors, error) {
	if names == nil {
		return clientActors{names: slices.Clone(defaultClientActors)}, nil
	}
	if len(names) == 0 {
		return clientActors{}, errors.New(`httpbridge: Config.ClientActors is empty, which would refuse every input: name the actors whose inputs clients may post, leave it nil for the user's, or write []string{"*"} for any input`)
	}
	if len(names) > 1 && slices.Contains(names, "*") {
		return clientActors{}, fmt.Errorf(`httpbridge: Config.ClientActors %q: "*" (any input, of any actor) stands alone`, names)
	}
	for i, n := range names {
		switch {
		case n == "":
			return clientActors{}, fmt.Errorf("httpbridge: Config.ClientActors[%d] is empty: want an actor's name", i)
		case strings.ContainsFunc(n, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError }):
			return clientActors{}, fmt.Errorf("httpbridge: Config.ClientActors[%d]: %q is not an actor's name (spaces, control characters or invalid UTF-8)", i, n)
		case slices.Contains(names[:i], n):
			return clientActors{}, fmt.Errorf("httpbridge: Config.ClientActors names %q twice", n)
		}
	}
	return clientActors{names: slices.Clone(names), any: names[0] == "*"}, nil
}

// check returns nil if a client may dispatch in, or the reason why not.
func (a clientActors) check(in any) error {
	if a.any {
		return nil
	}
	named, ok := in.(inputActor)
	if !ok {
		return fmt.Errorf(`input %s names no actor (its type %T has no method InputActor() string); clients of this bridge may dispatch only the inputs of %s (Config.ClientActors), or any input when that is ["*"]`, inputName(in), in, a)
	}
	if actor := named.InputActor(); !slices.Contains(a.names, actor) {
		return fmt.Errorf("input %s is an input of actor %q; clients of this bridge may dispatch only the inputs of %s (Config.ClientActors)", inputName(in), wire.Truncate(actor, 100), a)
	}
	return nil
}

// String names the actors: `actor "user"`, `actors "customer" and "desk"`.
func (a clientActors) String() string {
	q := make([]string, len(a.names))
	for i, n := range a.names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return "actor " + q[0]
	}
	return "actors " + strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

// inputName names an input in a message: its type discriminator, or its Go
// type when it has none.
func inputName(in any) string {
	if t, ok := in.(interface{ InputType() string }); ok {
		return fmt.Sprintf("%q", wire.Truncate(t.InputType(), 100))
	}
	return fmt.Sprintf("%T", in)
}
