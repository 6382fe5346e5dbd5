// Package byid answers the requests for agents by id alike for the HTTP
// surfaces that serve them (httpbridge's Fleet, devpanel's Fleet): whether
// an identity may see an agent (another identity's is a 404, word for word
// as one that does not exist), activating it for a request, and the list of
// an identity's agents.
package byid

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/moora-go/moora/automata/internal/wire"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/registry"
)

// Info is an agent as the routes of agents by id describe it.
type Info struct {
	ID      string    `json:"id"`
	Owner   string    `json:"owner"`
	Created time.Time `json:"created"`
	// Fork is where a forked agent came from (journal.AgentInfo.Fork).
	Fork *journal.ForkOrigin `json:"fork,omitempty"`
}

// Owned returns the info of agent id of reg if who may see it;
// otherwise it answers the request itself: 404, word for word as for an
// agent that does not exist, for another identity's.
func Owned[S, I any](w http.ResponseWriter, reg *registry.Registry[S, I], who registry.Identity, id string) (journal.AgentInfo, bool) {
	info, err := reg.Owned(who, id)
	switch {
	case errors.Is(err, journal.ErrNoAgent):
		wire.WriteError(w, http.StatusNotFound, "no agent %q", wire.Truncate(id, 100))
		return info, false
	case errors.Is(err, journal.ErrUnavailable):
		w.Header().Set("Retry-After", "1")
		wire.WriteError(w, http.StatusServiceUnavailable, "agent %q: %v", wire.Truncate(id, 100), err)
		return info, false
	case err != nil:
		wire.WriteError(w, http.StatusInternalServerError, "agent %q: %v", wire.Truncate(id, 100), err)
		return info, false
	}
	return info, true
}

// Active activates agent id of reg for a request of who's that
// Owned let through, and returns it with its lease; otherwise it
// answers the request itself: 404 for an agent deleted since, or whose id
// was given to another identity's agent since (the owner is checked again
// on the activation got); 503 with Retry-After when MaxActive agents are
// all in use; nothing to a client that left meanwhile.
func Active[S, I any](w http.ResponseWriter, r *http.Request, reg *registry.Registry[S, I], who registry.Identity, id string) (a *registry.Agent[S, I], release func(), ok bool) {
	a, release, err := reg.Get(r.Context(), id)
	return Got(w, r, a, release, err, who, id)
}

// Got is Active once the registry's Get has answered.
func Got[S, I any](w http.ResponseWriter, r *http.Request, a *registry.Agent[S, I], release func(), err error, who registry.Identity, id string) (*registry.Agent[S, I], func(), bool) {
	switch {
	case err == nil:
	case errors.Is(err, journal.ErrNoAgent):
		wire.WriteError(w, http.StatusNotFound, "no agent %q", id)
		return nil, nil, false
	case errors.Is(err, registry.ErrTooManyActive):
		w.Header().Set("Retry-After", "1")
		wire.WriteError(w, http.StatusServiceUnavailable, "%v", err)
		return nil, nil, false
	case errors.Is(err, registry.ErrClosed):
		wire.WriteError(w, http.StatusServiceUnavailable, "%v", err)
		return nil, nil, false
	case errors.Is(err, journal.ErrInUse), errors.Is(err, journal.ErrUnavailable):
		// Another process has it (a fleet shared across processes
		// without the Peers of httpbridge's FleetConfig), or it is being deleted; or the
		// journal's server cannot answer now.
		w.Header().Set("Retry-After", "1")
		wire.WriteError(w, http.StatusServiceUnavailable, "%v", err)
		return nil, nil, false
	case r.Context().Err() != nil:
		return nil, nil, false
	default:
		wire.WriteError(w, http.StatusInternalServerError, "%v", err)
		return nil, nil, false
	}
	if !who.May(a.Info()) {
		// The agent was deleted and its id given to someone else's since
		// Owned: this activation is of that one.
		release()
		wire.WriteError(w, http.StatusNotFound, "no agent %q", id)
		return nil, nil, false
	}
	if r.Context().Err() != nil {
		release() // the client left while the agent was activated
		return nil, nil, false
	}
	return a, release, true
}

// MaxListLimit bounds one page of GET /agents.
const MaxListLimit = 1000

// List answers GET /agents for who: one page of the agents of reg
// that who may see, in order of id, as {"agents": [{"id", "owner",
// "created", "fork"}], "next": id} ("fork" only for a fork: {"agent", "seq"}), after the query's "after" id, at most its
// "limit" (default 100, at most 1,000); "next", if present, is the "after"
// of the next page. The devpanel's fleet answers with it too.
func List[S, I any](w http.ResponseWriter, r *http.Request, reg *registry.Registry[S, I], who registry.Identity) {
	limit := 100
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxListLimit {
			wire.WriteError(w, http.StatusBadRequest, "limit %q: want 1 to %d", wire.Truncate(s, 20), MaxListLimit)
			return
		}
		limit = n
	}
	page := struct {
		Agents []Info `json:"agents"`
		Next   string `json:"next,omitempty"`
	}{Agents: []Info{}}
	err := reg.ListOwned(who, r.URL.Query().Get("after"), func(id string, info journal.AgentInfo) error {
		if len(page.Agents) == limit {
			page.Next = page.Agents[limit-1].ID
			return journal.ErrStop
		}
		page.Agents = append(page.Agents, Info{ID: id, Owner: info.Owner, Created: info.Created, Fork: info.Fork})
		return nil
	})
	if err != nil {
		wire.WriteError(w, http.StatusInternalServerError, "listing agents: %v", err)
		return
	}
	wire.WriteJSON(w, http.StatusOK, page)
}
