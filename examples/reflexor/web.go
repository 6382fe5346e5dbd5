package main

import (
	"context"
	"embed"
	"io/fs"
	"net"
	"net/http"
	"time"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/examples/internal/httprun"
)

//go:embed web
var webFiles embed.FS

// bridgeStreams writes the brain's streamed text to the bridge's token
// streams, one per message id.
type bridgeStreams struct{ s *httpbridge.Streams }

func (b bridgeStreams) Chunk(id, text string) { b.s.Write(id, text) }
func (b bridgeStreams) End(id, _ string)      { b.s.End(id) }

// server is the Reflexor web service: the page at /, the agent's bridge at
// /agent/ (inputs, the user's view of the state, the brain's token streams,
// the client module).
type server struct {
	http   *http.Server
	bridge *httpbridge.Bridge[decl.AgentState, decl.AgentInput, decl.ContextOfUser]
}

// newServer serves agent a, whose brain streams into streams, to pages
// that present token (in the URL the page was opened with).
func newServer(a *journal.Machine[decl.AgentState, decl.AgentInput], streams *httpbridge.Streams, token string) (*server, error) {
	cfg := bridgeConfig(token)
	cfg.Streams = streams
	b, err := httpbridge.New(a, cfg)
	if err != nil {
		return nil, err
	}
	page, err := fs.Sub(webFiles, "web")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/agent/", http.StripPrefix("/agent", b))
	mux.Handle("/", http.FileServerFS(page))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute,
	}
	srv.RegisterOnShutdown(b.Close)
	return &server{http: srv, bridge: b}, nil
}

// bridgeConfig is the bridge of a conversation, whose pages present token
// ("": a fleet's, which authenticates for it).
func bridgeConfig(token string) httpbridge.Config[decl.AgentState, decl.AgentInput, decl.ContextOfUser] {
	cfg := httpbridge.Config[decl.AgentState, decl.AgentInput, decl.ContextOfUser]{
		// The timestamp, readOnly in the spec, is the server's: a page
		// leaves it out, and the admission step stamps it.
		Decode: decl.DecodeClientInput,
		// A page speaks for the user, never for the brain or the toolkit,
		// whose inputs only the agent's own jobs dispatch: the bridge
		// refuses theirs with 403. (The default, written out.)
		ClientActors: []string{string(decl.ActorUser)},
		View:         decl.AgentState.ContextOfUser,
		InputID:      inputID,
	}
	if token != "" {
		cfg.Auth = httpbridge.Bearer(token)
	}
	return cfg
}

// inputID is the id a client chose for an input, which makes a retried POST
// apply once: a user message's id. Only users post.
func inputID(in decl.AgentInput) string {
	if m, ok := in.(decl.UserSendMessage); ok {
		return m.MessageID
	}
	return ""
}

// serve serves on l until ctx ends, then shuts down, ending the streams:
// Close, which Shutdown starts without waiting for it, is waited for.
func (s *server) serve(ctx context.Context, l net.Listener) error {
	err := httprun.Until(ctx, s.http, l)
	s.bridge.Close()
	return err
}
