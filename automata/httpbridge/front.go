package httpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// Front is a protocol front-end of one agent (Config.Fronts): another way
// of speaking to the same bridge, such as MCP (package
// automata/httpbridge/mcpserve), which mounts beside the bridge's own
// routes instead of being a second copy of them. New calls it once, with
// the bridge, and serves the handler it returns at the front's path on the
// per-agent handler: behind the bridge's front when the bridge is served
// alone (CORS allow-list, Auth, Config.MaxBody), behind a Fleet's at
// /agents/{id}/{path} (its Identify and owner rules, the agent activated and
// held active while each request lasts). A front reaches the agent only
// through the bridge's methods for fronts — Decode, Dispatch, View,
// Deltas, Done, AgentID — which go through the same decoding, client
// actors, dedup and admission as POST /inputs, and read the same view and
// deltas as GET /state.
//
// A front is called before New returns, and must not call the bridge's
// methods then; it returns an error to make New fail (a front whose
// configuration does not fit the agent). Its handler lives as long as the
// bridge: it ends what it holds when Done is closed.
type Front[S, I, V any] func(b *Bridge[S, I, V]) (http.Handler, error)

// FleetFront is a protocol front-end of a whole Fleet (FleetConfig.Fronts),
// served at its path beside /agents, behind the fleet's front (CORS
// allow-list, the bound on the body). Its handler identifies each request
// itself (Fleet.Identify) and reaches agents only through the fleet's
// methods for fronts (CreateAgent, WithAgent), which keep the fleet's owner
// rules. A handler that is an io.Closer is closed by Fleet.Close.
type FleetFront[S, I, V any] func(f *Fleet[S, I, V]) (http.Handler, error)

// bridgeRoutes are the first segments of the bridge's own routes, which a
// front's path may not take.
var bridgeRoutes = []string{"inputs", "state", "streams", "token", "client.js", "chat"}

// checkFrontPath checks the path of a front, which takes the route of
// that path and every path under it.
func checkFrontPath(path string, taken []string) error {
	rest, ok := strings.CutPrefix(path, "/")
	first, _, _ := strings.Cut(rest, "/")
	switch {
	case !ok || rest == "" || strings.HasSuffix(rest, "/"):
		return fmt.Errorf("%q is not a path: want /name, such as /mcp", path)
	case strings.ContainsAny(rest, " \t\r\n{}"):
		return fmt.Errorf("%q: a front's path has no spaces and no wildcards", path)
	case slices.Contains(taken, first):
		return fmt.Errorf("%q is a route of the bridge", path)
	}
	return nil
}

// mountFronts mounts Config.Fronts on the bridge's routes.
func (b *Bridge[S, I, V]) mountFronts() error {
	for _, path := range sortedKeys(b.cfg.Fronts) {
		if err := checkFrontPath(path, bridgeRoutes); err != nil {
			return fmt.Errorf("httpbridge: Config.Fronts: %v", err)
		}
		h, err := b.cfg.Fronts[path](b)
		if err != nil {
			return fmt.Errorf("httpbridge: Config.Fronts[%q]: %w", path, err)
		}
		b.mux.Handle(path, h)
		b.mux.Handle(path+"/", h)
	}
	return nil
}

// mountFronts mounts FleetConfig.Fronts on the fleet's routes.
func (f *Fleet[S, I, V]) mountFronts() error {
	for _, path := range sortedKeys(f.cfg.Fronts) {
		if err := checkFrontPath(path, []string{"agents", "sessions", "client.js"}); err != nil {
			return fmt.Errorf("httpbridge: FleetConfig.Fronts: %v", err)
		}
		h, err := f.cfg.Fronts[path](f)
		if err != nil {
			return fmt.Errorf("httpbridge: FleetConfig.Fronts[%q]: %w", path, err)
		}
		if c, ok := h.(io.Closer); ok {
			f.fronts = append(f.fronts, c)
		}
		f.mux.Handle(path, h)
		f.mux.Handle(path+"/", h)
	}
	return nil
}

func sortedKeys[T any](m map[string]T) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Decode decodes and validates an input as a POST /inputs does
// (Config.Decode): for a front.
func (b *Bridge[S, I, V]) Decode(data []byte) (I, error) { return b.cfg.Decode(data) }

// ClientActors are the actors whose inputs clients may dispatch
// (Config.ClientActors, or its default): ["*"] for any input.
func (b *Bridge[S, I, V]) ClientActors() []string { return slices.Clone(b.actors.names) }

// AgentID is the id of a Fleet's agent, or "" for a bridge served alone.
func (b *Bridge[S, I, V]) AgentID() string { return b.agentID }

// Done is closed when the bridge closes (Close; in a Fleet, when its agent
// is deactivated): a front ends what it holds then.
func (b *Bridge[S, I, V]) Done() <-chan struct{} { return b.closing }

// Dispatched is what Bridge.Dispatch did with an input.
type Dispatched struct {
	// Seq is the input's sequence number in the journal, when Journaled;
	// for an in-memory agent, its number since the bridge started.
	Seq       uint64
	Journaled bool
	// Duplicate says the input's id was applied recently: nothing was
	// applied now, and Seq is that input's.
	Duplicate bool
}

// InputError is why Bridge.Dispatch did not apply an input, with the
// status a POST /inputs would have been answered: 400 (a bad key), 403 (an
// input of an actor clients do not play), 422 (refused by the admission
// step), 500 (the agent failed), 503 (not taken up in time, or the agent
// closed or moved: Retry says to send it again).
type InputError struct {
	Status  int
	Message string
	Retry   bool
}

func (e *InputError) Error() string { return e.Message }

// Dispatch dispatches in as POST /inputs does, for a front: checked
// against Config.ClientActors, applied once within the dedup window of its
// key (Config.InputID's, or key as an Idempotency-Key when the bridge has
// no InputID; "" for none), through the agent's admission step; it returns
// once the input is applied (journaled, for a durable agent) and the
// bridge has observed the state after it. An error is an *InputError: the
// input was not applied (except as the 503 of an append whose server did
// not answer, which POST /inputs documents).
func (b *Bridge[S, I, V]) Dispatch(ctx context.Context, in I, key string) (Dispatched, error) {
	if err := b.actors.check(in); err != nil {
		return Dispatched{}, &InputError{Status: http.StatusForbidden, Message: err.Error()}
	}
	if b.cfg.InputID != nil {
		key = b.cfg.InputID(in)
	} else if err := checkKey(key); err != nil {
		return Dispatched{}, &InputError{Status: http.StatusBadRequest, Message: err.Error()}
	}
	// apply answers in HTTP terms: its answer is read back from a
	// recorder, so that a front meets the very path a POST does.
	rec := &answer{header: http.Header{}}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/inputs", http.NoBody)
	if err != nil {
		return Dispatched{}, err
	}
	seq, dup, ok := b.apply(rec, r, in, key)
	if !ok {
		return Dispatched{}, rec.inputError()
	}
	return Dispatched{Seq: seq, Journaled: b.durable != nil, Duplicate: dup}, nil
}

// answer records the answer a route writes, for a front that calls it.
type answer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *answer) Header() http.Header { return a.header }
func (a *answer) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}
func (a *answer) Write(p []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	if a.body.Len()+len(p) > 1<<20 { // an answer of the bridge's, never this long
		return 0, errors.New("httpbridge: answer too long")
	}
	return a.body.Write(p)
}

// message is the error message of an answer, or its body.
func (a *answer) message() string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(a.body.Bytes(), &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(a.body.String())
}

func (a *answer) inputError() *InputError {
	return &InputError{Status: a.status, Message: a.message(), Retry: a.header.Get("Retry-After") != ""}
}

// View returns the view clients see (Config.View) after input seq, and a
// channel closed when the view changes after it: for a front that reads
// the state, or waits for a condition of it.
func (b *Bridge[S, I, V]) View() (seq uint64, view V, changed <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq, b.view, b.changed
}

// Delta is one change of the view, as the state stream sends it: the data
// of its "delta" event, {"base": n, "seq": m, "patch": [...]}, a JSON Patch
// that brings the view at any seq from Base up to, not including, Seq to
// the view at Seq.
type Delta struct {
	Base, Seq uint64
	Data      json.RawMessage
}

// Deltas returns the deltas of the view after seq, oldest first, at most
// max of them (max <= 0: all the bridge keeps), and the seq they bring a
// client to (which moves past inputs that left the view as it was);
// resync is true when the bridge no longer keeps the deltas after seq (a
// front's client then reads the view whole), and changed is closed when
// there is more. The Data of a delta shares the bridge's bytes: read it,
// never write to it.
func (b *Bridge[S, I, V]) Deltas(after uint64, max int) (ds []Delta, next uint64, resync bool, changed <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if after < b.floor || after > b.seq {
		return nil, b.seq, true, b.changed
	}
	next = after
	i := b.ringIndexLocked(after)
	for ; i < len(b.ring) && (max <= 0 || len(ds) < max); i++ {
		d := b.ring[i]
		ds = append(ds, Delta{Base: d.base, Seq: d.seq, Data: eventData(d.event)})
		next = d.seq
	}
	if i == len(b.ring) && b.seq > next {
		next = b.seq
	}
	return ds, next, false, b.changed
}

// eventData returns the data of an event wire.AppendEvent wrote: one line.
func eventData(event []byte) json.RawMessage {
	_, data, _ := bytes.Cut(event, []byte("\ndata: "))
	return bytes.TrimSuffix(data, []byte("\n\n"))
}

// Identify identifies a request as the fleet's routes do
// (FleetConfig.Identify): for a FleetFront.
func (f *Fleet[S, I, V]) Identify(r *http.Request) (Identity, error) { return f.cfg.Identify(r) }

// FleetError is why a Fleet's method for fronts failed, with the status
// the fleet's route would have answered: 401 (not identified), 403, 404
// (no such agent, or another owner's: the same words), 429 (at
// MaxAgentsPerOwner), 503 (Retry: try again).
type FleetError struct {
	Status  int
	Message string
	Retry   bool
}

func (e *FleetError) Error() string { return e.Message }

// AgentInfo is an agent of a Fleet, as its routes describe it.
type AgentInfo struct {
	ID      string `json:"id"`
	Owner   string `json:"owner"`
	Created string `json:"created"`
}

// CreateAgent creates an agent for the caller of r, as POST /agents does
// (id ""), or agent id as PUT /agents/{id} does: created is false when it
// exists already and the caller may see it (another owner's is a 404
// *FleetError, as for one that does not exist). The fleet's owner rules
// and MaxAgentsPerOwner hold.
func (f *Fleet[S, I, V]) CreateAgent(r *http.Request, id string) (info AgentInfo, created bool, err error) {
	rec := &answer{header: http.Header{}}
	r2 := r.Clone(r.Context())
	r2.Body, r2.ContentLength = http.NoBody, 0
	if id == "" {
		r2.Method, r2.URL.Path = http.MethodPost, "/agents"
		f.create(rec, r2)
	} else {
		r2.Method, r2.URL.Path = http.MethodPut, "/agents/"+id
		r2.SetPathValue("id", id)
		f.put(rec, r2)
	}
	if rec.status != http.StatusOK && rec.status != http.StatusCreated {
		return AgentInfo{}, false, rec.fleetError()
	}
	if err := json.Unmarshal(rec.body.Bytes(), &info); err != nil {
		return AgentInfo{}, false, fmt.Errorf("httpbridge: reading the fleet's answer: %v", err)
	}
	return info, rec.status == http.StatusCreated, nil
}

func (a *answer) fleetError() *FleetError {
	return &FleetError{Status: a.status, Message: a.message(), Retry: a.header.Get("Retry-After") != ""}
}

type withAgentKey struct{}

// WithAgent calls fn with the bridge of agent id, as a request of r's
// caller for one of the agent's routes would reach it: the caller
// identified, its right to see the agent checked (another owner's is a 404
// *FleetError, as for one that does not exist), the agent activated and
// held active until fn returns. An agent active in another process
// (FleetConfig.Peers) is not reached this way: a 503 *FleetError, for the
// client to use the agent's own routes, which are routed there.
func (f *Fleet[S, I, V]) WithAgent(r *http.Request, id string, fn func(b *Bridge[S, I, V])) error {
	if f.cfg.Peers != nil {
		if owner, _, _, err := f.cfg.Peers.Locate(r.Context(), id); err == nil && owner != "" && owner != f.cfg.Peers.Owner() {
			return &FleetError{Status: http.StatusServiceUnavailable, Message: fmt.Sprintf("agent %q is active in another process: use its own routes, which are routed there", id), Retry: true}
		}
	}
	rec := &answer{header: http.Header{}}
	called := false
	ctx := context.WithValue(r.Context(), withAgentKey{}, func(b *Bridge[S, I, V]) {
		called = true
		fn(b)
	})
	r2 := r.Clone(ctx)
	r2.Method, r2.Body, r2.ContentLength = http.MethodPost, http.NoBody, 0
	r2.URL.Path = "/agents/" + id + "/front"
	r2.Header.Del(routedHeader) // only a peer routes to a peer
	r2.SetPathValue("id", id)
	r2.SetPathValue("rest", "front")
	f.agent(rec, r2)
	if called {
		return nil
	}
	if rec.status < 300 { // answered by a peer, which had the agent after all
		return &FleetError{Status: http.StatusServiceUnavailable, Message: fmt.Sprintf("agent %q is active in another process: use its own routes, which are routed there", id), Retry: true}
	}
	return rec.fleetError()
}

// Decode decodes and validates an input as its agent's POST /inputs does
// (FleetConfig.Bridge.Decode): for a FleetFront.
func (f *Fleet[S, I, V]) Decode(data []byte) (I, error) { return f.cfg.Bridge.Decode(data) }

// ClientActors are the actors whose inputs clients may dispatch
// (FleetConfig.Bridge.ClientActors, or its default): for a FleetFront.
func (f *Fleet[S, I, V]) ClientActors() []string {
	a, _ := newClientActors(f.cfg.Bridge.ClientActors) // checked by NewFleet
	return a.names
}
