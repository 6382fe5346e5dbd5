package httpbridge

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moora-go/moora/automata/internal/byid"
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
	// none does), the base URL it serves its Fleet at ("" when it serves
	// none), and whether it is leaving (shutting down: its agents are
	// about to be released, not taken).
	Locate(ctx context.Context, id string) (owner, url string, leaving bool, err error)
	// Evict takes agent id from owner, known dead (its URL refuses
	// connections), so that this process may activate it at once.
	Evict(ctx context.Context, id, owner string) error
	// Secret is a key every process shares and no client knows: it
	// signs the routed header, so that a client cannot pass for a peer.
	// At least 16 bytes.
	Secret() []byte
}

// routedHeader marks a request one Fleet routed to another: the receiver
// serves it if it has the agent active, or can activate it, and otherwise
// answers 421 for the sender to locate the agent again, rather than route
// it on. Its value is signed with the peers' secret (routedValue); the
// front strips one that is not (a client's), so that a client's request is
// routed as any other.
const routedHeader = "Moora-Routed"

// routedSkew is how far from the receiver's clock a routed header's time
// may be.
const routedSkew = 5 * time.Minute

// routedValue is the routed header of a request that owner routes at now:
// owner, the time, and their HMAC-SHA256 under secret, dot-separated.
func routedValue(secret []byte, owner string, now time.Time) string {
	owner64 := base64.RawURLEncoding.EncodeToString([]byte(owner))
	at := strconv.FormatInt(now.Unix(), 10)
	return owner64 + "." + at + "." + routedMAC(secret, owner64, at)
}

func routedMAC(secret []byte, owner64, at string) string {
	mac := hmac.New(sha256.New, secret)
	io.WriteString(mac, "moora-routed\n"+owner64+"\n"+at)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// routedByPeer reports whether value is a routed header a peer signed,
// within routedSkew of now.
func routedByPeer(secret []byte, value string, now time.Time) bool {
	if len(secret) < 16 || len(value) > 512 {
		return false
	}
	owner64, rest, ok := strings.Cut(value, ".")
	at, mac, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 {
		return false
	}
	t, err := strconv.ParseInt(at, 10, 64)
	if err != nil || t < now.Add(-routedSkew).Unix() || t > now.Add(routedSkew).Unix() {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(routedMAC(secret, owner64, at)))
}

// stripForgedRouted returns r without its routed header unless a peer
// signed it.
func (f *Fleet[S, I, V]) stripForgedRouted(r *http.Request) *http.Request {
	v := r.Header.Get(routedHeader)
	if v == "" {
		return r
	}
	if f.cfg.Peers != nil && routedByPeer(f.cfg.Peers.Secret(), v, time.Now()) {
		return r
	}
	r = r.Clone(r.Context())
	r.Header.Del(routedHeader)
	return r
}

var (
	// errMisdirected: the peer routed to does not have the agent (it
	// moved).
	errMisdirected = errors.New("the peer does not have the agent (421)")
	// errOwnerGone: the peer routed to no longer holds the agent, and has
	// not answered.
	errOwnerGone = errors.New("the peer no longer holds the agent")
	// errRouteTimeout: the peer routed to has not answered by the
	// request's deadline.
	errRouteTimeout = errors.New("the peer did not answer in time")
)

// ownerCheckEvery is how often a request routed to a peer that has not
// answered yet checks that the peer still holds the agent.
const ownerCheckEvery = 500 * time.Millisecond

// routeOutcome is what an attempt to route a request came to.
type routeOutcome int

const (
	routeServed routeOutcome = iota // answered, by the peer or here
	routeAgain                      // locate the agent again, or activate it here
)

// serveActive is byid.Active, routing the request to the process that has
// the agent active when it is not this one (FleetConfig.Peers): it
// returns ok false once the request is answered, here or by the peer.
//
// The request gets until wait's deadline to be served, here or by the
// peer: answered, or the answer's headers come.
func (f *Fleet[S, I, V]) serveActive(w http.ResponseWriter, r *http.Request, who Identity, id string, wait *routeWait, body []byte, resend bool) (a *registry.Agent[S, I], release func(), ok bool) {
	if f.cfg.Peers == nil {
		return byid.Active(w, r, f.cfg.Registry, who, id)
	}
	ctx := wait.ctx
	rewind := func() { // body is read once (Fleet.buffer), sent again on each attempt
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
	}
	backoff := 20 * time.Millisecond
	var last error
	for {
		if ctx.Err() != nil {
			if r.Context().Err() == nil {
				w.Header().Set("Retry-After", "1")
				wire.WriteError(w, http.StatusServiceUnavailable, "agent %q: no process could serve it in %s%s", id, wait.waited(), lastly(last))
			}
			return nil, nil, false
		}
		rewind()
		if !f.cfg.Registry.IsActive(id) {
			// Not active here: find out where it is before activating
			// it, so that an agent another process has costs neither an
			// activation attempt nor room among this one's agents.
			owner, base, leaving, err := f.cfg.Peers.Locate(ctx, id)
			if err != nil {
				last = err
				sleep(ctx, &backoff)
				continue
			}
			if owner != "" && owner != f.cfg.Peers.Owner() {
				wait.progress() // it holds the lease: it is alive
				last = fmt.Errorf("it is active in %s", owner)
				if f.route(ctx, w, r, id, resend, owner, base, leaving, wait.progress) == routeServed {
					return nil, nil, false
				}
				sleep(ctx, &backoff)
				continue
			}
		}
		a, release, err := f.cfg.Registry.Get(ctx, id)
		switch {
		case errors.Is(err, journal.ErrUnavailable) && ctx.Err() == nil,
			errors.Is(err, journal.ErrInUse) && ctx.Err() == nil:
			// The journal's server cannot answer now (a cluster
			// electing a leader); or another process took the agent
			// meanwhile: look again, while time is left.
			last = err
			sleep(ctx, &backoff)
			continue
		}
		if err != nil && ctx.Err() != nil && r.Context().Err() == nil {
			// Its time ran out while it was being activated here.
			w.Header().Set("Retry-After", "1")
			wire.WriteError(w, http.StatusServiceUnavailable, "agent %q: no process could serve it in %s: activating it here: %v%s", id, wait.waited(), err, lastly(last))
			return nil, nil, false
		}
		return byid.Got(w, r, a, release, err, who, id)
	}
}

// lastly says what the last attempt to find the agent saw, if anything.
func lastly(last error) string {
	if last == nil {
		return ""
	}
	return fmt.Sprintf(" (last seen: %v)", last)
}

// sleep waits *backoff, or until ctx ends, and doubles *backoff up to half
// a second.
func sleep(ctx context.Context, backoff *time.Duration) {
	t := time.NewTimer(*backoff)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	*backoff = min(*backoff*2, 500*time.Millisecond)
}

// routeWait is the time a request for an agent has to be served, here or
// by the process that has the agent: FleetConfig.RouteTimeout from its
// start, moved on to RouteTimeout from each sign that the process that has
// the agent is alive (it holds the agent's lease, which it renews: a
// process paused or dead for longer than the lease's TTL holds none), and
// never past MaxRouteWait from its start. A fleet under load (the CPU
// oversubscribed, the journal's server slow) so waits for an owner that is
// slow rather than gives up on it, and a stuck one is given up on in the
// end. Its context ends at the deadline.
type routeWait struct {
	ctx      context.Context
	cancel   context.CancelFunc
	start    time.Time
	step     time.Duration // RouteTimeout
	max      time.Duration // MaxRouteWait
	mu       sync.Mutex
	deadline time.Time
	timer    *time.Timer
}

func newRouteWait(parent context.Context, step, max time.Duration) *routeWait {
	w := &routeWait{start: time.Now(), step: step, max: max}
	w.ctx, w.cancel = context.WithCancel(parent)
	w.deadline = w.start.Add(min(step, max))
	w.timer = time.AfterFunc(w.deadline.Sub(w.start), w.cancel)
	return w
}

// progress moves the deadline on: to RouteTimeout from now, within
// MaxRouteWait of the start.
func (w *routeWait) progress() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx.Err() != nil {
		return
	}
	d := time.Now().Add(w.step)
	if limit := w.start.Add(w.max); d.After(limit) {
		d = limit
	}
	if d.After(w.deadline) {
		w.deadline = d
		w.timer.Reset(time.Until(d))
	}
}

// stop ends the wait.
func (w *routeWait) stop() {
	w.timer.Stop()
	w.cancel()
}

// waited is how long the request has waited, for the answer that it
// waited too long.
func (w *routeWait) waited() string {
	return fmt.Sprintf("%v (FleetConfig.RouteTimeout %v, moved on while the process that has it held it, up to MaxRouteWait %v)",
		time.Since(w.start).Round(time.Millisecond), w.step, w.max)
}

// route makes one attempt at serving r by owner, the process that holds
// agent id, serving at base, leaving or not (Peers.Locate): it proxies the
// request there; or, when that process is dead, evicts it, for the caller
// to activate the agent here.
//
// A request that may be sent again (resend: it changes nothing, or it is
// an input with an id that the agent's journal keeps) is sent again when
// its answer is lost; any other is answered 502, its outcome unknown.
//
// ctx bounds the wait for the peer's answer (its headers), not the answer
// itself: a stream lasts as long as it is followed. progress, if not nil,
// is called at each check that finds owner still holding the agent.
func (f *Fleet[S, I, V]) route(ctx context.Context, w http.ResponseWriter, r *http.Request, id string, resend bool, owner, base string, leaving bool, progress func()) routeOutcome {
	peers := f.cfg.Peers
	switch {
	case r.Header.Get(routedHeader) != "":
		// Routed here by a peer that thought this process had it (the
		// front strips a header no peer signed): let that peer look
		// again, rather than route on.
		wire.WriteError(w, http.StatusMisdirectedRequest, "agent %q is not active here", id)
		return routeServed
	case base == "":
		// Its holder serves nowhere now: wait for its lease to be
		// released or to expire (it may be alive, its advertisement
		// lapsed).
		return routeAgain
	}
	target, err := url.Parse(base)
	if err != nil {
		f.cfg.Logger.Warn("httpbridge: a peer's URL", "agent", id, "owner", owner, "url", base, "err", err)
		return routeAgain
	}
	var failed error
	// While the owner has not answered, check now and then that it still
	// holds the agent: a process that is paused (SIGSTOP, a frozen VM)
	// takes connections, and answers nothing, until its lease expires
	// and another process may take the agent.
	pctx, abandon := context.WithCancelCause(r.Context())
	defer abandon(nil)
	answered := make(chan struct{})
	go f.watchOwner(pctx, ctx.Done(), abandon, answered, id, owner, progress)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set(routedHeader, routedValue(peers.Secret(), peers.Owner(), time.Now()))
			// Checked here (FleetConfig.Bridge.AllowOrigins): the peer
			// would compare it with its own address.
			pr.Out.Header.Del("Origin")
			pr.Out.Host = target.Host
		},
		Transport:     f.transport,
		FlushInterval: -1, // streams: each event as it comes
		ModifyResponse: func(resp *http.Response) error {
			close(answered)
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
	out := w
	if r.Method == http.MethodGet {
		// A stream: each write bounded as the bridge bounds its own
		// (Config.WriteTimeout), instead of the server's WriteTimeout.
		out = &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: f.cfg.Bridge.WriteTimeout}
	}
	proxy.ServeHTTP(out, r.WithContext(pctx))
	if out != w {
		// The next request on the connection is the server's again.
		http.NewResponseController(w).SetWriteDeadline(time.Time{})
	}
	if failed == nil {
		return routeServed
	}
	var op *net.OpError
	switch {
	case errors.Is(failed, errMisdirected):
		return routeAgain // it moved: look again
	case r.Context().Err() != nil:
		return routeServed // the client left
	case errors.As(failed, &op) && op.Op == "dial":
		// Nothing was sent. Refused, by a process that is not leaving:
		// nobody listens at its address, it is dead; take the agent
		// without waiting for its lease to expire. Anything else (a
		// timeout, a leaving process): wait for the lease.
		if errors.Is(failed, syscall.ECONNREFUSED) && !leaving {
			ctx, cancel := context.WithTimeout(r.Context(), ownerCheckEvery*4)
			defer cancel()
			if err := peers.Evict(ctx, id, owner); err != nil {
				f.cfg.Logger.Warn("httpbridge: evicting a dead process from an agent", "agent", id, "owner", owner, "err", err)
			}
		}
		return routeAgain
	case resend:
		// Safe to send again: it changes nothing, or the process that
		// applies it next finds its id among the journaled ones, if it
		// was applied, and answers as for a duplicate.
		return routeAgain
	case errors.Is(context.Cause(pctx), errOwnerGone):
		// It took the request, then stopped holding the agent without an
		// answer. If it had journaled it, it is applied; if not, its
		// append will be refused (it is fenced).
		wire.WriteError(w, http.StatusBadGateway, "agent %q: the process that had it (%s) stopped answering and lost it, and the request may or may not have been applied", id, owner)
		return routeServed
	case errors.Is(context.Cause(pctx), errRouteTimeout):
		w.Header().Set("Retry-After", "1")
		wire.WriteError(w, http.StatusGatewayTimeout, "agent %q: the process that has it (%s) did not answer in time (FleetConfig.RouteTimeout, MaxRouteWait), and the request may or may not have been applied", id, owner)
		return routeServed
	}
	// Sent, and no answer: the peer may have applied it. Say so rather
	// than send it again to another process, which would apply it twice.
	wire.WriteError(w, http.StatusBadGateway, "agent %q: the process that has it (%s) failed while answering, and the request may or may not have been applied: %v", id, owner, failed)
	return routeServed
}

// peerTransport is the Fleet's client to its peers: each wait for an
// answer's headers bounded by timeout (MaxRouteWait: a routeWait ends it
// sooner unless the peer shows it is alive), and the connections to one
// peer by maxConns.
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

// watchOwner abandons a request routed to owner (cancels ctx with
// errOwnerGone) if owner stops holding agent id before it answers
// (answered is closed).
//
// It also abandons it, with errRouteTimeout, when deadline is closed first.
// Each check that finds owner still holding the agent calls progress, if
// not nil.
func (f *Fleet[S, I, V]) watchOwner(ctx context.Context, deadline <-chan struct{}, abandon context.CancelCauseFunc, answered <-chan struct{}, id, owner string, progress func()) {
	t := time.NewTicker(ownerCheckEvery)
	defer t.Stop()
	gone := 0 // checks in a row that found no holder
	for {
		select {
		case <-ctx.Done():
			return
		case <-answered:
			return
		case <-deadline:
			select {
			case <-answered:
			default:
				abandon(errRouteTimeout)
			}
			return
		case <-t.C:
		}
		lctx, cancel := context.WithTimeout(ctx, ownerCheckEvery)
		now, _, _, err := f.cfg.Peers.Locate(lctx, id)
		cancel()
		switch {
		case err == nil && now == owner:
			gone = 0
			if progress != nil {
				progress()
			}
			continue
		case err != nil:
			gone = 0
			continue
		case now == "":
			// Released: for good, or for a moment (the owner
			// deactivating the agent as it comes to this request).
			if gone++; gone < 2 {
				continue
			}
		}
		select {
		case <-answered:
		default:
			abandon(errOwnerGone)
		}
		return
	}
}

// keyed reports whether r posts an input whose id (Config.InputID) the
// agent's journal keeps: sent twice, to two processes one after the other,
// it is applied once, as the second finds the id among the journaled ones.
func (f *Fleet[S, I, V]) keyed(r *http.Request, body []byte) bool {
	if f.cfg.Bridge.InputID == nil || r.Method != http.MethodPost || r.PathValue("rest") != "inputs" {
		return false
	}
	in, err := f.cfg.Bridge.Decode(body)
	return err == nil && f.cfg.Bridge.InputID(in) != ""
}

// deadlineWriter sets a write deadline timeout ahead before each write and
// flush, so that a stream routed through this process lasts as long as its
// client reads it, and no longer than timeout past the moment it stops.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	return d.ResponseWriter.Write(p)
}

func (d *deadlineWriter) Flush() {
	d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	d.rc.Flush()
}

func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
