package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/moora-go/moora/automata/httpbridge"
)

// Front returns the front-end that serves an agent over MCP, for
// httpbridge.Config.Fronts at a path of its own ("/mcp"): see the package
// documentation. One Front serves every agent of a Fleet whose
// FleetConfig.Bridge has it (at /agents/{id}/mcp), with one bound on
// their sessions (Config.MaxSessions).
func Front[S, I, V any](cfg Config[I, V]) httpbridge.Front[S, I, V] {
	err := cfg.check()
	var doc *schemaDoc
	if err == nil {
		doc, err = parseSchema(cfg.Schema)
	}
	sess := newSessions(cfg.MaxSessions, cfg.IdleTimeout)
	return func(b *httpbridge.Bridge[S, I, V]) (http.Handler, error) {
		if err != nil {
			return nil, fmt.Errorf("mcpserve: Config.Schema: %w", err)
		}
		a, err := newAgentServer(b, doc, &cfg)
		if err != nil {
			return nil, err
		}
		g := &guard{
			hosts:    cfg.AllowHosts,
			sessions: sess,
			write:    cfg.WriteTimeout,
			server:   a.server,
			next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return a.server }, &mcp.StreamableHTTPOptions{
				// The guard checks Host itself (Config.AllowHosts), and the
				// bridge's front bounds the body (Config.MaxBody).
				DisableLocalhostProtection: true,
				MaxRequestBodyBytes:        -1,
				Logger:                     sdkLogger(cfg.Logger),
			}),
		}
		go func() {
			<-b.Done()
			g.closeAll()
		}()
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a.start()
			g.ServeHTTP(w, r)
		}), nil
	}
}

// agentServer is the MCP server of one agent's bridge.
type agentServer[S, I, V any] struct {
	b      *httpbridge.Bridge[S, I, V]
	cfg    *Config[I, V]
	server *mcp.Server
	once   sync.Once
}

// stateURI is the URI of the view of agent id ("" for a bridge served
// alone: "self").
func stateURI(id string) string {
	if id == "" {
		id = "self"
	}
	return "agent://" + id + "/state"
}

func newAgentServer[S, I, V any](b *httpbridge.Bridge[S, I, V], doc *schemaDoc, cfg *Config[I, V]) (*agentServer[S, I, V], error) {
	tools, err := inputTools(doc, b.ClientActors(), cfg, false, b.Decode)
	if err != nil {
		return nil, err
	}
	a := &agentServer[S, I, V]{b: b, cfg: cfg}
	uri := func() string { return stateURI(b.AgentID()) }
	a.server = mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: cfg.Instructions,
		Logger:       sdkLogger(cfg.Logger),
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{},
			Resources: &mcp.ResourceCapabilities{Subscribe: true},
		},
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			if req.Params.URI != uri() {
				return mcp.ResourceNotFoundError(req.Params.URI)
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	for _, t := range tools {
		a.server.AddTool(t.tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			c, err := t.parseCall(req)
			if err != nil {
				return toolError("%v", err), nil
			}
			return dispatchCall(ctx, t, c, b.Dispatch, b.View, b.Done()), nil
		})
	}
	// The resource's URI names the agent, which a Fleet's bridge knows
	// once it is made: it is added at the first request (start).
	return a, nil
}

// start adds the state resource and follows the journal for its
// subscribers, once, at the first request (the bridge is ready by then).
func (a *agentServer[S, I, V]) start() {
	a.once.Do(func() {
		uri := stateURI(a.b.AgentID())
		a.server.AddResource(&mcp.Resource{
			URI:         uri,
			Name:        "state",
			Title:       "The agent's state",
			Description: "The state of the agent as its client sees it (what the client actor observes), as JSON; subscribe to follow it: each resources/updated notification carries the change as a JSON Patch (_meta " + MetaDelta + ") and the position it brings the view to (_meta " + MetaSeq + ").",
			MIMEType:    "application/json",
		}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return readView(uri, a.b.View)
		})
		go follow(a.b, uri, a.server, a.cfg)
	})
}

// readView is the contents of the view resource at uri.
func readView[V any](uri string, view func() (uint64, V, <-chan struct{})) (*mcp.ReadResourceResult, error) {
	seq, v, _ := view()
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the view: %v", err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: uri, MIMEType: "application/json", Text: string(data), Meta: mcp.Meta{MetaSeq: seq},
	}}}, nil
}

// maxDeltas bounds the deltas a follower takes from the bridge at once.
const maxDeltas = 64

// follow sends a resources/updated notification of uri to its subscribers
// for each delta of b's view, until b closes or stop is closed. It keeps
// no queue: it reads the bridge's ring of deltas through its own cursor,
// and one that falls behind the ring sends one notification without a
// delta (read the view again). Each write to a session's stream has a
// deadline (Config.WriteTimeout), so that a slow session delays the
// others by that much once, and then has no stream to write to.
func follow[S, I, V any](b *httpbridge.Bridge[S, I, V], uri string, server *mcp.Server, cfg *Config[I, V]) {
	followUntil(b, uri, server, nil)
}

func followUntil[S, I, V any](b *httpbridge.Bridge[S, I, V], uri string, server *mcp.Server, stop <-chan struct{}) {
	cursor, _, _ := b.View()
	ctx := context.Background()
	for {
		ds, next, resync, changed := b.Deltas(cursor, maxDeltas)
		switch {
		case resync:
			server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri, Meta: mcp.Meta{MetaSeq: next}})
		default:
			for _, d := range ds {
				server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri, Meta: mcp.Meta{MetaSeq: d.Seq, MetaDelta: d.Data}})
			}
		}
		cursor = next
		if len(ds) == maxDeltas {
			continue
		}
		select {
		case <-changed:
		case <-b.Done():
			return
		case <-stop:
			return
		}
	}
}
