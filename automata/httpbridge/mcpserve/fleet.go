package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/moora-go/moora/automata/httpbridge"
)

// FleetFront returns the front-end that serves a Fleet over MCP, for
// httpbridge.FleetConfig.Fronts at a path of its own ("/mcp"): the tool
// create-agent, each input's tool with an "agent" argument, and the
// resource template agent://{id}/state, under the fleet's owner rules (a
// caller sees only its own agents; another's is "not found", as one that
// does not exist). See the package documentation.
func FleetFront[S, I, V any](cfg Config[I, V]) httpbridge.FleetFront[S, I, V] {
	return func(f *httpbridge.Fleet[S, I, V]) (http.Handler, error) {
		if err := cfg.check(); err != nil {
			return nil, err
		}
		doc, err := parseSchema(cfg.Schema)
		if err != nil {
			return nil, fmt.Errorf("mcpserve: Config.Schema: %w", err)
		}
		return newFleetServer(f, doc, &cfg)
	}
}

// fleetServer is a Fleet's MCP server.
//
// Under mu, subs holds each agent URI some session follows: the sessions
// that follow it, and the follower that sends its notifications (stop
// ends it); a follower holds its agent active while it runs, as a state
// stream does.
type fleetServer[S, I, V any] struct {
	f      *httpbridge.Fleet[S, I, V]
	cfg    *Config[I, V]
	server *mcp.Server
	guard  *guard

	mu     sync.Mutex
	closed bool
	subs   map[string]*following
}

type following struct {
	sessions map[string]bool
	stop     chan struct{}
}

// request rebuilds the caller's request of an MCP request, for the
// fleet's methods, which identify callers from it.
func request(ctx context.Context, extra *mcp.RequestExtra) *http.Request {
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/", http.NoBody)
	if extra != nil && extra.Header != nil {
		r.Header = extra.Header.Clone()
	}
	return r
}

// agentOf returns the id of an agent URI, agent://{id}/state.
func agentOf(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, "agent://")
	id, ok2 := strings.CutSuffix(rest, "/state")
	return id, ok && ok2 && id != "" && !strings.ContainsAny(id, "/?#")
}

// fleetError turns a fleet's error into the MCP error: "not found" for a
// 404 (another owner's agent, as one that does not exist).
func fleetError(uri string, err error) error {
	var fe *httpbridge.FleetError
	if errors.As(err, &fe) && fe.Status == http.StatusNotFound {
		return mcp.ResourceNotFoundError(uri)
	}
	return err
}

func newFleetServer[S, I, V any](f *httpbridge.Fleet[S, I, V], doc *schemaDoc, cfg *Config[I, V]) (*fleetServer[S, I, V], error) {
	fs := &fleetServer[S, I, V]{f: f, cfg: cfg, subs: map[string]*following{}}
	fs.server = mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: cfg.Instructions,
		Logger:       sdkLogger(cfg.Logger),
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{},
			Resources: &mcp.ResourceCapabilities{Subscribe: true},
		},
		SubscribeHandler:   fs.subscribe,
		UnsubscribeHandler: fs.unsubscribe,
	})
	fs.server.AddTool(&mcp.Tool{
		Name:        "create-agent",
		Description: "Create an agent (a conversation) of your own, or find one of yours by its id: its other tools take the id as their agent argument, and its state is the resource agent://{id}/state.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","minLength":1,"maxLength":128,"description":"The agent's id, of your choosing (one per ticket, per thread); left out, the server chooses one. An id of yours that exists is found, not created again."}}}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			ID string `json:"id"`
		}
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return toolError("the arguments are not {\"id\": string}: %v", err), nil
			}
		}
		info, created, err := f.CreateAgent(request(ctx, req.Extra), args.ID)
		if err != nil {
			return toolError("%v", err), nil
		}
		out := struct {
			httpbridge.AgentInfo
			IsNew    bool   `json:"isNew"`
			Resource string `json:"resource"`
		}{info, created, stateURI(info.ID)}
		text := fmt.Sprintf("agent %s found", info.ID)
		if created {
			text = fmt.Sprintf("agent %s created", info.ID)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: out}, nil
	})
	actors := f.ClientActors()
	tools, err := inputTools(doc, actors, cfg, true, f.Decode)
	if err != nil {
		return nil, err
	}
	for _, t := range tools {
		fs.server.AddTool(t.tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			c, err := t.parseCall(req)
			if err != nil {
				return toolError("%v", err), nil
			}
			var res *mcp.CallToolResult
			err = f.WithAgent(request(ctx, req.Extra), c.agent, func(b *httpbridge.Bridge[S, I, V]) {
				res = dispatchCall(ctx, t, c, b.Dispatch, b.View, b.Done())
			})
			if err != nil {
				return toolError("agent %q: %v", truncate(c.agent, 128), err), nil
			}
			return res, nil
		})
	}
	fs.server.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "agent://{id}/state",
		Name:        "state",
		Title:       "An agent's state",
		Description: "The state of agent {id}, one of yours, as its client sees it, as JSON; subscribe to follow it (each resources/updated notification carries the change as a JSON Patch, _meta " + MetaDelta + ").",
		MIMEType:    "application/json",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		id, ok := agentOf(uri)
		if !ok {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		var res *mcp.ReadResourceResult
		var rerr error
		err := f.WithAgent(request(ctx, req.Extra), id, func(b *httpbridge.Bridge[S, I, V]) {
			res, rerr = readView(uri, b.View)
		})
		if err != nil {
			return nil, fleetError(uri, err)
		}
		return res, rerr
	})
	fs.guard = &guard{
		hosts:    cfg.AllowHosts,
		sessions: newSessions(cfg.MaxSessions, cfg.IdleTimeout),
		write:    cfg.WriteTimeout,
		server:   fs.server,
		owner: func(r *http.Request) (string, error) {
			who, err := f.Identify(r)
			if err != nil {
				return "", err
			}
			return who.Name, nil
		},
		next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return fs.server }, &mcp.StreamableHTTPOptions{
			DisableLocalhostProtection: true, // the guard checks Host
			MaxRequestBodyBytes:        -1,   // the fleet's front bounds the body
			Logger:                     sdkLogger(cfg.Logger),
		}),
	}
	return fs, nil
}

func (fs *fleetServer[S, I, V]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fs.guard.ServeHTTP(w, r)
}

// Close ends every session and follower (Fleet.Close calls it).
func (fs *fleetServer[S, I, V]) Close() error {
	fs.mu.Lock()
	fs.closed = true
	for uri, fo := range fs.subs {
		close(fo.stop)
		delete(fs.subs, uri)
	}
	fs.mu.Unlock()
	fs.guard.closeAll()
	return nil
}

// subscribe checks that the caller may see the agent, and follows it for
// the session.
func (fs *fleetServer[S, I, V]) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	id, ok := agentOf(uri)
	if !ok {
		return mcp.ResourceNotFoundError(uri)
	}
	r := request(context.WithoutCancel(ctx), req.Extra)
	if err := fs.f.WithAgent(r, id, func(*httpbridge.Bridge[S, I, V]) {}); err != nil {
		return fleetError(uri, err)
	}
	sid := req.Session.ID()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.closed {
		return errors.New("the server is closing")
	}
	n := 0
	for _, fo := range fs.subs {
		if fo.sessions[sid] {
			n++
		}
	}
	fo := fs.subs[uri]
	if fo != nil && fo.sessions[sid] {
		return nil
	}
	if n >= fs.cfg.MaxSubscriptions {
		return fmt.Errorf("this session follows %d agents, the limit (mcpserve.Config.MaxSubscriptions): unsubscribe from one first", n)
	}
	if fo == nil {
		fo = &following{sessions: map[string]bool{}, stop: make(chan struct{})}
		fs.subs[uri] = fo
		go fs.follow(r, id, uri, fo)
	}
	fo.sessions[sid] = true
	return nil
}

func (fs *fleetServer[S, I, V]) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.dropLocked(req.Params.URI, req.Session.ID())
	return nil
}

// dropLocked ends session sid's following of uri.
func (fs *fleetServer[S, I, V]) dropLocked(uri, sid string) {
	fo := fs.subs[uri]
	if fo == nil {
		return
	}
	delete(fo.sessions, sid)
	if len(fo.sessions) == 0 {
		close(fo.stop)
		delete(fs.subs, uri)
	}
}

// follow sends the notifications of agent id's view while fo is followed,
// holding the agent active; when the agent closes (deactivated, moved), it
// finds it again.
func (fs *fleetServer[S, I, V]) follow(r *http.Request, id, uri string, fo *following) {
	for {
		err := fs.f.WithAgent(r, id, func(b *httpbridge.Bridge[S, I, V]) {
			fs.prune(uri)
			followUntil(b, uri, fs.server, fo.stop)
		})
		select {
		case <-fo.stop:
			return
		default:
		}
		if err != nil {
			fs.cfg.Logger.Warn("mcpserve: following an agent", "agent", id, "err", err)
			select {
			case <-fo.stop:
				return
			case <-time.After(fs.cfg.WriteTimeout):
			}
		}
	}
}

// prune forgets the sessions of uri's followers that are no longer open.
func (fs *fleetServer[S, I, V]) prune(uri string) {
	open := map[string]bool{}
	for ss := range fs.server.Sessions() {
		open[ss.ID()] = true
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fo := fs.subs[uri]; fo != nil {
		for sid := range fo.sessions {
			if !open[sid] {
				fs.dropLocked(uri, sid)
			}
		}
	}
}
