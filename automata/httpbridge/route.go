package httpbridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/moora-go/moora/automata/internal/wire"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/registry"
)

// Peers finds the process that has an agent active, for a Fleet whose
// registry shares its agents with other processes (FleetConfig.Peers):
// automata/journal/jetstream's Fleet, whose Open claims an agent for one
// process at a time, is one.
type Peers interface {
	// Owner is this process's id among its peers.
	Owner() string
	// Locate returns the process that holds agent id (owner; "" when
	// none does) and the base URL it serves its Fleet at ("" when it
	// serves none: it is dead, or stopped).
	Locate(ctx context.Context, id string) (owner, url string, err error)
	// Evict takes agent id from owner, known dead, so that this process
	// may activate it at once.
	Evict(ctx context.Context, id, owner string) error
}

// routedHeader marks a request one Fleet routed to another: the receiver
// serves it if it has the agent active, or can activate it, and otherwise
// answers 421 for the sender to locate the agent again, rather than route
// it on.
const routedHeader = "Moora-Routed"

// errMisdirected: the peer routed to does not have the agent (it moved).
var errMisdirected = errors.New("the peer does not have the agent (421)")

// routeOutcome is what an attempt to route a request came to.
type routeOutcome int

const (
	routeServed routeOutcome = iota // answered, by the peer or here
	routeAgain                      // locate the agent again, or activate it here
)

// serveActive is ServeActive, routing the request to the process that has
// the agent active when it is not this one (FleetConfig.Peers): it
// returns ok false once the request is answered, here or by the peer.
func (f *Fleet[S, I, V]) serveActive(w http.ResponseWriter, r *http.Request, who Identity, id string) (a *registry.Agent[S, I], release func(), ok bool) {
	if f.cfg.Peers == nil {
		return ServeActive(w, r, f.cfg.Registry, who, id)
	}
	ctx, cancel := context.WithTimeout(r.Context(), f.cfg.RouteTimeout)
	defer cancel()
	var body []byte // read once, sent again on each attempt
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		if body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, f.cfg.Bridge.MaxBody)); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				wire.WriteError(w, http.StatusRequestEntityTooLarge, "the input is over %d bytes (Config.MaxBody)", tooBig.Limit)
			} else {
				wire.WriteError(w, http.StatusBadRequest, "reading the request: %v", err)
			}
			return nil, nil, false
		}
	}
	rewind := func() {
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
	}
	backoff := 20 * time.Millisecond
	var last error
	for {
		rewind()
		a, release, err := f.cfg.Registry.Get(ctx, id)
		if err == nil || !errors.Is(err, journal.ErrInUse) {
			if err != nil && ctx.Err() != nil && r.Context().Err() == nil {
				err = fmt.Errorf("%w (after %v of looking for the process that has it: %v)", err, f.cfg.RouteTimeout, last)
			}
			return serveGot(w, r, a, release, err, who, id)
		}
		last = err
		if f.route(ctx, w, r, id) == routeServed {
			return nil, nil, false
		}
		if ctx.Err() != nil {
			if r.Context().Err() == nil {
				w.Header().Set("Retry-After", "1")
				wire.WriteError(w, http.StatusServiceUnavailable, "agent %q is active in another process, which did not answer within %v (FleetConfig.RouteTimeout): %v", id, f.cfg.RouteTimeout, last)
			}
			return nil, nil, false
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 500*time.Millisecond)
	}
}

// route makes one attempt at serving r by the process that holds agent id:
// it locates it, and proxies the request there; or, when that process is
// dead, evicts it, for the caller to activate the agent here.
func (f *Fleet[S, I, V]) route(ctx context.Context, w http.ResponseWriter, r *http.Request, id string) routeOutcome {
	peers := f.cfg.Peers
	owner, base, err := peers.Locate(ctx, id)
	switch {
	case err != nil:
		f.cfg.Logger.Warn("httpbridge: locating an agent", "agent", id, "err", err)
		return routeAgain
	case owner == "" || owner == peers.Owner():
		return routeAgain // released meanwhile, or being closed here: Get again
	case r.Header.Get(routedHeader) != "":
		// Routed here by a peer that thought this process had it: let
		// that peer look again, rather than route on.
		wire.WriteError(w, http.StatusMisdirectedRequest, "agent %q is not active here (it is %s's now)", id, owner)
		return routeServed
	case base == "":
		// Its holder serves nowhere: dead (or closing). Take the agent
		// without waiting for its lease to expire.
		if err := peers.Evict(ctx, id, owner); err != nil {
			f.cfg.Logger.Warn("httpbridge: evicting a dead process from an agent", "agent", id, "owner", owner, "err", err)
		}
		return routeAgain
	}
	target, err := url.Parse(base)
	if err != nil {
		f.cfg.Logger.Warn("httpbridge: a peer's URL", "agent", id, "owner", owner, "url", base, "err", err)
		return routeAgain
	}
	var failed error
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set(routedHeader, peers.Owner())
			pr.Out.Host = target.Host
		},
		Transport:     f.transport,
		FlushInterval: -1, // streams: each event as it comes
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode == http.StatusMisdirectedRequest {
				resp.Body.Close()
				return errMisdirected
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) { failed = err },
		ErrorLog:     slog.NewLogLogger(f.cfg.Logger.Handler(), slog.LevelWarn),
	}
	// The client's context, not ctx: a stream lasts as long as it is
	// followed. The transport bounds the wait for the answer's headers.
	proxy.ServeHTTP(w, r)
	if failed == nil {
		return routeServed
	}
	var op *net.OpError
	switch {
	case errors.Is(failed, errMisdirected):
		return routeAgain // it moved: look again
	case errors.As(failed, &op) && op.Op == "dial":
		// Nothing was sent: nobody listens at its address. Dead.
		if err := peers.Evict(ctx, id, owner); err != nil {
			f.cfg.Logger.Warn("httpbridge: evicting a dead process from an agent", "agent", id, "owner", owner, "err", err)
		}
		return routeAgain
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		// Safe to send again: it changes nothing.
		return routeAgain
	case r.Context().Err() != nil:
		return routeServed // the client left
	}
	// Sent, and no answer: the peer may have applied it. Say so rather
	// than send it again to another process, which would apply it twice.
	wire.WriteError(w, http.StatusBadGateway, "agent %q: the process that has it (%s) failed while answering, and the request may or may not have been applied: %v", id, owner, failed)
	return routeServed
}

// peerTransport is the Fleet's client to its peers: each wait for an
// answer's headers bounded by timeout, and the connections to one peer by
// maxConns.
func peerTransport(timeout time.Duration, maxConns int) *http.Transport {
	return &http.Transport{
		Proxy:                 nil, // peers are reached directly
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ResponseHeaderTimeout: timeout,
		MaxConnsPerHost:       maxConns,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
	}
}
