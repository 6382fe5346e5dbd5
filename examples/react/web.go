package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/registry"
	"github.com/moora-go/moora/examples/internal/httprun"
	"github.com/moora-go/moora/examples/react/decl"
)

// server is the seed's bridge (devpanelBridge) over the runs, each an agent
// of its own: POST /run takes a task, runs it as a new agent and answers its
// result (the runs proceed in parallel, at most -max-runs at once), POST
// /reply answers the question of a run's agent, GET /runs/{runId} says how a
// run is doing, GET /events?runId= is the event stream of the run's panel,
// GET /health says the server is up; CORS preflights are answered for the
// allowed origins. Every route but /health needs the token.
type server struct {
	http *http.Server
	runs *runs
	auth func(*http.Request) error
	// origins are the origins, besides the server's own, whose pages may
	// call it.
	origins []string
	mux     *http.ServeMux
	// configs, if set, is the configuration of the runs, which GET /config
	// shows.
	configs *configs
	// closing is closed when the server shuts down (shutDown), before
	// the runs are closed: the runs waited for are answered then, and go on
	// when the command starts again.
	closing  chan struct{}
	shutDown func()
}

// maxBody bounds a posted task or reply.
const maxBody = 64 << 10

func newServer(rs *runs, auth func(*http.Request) error, origins []string) *server {
	mux := http.NewServeMux()
	s := &server{runs: rs, auth: auth, origins: origins, mux: mux, closing: make(chan struct{})}
	s.shutDown = sync.OnceFunc(func() { close(s.closing) })
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.Handle("POST /run", s.guard(s.run))
	mux.Handle("POST /reply", s.guard(s.reply))
	mux.Handle("GET /runs/{runId}", s.guard(s.runStatus))
	mux.Handle("GET /config", s.guard(s.config))
	mux.HandleFunc("GET /config/schema", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/schema+json")
		w.Write(ConfigSchema())
	})
	s.http = &http.Server{
		Handler:           s.cors(mux),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
	}
	s.http.RegisterOnShutdown(s.shutDown)
	return s
}

// openServer opens the runs of rc (rc.Open is the devpanel fleet's: each
// run's agent has its panel) and serves them: the bridge, the devpanel
// fleet under /devpanel/ (its root lists the runs, /devpanel/agents/{id}/
// is a run's panel), the ReAct views under /react/, and the start page at
// /. Everything but the pages' files needs the token, the operator's. The
// runs are closed when the server shuts down; the fleet stays the
// caller's.
func openServer(rc runsConfig, token string, origins []string) (*server, error) {
	panelCfg, views, err := panelConfig(rc.Work)
	if err != nil {
		return nil, err
	}
	panels, err := devpanel.NewFleet(devpanel.FleetConfig[decl.AgentState, decl.AgentInput]{
		Panel:    panelCfg,
		Identify: httpbridge.Identities(token, nil),
	})
	if err != nil {
		return nil, err
	}
	rc.Open = panels.OpenAgent
	rs, err := openRuns(rc)
	if err != nil {
		return nil, err
	}
	s := newServer(rs, httpbridge.Bearer(token), origins)
	fleet := panels.Handler(rs.reg)
	s.mount("/devpanel/", fleet)
	s.mux.Handle("GET /events", s.events(fleet))
	s.mux.Handle("GET /react/", views)
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, webFiles, "web/start.html")
	})
	// Shutdown does not end event streams: closing the runs does (each
	// panel closes with its agent).
	s.http.RegisterOnShutdown(func() {
		s.shutDown() // first: a request that meets the runs closed is told why
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rs.close(ctx); err != nil {
			slog.Error("react: closing the runs", "err", err)
		}
	})
	return s, nil
}

// mount serves h under prefix, which ends in a slash (such as /devpanel/).
func (s *server) mount(prefix string, h http.Handler) {
	s.mux.Handle(prefix, http.StripPrefix(strings.TrimSuffix(prefix, "/"), h))
}

// guard refuses a request that auth refuses.
func (s *server) guard(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.auth(r); err != nil {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": err.Error()})
			return
		}
		h(w, r)
	})
}

// corsHandler answers preflights and adds the CORS headers for allowed
// origins, and refuses requests from any other (but the server's own).
type corsHandler struct {
	origins []string
	next    http.Handler
}

func (s *server) cors(next http.Handler) http.Handler { return &corsHandler{s.origins, next} }

func (c *corsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	if origin != "" && origin != "http://"+r.Host && origin != "https://"+r.Host {
		if !slices.Contains(c.origins, origin) {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": fmt.Sprintf("origin %s is not allowed", origin)})
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID, Prefer")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	c.next.ServeHTTP(w, r)
}

// run runs a task: the body is a user-run-task without its type and
// timestamp ({"goal": "...", "runId": "...", "maxIterations": 5}); runId
// defaults to a new one. The run is an agent of its own (agentID: the run
// id, if it may name an agent), created for it; the task is journaled
// there, and runs once it has a turn (-max-runs), in parallel with the
// others. The answer, 200, is its result once it has ended (see result).
// With "Prefer: respond-async" the answer is 202 at once, naming the run,
// its agent and the journal position of the request; GET /runs/{runId}
// says how it does.
//
// A client that goes away loses nothing: the run is in its journal and goes
// on, GET /runs/{runId} reports it, and the same POST again (a runId asked
// for before is not queued again) waits for the same run and answers its
// result. A server that shuts down answers 503; the run goes on when it
// starts again. A runId whose agent runs another run (two run ids with one
// agent id) is refused with 409. With as many agents active as the registry
// allows (registry.Config.MaxActive), every one in use (runs in progress or
// waiting for their turn), the answer is 503 with Retry-After.
func (s *server) run(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := readJSON(w, r, &body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	if _, ok := body["runId"]; !ok {
		id, err := newRunID()
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		body["runId"] = id
	}
	in, err := decode("user-run-task", body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	runID := in.(decl.UserRunTask).RunID
	// Once asked for, the task is journaled whatever the client does.
	ctx := context.WithoutCancel(r.Context())
	a, release, err := s.runs.open(ctx, runID)
	if err != nil {
		s.agentError(w, err)
		return
	}
	defer release()
	m := a.Machine()
	if preferAsync(r) {
		s.dispatch(ctx, w, a, in, runID)
		return
	}
	// Watch before dispatching, so that the end cannot be missed.
	ended := make(chan decl.RunRecord, 1)
	unsubscribe := m.Subscribe(func(st decl.AgentState) {
		if rec, ok := runRecord(st, runID); ok {
			select {
			case ended <- rec:
			default:
			}
		}
	})
	defer unsubscribe()
	seq, err := m.DispatchSeq(ctx, in)
	if err != nil {
		s.dispatchError(w, err)
		return
	}
	if rec, ok := runRecord(m.Current(), runID); ok {
		// Asked for before, and over already.
		writeJSON(w, http.StatusOK, result(rec, a.ID(), seq))
		return
	}
	shutdown := func() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"runId": runID, "agent": a.ID(), "seq": seq,
			"error": "the server is shutting down; the run is journaled and goes on when it starts again"})
	}
	select {
	case rec := <-ended:
		writeJSON(w, http.StatusOK, result(rec, a.ID(), seq))
	case <-r.Context().Done():
		// The client went away; the run goes on.
	case <-s.closing:
		shutdown()
	case <-m.Done():
		select {
		case <-s.closing: // deactivated as the server shuts down
			shutdown()
		default:
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"runId": runID, "agent": a.ID(), "seq": seq,
				"error": fmt.Sprintf("the run's agent stopped: %v", m.Err())})
		}
	}
}

// agentError answers an error of getting a run's agent: 404 when there is
// none, 503 (with Retry-After when too many agents are in use, or the
// server is shutting down) otherwise.
func (s *server) agentError(w http.ResponseWriter, err error) {
	switch {
	case s.closed(err):
		s.shuttingDown(w, "ask again once it is back")
	case errors.Is(err, journal.ErrNoAgent):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
	case errors.Is(err, registry.ErrTooManyActive):
		w.Header().Set("Retry-After", "1")
		fallthrough
	default:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
	}
}

// dispatchError answers an input that was not journaled: 409 for another
// run's input (oneRun), else 503.
func (s *server) dispatchError(w http.ResponseWriter, err error) {
	if s.closed(err) {
		s.shuttingDown(w, "the input is not journaled: send it again once the server is back")
		return
	}
	if errors.Is(err, errOtherRun) {
		writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
}

// closed reports whether err is that of the runs, or a run's agent,
// closed as the server shuts down.
func (s *server) closed(err error) bool {
	select {
	case <-s.closing:
		return errors.Is(err, registry.ErrClosed) || errors.Is(err, automata.ErrClosed)
	default:
		return false
	}
}

// shuttingDown answers 503, with Retry-After, that the server is shutting
// down, and what the client is to do.
func (s *server) shuttingDown(w http.ResponseWriter, then string) {
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the server is shutting down; " + then})
}

// preferAsync reports whether the request prefers an answer at once
// (RFC 7240's respond-async).
func preferAsync(r *http.Request) bool {
	for _, v := range r.Header.Values("Prefer") {
		for _, p := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(p), "respond-async") {
				return true
			}
		}
	}
	return false
}

// runRecord returns the record of run runID, if it has ended.
func runRecord(st decl.AgentState, runID string) (decl.RunRecord, bool) {
	for i := len(st.Runs) - 1; i >= 0; i-- {
		if st.Runs[i].RunID == runID {
			return st.Runs[i], true
		}
	}
	return decl.RunRecord{}, false
}

// runResult is the answer to POST /run: how the run ended (status
// "finished" or "error"), its answer or error, how many tool calls it made
// (iterations), the calls that failed, when it started and ended (Unix
// milliseconds), its agent (whose panel is /devpanel/agents/{agent}/), and
// the position of the request in the agent's journal.
type runResult struct {
	RunID      string         `json:"runId"`
	Status     string         `json:"status"`
	Answer     string         `json:"answer"`
	Error      string         `json:"error"`
	Iterations int64          `json:"iterations"`
	Failures   []decl.Failure `json:"failures"`
	StartedAt  int64          `json:"startedAt"`
	EndedAt    int64          `json:"endedAt"`
	Agent      string         `json:"agent"`
	Seq        uint64         `json:"seq"`
}

func result(rec decl.RunRecord, agent string, seq uint64) runResult {
	failures := rec.Failures
	if failures == nil {
		failures = []decl.Failure{}
	}
	return runResult{RunID: rec.RunID, Status: string(rec.Outcome), Answer: rec.Answer, Error: rec.Error,
		Iterations: rec.Iterations, Failures: failures, StartedAt: rec.StartedAt, EndedAt: rec.EndedAt, Agent: agent, Seq: seq}
}

// reply answers the question of a run's agent: {"runId": "...", "content":
// "..."}; 404 when there is no such run.
func (s *server) reply(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := readJSON(w, r, &body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	in, err := decode("user-reply", body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	runID := in.(decl.UserReply).RunID
	a, release, err := s.runs.get(r.Context(), runID)
	if errors.Is(err, journal.ErrNoAgent) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no run %q", runID)})
		return
	}
	if err != nil {
		s.agentError(w, err)
		return
	}
	defer release()
	s.dispatch(r.Context(), w, a, in, runID)
}

// decode decodes body as an input of type typ, validating it against its
// schema; the server stamps its timestamp.
func decode(typ string, body map[string]any) (decl.AgentInput, error) {
	body["type"], body["timestamp"] = typ, 0
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return decl.DecodeInput(data)
}

// dispatch journals the input in the run's agent a and answers 202 with the
// run, its agent and the input's position in the agent's journal.
func (s *server) dispatch(ctx context.Context, w http.ResponseWriter, a *Agent, in decl.AgentInput, runID string) {
	seq, err := a.Machine().DispatchSeq(ctx, in)
	if err != nil {
		s.dispatchError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"runId": runID, "agent": a.ID(), "seq": seq})
}

// runStatus says where run runId is: queued (asked for, waiting for its
// turn), running (with its phase and iteration), or ended (with its
// record). It activates the run's agent if need be.
func (s *server) runStatus(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("runId")
	notFound := func() {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no run %q", id)})
	}
	a, release, err := s.runs.get(r.Context(), id)
	if errors.Is(err, journal.ErrNoAgent) {
		notFound()
		return
	}
	if err != nil {
		s.agentError(w, err)
		return
	}
	defer release()
	st := a.Machine().Current()
	if i := slices.IndexFunc(st.Runs, func(x decl.RunRecord) bool { return x.RunID == id }); i >= 0 {
		writeJSON(w, http.StatusOK, map[string]any{"status": st.Runs[i].Outcome, "run": st.Runs[i]})
		return
	}
	if st.RunID == id {
		writeJSON(w, http.StatusOK, map[string]any{"status": "running", "phase": st.Phase, "iteration": st.Iteration, "question": st.Question})
		return
	}
	if slices.ContainsFunc(st.Requests, func(x decl.TaskRequest) bool { return x.RunID == id }) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "queued"})
		return
	}
	notFound()
}

// config is GET /config: the configuration in force, and why the file's
// newest content was refused, if it was ({"config": ..., "refused": "file:line: ..."}).
func (s *server) config(w http.ResponseWriter, r *http.Request) {
	var c *configs
	if c = s.configs; c == nil {
		c = &configs{cur: s.runs.config()}
	}
	cfg, refused := c.status()
	writeJSON(w, http.StatusOK, map[string]any{"config": cfg, "refused": refused})
}

// events is GET /events?runId=...: the event stream of the run's panel, as
// /devpanel/agents/{agent}/events serves it.
func (s *server) events(panels http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runID := r.URL.Query().Get("runId")
		if runID == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "GET /events is a run's event stream: name the run, ?runId=..."})
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = "/agents/"+agentID(runID)+"/events", ""
		panels.ServeHTTP(w, r2)
	})
}

// readJSON reads a JSON object body of at most maxBody bytes.
func readJSON(w http.ResponseWriter, r *http.Request, v *map[string]any) error {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return fmt.Errorf("reading the body: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil || *v == nil {
		return errors.New("the body is not a JSON object")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// serve serves on l until ctx ends, then shuts down.
func (s *server) serve(ctx context.Context, l net.Listener) error {
	return httprun.Until(ctx, s.http, l)
}

// newRunID returns a random run id, run- and 8 hex digits.
func newRunID() (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a run id: %w", err)
	}
	return "run-" + hex.EncodeToString(b), nil
}
