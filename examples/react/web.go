package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/examples/internal/httprun"
	"github.com/moora-go/moora/examples/react/decl"
)

// server is the seed's bridge (devpanelBridge): POST /run takes a task,
// runs it and answers its result (tasks run one at a time, in order),
// POST /reply answers the agent's question, GET /runs/{runId} says how a
// run is doing, GET /health says the server is up; CORS preflights are
// answered for the allowed origins. Every route but /health needs the
// token.
type server struct {
	http  *http.Server
	agent *journal.Machine[decl.AgentState, decl.AgentInput]
	auth  func(*http.Request) error
	// origins are the origins, besides the server's own, whose pages may
	// call it.
	origins []string
	mux     *http.ServeMux
	// closing is closed when the server shuts down: the runs waited for
	// are answered then, and go on.
	closing chan struct{}
}

// maxBody bounds a posted task or reply.
const maxBody = 64 << 10

func newServer(a *journal.Machine[decl.AgentState, decl.AgentInput], auth func(*http.Request) error, origins []string) *server {
	mux := http.NewServeMux()
	s := &server{agent: a, auth: auth, origins: origins, mux: mux, closing: make(chan struct{})}
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.Handle("POST /run", s.guard(s.run))
	mux.Handle("POST /reply", s.guard(s.reply))
	mux.Handle("GET /runs/{runId}", s.guard(s.runStatus))
	s.http = &http.Server{
		Handler:           s.cors(mux),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
	}
	s.http.RegisterOnShutdown(func() { close(s.closing) })
	return s
}

// redirect redirects to path, keeping the query (the panel's ?token=).
func redirect(path string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := url.URL{Path: path, RawQuery: r.URL.RawQuery}
		http.Redirect(w, r, u.String(), http.StatusFound)
	})
}

// mount serves h under prefix, which ends in a slash (such as /devpanel/),
// and calls close, if any, on shutdown.
func (s *server) mount(prefix string, h http.Handler, close func()) {
	s.mux.Handle(prefix, http.StripPrefix(strings.TrimSuffix(prefix, "/"), h))
	if close != nil {
		s.http.RegisterOnShutdown(close)
	}
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
// defaults to a new one. The task is journaled, then runs after the tasks
// asked for before it, and the answer, 200, is its result once it has
// ended (see result). With "Prefer: respond-async" the answer is 202 at
// once, naming the run and the journal position of the request; GET
// /runs/{runId} says how it does.
//
// A client that goes away loses nothing: the run is in the journal and goes
// on, GET /runs/{runId} reports it, and the same POST again (a runId asked
// for before is not queued again) waits for the same run and answers its
// result. A server that shuts down answers 503; the run goes on when it
// restarts.
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
	if preferAsync(r) {
		s.dispatch(w, r, in, runID)
		return
	}
	// Watch before dispatching, so that the end cannot be missed.
	ended := make(chan decl.RunRecord, 1)
	unsubscribe := s.agent.Subscribe(func(st decl.AgentState) {
		if rec, ok := runRecord(st, runID); ok {
			select {
			case ended <- rec:
			default:
			}
		}
	})
	defer unsubscribe()
	// Once asked for, the task is journaled whatever the client does.
	seq, err := s.agent.DispatchSeq(context.WithoutCancel(r.Context()), in)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	if rec, ok := runRecord(s.agent.Current(), runID); ok {
		// Asked for before, and over already.
		writeJSON(w, http.StatusOK, result(rec, seq))
		return
	}
	select {
	case rec := <-ended:
		writeJSON(w, http.StatusOK, result(rec, seq))
	case <-r.Context().Done():
		// The client went away; the run goes on.
	case <-s.closing:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"runId": runID, "seq": seq,
			"error": "the server is shutting down; the run is journaled and goes on when it restarts"})
	case <-s.agent.Done():
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"runId": runID, "seq": seq,
			"error": fmt.Sprintf("the agent stopped: %v", s.agent.Err())})
	}
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
// milliseconds), and the journal position of the request.
type runResult struct {
	RunID      string         `json:"runId"`
	Status     string         `json:"status"`
	Answer     string         `json:"answer"`
	Error      string         `json:"error"`
	Iterations int64          `json:"iterations"`
	Failures   []decl.Failure `json:"failures"`
	StartedAt  int64          `json:"startedAt"`
	EndedAt    int64          `json:"endedAt"`
	Seq        uint64         `json:"seq"`
}

func result(rec decl.RunRecord, seq uint64) runResult {
	failures := rec.Failures
	if failures == nil {
		failures = []decl.Failure{}
	}
	return runResult{RunID: rec.RunID, Status: string(rec.Outcome), Answer: rec.Answer, Error: rec.Error,
		Iterations: rec.Iterations, Failures: failures, StartedAt: rec.StartedAt, EndedAt: rec.EndedAt, Seq: seq}
}

// reply answers the agent's question: {"runId": "...", "content": "..."}.
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
	s.dispatch(w, r, in, body["runId"])
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

// dispatch journals the input and answers 202 with the run and the input's
// position in the journal.
func (s *server) dispatch(w http.ResponseWriter, r *http.Request, in decl.AgentInput, runID any) {
	seq, err := s.agent.DispatchSeq(r.Context(), in)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"runId": runID, "seq": seq})
}

// runStatus says where run runId is: queued, running (with its phase and
// iteration), or ended (with its record).
func (s *server) runStatus(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("runId")
	st := s.agent.Current()
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
	writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no run %q", id)})
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
