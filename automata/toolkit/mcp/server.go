package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/moora-go/moora/automata/toolkit"
)

// Config says which MCP server to mount and how. Set Command (a server
// over stdio, which the Server starts and supervises) or URL (a server
// over Streamable HTTP), not both. Zero limits are their defaults.
type Config struct {
	// Name names the server in errors and logs: an error the model is
	// told says "mcp server NAME". It is required.
	Name string

	// Command is the program of a server over stdio, and Args its
	// arguments (no shell). Env is added to the environment the program
	// inherits; Dir is where it runs ("" the current directory).
	Command string
	Args    []string
	Env     []string
	Dir     string

	// URL is the endpoint of a server over Streamable HTTP. Header is
	// sent with every request (such as Authorization). HTTPClient sends
	// them (default a client of its own, with no timeout of its own: a
	// call's try has its Timeout, the stream of server messages none);
	// the Server uses a copy of it, so that what it bounds (the size of a
	// response) does not change the client given.
	URL        string
	Header     http.Header
	HTTPClient *http.Client

	// Prefix is given to a tool whose name another tool of the kit has
	// (see toolkit.Mount); "" leaves such a tool out.
	Prefix string
	// Policy guards each call of each of the server's tools, as a Go
	// tool's (toolkit.Policy).
	Policy toolkit.Policy

	// Logger is where the Server says what it does: when the server
	// connects, dies or is restarted, tools it left out, the lines the
	// server writes to its stderr (at Info, named by "stderr", each cut
	// to MaxStderrLineBytes, at most StderrLinesPerSecond of them).
	// Default slog.Default().
	Logger *slog.Logger

	// ConnectTimeout bounds starting or reaching the server, the MCP
	// handshake and listing its tools (default 30 s): a server that takes
	// longer is restarted.
	ConnectTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before a server that died
	// or could not be reached is started or reached again: MinBackoff
	// (default 200 ms) at first, doubled at each failure in a row up to
	// MaxBackoff (default 30 s); a server that was up for MaxBackoff
	// starts from MinBackoff again.
	MinBackoff, MaxBackoff time.Duration
	// KeepAlive is how often an idle session is pinged (default 30 s; -1:
	// never): a server that does not answer is restarted or reconnected.
	KeepAlive time.Duration
	// MaxMessageBytes bounds one message from the server — a line over
	// stdio, a response or an event over HTTP (default 4 MiB). A server
	// that sends a longer one has its session ended (and is restarted):
	// memory stays bounded whatever it sends.
	MaxMessageBytes int
	// MaxTools bounds how many of the server's tools are mounted (default
	// 512); the others are left out, and logged.
	MaxTools int
	// NotificationsPerSecond bounds the notifications of a server over
	// stdio that are handled (default 100, with bursts of as many): past
	// it they are dropped, and counted in the log. A tools/list_changed
	// among them is not lost: the list is fetched again.
	NotificationsPerSecond int
	// MaxStderrLineBytes and StderrLinesPerSecond bound what a server
	// over stdio writes to its stderr that is logged: each line cut to
	// MaxStderrLineBytes (default 1 KiB), at most StderrLinesPerSecond
	// (default 20) lines a second, the others counted. The last lines
	// (at most 4 KiB) are quoted when the server dies.
	MaxStderrLineBytes, StderrLinesPerSecond int
}

// The defaults of Config.
const (
	DefaultConnectTimeout         = 30 * time.Second
	DefaultMinBackoff             = 200 * time.Millisecond
	DefaultMaxBackoff             = 30 * time.Second
	DefaultKeepAlive              = 30 * time.Second
	DefaultMaxMessageBytes        = 4 << 20
	DefaultMaxTools               = 512
	DefaultNotificationsPerSecond = 100
	DefaultMaxStderrLineBytes     = 1 << 10
	DefaultStderrLinesPerSecond   = 20
)

// MetaKey is the key, in a tools/call request's _meta, of the call's
// idempotency key (toolkit.Call.Key: in an agent, the job's key and the
// call's ID), the same on every try and after a restart. MetaAttempt is
// the try's number (1 for the first).
const (
	MetaKey     = "io.github.moora-go/idempotency-key"
	MetaAttempt = "io.github.moora-go/attempt"
)

// ErrDown is what a call of a server's tool fails with while the server
// is down: not yet connected, dead, restarting or reconnecting. The error
// says why and when it is tried again.
var ErrDown = errors.New("mcp server down")

// downError says a server is down, and why: it is ErrDown.
type downError struct {
	name string
	why  error
}

func (e *downError) Error() string       { return fmt.Sprintf("mcp server %q is down: %v", e.name, e.why) }
func (e *downError) Unwrap() []error     { return []error{ErrDown, e.why} }
func (s *Server) isDown(why error) error { return &downError{name: s.cfg.Name, why: why} }

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.Name == "":
		return c, errors.New("mcp: Config.Name is empty")
	case c.Command == "" && c.URL == "":
		return c, fmt.Errorf("mcp: server %q: neither Command nor URL is set", c.Name)
	case c.Command != "" && c.URL != "":
		return c, fmt.Errorf("mcp: server %q: both Command and URL are set", c.Name)
	case c.ConnectTimeout < 0 || c.MinBackoff < 0 || c.MaxBackoff < 0 || c.KeepAlive < -1 ||
		c.MaxMessageBytes < 0 || c.MaxTools < 0 || c.NotificationsPerSecond < 0 ||
		c.MaxStderrLineBytes < 0 || c.StderrLinesPerSecond < 0:
		return c, fmt.Errorf("mcp: server %q: a limit is negative", c.Name)
	}
	if c.URL != "" && !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
		return c, fmt.Errorf("mcp: server %q: URL is not an http or https URL", c.Name)
	}
	c.ConnectTimeout = or(c.ConnectTimeout, DefaultConnectTimeout)
	c.MinBackoff = or(c.MinBackoff, DefaultMinBackoff)
	c.MaxBackoff = max(or(c.MaxBackoff, DefaultMaxBackoff), c.MinBackoff)
	c.KeepAlive = or(c.KeepAlive, DefaultKeepAlive)
	c.MaxMessageBytes = or(c.MaxMessageBytes, DefaultMaxMessageBytes)
	c.MaxTools = or(c.MaxTools, DefaultMaxTools)
	c.NotificationsPerSecond = or(c.NotificationsPerSecond, DefaultNotificationsPerSecond)
	c.MaxStderrLineBytes = or(c.MaxStderrLineBytes, DefaultMaxStderrLineBytes)
	c.StderrLinesPerSecond = or(c.StderrLinesPerSecond, DefaultStderrLinesPerSecond)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Server is an MCP server mounted in a kit: it keeps a session with the
// server — starting the program again, or reaching the URL again, when the
// session ends — and the kit's tools in step with the server's. Close
// unmounts it.
//
// mu guards the session's state. Between sessions, sess is nil and down
// says why and until when; while one is up, sess is it and down is nil.
// The supervising goroutine (run) is the only one that starts or ends a
// session; calls only read sess, and tell run of a connection that looks
// broken (suspect).
type Server struct {
	cfg    Config
	log    *slog.Logger
	mount  *toolkit.Mount
	client *sdk.Client

	ctx    context.Context // ended by Close
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns

	relist  chan struct{} // a tools/list_changed arrived (1 pending at most)
	suspect chan struct{} // a call saw the connection fail (1 pending at most)

	mu       sync.Mutex
	sess     *sdk.ClientSession
	down     error         // why there is no session
	retryAt  time.Time     // when the next is tried
	sessions int           // how many were made
	pid      int           // the stdio server's process, 0 when none
	up       chan struct{} // closed when the next session is up; replaced then
}

// Status is the state of a mounted server.
type Status struct {
	// Up says a session is up; Err says why not, when it is not.
	Up  bool
	Err error
	// Sessions is how many sessions were made: the first, then each
	// restart or reconnection.
	Sessions int
	// Tools are the names in the kit of the server's tools.
	Tools []string
}

// Mount mounts the MCP server cfg in kit: the Server starts the program
// (or reaches the URL) at once, in the background, and its tools join the
// kit as soon as they are listed (Ready waits for that). A call of one of
// them made while the server is down fails at once with an error that
// wraps ErrDown. Mount fails only on a Config that is wrong.
func Mount(kit *toolkit.Kit, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger.With("mcp_server", cfg.Name),
		mount:   kit.Mount(cfg.Prefix),
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		relist:  make(chan struct{}, 1),
		suspect: make(chan struct{}, 1),
		down:    &downError{name: cfg.Name, why: errors.New("not connected yet")},
		up:      make(chan struct{}),
	}
	keepAlive := cfg.KeepAlive
	if keepAlive < 0 {
		keepAlive = 0
	}
	s.client = sdk.NewClient(&sdk.Implementation{Name: "moora-go-toolkit", Version: "1"}, &sdk.ClientOptions{
		Logger:                 discard,
		KeepAlive:              keepAlive,
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { signal(s.relist) },
		// No roots, sampling or elicitation: a toolkit runs tools.
		Capabilities: &sdk.ClientCapabilities{},
	})
	go s.run()
	return s, nil
}

var discard = slog.New(slog.DiscardHandler)

// signal sends on c, a channel of one, unless a signal is pending.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Ready waits until the server's session is up and its tools are in the
// kit, or ctx ends: then it says why the server is not up.
func (s *Server) Ready(ctx context.Context) error {
	for {
		s.mu.Lock()
		up, down := s.up, s.down
		ok := s.sess != nil
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-up:
		case <-ctx.Done():
			return fmt.Errorf("mcp server %q is not up: %w", s.cfg.Name, down)
		case <-s.done:
			return fmt.Errorf("mcp server %q is closed", s.cfg.Name)
		}
	}
}

// Status says how the server is now.
func (s *Server) Status() Status {
	s.mu.Lock()
	st := Status{Up: s.sess != nil, Err: s.down, Sessions: s.sessions}
	s.mu.Unlock()
	st.Tools = s.mount.Names()
	return st
}

// Close unmounts the server's tools, ends its session and, over stdio,
// the program (closing its stdin, then SIGTERM, then SIGKILL, a few
// seconds apart), and waits for that. The calls running end with an
// error. Close is idempotent.
func (s *Server) Close() error {
	s.cancel()
	<-s.done // run closes the mount
	return nil
}

// session returns the session up, or an error that wraps ErrDown.
func (s *Server) session() (*sdk.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != nil {
		return s.sess, nil
	}
	if s.ctx.Err() != nil {
		return nil, s.isDown(errors.New("closed"))
	}
	if s.retryAt.IsZero() {
		return nil, s.down
	}
	return nil, fmt.Errorf("%w; tried again in %s", s.down, max(time.Until(s.retryAt), 0).Round(time.Millisecond))
}

// setUp records that cs is up.
func (s *Server) setUp(cs *sdk.ClientSession, pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess, s.down, s.retryAt, s.pid = cs, nil, time.Time{}, pid
	close(s.up)
	s.up = make(chan struct{})
}

// setDown records that there is no session, why, and when the next is
// tried.
func (s *Server) setDown(why error, retryAt time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess, s.pid = nil, 0
	s.down, s.retryAt = s.isDown(why), retryAt
}

// run supervises the server until Close: it makes a session, serves it
// until it ends, waits its backoff and makes the next.
func (s *Server) run() {
	defer close(s.done)
	defer s.mount.Close()
	backoff := s.cfg.MinBackoff
	for {
		s.mu.Lock()
		s.sessions++
		n := s.sessions
		s.mu.Unlock()
		started := time.Now()
		err := s.serve(n)
		if s.ctx.Err() != nil {
			s.setDown(errors.New("closed"), time.Time{})
			return
		}
		if time.Since(started) >= s.cfg.MaxBackoff+s.cfg.ConnectTimeout {
			backoff = s.cfg.MinBackoff
		}
		s.setDown(err, time.Now().Add(backoff))
		s.log.Warn("mcp server down; trying again", "error", err, "in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			s.setDown(errors.New("closed"), time.Time{})
			return
		}
		backoff = min(2*backoff, s.cfg.MaxBackoff)
	}
}

// serve makes session n and serves it until it ends, and says why it
// ended (nil when Close ended it).
func (s *Server) serve(n int) error {
	cctx, cancel := context.WithTimeout(s.ctx, s.cfg.ConnectTimeout)
	defer cancel()
	conn, err := s.connect(cctx)
	if err != nil {
		return err
	}
	defer conn.close()
	cs, err := s.client.Connect(cctx, conn.transport, nil)
	if err != nil {
		return conn.why(fmt.Errorf("connecting: %w", s.timedOut(cctx, err)))
	}
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	defer cs.Close()
	// A list_changed from the session before is no news of this one.
	select {
	case <-s.relist:
	default:
	}
	if err := s.list(cctx, cs); err != nil {
		return conn.why(fmt.Errorf("listing its tools: %w", s.timedOut(cctx, err)))
	}
	s.setUp(cs, conn.pid)
	s.log.Info("mcp server up", "session", n, "tools", len(s.mount.Names()))
	for {
		select {
		case <-s.ctx.Done():
			return nil
		case err := <-ended:
			if err == nil {
				return conn.why(errors.New("the session ended"))
			}
			return conn.why(fmt.Errorf("the session ended: %w", err))
		case <-s.relist:
			lctx, cancel := context.WithTimeout(s.ctx, s.cfg.ConnectTimeout)
			err := s.list(lctx, cs)
			cancel()
			if err != nil {
				return conn.why(fmt.Errorf("listing its tools again: %w", err))
			}
		case <-s.suspect:
			pctx, cancel := context.WithTimeout(s.ctx, min(10*time.Second, s.cfg.ConnectTimeout))
			err := cs.Ping(pctx, nil)
			cancel()
			if err != nil && s.ctx.Err() == nil {
				return conn.why(fmt.Errorf("it does not answer a ping after a call failed: %w", err))
			}
		}
	}
}

// timedOut is err, saying so when ctx ran out of the ConnectTimeout.
func (s *Server) timedOut(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && s.ctx.Err() == nil {
		return fmt.Errorf("no answer within %s (ConnectTimeout): %w", s.cfg.ConnectTimeout, err)
	}
	return err
}

// isCode says whether err is a JSON-RPC error of code.
func isCode(err error, code int64) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code == code
}
