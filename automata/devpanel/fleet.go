package devpanel

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"sync"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/internal/byid"
	"github.com/moora-go/moora/automata/internal/wire"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/registry"
)

//go:embed fleetweb
var fleetFiles embed.FS

// FleetConfig configures a Fleet: the panels of many agents by id.
type FleetConfig[S, I any] struct {
	// Panel configures each agent's panel, as Config does one agent's,
	// except Auth, which must be nil: the fleet authenticates; and
	// AgentID, which must be empty: OpenAgent gives each panel its
	// agent's. One Traces serves every agent.
	Panel Config[S, I]
	// Identify says who a request comes from (its error is the 401
	// message), as in httpbridge.FleetConfig: httpbridge.Identities, or
	// the program's own. The pages are open (they hold no data); their
	// requests carry the token in the Authorization header, never in the
	// address.
	Identify func(r *http.Request) (registry.Identity, error)
	// OpenToOwners lets an agent's owner open its panel, and not only an
	// operator. A panel dispatches the inputs of every actor and holds
	// the agent's jobs: set it only where the owners are the agents'
	// developers, never for the users of a service, whose clients play one
	// actor (httpbridge.Config.ClientActors). Default false: the owner of
	// an agent who is not an operator gets 403 on its panel; anyone else's
	// agent is 404 either way.
	OpenToOwners bool
	// DelegatorPanel is where the panel of a sub-agent's parent is (its
	// AgentInfo.Delegated.Agent; package automata/delegate), for the
	// sub-agent's header to link to: a URL or an absolute path. Default:
	// the parent's panel in this fleet, "../{parent}/".
	DelegatorPanel func(parent string) string
	// SubAgentPanel, if set, says where the panel is of the sub-agent that
	// the job under key of agent parent delegates to ("" for a job that
	// does not delegate): a parent's Jobs monitor links each such job to
	// it. With package automata/delegate the sub-agent's id is
	// delegate.ChildID(parent, key).
	SubAgentPanel func(parent, key string) string
}

// Fleet serves the panels of the agents of a registry: a list of the agents
// the caller may see, and each one's panel, which an operator opens (and its
// owner, with FleetConfig.OpenToOwners); another identity's agent is 404 on
// every route. Open the
// agents with Fleet.Open (the registry's Config.Open), so that each has its
// panel from its first input.
type Fleet[S, I any] struct {
	cfg  FleetConfig[S, I]
	page fs.FS

	mu     sync.Mutex
	panels map[*journal.Machine[S, I]]*Panel[S, I]
}

// NewFleet checks cfg and returns a Fleet with no agents yet.
func NewFleet[S, I any](cfg FleetConfig[S, I]) (*Fleet[S, I], error) {
	if cfg.Identify == nil {
		return nil, errors.New("devpanel: FleetConfig.Identify is required")
	}
	if cfg.Panel.Auth != nil {
		return nil, errors.New("devpanel: FleetConfig.Panel.Auth must be nil: the fleet authenticates (FleetConfig.Identify)")
	}
	if cfg.Panel.AgentID != "" {
		return nil, errors.New("devpanel: FleetConfig.Panel.AgentID must be empty: each agent's panel has its own (Fleet.OpenAgent)")
	}
	if _, err := newPanel(cfg.Panel); err != nil { // the checks of one panel
		return nil, err
	}
	page, err := fs.Sub(webFiles, "web")
	if err != nil {
		return nil, err
	}
	return &Fleet[S, I]{cfg: cfg, page: page, panels: map[*journal.Machine[S, I]]*Panel[S, I]{}}, nil
}

// Open opens an agent with its panel, as the package's Open does: pass it
// as the registry's Config.Open, with the agent's options. The panel closes
// when the agent is deactivated.
//
// Open does not know the agent's id: with FleetConfig.Panel.Traces set, its
// panel's trace view answers 404, as the agents' spans could not be told
// apart. OpenAgent, which is told the id, has it.
func (f *Fleet[S, I]) Open(store journal.Store, opts journal.Options[S, I], options ...automata.Option[S, I]) (*journal.Machine[S, I], error) {
	return f.open("", store, opts, options...)
}

// OpenAgent opens agent id with its panel, as Open does, and names the
// agent in its spans (Config.AgentID), for its panel's trace view to find
// its inputs' spans among the spans of every agent (FleetConfig.Panel.Traces,
// shared):
//
//	Open: func(id string, s journal.Store) (*journal.Machine[S, I], error) {
//		return panels.OpenAgent(id, s, opts, automata.WithTelemetry[S, I](tp, nil), agent.WithJobs(jobs))
//	},
func (f *Fleet[S, I]) OpenAgent(id string, store journal.Store, opts journal.Options[S, I], options ...automata.Option[S, I]) (*journal.Machine[S, I], error) {
	if id == "" {
		return nil, errors.Join(errors.New("devpanel: OpenAgent needs the agent's id"), store.Close())
	}
	return f.open(id, store, opts, options...)
}

func (f *Fleet[S, I]) open(id string, store journal.Store, opts journal.Options[S, I], options ...automata.Option[S, I]) (*journal.Machine[S, I], error) {
	cfg := f.cfg.Panel
	cfg.AgentID = id
	p, err := newPanel(cfg) // no Auth: the fleet's front identifies
	if err != nil {
		return nil, errors.Join(err, store.Close())
	}
	m, p, err := attach(store, p, cfg, opts, options...)
	if err != nil {
		return nil, err
	}
	if id == "" {
		p.traceRefusal = "the agent was opened with Fleet.Open, which does not know its id: " +
			"its spans cannot be told from other agents'; open it with Fleet.OpenAgent for its trace view"
	}
	f.mu.Lock()
	f.panels[m] = p
	f.mu.Unlock()
	go func() {
		<-m.Done()
		f.mu.Lock()
		delete(f.panels, m)
		f.mu.Unlock()
	}()
	return m, nil
}

// Handler serves the fleet's pages and routes for the agents of reg:
//
//	GET /                     the list of agents the caller may see (the page)
//	GET /agents               the same as JSON (as httpbridge's Fleet lists them)
//	PUT /agents/{id}          an operator creates the agent of that id (201), or finds it (200)
//	POST /agents/{id}/fork    a fork of the agent (below), 201
//	/agents/{id}/...          the agent's panel (its page, its API)
//
// A fleet's panel forks its agent (registry.Registry.Fork): POST
// /agents/{id}/fork with {"seq": N, "id": "optional-child-id"} starts agent
// id (a new random one without it) from the state after input N, owned by
// whoever forked it, its jobs answered from what the agent's jobs answered
// after N until it departs from that record (journal.Machine.Fork). Whoever
// may open the panel may fork it. It answers 201 with {"id", "owner",
// "created", "fork": {"agent", "seq"}, "panel"}, where panel is the fork's
// panel, relative to the route (and to the page: "../{child}/"); 400 for a
// body that is not one (naming the field), for an id that is not one, for a
// seq past the journal or before the agent's own fork; 404 for an agent the
// caller may not see; 409 when the child's id is taken; 503 with
// Retry-After when the journal's server is unavailable or too many agents
// are active. The page's GET /config says so to the page of a fleet's panel:
// "forkable": true, and "forkedFrom": {"agent", "seq"} for a fork, which
// its header links to; "delegatedBy": {"agent", "job", "depth", "panel"}
// for a sub-agent (AgentInfo.Delegated), which its header links to; and
// "subAgents", whether GET /agents/{id}/subagent?job={key} says where the
// panel is of the sub-agent a job delegates to (FleetConfig.SubAgentPanel:
// {"panel"}, or 404), which the Jobs monitor links each job to.
//
// The pages, and their files, are open and the same for any agent id: they
// hold no data. Every other route identifies the caller (FleetConfig.Identify,
// from the Authorization header) and answers 404 for an agent it may not see.
func (f *Fleet[S, I]) Handler(reg *registry.Registry[S, I]) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		pageHeaders(w)
		http.ServeFileFS(w, r, fleetFiles, "fleetweb/index.html")
	})
	mux.HandleFunc("GET /token.js", func(w http.ResponseWriter, r *http.Request) {
		pageHeaders(w)
		http.ServeFileFS(w, r, f.page, "token.js")
	})
	mux.HandleFunc("GET /agents", func(w http.ResponseWriter, r *http.Request) {
		who, ok := f.identify(w, r)
		if !ok {
			return
		}
		byid.List(w, r, reg, who)
	})
	mux.HandleFunc("PUT /agents/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.put(w, r, reg)
	})
	mux.HandleFunc("POST /agents/{id}/fork", func(w http.ResponseWriter, r *http.Request) {
		f.fork(w, r, reg)
	})
	mux.HandleFunc("/agents/{id}/{rest...}", func(w http.ResponseWriter, r *http.Request) {
		f.agent(w, r, reg)
	})
	return mux
}

// put creates the agent of the id the client chose (PUT /agents/{id}), as
// httpbridge.Fleet does: 201 when created, 200 when it exists, 400 for an
// id that is not one, 404 for an agent the operator cannot see. Only an
// operator creates agents from the panels: they are the service's own
// tools, and no owner's count of agents is bounded here.
func (f *Fleet[S, I]) put(w http.ResponseWriter, r *http.Request, reg *registry.Registry[S, I]) {
	who, ok := f.identify(w, r)
	if !ok {
		return
	}
	if !who.Operator {
		wire.WriteError(w, http.StatusForbidden, "only an operator creates agents from the devpanel")
		return
	}
	id := r.PathValue("id")
	if err := journal.CheckAgentID(id); err != nil {
		wire.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	info, created, err := reg.Put(who, id)
	switch {
	case errors.Is(err, journal.ErrNoAgent):
		wire.WriteError(w, http.StatusNotFound, "%v", err)
		return
	case errors.Is(err, journal.ErrUnavailable):
		w.Header().Set("Retry-After", "1")
		wire.WriteError(w, http.StatusServiceUnavailable, "%v", err)
		return
	case err != nil:
		wire.WriteError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	wire.WriteJSON(w, status, byid.Info{ID: id, Owner: info.Owner, Created: info.Created})
}

// identify answers 401 unless the request says who it comes from.
func (f *Fleet[S, I]) identify(w http.ResponseWriter, r *http.Request) (registry.Identity, bool) {
	who, err := f.cfg.Identify(r)
	if err != nil {
		wire.WriteError(w, http.StatusUnauthorized, "unauthorized: %v", err)
		return who, false
	}
	return who, true
}

// agent serves a route of agent id's panel, holding the agent active while
// the request lasts (the event stream: while it is open).
func (f *Fleet[S, I]) agent(w http.ResponseWriter, r *http.Request, reg *registry.Registry[S, I]) {
	rest := r.PathValue("rest")
	switch rest {
	case "", "index.html", "app.js", "form.js", "token.js", "style.css":
		// The same for every agent and every caller: no data, and no
		// answer that says whether the agent exists. Its requests are
		// checked.
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			wire.WriteError(w, http.StatusMethodNotAllowed, "%s %s: use GET", r.Method, r.URL.Path)
			return
		}
		pageHeaders(w)
		if rest == "" {
			rest = "index.html"
		}
		http.ServeFileFS(w, r, f.page, rest)
		return
	}
	who, ok := f.identify(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	info, ok := f.mayOpen(w, reg, who, id)
	if !ok {
		return
	}
	a, release, ok := byid.Active(w, r, reg, who, id)
	if !ok {
		return
	}
	defer release()
	f.mu.Lock()
	p := f.panels[a.Machine()]
	f.mu.Unlock()
	if p == nil {
		wire.WriteError(w, http.StatusInternalServerError, "agent %q has no panel: the registry did not open it with devpanel's Fleet.Open", id)
		return
	}
	if rest == "config" && r.Method == http.MethodGet {
		cfg := p.config()
		cfg["forkable"] = true
		if info.Fork != nil {
			cfg["forkedFrom"] = info.Fork
		}
		if d := info.Delegated; d != nil {
			panel := "../" + d.Agent + "/"
			if f.cfg.DelegatorPanel != nil {
				panel = f.cfg.DelegatorPanel(d.Agent)
			}
			cfg["delegatedBy"] = map[string]any{"agent": d.Agent, "job": d.Job, "depth": d.Depth, "panel": panel}
		}
		cfg["subAgents"] = f.cfg.SubAgentPanel != nil
		wire.WriteJSON(w, http.StatusOK, cfg)
		return
	}
	if rest == "subagent" && r.Method == http.MethodGet {
		f.subAgent(w, r, id)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = "/"+rest, ""
	p.serveAPI(w, r2)
}

// mayOpen returns the info of agent id if who may open its panel: an
// operator, or its owner with OpenToOwners; otherwise it answers the
// request itself (404 for an agent who may not see, 403 for an owner).
func (f *Fleet[S, I]) mayOpen(w http.ResponseWriter, reg *registry.Registry[S, I], who registry.Identity, id string) (journal.AgentInfo, bool) {
	info, ok := byid.Owned(w, reg, who, id)
	if !ok {
		return info, false
	}
	if !who.Operator && !f.cfg.OpenToOwners {
		wire.WriteError(w, http.StatusForbidden, "the devpanel is the operator's: it dispatches any actor's inputs (FleetConfig.OpenToOwners)")
		return info, false
	}
	return info, true
}

// maxForkBody bounds the body of POST /agents/{id}/fork.
const maxForkBody = 4 << 10

// forkRequest is the body of POST /agents/{id}/fork.
type forkRequest struct {
	Seq uint64 `json:"seq"`
	ID  string `json:"id"`
}

// forkAnswer is the answer to POST /agents/{id}/fork.
type forkAnswer struct {
	byid.Info
	Panel string `json:"panel"`
}

// fork answers POST /agents/{id}/fork: a fork of the agent at the input
// the body names (see Handler).
func (f *Fleet[S, I]) fork(w http.ResponseWriter, r *http.Request, reg *registry.Registry[S, I]) {
	who, ok := f.identify(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if _, ok := f.mayOpen(w, reg, who, id); !ok {
		return
	}
	req, err := decodeFork(http.MaxBytesReader(w, r.Body, maxForkBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		status := http.StatusBadRequest
		if errors.As(err, &tooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		wire.WriteError(w, status, "the fork's body: %v", err)
		return
	}
	if req.ID != "" {
		if err := journal.CheckAgentID(req.ID); err != nil {
			wire.WriteError(w, http.StatusBadRequest, "the fork's body: id: %v", err)
			return
		}
	}
	a, release, ok := byid.Active(w, r, reg, who, id)
	if !ok {
		return
	}
	defer release()
	m := a.Machine()
	// The journal only grows: a seq within it now is within it when Fork
	// reads it.
	if last := m.Seq(); req.Seq > last {
		wire.WriteError(w, http.StatusBadRequest, "the fork's body: seq: %d is past the journal of agent %q, which holds inputs 1 to %d", req.Seq, id, last)
		return
	}
	if at := m.ForkedAt(); req.Seq < at {
		wire.WriteError(w, http.StatusBadRequest, "the fork's body: seq: %d is before agent %q's own fork at %d: fork the agent it was forked from", req.Seq, id, at)
		return
	}
	child, info, err := reg.Fork(r.Context(), who, id, req.Seq, req.ID)
	switch {
	case err == nil:
	case errors.Is(err, journal.ErrNoAgent):
		wire.WriteError(w, http.StatusNotFound, "no agent %q", wire.Truncate(id, 100))
		return
	case errors.Is(err, journal.ErrAgentExists):
		wire.WriteError(w, http.StatusConflict, "%v", err)
		return
	case errors.Is(err, journal.ErrInvalidAgentID), errors.Is(err, journal.ErrBeforeFork):
		wire.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	case errors.Is(err, journal.ErrUnavailable), errors.Is(err, journal.ErrInUse), errors.Is(err, registry.ErrTooManyActive):
		w.Header().Set("Retry-After", "1")
		wire.WriteError(w, http.StatusServiceUnavailable, "%v", err)
		return
	case errors.Is(err, registry.ErrClosed):
		wire.WriteError(w, http.StatusServiceUnavailable, "%v", err)
		return
	case r.Context().Err() != nil:
		return
	default:
		wire.WriteError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	panel := "../" + url.PathEscape(child) + "/"
	w.Header().Set("Location", panel)
	wire.WriteJSON(w, http.StatusCreated, forkAnswer{
		Info:  byid.Info{ID: child, Owner: info.Owner, Created: info.Created, Fork: info.Fork},
		Panel: panel,
	})
}

// decodeFork decodes the body of POST /agents/{id}/fork strictly: one JSON
// object of known fields, seq at least 1; its errors name the field.
func decodeFork(body io.Reader) (forkRequest, error) {
	var req struct {
		Seq *uint64 `json:"seq"`
		ID  *string `json:"id"`
	}
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	if err == nil && dec.Decode(new(json.RawMessage)) != io.EOF {
		err = errors.New("more than the one JSON object")
	}
	var typeErr *json.UnmarshalTypeError
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
	case errors.As(err, &tooLarge):
		return forkRequest{}, fmt.Errorf("over %d bytes: %w", maxForkBody, err)
	case errors.As(err, &typeErr) && typeErr.Field == "seq":
		return forkRequest{}, fmt.Errorf("seq: a JSON %s is not an input's position (a whole number, 1 or more)", typeErr.Value)
	case errors.As(err, &typeErr) && typeErr.Field == "id":
		return forkRequest{}, fmt.Errorf("id: a JSON %s is not an agent id (a string)", typeErr.Value)
	case errors.Is(err, io.EOF):
		return forkRequest{}, errors.New(`empty: want {"seq": N} or {"seq": N, "id": "child-id"}`)
	default:
		return forkRequest{}, fmt.Errorf(`want {"seq": N} or {"seq": N, "id": "child-id"}: %w`, err)
	}
	var out forkRequest
	if req.Seq == nil || *req.Seq == 0 {
		return out, errors.New("seq: required: the input to fork after (1 or more)")
	}
	out.Seq = *req.Seq
	if req.ID != nil {
		if *req.ID == "" {
			return out, errors.New("id: empty: leave it out for a new random id")
		}
		out.ID = *req.ID
	}
	return out, nil
}

// subAgent answers where the panel is of the sub-agent that agent parent's
// job ?job= delegates to (FleetConfig.SubAgentPanel): {"panel": url}, or 404
// for a job that does not delegate.
func (f *Fleet[S, I]) subAgent(w http.ResponseWriter, r *http.Request, parent string) {
	key := r.URL.Query().Get("job")
	if key == "" || len(key) > maxJobKey {
		wire.WriteError(w, http.StatusBadRequest, "job: a job key of 1 to %d bytes, got %d", maxJobKey, len(key))
		return
	}
	panel := ""
	if f.cfg.SubAgentPanel != nil {
		panel = f.cfg.SubAgentPanel(parent, key)
	}
	if panel == "" {
		wire.WriteError(w, http.StatusNotFound, "job %q of agent %q delegates to no sub-agent", key, parent)
		return
	}
	wire.WriteJSON(w, http.StatusOK, map[string]string{"panel": panel})
}

// maxJobKey is the longest job key the panel asks about.
const maxJobKey = 512
