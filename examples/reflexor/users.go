package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/registry"
	"github.com/moora-go/moora/examples/internal/httprun"
)

// usersService is Reflexor as a service for many people (-users): every
// conversation is an agent of its own, by id, in one bbolt file
// (-data/agents.db), activated when someone opens it and deactivated when
// nobody has used it for a while (package automata/registry). The URL
// printed at start, with the operator's token, is the way in: a page opened
// with it asks for an identity of its own (POST /api/sessions), keeps its
// token, and from then on sees and touches only its own conversations;
// two browsers opened with the same URL are two people. The page then drops
// the operator's token from its address. That URL is what lets a new person
// in, and whoever holds it is the operator too: this is not a sign-up
// service, so give it only to whom you would give the operator's rights. The
// operator's token sees every conversation, and opens each one's devpanel
// under /panel/.
type usersService struct {
	fleet    *journal.BoltFleet
	reg      *registry.Registry[decl.AgentState, decl.AgentInput]
	bridges  *httpbridge.Fleet[decl.AgentState, decl.AgentInput, decl.ContextOfUser]
	http     *http.Server
	streamMu sync.Mutex
	streams  map[string]*httpbridge.Streams // of the active agents, by id
}

// openUsers opens the fleet in dataDir and the registry, bridges and panels
// over it; work is every conversation's, but for its Streams.
func openUsers(dataDir string, work Work, token string) (*usersService, error) {
	fleet, err := journal.OpenBoltFleet(filepath.Join(dataDir, "agents.db"))
	if err != nil {
		return nil, err
	}
	key, err := httpbridge.TokenFile(filepath.Join(dataDir, "session-key"))
	if err != nil {
		return nil, errors.Join(err, fleet.Close())
	}
	sessions, err := httpbridge.NewSessions([]byte(key))
	if err != nil {
		return nil, errors.Join(err, fleet.Close())
	}
	identify := httpbridge.Identities(token, sessions)
	panels, err := devpanel.NewFleet(devpanel.FleetConfig[decl.AgentState, decl.AgentInput]{
		Panel:    panelConfig(work),
		Identify: identify,
	})
	if err != nil {
		return nil, errors.Join(err, fleet.Close())
	}
	s := &usersService{fleet: fleet, streams: map[string]*httpbridge.Streams{}}
	s.reg, err = registry.New(registry.Config[decl.AgentState, decl.AgentInput]{
		Fleet: fleet,
		Open: func(id string, store journal.Store) (*journal.Machine[decl.AgentState, decl.AgentInput], error) {
			streams := httpbridge.NewStreams(httpbridge.StreamOptions{})
			w := work
			w.Streams = bridgeStreams{streams}
			m, err := panels.Open(store, journalOptions(), agentOptions(w, time.Now)...)
			if err != nil {
				return nil, err
			}
			s.streamMu.Lock()
			s.streams[id] = streams
			s.streamMu.Unlock()
			go func() {
				<-m.Done()
				s.streamMu.Lock()
				if s.streams[id] == streams {
					delete(s.streams, id)
				}
				s.streamMu.Unlock()
			}()
			return m, nil
		},
	})
	if err != nil {
		return nil, errors.Join(err, fleet.Close())
	}
	s.bridges, err = httpbridge.NewFleet(httpbridge.FleetConfig[decl.AgentState, decl.AgentInput, decl.ContextOfUser]{
		Registry: s.reg,
		Identify: identify,
		Sessions: sessions,
		Bridge:   bridgeConfig(""),
		Streams:  s.streamsOf,
	})
	if err != nil {
		return nil, errors.Join(err, s.reg.Close(context.Background()), fleet.Close())
	}
	page, err := fs.Sub(webFiles, "web")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", s.bridges))
	mux.Handle("/agent/client.js", http.StripPrefix("/agent", s.bridges))
	mux.Handle("/panel/", http.StripPrefix("/panel", panels.Handler(s.reg)))
	mux.HandleFunc("GET /config.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"users":true}`)
	})
	mux.Handle("/", http.FileServerFS(page))
	s.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute,
	}
	s.http.RegisterOnShutdown(s.bridges.Close)
	return s, nil
}

func (s *usersService) streamsOf(id string) *httpbridge.Streams {
	s.streamMu.Lock()
	defer s.streamMu.Unlock()
	return s.streams[id]
}

// serve serves on l until ctx ends, then ends the streams, deactivates every
// conversation (each takes a snapshot) and closes the file.
func (s *usersService) serve(ctx context.Context, l net.Listener) error {
	err := httprun.Until(ctx, s.http, l)
	s.bridges.Close()
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(err, s.reg.Close(closeCtx), s.fleet.Close())
}

// runUsers is run with -users.
func runUsers(dataDir, addr, token string, work Work, stdout io.Writer) error {
	if token == "" {
		var err error
		if token, err = httpbridge.TokenFile(filepath.Join(dataDir, "token")); err != nil {
			return err
		}
	}
	s, err := openUsers(dataDir, work, token)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return errors.Join(err, s.reg.Close(context.Background()), s.fleet.Close())
	}
	fmt.Fprintf(stdout, "Reflexor: http://%s/?token=%s\n", l.Addr(), token)
	fmt.Fprintf(os.Stderr, "reflexor: every page opened with that URL is a person of its own; the operator's panels: http://%s/panel/?token=%s\n", l.Addr(), token)
	ctx, stop := signalContext()
	defer stop()
	return s.serve(ctx, l)
}
