package httpbridge

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moora-go/moora/automata/internal/byid"
	"github.com/moora-go/moora/automata/internal/wire"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/registry"
)

// FleetConfig configures a Fleet. Registry, Identify and the Bridge's Decode
// and View are required.
type FleetConfig[S, I, V any] struct {
	// Registry holds the agents: the fleet activates them through it.
	Registry *registry.Registry[S, I]
	// Identify authenticates a request and says who it comes from (its
	// error is the 401 message): Identities(operatorToken, sessions), or
	// the program's own.
	Identify func(r *http.Request) (Identity, error)
	// Sessions, if set, serves POST /sessions: the operator obtains a new
	// identity and its token there (for a page opened with the operator's
	// URL to become a person of its own).
	Sessions *Sessions
	// Bridge configures each agent's bridge, as Config does one agent's,
	// except Auth, which must be nil (the fleet authenticates), and
	// Streams (see Streams).
	Bridge Config[S, I, V]
	// Streams returns the token streams of agent id (those its jobs write
	// into), served at /agents/{id}/streams/{name}. Optional.
	Streams func(id string) *Streams
	// Fronts are protocol front-ends of the fleet itself, served by path
	// beside /agents ("/mcp": automata/httpbridge/mcpserve), as
	// Config.Fronts are an agent's (see FleetFront). Optional.
	Fronts map[string]FleetFront[S, I, V]

	// MaxAgentsPerOwner bounds the agents one identity may own; POST
	// /agents, or PUT /agents/{id} of a new id, beyond it is refused with
	// 429. Default 1,000; the operator has no bound. An owner's POSTs and
	// PUTs to this Fleet count and create one at a time, so the bound
	// holds under concurrent requests (agents created by other means,
	// such as another Fleet over the same registry, count but are not
	// held to it).
	MaxAgentsPerOwner int
	// MaxStreams bounds the state and token streams open at once across
	// all agents (each agent's bridge has its own Bridge.MaxStreams
	// within it): 503 with Retry-After beyond. Default 10,000.
	MaxStreams int
	// MaxStreamsPerIdentity bounds the streams one identity has open at
	// once, across its agents, so that one person following many agents
	// keeps neither MaxStreams nor the registry's MaxActive from the
	// others: 503 with Retry-After beyond. Default 100.
	MaxStreamsPerIdentity int

	// Peers, if set, routes a request for an agent that another process
	// has active to that process, as a reverse proxy (streams included),
	// and takes over an agent whose process is dead: see "Many hosts" in
	// the package documentation. automata/journal/jetstream's Fleet is
	// one, with the registry over it.
	Peers Peers
	// RouteTimeout bounds how long a request for an agent active in
	// another process spends finding it without a sign of progress:
	// locating it, reaching its process, waiting for a dead one's agent
	// to be free, until the answer's headers come (a stream then lasts as
	// long as it is followed). Each time the request finds the process
	// that has the agent still holding its lease (alive: it renews it),
	// its deadline moves on to RouteTimeout from then, up to
	// MaxRouteWait from its start. 503 with Retry-After beyond (504 when
	// the peer took the request and it may not be sent again). Default 30
	// seconds.
	RouteTimeout time.Duration
	// MaxRouteWait bounds how long a request waits for an agent active in
	// another process however alive that process shows itself. Default
	// four RouteTimeouts.
	MaxRouteWait time.Duration
	// MaxPeerConns bounds the connections open to each peer at once
	// (streams routed there hold one each). Default 10,000.
	MaxPeerConns int
	// Logger receives what goes wrong between peers. Default
	// slog.Default().
	Logger *slog.Logger
}

// Fleet serves many agents by id over HTTP: the routes of a Bridge under
// /agents/{id}/, and the agents' own routes (create, list, delete), each agent
// seen only by its owner. See "Many agents" in the package documentation.
type Fleet[S, I, V any] struct {
	cfg       FleetConfig[S, I, V]
	transport *http.Transport // to the peers
	mux       *http.ServeMux
	cors      string // Access-Control-Allow-Headers
	streams   atomic.Int64
	fronts    []io.Closer // the FleetFronts' handlers that close

	mu      sync.Mutex
	closed  bool
	bridges map[*registry.Agent[S, I]]*fleetBridge[S, I, V]
	owners  map[string]*ownerLock // the owners creating an agent now
	// byIdentity counts the streams of each identity with one open.
	byIdentity map[string]int
}

// ownerLock serializes one owner's creations (POST /agents, PUT
// /agents/{id}): count, then create.
type ownerLock struct {
	mu    sync.Mutex
	users int // requests holding or waiting for mu; under Fleet.mu
}

// lockOwner takes the lock of owner's creations, and returns its unlock.
// An owner's entry lives while a request holds or waits for it.
func (f *Fleet[S, I, V]) lockOwner(owner string) (unlock func()) {
	f.mu.Lock()
	l := f.owners[owner]
	if l == nil {
		l = &ownerLock{}
		f.owners[owner] = l
	}
	l.users++
	f.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		f.mu.Lock()
		if l.users--; l.users == 0 {
			delete(f.owners, owner)
		}
		f.mu.Unlock()
	}
}

// fleetBridge is the bridge of one activation of an agent, made by the first
// request that needs it.
type fleetBridge[S, I, V any] struct {
	ready chan struct{}
	b     *Bridge[S, I, V]
	err   error
}

// NewFleet returns a Fleet serving cfg.Registry's agents. Close it before
// the registry.
func NewFleet[S, I, V any](cfg FleetConfig[S, I, V]) (*Fleet[S, I, V], error) {
	switch {
	case cfg.Registry == nil:
		return nil, errors.New("httpbridge: FleetConfig.Registry is required")
	case cfg.Identify == nil:
		return nil, errors.New("httpbridge: FleetConfig.Identify is required (Identities(token, sessions), or the program's own)")
	case cfg.Bridge.Auth != nil:
		return nil, errors.New("httpbridge: FleetConfig.Bridge.Auth must be nil: the fleet authenticates (FleetConfig.Identify)")
	case cfg.Bridge.Decode == nil || cfg.Bridge.View == nil:
		return nil, errors.New("httpbridge: FleetConfig.Bridge.Decode and View are required")
	}
	if cfg.Peers != nil && len(cfg.Peers.Secret()) < 16 {
		return nil, errors.New("httpbridge: FleetConfig.Peers.Secret must be at least 16 bytes: it signs the requests routed between peers")
	}
	if _, err := newClientActors(cfg.Bridge.ClientActors); err != nil {
		return nil, err
	}
	if err := checkOrigins(cfg.Bridge.AllowOrigins); err != nil {
		return nil, err
	}
	setDefault(&cfg.MaxAgentsPerOwner, 1000)
	setDefault(&cfg.MaxStreams, 10_000)
	setDefault(&cfg.MaxStreamsPerIdentity, 100)
	setDefault(&cfg.RouteTimeout, 30*time.Second)
	setDefault(&cfg.MaxRouteWait, 4*cfg.RouteTimeout)
	cfg.MaxRouteWait = max(cfg.MaxRouteWait, cfg.RouteTimeout)
	setDefault(&cfg.MaxPeerConns, 10_000)
	setDefault(&cfg.Bridge.MaxBody, 64<<10)
	setDefault(&cfg.Bridge.WriteTimeout, 10*time.Second)
	if cfg.Bridge.Chat != nil {
		chat := *cfg.Bridge.Chat
		cfg.Bridge.Chat = &chat
		if err := checkChat(cfg.Bridge.Chat); err != nil {
			return nil, err
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	f := &Fleet[S, I, V]{cfg: cfg, transport: peerTransport(cfg.MaxRouteWait, cfg.MaxPeerConns), cors: corsAllowHeaders(cfg.Bridge.TracerProvider, cfg.Bridge.Propagator), bridges: map[*registry.Agent[S, I]]*fleetBridge[S, I, V]{}, owners: map[string]*ownerLock{}, byIdentity: map[string]int{}}
	f.mux = http.NewServeMux()
	f.mux.HandleFunc("POST /agents", f.create)
	f.mux.HandleFunc("GET /agents", f.list)
	f.mux.HandleFunc("GET /agents/{id}", f.info)
	f.mux.HandleFunc("PUT /agents/{id}", f.put)
	f.mux.HandleFunc("DELETE /agents/{id}", f.delete)
	f.mux.HandleFunc("/agents/{id}/{rest...}", f.agent)
	if cfg.Sessions != nil {
		f.mux.HandleFunc("POST /sessions", f.session)
	}
	if err := f.mountFronts(); err != nil {
		return nil, err
	}
	return f, nil
}

// ServeHTTP serves the fleet's routes, to the origins a Bridge allows
// (FleetConfig.Bridge.AllowOrigins). It is the fleet's front, which every
// request crosses once: the CORS allow-list and preflight, and the bound on
// the body (FleetConfig.Bridge.MaxBody); each route then identifies the
// caller (FleetConfig.Identify) and checks that it may see the agent it
// names, before the agent's bridge serves it (see Bridge.serveAgent).
func (f *Fleet[S, I, V]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !checkOrigin(w, r, f.cfg.Bridge.AllowOrigins, f.cors) {
		return
	}
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.URL.Path == "/client.js" && r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		http.ServeFileFS(w, r, clientFS, "client.js")
		return
	}
	limit := f.cfg.Bridge.MaxBody
	if rest, ok := strings.CutPrefix(r.URL.Path, "/agents/"); ok && f.cfg.Bridge.Chat != nil {
		if _, path, ok := strings.Cut(rest, "/"); ok && isChatPost(r, "/"+path) {
			limit = f.cfg.Bridge.Chat.MaxBody
		}
	}
	limitBody(w, r, limit)
	f.mux.ServeHTTP(w, f.stripForgedRouted(r))
}

// Close ends the streams of every agent's bridge. The registry stays the
// caller's to close, after.
func (f *Fleet[S, I, V]) Close() {
	for _, c := range f.fronts {
		c.Close()
	}
	f.transport.CloseIdleConnections()
	f.mu.Lock()
	f.closed = true
	all := f.bridges
	f.bridges = map[*registry.Agent[S, I]]*fleetBridge[S, I, V]{}
	f.mu.Unlock()
	for _, fb := range all {
		<-fb.ready
		if fb.b != nil {
			fb.b.Close()
		}
	}
}

// identify answers 401 unless the request says who it comes from.
func (f *Fleet[S, I, V]) identify(w http.ResponseWriter, r *http.Request) (Identity, bool) {
	id, err := f.cfg.Identify(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="httpbridge"`)
		wire.WriteError(w, http.StatusUnauthorized, "unauthorized: %v", err)
		return Identity{}, false
	}
	return id, true
}

// ownedRequest identifies the caller of a request for agent {id} and checks
// that it may see the agent, answering the request itself when not.
func (f *Fleet[S, I, V]) ownedRequest(w http.ResponseWriter, r *http.Request) (who Identity, id string, info journal.AgentInfo, ok bool) {
	if who, ok = f.identify(w, r); !ok {
		return who, "", info, false
	}
	id = r.PathValue("id")
	info, ok = byid.Owned(w, f.cfg.Registry, who, id)
	return who, id, info, ok
}

func (f *Fleet[S, I, V]) session(w http.ResponseWriter, r *http.Request) {
	who, ok := f.identify(w, r)
	if !ok {
		return
	}
	if !who.Operator {
		wire.WriteError(w, http.StatusForbidden, "only the operator opens sessions")
		return
	}
	token, name := f.cfg.Sessions.Issue()
	wire.WriteJSON(w, http.StatusOK, struct {
		Token    string `json:"token"`
		Identity string `json:"identity"`
	}{token, name})
}

func (f *Fleet[S, I, V]) create(w http.ResponseWriter, r *http.Request) {
	who, ok := f.identifyOwner(w, r)
	if !ok {
		return
	}
	if !who.Operator {
		// One count and create at a time per owner, so that concurrent
		// requests do not all count below the bound and all create.
		defer f.lockOwner(who.Name)()
		if !f.belowLimit(w, who) {
			return
		}
	}
	id, err := f.cfg.Registry.Create("", who.Name)
	if err != nil {
		writeFleetError(w, err)
		return
	}
	// Relative to the request's /agents, so that it holds under a prefix
	// the fleet is mounted at (http.StripPrefix).
	f.created(w, id, "agents/"+id)
}

// put serves PUT /agents/{id}: it creates agent id for the caller, as POST
// /agents does with an id of the fleet's choosing, or answers it (200, the
// same body) if it exists and the caller may see it, so that a client that
// names its agents (one per ticket, per thread) may send it again after a
// lost answer. Another identity's agent is 404, word for word as GET
// /agents/{id} answers it.
func (f *Fleet[S, I, V]) put(w http.ResponseWriter, r *http.Request) {
	who, ok := f.identifyOwner(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if err := journal.CheckAgentID(id); err != nil {
		wire.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if !who.Operator {
		// As in create; it also makes one owner's concurrent PUTs of one
		// id answer one 201 and then 200s, each after the one before.
		defer f.lockOwner(who.Name)()
	}
	// An agent that exists is answered before the bound is counted: one
	// sent again by an owner at MaxAgentsPerOwner is 200, not 429.
	switch _, err := f.cfg.Registry.Info(id); {
	case err == nil:
		f.existing(w, who, id)
		return
	case !errors.Is(err, journal.ErrNoAgent):
		writeFleetError(w, err)
		return
	}
	if !who.Operator && !f.belowLimit(w, who) {
		return
	}
	// Create, not the look above, decides who creates it: another owner,
	// another Fleet or another process may have created it since.
	if _, err := f.cfg.Registry.Create(id, who.Name); errors.Is(err, journal.ErrAgentExists) {
		f.existing(w, who, id)
		return
	} else if err != nil {
		writeFleetError(w, err)
		return
	}
	// Relative to the request's /agents/{id}: the agent's own address.
	f.created(w, id, id)
}

// identifyOwner identifies the caller of a request that creates an agent,
// answering 403 for an identity without a name.
func (f *Fleet[S, I, V]) identifyOwner(w http.ResponseWriter, r *http.Request) (Identity, bool) {
	who, ok := f.identify(w, r)
	if ok && !who.Operator && who.Name == "" {
		// Its agents would be no one's it could see, held to no bound.
		wire.WriteError(w, http.StatusForbidden, "an identity without a name owns no agents (FleetConfig.Identify)")
		return who, false
	}
	return who, ok
}

// belowLimit counts who's agents, and answers 429 unless it may create one
// more (FleetConfig.MaxAgentsPerOwner). The caller holds who's lockOwner.
func (f *Fleet[S, I, V]) belowLimit(w http.ResponseWriter, who Identity) bool {
	n := 0
	err := f.cfg.Registry.ListOwned(who, "", func(string, journal.AgentInfo) error {
		n++
		return nil
	})
	if err != nil {
		wire.WriteError(w, http.StatusInternalServerError, "counting your agents: %v", err)
		return false
	}
	if n >= f.cfg.MaxAgentsPerOwner {
		wire.WriteError(w, http.StatusTooManyRequests, "you own %d agents, the limit (FleetConfig.MaxAgentsPerOwner); delete one first", n)
		return false
	}
	return true
}

// created answers 201 for agent id, just created, at location.
func (f *Fleet[S, I, V]) created(w http.ResponseWriter, id, location string) {
	info, err := f.cfg.Registry.Info(id)
	if err != nil {
		wire.WriteError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	w.Header().Set("Location", location)
	wire.WriteJSON(w, http.StatusCreated, byid.Info{ID: id, Owner: info.Owner, Created: info.Created})
}

// existing answers a PUT of agent id, which exists: 200 as GET
// /agents/{id} if who may see it, the 404 of one that does not exist if not.
func (f *Fleet[S, I, V]) existing(w http.ResponseWriter, who Identity, id string) {
	if info, ok := byid.Owned(w, f.cfg.Registry, who, id); ok {
		wire.WriteJSON(w, http.StatusOK, byid.Info{ID: id, Owner: info.Owner, Created: info.Created})
	}
}

// writeFleetError answers a request the registry's fleet failed: 503 with
// Retry-After while its server cannot answer, 500 otherwise.
func writeFleetError(w http.ResponseWriter, err error) {
	if errors.Is(err, journal.ErrUnavailable) {
		w.Header().Set("Retry-After", "1")
		wire.WriteError(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	wire.WriteError(w, http.StatusInternalServerError, "%v", err)
}

func (f *Fleet[S, I, V]) list(w http.ResponseWriter, r *http.Request) {
	if who, ok := f.identify(w, r); ok {
		byid.List(w, r, f.cfg.Registry, who)
	}
}

func (f *Fleet[S, I, V]) info(w http.ResponseWriter, r *http.Request) {
	_, id, info, ok := f.ownedRequest(w, r)
	if !ok {
		return
	}
	wire.WriteJSON(w, http.StatusOK, byid.Info{ID: id, Owner: info.Owner, Created: info.Created})
}

func (f *Fleet[S, I, V]) delete(w http.ResponseWriter, r *http.Request) {
	who, id, _, ok := f.ownedRequest(w, r)
	if !ok {
		return
	}
	// Checked again where no other Delete and no re-creation of the id
	// can come between the check and the deletion.
	err := f.cfg.Registry.DeleteOwned(r.Context(), who, id)
	if f.cfg.Peers != nil && errors.Is(err, journal.ErrInUse) {
		// Active in another process: that one deletes it.
		ctx, cancel := context.WithTimeout(r.Context(), f.cfg.RouteTimeout)
		defer cancel()
		for err != nil && errors.Is(err, journal.ErrInUse) && ctx.Err() == nil {
			owner, base, leaving, lerr := f.cfg.Peers.Locate(ctx, id)
			if lerr == nil && owner != "" && owner != f.cfg.Peers.Owner() && f.route(ctx, w, r, id, false, owner, base, leaving, nil) == routeServed {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
			err = f.cfg.Registry.DeleteOwned(ctx, who, id)
		}
	}
	switch {
	case errors.Is(err, journal.ErrNoAgent):
		wire.WriteError(w, http.StatusNotFound, "no agent %q", id)
	case errors.Is(err, journal.ErrInUse):
		w.Header().Set("Retry-After", "1")
		wire.WriteError(w, http.StatusServiceUnavailable, "%v", err)
	case err != nil:
		wire.WriteError(w, http.StatusInternalServerError, "%v", err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// agent serves a Bridge route of agent id, activating the agent if need be
// and holding it active while the request lasts (a stream: while it is
// followed).
func (f *Fleet[S, I, V]) agent(w http.ResponseWriter, r *http.Request) {
	who, id, _, ok := f.ownedRequest(w, r)
	if !ok {
		return
	}
	rest := "/" + r.PathValue("rest")
	if rest == "/token" {
		// A Bridge's query tokens are signed with a key of its own, which
		// lives as long as it: no other activation, and no other process,
		// could check one.
		wire.WriteError(w, http.StatusNotFound, "a fleet issues no query tokens: every route takes the caller's identity from FleetConfig.Identify (client.js sends the Authorization header; a page that must use EventSource can identify by a cookie in its own Identify)")
		return
	}
	stream := r.Method == http.MethodGet && (rest == "/state" || strings.HasPrefix(rest, "/streams/")) || isChatStream(r, rest)
	endStream := func() {}
	if stream {
		if endStream, ok = f.admitStream(w, who); !ok {
			return
		}
	}
	// Deferred: a stream routed to a peer ends with a panic
	// (http.ErrAbortHandler) when the peer goes away mid-stream.
	served := false
	defer func() {
		if !served {
			endStream()
		}
	}()
	wait := newRouteWait(r.Context(), f.cfg.RouteTimeout, f.cfg.MaxRouteWait) // for all the attempts
	defer wait.stop()
	body, resend, ok := f.buffer(w, r)
	if !ok {
		return
	}
	for reroutes := 0; ; reroutes++ {
		a, b, release, ok := f.activeBridge(w, r, who, id, wait, body, resend)
		if !ok {
			return
		}
		served = true
		if !f.serveBridge(w, r, rest, stream, b, release, endStream, resend && reroutes < maxReroutes) {
			return
		}
		// The agent's journal refused the input, which is not applied:
		// another process has the agent now. Look for it there, once
		// this activation has ended.
		select {
		case <-a.Deactivated():
		case <-a.Machine().Done():
		case <-wait.ctx.Done():
		}
	}
}

// maxReroutes bounds the times one request is served here again, and
// looked for elsewhere, after the agent's journal refused its input
// because another process had taken the agent over.
const maxReroutes = 2

// buffer reads r's body once, for a fleet with peers (the request may be
// sent to several processes in turn), and says whether it may be sent
// again when its answer is lost (resend: it changes nothing, or it is an
// input with an id that the agent's journal keeps), or answers the error.
func (f *Fleet[S, I, V]) buffer(w http.ResponseWriter, r *http.Request) (body []byte, resend, ok bool) {
	if f.cfg.Peers == nil {
		return nil, false, true
	}
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil { // bounded by the front (ServeHTTP)
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				wire.WriteError(w, http.StatusRequestEntityTooLarge, "the input is over %d bytes (Config.MaxBody)", tooBig.Limit)
			} else {
				wire.WriteError(w, http.StatusBadRequest, "reading the request: %v", err)
			}
			return nil, false, false
		}
	}
	resend = r.Method == http.MethodGet || r.Method == http.MethodHead || f.keyed(r, body)
	return body, resend, true
}

// activeBridge finds agent id active here, activating it if no other
// process has it, and its bridge; or routes the request to the process
// that has it (serveActive) and reports ok false once it is answered.
func (f *Fleet[S, I, V]) activeBridge(w http.ResponseWriter, r *http.Request, who Identity, id string, wait *routeWait, body []byte, resend bool) (a *registry.Agent[S, I], b *Bridge[S, I, V], release func(), ok bool) {
	for attempt := 1; ; attempt++ {
		if a, release, ok = f.serveActive(w, r, who, id, wait, body, resend); !ok {
			return nil, nil, nil, false
		}
		var err error
		if b, err = f.bridgeOf(a); err == nil {
			return a, b, release, true
		}
		release()
		select {
		case <-a.Deactivated():
		case <-a.Machine().Done():
		default:
			attempt = 3 // it runs: no point looking again
		}
		// Deactivated as its bridge was made (its store fenced: it is
		// another process's now): look for it again.
		if attempt < 3 {
			continue
		}
		w.Header().Set("Retry-After", "1")
		wire.WriteError(w, http.StatusServiceUnavailable, "agent %q: %v", id, err)
		return nil, nil, nil, false
	}
}

// serveBridge serves r by b, the bridge of the agent active here, holding
// the agent active (release gives it back) until the request ends, or, for
// a stream the bridge admits, until the stream ends. With mayReroute, an
// input the agent's journal refuses because another process has taken the
// agent over is not answered: serveBridge reports true, for the caller to
// look for the agent again.
func (f *Fleet[S, I, V]) serveBridge(w http.ResponseWriter, r *http.Request, rest string, stream bool, b *Bridge[S, I, V], release, endStream func(), mayReroute bool) (rerouted bool) {
	// Given back once, however many times it is released.
	var once sync.Once
	hold := &streamHold{release: func() {
		once.Do(func() {
			release()
			endStream()
		})
	}}
	defer func() {
		if hold.taken.CompareAndSwap(false, true) {
			hold.release()
		}
	}()
	ctx := r.Context()
	if stream {
		ctx = context.WithValue(ctx, streamHoldKey{}, hold)
	}
	if f.cfg.Bridge.TracerProvider != nil || f.cfg.Bridge.MeterProvider != nil {
		ctx = context.WithValue(ctx, routePrefixKey{}, "/agents/{id}") // http.route of the bridge's spans
	}
	if fn, ok := ctx.Value(withAgentKey{}).(func(*Bridge[S, I, V])); ok {
		fn(b) // WithAgent's
		return false
	}
	var rr *reroute
	if mayReroute {
		rr = &reroute{}
		ctx = context.WithValue(ctx, rerouteKey{}, rr)
	}
	r2 := r.Clone(ctx)
	r2.URL.Path, r2.URL.RawPath = rest, ""
	b.serveAgent(w, r2)
	return rr != nil && rr.asked
}

// admitStream takes a place for a stream of who among the fleet's and the
// identity's, or answers 503 naming the limit; end gives it back.
func (f *Fleet[S, I, V]) admitStream(w http.ResponseWriter, who Identity) (end func(), ok bool) {
	f.mu.Lock()
	n, mine := f.streams.Load(), f.byIdentity[who.Name]
	switch {
	case n >= int64(f.cfg.MaxStreams):
		f.mu.Unlock()
		w.Header().Set("Retry-After", "5")
		wire.WriteError(w, http.StatusServiceUnavailable, "too many streams: %d open, the limit (FleetConfig.MaxStreams)", n)
		return nil, false
	case mine >= f.cfg.MaxStreamsPerIdentity:
		f.mu.Unlock()
		w.Header().Set("Retry-After", "5")
		wire.WriteError(w, http.StatusServiceUnavailable, "too many streams: you have %d open, the limit (FleetConfig.MaxStreamsPerIdentity)", mine)
		return nil, false
	}
	f.streams.Add(1)
	f.byIdentity[who.Name]++
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			f.streams.Add(-1)
			if f.byIdentity[who.Name]--; f.byIdentity[who.Name] == 0 {
				delete(f.byIdentity, who.Name)
			}
			f.mu.Unlock()
		})
	}, true
}

// bridgeOf returns the bridge of activation a, making it on first use; it is
// closed when a is deactivated.
func (f *Fleet[S, I, V]) bridgeOf(a *registry.Agent[S, I]) (*Bridge[S, I, V], error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, errors.New("the server is closing")
	}
	fb, ok := f.bridges[a]
	if !ok {
		fb = &fleetBridge[S, I, V]{ready: make(chan struct{})}
		f.bridges[a] = fb
	}
	f.mu.Unlock()
	if ok {
		<-fb.ready
		return fb.b, fb.err
	}
	cfg := f.cfg.Bridge
	if f.cfg.Streams != nil {
		cfg.Streams = f.cfg.Streams(a.ID())
	}
	fb.b, fb.err = newBridge(a.Machine(), cfg)
	if fb.err == nil {
		fb.b.agentID = a.ID()
	}
	close(fb.ready)
	if fb.err != nil {
		f.mu.Lock()
		delete(f.bridges, a)
		f.mu.Unlock()
		return nil, fb.err
	}
	go func() {
		<-a.Deactivated()
		f.mu.Lock()
		_, mine := f.bridges[a]
		delete(f.bridges, a)
		f.mu.Unlock()
		if mine {
			fb.b.Close()
		}
	}()
	return fb.b, nil
}
