package reflexor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/agents/reflexor/impl/agent"
	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/registry"
)

// FleetConfig is what a Fleet is made of. Fleet, Token, SessionKey and
// Agent.Model are required.
type FleetConfig struct {
	// Agent is every conversation's configuration: its Model, System,
	// Tools, CompressAfter, Now, Options, and TracerProvider and
	// MeterProvider (each conversation's spans say its id, moora.agent.id;
	// the registry's agents active are measured). Its Store, Token and Streams
	// are not used: each conversation's store is in Fleet, the fleet
	// authenticates, and the brain's text streams to the pages.
	Agent Config
	// Fleet keeps the conversations' journals, each an agent by id:
	// bolt.OpenFleet's, all in one file. From NewFleet on the
	// Fleet owns it: Close closes it, and so does NewFleet when it fails.
	Fleet journal.Fleet
	// Token is the operator's bearer token: the way in (a page opened
	// with it obtains an identity of its own) and the operator's rights
	// (every conversation, and the devpanels).
	Token string
	// SessionKey signs the identities the operator's token obtains, at
	// least 16 bytes: keep it across restarts (httpbridge.TokenFile), so
	// that a person stays who they were.
	SessionKey []byte
	// IdleTimeout is how long a conversation stays active after its last
	// use before it is deactivated (default 5 minutes, as
	// registry.Config's).
	IdleTimeout time.Duration
	// Peers, if set, routes the requests for a conversation that another
	// process has active to that process (httpbridge.FleetConfig.Peers):
	// a Fleet on automata/journal/jetstream shared by several processes,
	// each serving the API at the URL it advertises (its api/ route),
	// and all sharing Token and SessionKey, so that a person is who they
	// are on every one. Without it, such a request is answered 503.
	Peers httpbridge.Peers
	// CloseTimeout bounds how long a conversation being deactivated (when
	// idle, or by Close) waits for its jobs to end after they are
	// cancelled (default 10 seconds, as registry.Config's).
	CloseTimeout time.Duration
}

// Fleet is Reflexor as a service for many people: every conversation is an
// agent of its own, by id, in FleetConfig.Fleet, activated when someone
// opens it and deactivated when nobody has used it for a while (package
// automata/registry). A page opened with the operator's token asks for an
// identity of its own (POST api/sessions), keeps its token, and from then
// on sees and touches only its own conversations, listed on its side; two
// browsers opened with the same URL are two people. The page then drops
// the operator's token from its address. That URL is what lets a new
// person in, and whoever holds it is the operator too: this is not a
// sign-up service, so give it only to whom you would give the operator's
// rights. The operator's token sees every conversation, and opens each
// one's devpanel under panel/.
type Fleet struct {
	fleet    journal.Fleet
	reg      *registry.Registry[decl.AgentState, decl.AgentInput]
	bridges  *httpbridge.Fleet[decl.AgentState, decl.AgentInput, decl.ContextOfUser]
	handler  http.Handler
	streamMu sync.Mutex
	streams  map[string]*httpbridge.Streams // of the active conversations, by id
}

// NewFleet makes the service over cfg.Fleet: the registry of its
// conversations, their bridges and their panels. Conversations are
// activated on first use.
func NewFleet(cfg FleetConfig) (f *Fleet, err error) {
	if cfg.Fleet == nil {
		return nil, errors.New("reflexor: FleetConfig.Fleet is nil: the conversations need a fleet of journals")
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, cfg.Fleet.Close())
		}
	}()
	switch {
	case cfg.Agent.Store != nil:
		return nil, errors.New("reflexor: FleetConfig.Agent.Store is set: each conversation's store is in FleetConfig.Fleet")
	case cfg.Agent.Token != "":
		return nil, errors.New("reflexor: FleetConfig.Agent.Token is set: the operator's token is FleetConfig.Token, and people have identities of their own")
	case cfg.Agent.Streams != nil:
		return nil, errors.New("reflexor: FleetConfig.Agent.Streams is set: a fleet's brains stream to the pages only")
	}
	acfg, err := cfg.Agent.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Token == "" {
		return nil, errors.New("reflexor: FleetConfig.Token is empty: the operator needs a token")
	}
	sessions, err := httpbridge.NewSessions(cfg.SessionKey)
	if err != nil {
		return nil, fmt.Errorf("reflexor: FleetConfig.SessionKey: %w", err)
	}
	identify := httpbridge.Identities(cfg.Token, sessions)
	panels, err := devpanel.NewFleet(devpanel.FleetConfig[decl.AgentState, decl.AgentInput]{
		Panel: devpanel.Config[decl.AgentState, decl.AgentInput]{
			Definition:  agent.Definition(),
			Decode:      decl.DecodeClientInput,
			InputSchema: decl.InputSchema(),
			Actor:       decl.AgentInput.InputActor,
		},
		Identify: identify,
	})
	if err != nil {
		return nil, fmt.Errorf("reflexor: the panels: %w", err)
	}
	f = &Fleet{fleet: cfg.Fleet, streams: map[string]*httpbridge.Streams{}}
	f.reg, err = registry.New(registry.Config[decl.AgentState, decl.AgentInput]{
		Fleet:         cfg.Fleet,
		IdleTimeout:   cfg.IdleTimeout,
		CloseTimeout:  cfg.CloseTimeout,
		MeterProvider: acfg.MeterProvider,
		Open: func(id string, store journal.Store) (*journal.Machine[decl.AgentState, decl.AgentInput], error) {
			streams := httpbridge.NewStreams(httpbridge.StreamOptions{})
			// OpenAgent gives the agent's spans its id (moora.agent.id).
			m, err := panels.OpenAgent(id, store, journalOptions(), acfg.options(bridgeStreams{s: streams})...)
			if err != nil {
				return nil, err
			}
			f.streamMu.Lock()
			f.streams[id] = streams
			f.streamMu.Unlock()
			go func() {
				<-m.Done()
				f.streamMu.Lock()
				if f.streams[id] == streams {
					delete(f.streams, id)
				}
				f.streamMu.Unlock()
			}()
			return m, nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("reflexor: the registry: %w", err)
	}
	bcfg := bridgeConfig(cfg.Agent.PageApproves)
	acfg.telemetry(&bcfg)
	f.bridges, err = httpbridge.NewFleet(httpbridge.FleetConfig[decl.AgentState, decl.AgentInput, decl.ContextOfUser]{
		Registry: f.reg,
		Identify: identify,
		Sessions: sessions,
		Bridge:   bcfg,
		Streams:  f.streamsOf,
		Peers:    cfg.Peers,
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("reflexor: the bridges: %w", err), f.reg.Close(context.Background()))
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", f.bridges))
	mux.Handle("/agent/client.js", http.StripPrefix("/agent", f.bridges))
	mux.Handle("/panel/", http.StripPrefix("/panel", panels.Handler(f.reg)))
	mux.HandleFunc("GET /config.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"users":true}`)
	})
	mux.Handle("/", http.FileServerFS(page))
	f.handler = mux
	return f, nil
}

// Activate activates conversation id now, as its next request would: for
// a process that takes over the conversations of one that died
// (jetstream.Fleet.WatchOrphans), so that a reply under way there starts
// again here without waiting for someone to open the conversation. It
// fails while another process has it active.
func (f *Fleet) Activate(ctx context.Context, id string) error {
	_, release, err := f.reg.Get(ctx, id)
	if err != nil {
		return err
	}
	release()
	return nil
}

func (f *Fleet) streamsOf(id string) *httpbridge.Streams {
	f.streamMu.Lock()
	defer f.streamMu.Unlock()
	return f.streams[id]
}

// Handler serves the page at / (in its many-people mode), the
// conversations under api/ (httpbridge.Fleet's routes: POST api/sessions,
// POST and GET api/agents, api/agents/{id}/inputs, …/state,
// …/streams/{message id}, DELETE api/agents/{id}), and the operator's
// devpanels under panel/. Mount it under any prefix with
// http.StripPrefix.
func (f *Fleet) Handler() http.Handler { return f.handler }

// CloseStreams ends the streams the handler has open, as
// Agent.CloseStreams does: register it with the server's
// RegisterOnShutdown.
func (f *Fleet) CloseStreams() { f.bridges.Close() }

// Close ends the handler's streams, deactivates every conversation (each
// takes a snapshot, after its jobs end or FleetConfig.CloseTimeout) and
// closes FleetConfig.Fleet. ctx bounds only the wait for activations under
// way: when it ends first, Close returns its error and leaves the fleet
// open under them; call Close again to finish.
func (f *Fleet) Close(ctx context.Context) error {
	f.bridges.Close()
	if err := f.reg.Close(ctx); err != nil {
		return err
	}
	return f.fleet.Close()
}
