package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"
)

// Config configures an agent's MCP server. Schema is required.
type Config[I, V any] struct {
	// Schema is the agent's input schema document, decl.InputSchema():
	// the schema and description of each input, and the actor that
	// dispatches it. Each input of the bridge's client actors
	// (httpbridge.Config.ClientActors) is a tool.
	Schema []byte
	// Name and Version name the server to its clients (the MCP
	// implementation info). Defaults "moora-agent" and "1".
	Name, Version string
	// Instructions, if set, tell clients (and their models) what the agent
	// is for and how to use its tools.
	Instructions string

	// Conditions are the named conditions of the view a tool call may
	// wait for: with "waitFor": name among its arguments, a call answers
	// once its input is journaled and the condition holds of the view, or
	// at its deadline ("timeoutMs", at most MaxWait; default
	// DefaultWait), whichever comes first. Names are 1 to 64 letters,
	// digits, '-' and '_'. Optional: without them, tools take no
	// "waitFor" and answer once the input is journaled.
	Conditions map[string]Condition[I, V]
	// DefaultWait is a wait's deadline when a call names none. Default 30 s.
	DefaultWait time.Duration
	// MaxWait bounds a call's "timeoutMs". Default 5 minutes.
	MaxWait time.Duration

	// AllowHosts lists the Host header values (host or host:port) the
	// server answers besides the loopback ones, against DNS rebinding: a
	// request whose Host is neither is refused with 403. A request that
	// came to a loopback address is answered only with a loopback Host
	// (localhost, 127.0.0.1, [::1]) or one listed here. Default (nil): a
	// server on a loopback address answers only loopback Hosts, and one on
	// another address answers any Host (it is reached by its name, which
	// the program knows: list it).
	AllowHosts []string

	// MaxSessions bounds the MCP sessions open at once, across every agent
	// the server serves (one Front serves a Fleet's agents): an initialize
	// beyond it is refused with 503 and Retry-After. Default 1,000.
	MaxSessions int
	// IdleTimeout ends a session that has had no request for that long
	// (an open stream is a request: a client that listens is not idle).
	// Default 10 minutes.
	IdleTimeout time.Duration
	// WriteTimeout bounds each write to a session's stream: a client that
	// does not take its bytes in that time loses the stream (it may open
	// it again) and the notifications meanwhile. Default 10 s.
	WriteTimeout time.Duration
	// MaxSubscriptions bounds the resources one session of a fleet's
	// server follows at once (agent://{id}/state). Default 100.
	MaxSubscriptions int

	// Logger receives what goes wrong with no client to tell. Default
	// slog.Default().
	Logger *slog.Logger
}

// Condition is a condition of the view that a tool call may wait for
// (Config.Conditions).
type Condition[I, V any] struct {
	// Description says what it waits for: the tools' schemas show it.
	Description string
	// Holds reports whether the condition holds of view for a call that
	// dispatched in (as the client sent it: before the admission step).
	// It runs under no lock, on the view after each change, and must be
	// quick and pure.
	Holds func(in I, view V) bool
}

// Defaults of Config.
const (
	DefaultMaxSessions      = 1000
	DefaultIdleTimeout      = 10 * time.Minute
	DefaultWriteTimeout     = 10 * time.Second
	DefaultDefaultWait      = 30 * time.Second
	DefaultMaxWait          = 5 * time.Minute
	DefaultMaxSubscriptions = 100
)

// check checks cfg and fills in its defaults.
func (cfg *Config[I, V]) check() error {
	if len(cfg.Schema) == 0 {
		return errors.New("mcpserve: Config.Schema is required (decl.InputSchema())")
	}
	for name, c := range cfg.Conditions {
		if !validName(name) {
			return fmt.Errorf("mcpserve: Config.Conditions: %q is not a name (1 to 64 letters, digits, '-' and '_')", name)
		}
		if c.Holds == nil {
			return fmt.Errorf("mcpserve: Config.Conditions[%q] has no Holds", name)
		}
	}
	for _, h := range cfg.AllowHosts {
		if h == "" || strings.ContainsAny(h, "/ \t") {
			return fmt.Errorf("mcpserve: Config.AllowHosts: %q is not a host or host:port", h)
		}
	}
	if cfg.Name == "" {
		cfg.Name = "moora-agent"
	}
	if cfg.Version == "" {
		cfg.Version = "1"
	}
	setDefault(&cfg.MaxSessions, DefaultMaxSessions)
	setDefault(&cfg.IdleTimeout, DefaultIdleTimeout)
	setDefault(&cfg.WriteTimeout, DefaultWriteTimeout)
	setDefault(&cfg.DefaultWait, DefaultDefaultWait)
	setDefault(&cfg.MaxWait, DefaultMaxWait)
	setDefault(&cfg.MaxSubscriptions, DefaultMaxSubscriptions)
	cfg.DefaultWait = min(cfg.DefaultWait, cfg.MaxWait)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return nil
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// isLoopback says whether hostport (a Host header, or an address) names a
// loopback host.
func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sdkLogger is the logger given to the SDK: Logger's, from warnings up
// (the SDK logs each session and notification at Info).
func sdkLogger(l *slog.Logger) *slog.Logger { return slog.New(warnings{l.Handler()}) }

type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn && w.Handler.Enabled(ctx, level)
}
func (w warnings) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnings{w.Handler.WithAttrs(attrs)}
}
func (w warnings) WithGroup(name string) slog.Handler { return warnings{w.Handler.WithGroup(name)} }
