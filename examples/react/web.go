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
	"slices"
	"strings"
	"time"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/examples/react/decl"
)

// server is the seed's bridge (devpanelBridge): POST /run takes a task and
// queues it (tasks run one at a time, in order), POST /reply answers the
// agent's question, GET /runs/{runId} says how a run is doing, GET /health
// says the server is up; CORS preflights are answered for the allowed
// origins. Every route but /health needs the token.
type server struct {
	http  *http.Server
	agent *journal.Machine[decl.AgentState, decl.AgentInput]
	auth  func(*http.Request) error
	// origins are the origins, besides the server's own, whose pages may
	// call it.
	origins []string
	mux     *http.ServeMux
}

// maxBody bounds a posted task or reply.
const maxBody = 64 << 10

func newServer(a *journal.Machine[decl.AgentState, decl.AgentInput], auth func(*http.Request) error, origins []string) *server {
	mux := http.NewServeMux()
	s := &server{agent: a, auth: auth, origins: origins, mux: mux}
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
	return s
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
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	c.next.ServeHTTP(w, r)
}

// run queues a task: the body is a user-run-task without its type and
// timestamp ({"goal": "...", "runId": "...", "maxIterations": 5}); runId
// defaults to a new one. The answer, 202, names the run and the journal
// position of the request.
func (s *server) run(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := readJSON(w, r, &body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	if _, ok := body["runId"]; !ok {
		id, err := newToken()
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		body["runId"] = "run-" + id[:8]
	}
	s.dispatch(w, r, "user-run-task", body)
}

// reply answers the agent's question: {"runId": "...", "content": "..."}.
func (s *server) reply(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := readJSON(w, r, &body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	s.dispatch(w, r, "user-reply", body)
}

// dispatch decodes body as an input of type typ, validating it against its
// schema, and journals it.
func (s *server) dispatch(w http.ResponseWriter, r *http.Request, typ string, body map[string]any) {
	body["type"], body["timestamp"] = typ, 0
	data, err := json.Marshal(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	in, err := decl.DecodeInput(data)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	if err := s.agent.Dispatch(r.Context(), in); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"runId": body["runId"], "seq": s.agent.Seq()})
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
	errc := make(chan error, 1)
	go func() { errc <- s.http.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(shutdown)
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) {
		err = errors.Join(err, e)
	}
	return err
}

// newToken returns a random token.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
