package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const sessionHeader = "Mcp-Session-Id"

// sessions are the MCP sessions one Front (or FleetFront) has open, across
// the agents it serves, for Config.MaxSessions and Config.IdleTimeout.
//
// Under mu: open holds each session the server gave an id, with the number
// of its requests being served (a stream is one) and when the last ended;
// reserved counts the initializes under way, each holding a place until
// its session has an id or it fails. len(open)+reserved <= max, except
// for the sessions a janitor has not yet seen closed by the SDK itself.
type sessions struct {
	max  int
	idle time.Duration
	now  func() time.Time

	mu       sync.Mutex
	open     map[string]*session
	reserved int
	janitor  bool // a janitor runs
}

type session struct {
	owner  string // the identity that opened it (a fleet's), or ""
	active int
	last   time.Time
	close  func() // ends the SDK's session
	alive  func() bool
}

func newSessions(max int, idle time.Duration) *sessions {
	return &sessions{max: max, idle: idle, now: time.Now, open: map[string]*session{}}
}

// reserve takes a place for a new session, or reports false at the limit.
func (s *sessions) reserve() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.open)+s.reserved >= s.max {
		return false
	}
	s.reserved++
	return true
}

// add turns a reservation into session id.
func (s *sessions) add(id string, e *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved--
	e.last = s.now()
	e.active++ // the request that opened it
	s.open[id] = e
	if !s.janitor {
		s.janitor = true
		go s.sweep()
	}
}

// unreserve gives back a reservation that made no session.
func (s *sessions) unreserve() {
	s.mu.Lock()
	s.reserved--
	s.mu.Unlock()
}

// begin marks a request of session id, which must belong to owner: it
// returns the function that ends it, or false if there is no such session
// of owner's (the SDK answers one it does not know 404).
func (s *sessions) begin(id, owner string) (end func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.open[id]
	if e == nil {
		return func() {}, true // the SDK's: not found
	}
	if e.owner != owner {
		return nil, false
	}
	e.active++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			e.active--
			e.last = s.now()
			s.mu.Unlock()
		})
	}, true
}

// ended ends the request that opened session id.
func (s *sessions) ended(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.open[id]; e != nil {
		e.active--
		e.last = s.now()
	}
}

// remove forgets session id.
func (s *sessions) remove(id string) {
	s.mu.Lock()
	delete(s.open, id)
	s.mu.Unlock()
}

// count is the number of sessions open.
func (s *sessions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// sweep ends the sessions idle for s.idle, and forgets those the SDK
// closed, until none is left.
func (s *sessions) sweep() {
	tick := time.NewTicker(min(max(s.idle/4, 10*time.Millisecond), time.Minute))
	defer tick.Stop()
	for range tick.C {
		s.mu.Lock()
		now := s.now()
		var idle []func()
		for id, e := range s.open {
			if e.active == 0 && now.Sub(e.last) >= s.idle || e.active == 0 && !e.alive() {
				idle = append(idle, e.close)
				delete(s.open, id)
			}
		}
		over := len(s.open) == 0 && s.reserved == 0
		if over {
			s.janitor = false
		}
		s.mu.Unlock()
		for _, c := range idle {
			c()
		}
		if over {
			return
		}
	}
}

// guard is what every request of an MCP server's crosses before the SDK's
// handler: the Host check against DNS rebinding, the bound on sessions and
// their owner, and a deadline on each write.
type guard struct {
	hosts    []string
	sessions *sessions
	write    time.Duration
	next     *mcp.StreamableHTTPHandler
	server   *mcp.Server
	// owner names the caller, for a fleet's server (its sessions are
	// each one identity's); nil: every session is anyone's who may reach
	// the server.
	owner func(r *http.Request) (string, error)
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.hostAllowed(r) {
		http.Error(w, fmt.Sprintf("Forbidden: Host %q is not this server's (mcpserve.Config.AllowHosts)", truncate(r.Host, 100)), http.StatusForbidden)
		return
	}
	owner := ""
	if g.owner != nil {
		var err error
		if owner, err = g.owner(r); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="httpbridge"`)
			http.Error(w, "unauthorized: "+err.Error(), http.StatusUnauthorized)
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	r = r.WithContext(ctx)
	dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: g.write, fail: cancel}
	id := r.Header.Get(sessionHeader)
	switch {
	case id != "":
		end, ok := g.sessions.begin(id, owner)
		if !ok {
			http.Error(w, "session not found", http.StatusNotFound) // another identity's, as one that does not exist
			return
		}
		defer end()
		g.next.ServeHTTP(dw, r)
		if r.Method == http.MethodDelete {
			g.sessions.remove(id)
		}
	case r.Method == http.MethodPost:
		if !g.sessions.reserve() {
			w.Header().Set("Retry-After", "5")
			http.Error(w, fmt.Sprintf("too many MCP sessions: %d open, the limit (mcpserve.Config.MaxSessions)", g.sessions.max), http.StatusServiceUnavailable)
			return
		}
		added := ""
		dw.onHeader = func() {
			if id := w.Header().Get(sessionHeader); id != "" && added == "" {
				added = id
				g.sessions.add(id, &session{owner: owner, close: func() { g.closeSession(id) }, alive: func() bool { return g.alive(id) }})
			}
		}
		g.next.ServeHTTP(dw, r)
		if added == "" {
			g.sessions.unreserve()
			return
		}
		g.sessions.ended(added) // the request that opened it
	default:
		g.next.ServeHTTP(dw, r)
	}
}

// hostAllowed checks r's Host against DNS rebinding (Config.AllowHosts).
func (g *guard) hostAllowed(r *http.Request) bool {
	if slices.Contains(g.hosts, r.Host) {
		return true
	}
	if host, _, err := net.SplitHostPort(r.Host); err == nil && slices.Contains(g.hosts, host) {
		return true
	}
	if isLoopback(r.Host) {
		return true
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if local != nil && isLoopback(local.String()) {
		return false // reached on loopback under another name: rebinding
	}
	return len(g.hosts) == 0
}

// closeSession ends the SDK's session id.
func (g *guard) closeSession(id string) {
	for ss := range g.server.Sessions() {
		if ss.ID() == id {
			ss.Close()
		}
	}
}

// alive says whether the SDK still has session id.
func (g *guard) alive(id string) bool {
	for ss := range g.server.Sessions() {
		if ss.ID() == id {
			return true
		}
	}
	return false
}

// closeAll ends every session of the server.
func (g *guard) closeAll() {
	var all []*mcp.ServerSession
	for ss := range g.server.Sessions() {
		all = append(all, ss)
	}
	for _, ss := range all {
		g.sessions.remove(ss.ID())
		ss.Close()
	}
}

// deadlineWriter gives each write to a response a deadline (Config.
// WriteTimeout): a client that does not take its bytes in time loses the
// stream, whose request ends (fail), so that a slow client holds no
// writer of the server's, and no bytes beyond its socket's.
type deadlineWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	timeout  time.Duration
	fail     func()
	onHeader func()
	wrote    bool
}

func (d *deadlineWriter) WriteHeader(status int) {
	if !d.wrote {
		d.wrote = true
		if d.onHeader != nil {
			d.onHeader()
		}
	}
	d.ResponseWriter.WriteHeader(status)
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	if !d.wrote {
		d.WriteHeader(http.StatusOK)
	}
	if err := d.rc.SetWriteDeadline(time.Now().Add(d.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		d.fail()
		return 0, err
	}
	n, err := d.ResponseWriter.Write(p)
	if err != nil {
		d.fail()
	}
	return n, err
}

func (d *deadlineWriter) Flush() {
	if err := d.rc.Flush(); err != nil {
		d.fail()
	}
}

func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
