package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/internal/browsertest"
)

// TestMain lets the test binary be the command: the service tests start it
// as a child process.
func TestMain(m *testing.M) {
	if os.Getenv("REACT_CHILD") == "1" {
		if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "react:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const hangGuard = browsertest.HangGuard

// service is the command running as a child process on loopback.
type service struct {
	t     *testing.T
	addr  string
	token string
	cmd   *exec.Cmd
}

// startService runs the command on a free loopback port with its data in a
// new directory, and waits for it to serve.
func startService(t *testing.T, args ...string) *service {
	t.Helper()
	return startServiceEnv(t, nil, args...)
}

// startServiceEnv is startService with env added to the command's
// environment (which otherwise names no model: the rule-based planner).
func startServiceEnv(t *testing.T, env []string, args ...string) *service {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &service{t: t, addr: addr, token: "test-token"}
	cmd := exec.Command(os.Args[0], append([]string{"-addr", addr, "-data", t.TempDir(), "-token", s.token}, args...)...)
	cmd.Env = append(append(os.Environ(), "REACT_CHILD=1", "OPENAI_MODEL=", "LLM_PROVIDER="), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.cmd = cmd
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case line <- sc.Text():
			default:
			}
		}
	}()
	select {
	case l := <-line:
		if !strings.Contains(l, addr) {
			t.Fatalf("the service printed %q", l)
		}
	case <-time.After(hangGuard):
		t.Fatal("the service did not start")
	}
	return s
}

// do sends a request and decodes the JSON answer.
func (s *service) do(method, path, body string, header map[string]string) (int, map[string]any) {
	s.t.Helper()
	req, err := http.NewRequest(method, "http://"+s.addr+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer map[string]any
	if resp.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
			s.t.Fatalf("the answer to %s %s is not JSON: %v", method, path, err)
		}
	}
	return resp.StatusCode, answer
}

func (s *service) authed() map[string]string {
	return map[string]string{"Authorization": "Bearer " + s.token, "Content-Type": "application/json"}
}

// panel is the path of run runID's devpanel, under which its state, hold
// and events are.
func panel(runID string) string { return "/devpanel/agents/" + agentID(runID) }

// waitState waits until the state of run runID's agent, as its devpanel
// reports it, satisfies ok, and returns it: it reads the state again after
// each event of the panel's stream, so that no change goes unseen. The
// bound only catches a hang.
func (s *service) waitState(runID, what string, ok func(st map[string]any) bool) map[string]any {
	s.t.Helper()
	var st map[string]any
	s.untilEvent(runID, what, func() bool {
		_, answer := s.do("GET", panel(runID)+"/state", "", s.authed())
		st, _ = answer["state"].(map[string]any)
		return st != nil && ok(st)
	})
	return st
}

// quiet waits until the devpanel's hold of run runID's agent says no step
// is in progress and no job runs but those watch allows (the watchdog,
// which sleeps until the run's deadline): every other job waits at the gate
// or the route, or has ended. Like waitState, it reads the hold again after
// each event.
func (s *service) quiet(runID string, watch func(key string) bool) map[string]any {
	s.t.Helper()
	var h map[string]any
	s.untilEvent(runID, "the jobs to stop at the hold", func() bool {
		_, h = s.do("GET", panel(runID)+"/hold", "", s.authed())
		busy := h["stepping"] == true
		for _, k := range h["running"].([]any) {
			busy = busy || !watch(k.(string))
		}
		return !busy
	})
	return h
}

// untilEvent calls done, and again after each event of the stream of run
// runID's panel, until it returns true: no change goes unseen. The bound
// only catches a hang.
func (s *service) untilEvent(runID, what string, done func() bool) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var resp *http.Response
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+s.addr+panel(runID)+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		var err error
		if resp, err = http.DefaultClient.Do(req); err != nil {
			s.t.Fatal(err)
		}
		// A run asked for by another goroutine may have no agent yet.
		if resp.StatusCode != http.StatusNotFound || ctx.Err() != nil {
			break
		}
		resp.Body.Close()
		time.Sleep(10 * time.Millisecond)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		s.t.Fatalf("waiting for %s: the events of run %s: %d", what, runID, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for !done() {
		for sc.Scan() && sc.Text() != "" {
		} // to the end of the next event
		if sc.Err() != nil || ctx.Err() != nil {
			s.t.Fatalf("waiting for %s: %v %v", what, sc.Err(), ctx.Err())
		}
	}
}

// hasRequest reports whether the state has queued run runID.
func hasRequest(st map[string]any, runID string) bool {
	for _, r := range st["requests"].([]any) {
		if r.(map[string]any)["runId"] == runID {
			return true
		}
	}
	return false
}

// page gets path, a page, with the token in the query, and returns its
// status and body.
func (s *service) page(path string) (int, string) {
	s.t.Helper()
	resp, err := http.Get("http://" + s.addr + path + "?token=" + s.token)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// notes returns the seed's event types among the notes of the timeline
// that GET /events?runId= sends, up to the journal's last input (on
// connect, or after: the panel folds the inputs after the agent applies
// them).
func (s *service) notes(runID string) []string {
	s.t.Helper()
	last := fmt.Sprintf("id: %d", s.seq(runID))
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+s.addr+"/events?runId="+runID, nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		s.t.Fatalf("GET /events?runId=%s: %d", runID, resp.StatusCode)
	}
	var seen []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for reached := false; sc.Scan(); {
		if sc.Text() == last {
			reached = true // its data follows
		}
		for _, typ := range seedEvents {
			if strings.Contains(sc.Text(), `"type":"`+typ+`"`) && !slices.Contains(seen, typ) {
				seen = append(seen, typ)
			}
		}
		if reached && strings.HasPrefix(sc.Text(), "data: ") {
			return seen
		}
	}
	s.t.Fatalf("the events of run %s ended before its last input: %v", runID, sc.Err())
	return nil
}

// seedEvents are the event vocabulary of seed 002, the timeline's notes.
var seedEvents = []string{"user.input", "tool.request", "tool.result", "agent.transition", "agent.log", "system.alert", "agent.finished"}

// post posts body to path from a client that may go away (cancel ctx),
// and sends its answer, or its error, on the channel returned.
func (s *service) post(ctx context.Context, path, body string) <-chan map[string]any {
	out, _ := s.postTraced(ctx, path, body)
	return out
}

// postTraced is post, and closes sent once the request is written.
func (s *service) postTraced(ctx context.Context, path, body string) (answer <-chan map[string]any, sent <-chan struct{}) {
	out := make(chan map[string]any, 1)
	written := make(chan struct{})
	var once sync.Once
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(written) }) }})
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+s.addr+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- map[string]any{"error": err}
			return
		}
		defer resp.Body.Close()
		var r map[string]any
		json.NewDecoder(resp.Body).Decode(&r)
		out <- r
	}()
	return out, written
}

func waiting(st map[string]any) bool { return st["phase"] == "waiting" }

// TestServiceOverHTTP: the seed's bridge as a process: health, a task run
// to its result as an agent of its own, two runs waiting for the user at
// once, a question answered, a client that goes away losing nothing, a run
// id that is no agent id, each run's event stream, the devpanel fleet that
// lists the runs, CORS, and bad requests refused with a message that says
// what is wrong.
func TestServiceOverHTTP(t *testing.T) {
	s := startService(t, "-allow-origin", "http://devpanel.example")
	if code, answer := s.do("GET", "/health", "", nil); code != 200 || answer["status"] != "ok" {
		t.Fatalf("GET /health = %d %v", code, answer)
	}
	// POST /run runs the task and answers its result: the run is an agent
	// of its own, whose journal the request opens.
	code, res := s.do("POST", "/run", `{"runId":"a","goal":"compute 6*7 and count words in notes.txt"}`, s.authed())
	if code != 200 || res["runId"] != "a" || res["agent"] != "a" || res["status"] != "finished" || !strings.Contains(res["answer"].(string), "compute 6*7: 42") ||
		res["iterations"] != float64(2) || len(res["failures"].([]any)) != 0 || res["seq"] != float64(2) || res["endedAt"].(float64) < res["startedAt"].(float64) {
		t.Fatalf("POST /run = %d %v", code, res)
	}
	// The run's panel shows the trace of its request: the request, the
	// start job, ... the calculator's execute_tool, in one trace.
	if code, tr := s.do("GET", panel("a")+"/trace?seq=2", "", s.authed()); code != 200 || !hasSpans(tr, "moora.input user-run-task", "moora.job", "execute_tool calculator", "execute_tool word_count", "moora.input toolkit-observe") {
		t.Errorf("GET the trace of run a's request = %d %v", code, tr)
	}
	if _, st := s.do("GET", "/runs/a", "", s.authed()); st["status"] != "finished" {
		t.Errorf("GET /runs/a = %v", st)
	}
	// A run that trips a guard ends in error, and says so.
	code, res = s.do("POST", "/run", `{"runId":"loop","goal":"compute 1+1, compute 2+2, compute 3+3","maxIterations":2}`, s.authed())
	if code != 200 || res["status"] != "error" || !strings.Contains(res["error"].(string), "maxIterations") || res["iterations"] != float64(2) || res["seq"] != float64(2) {
		t.Errorf("a run over its limit: %d %v", code, res)
	}

	// Run b asks a question (asynchronously: 202 at once); c, asked for
	// by a client that then goes away, asks one too: both wait for the
	// user at once, each in its agent.
	code, res = s.do("POST", "/run", `{"runId":"b","goal":"read ../secret"}`, map[string]string{"Authorization": "Bearer " + s.token, "Prefer": "respond-async"})
	if code != 202 || res["runId"] != "b" || res["agent"] != "b" || res["seq"] != float64(2) {
		t.Fatalf("POST /run, respond-async = %d %v", code, res)
	}
	ctx, leave := context.WithCancel(context.Background())
	gone := s.post(ctx, "/run", `{"runId":"c","goal":"count words in ../c.txt"}`)
	st := s.waitState("b", "b's question", waiting)
	if !strings.Contains(st["question"].(string), "outside the workspace") {
		t.Errorf("question %v", st["question"])
	}
	s.waitState("c", "c's question", waiting)
	leave()
	if r := <-gone; !errors.Is(r["error"].(error), context.Canceled) {
		t.Fatalf("the client that left got %v", r)
	}
	if _, st := s.do("GET", "/runs/c", "", s.authed()); st["status"] != "running" || st["phase"] != "waiting" {
		t.Errorf("run c is %v", st)
	}
	if code, answer := s.do("POST", "/reply", `{"runId":"c","content":"notes.txt"}`, s.authed()); code != 202 || answer["agent"] != "c" {
		t.Fatalf("POST /reply = %d %v", code, answer)
	}
	// The same POST again waits for the same run: nothing was lost. It
	// ends while b still waits.
	code, res = s.do("POST", "/run", `{"runId":"c","goal":"count words in ../c.txt"}`, s.authed())
	if code != 200 || res["status"] != "finished" || !strings.HasSuffix(res["answer"].(string), ": 26") {
		t.Errorf("run c, asked for again: %d %v", code, res)
	}
	if _, st := s.do("GET", "/runs/b", "", s.authed()); st["status"] != "running" || st["phase"] != "waiting" {
		t.Errorf("run b is %v once c has ended", st)
	}
	if code, answer := s.do("POST", "/reply", `{"runId":"b","content":"todo.txt"}`, s.authed()); code != 202 {
		t.Fatalf("POST /reply = %d %v", code, answer)
	}
	code, res = s.do("POST", "/run", `{"runId":"b","goal":"read ../secret"}`, s.authed())
	failures, _ := res["failures"].([]any)
	if code != 200 || !strings.Contains(res["answer"].(string), "review the plan") || len(failures) != 1 ||
		failures[0].(map[string]any)["errorKind"] != "permission" || failures[0].(map[string]any)["strategy"] != "ask-user" {
		t.Errorf("run b: %d %v", code, res)
	}

	// A run id that may not name an agent (a '.') has an agent of another
	// id, which no other run may take.
	code, res = s.do("POST", "/run", `{"runId":"v1.2","goal":"compute 2+2"}`, s.authed())
	if id := agentID("v1.2"); code != 200 || res["agent"] != id || !strings.HasPrefix(id, "run_") || res["answer"] != "compute 2+2: 4" {
		t.Errorf("run v1.2: %d %v", code, res)
	}
	if _, st := s.do("GET", "/runs/v1.2", "", s.authed()); st["status"] != "finished" {
		t.Errorf("GET /runs/v1.2 = %v", st)
	}
	if code, answer := s.do("POST", "/run", `{"runId":"`+agentID("v1.2")+`","goal":"compute 3+3"}`, s.authed()); code != 409 || !strings.Contains(answer["error"].(string), `runs run "v1.2"`) {
		t.Errorf("a run id that is v1.2's agent id: %d %v", code, answer)
	}

	// GET / is the start page; the devpanel's root lists the runs, each
	// an agent the operator owns.
	if code, body := s.page("/"); code != 200 || !strings.Contains(body, "<title>ReAct</title>") {
		t.Errorf("GET / = %d %.200s", code, body)
	}
	if code, body := s.page("/devpanel/"); code != 200 || !strings.Contains(body, "<h1>Agents</h1>") {
		t.Errorf("GET /devpanel/ = %d %.200s", code, body)
	}
	code, list := s.do("GET", "/devpanel/agents", "", s.authed())
	var ids []string
	for _, a := range list["agents"].([]any) {
		if a := a.(map[string]any); a["owner"] == "operator" {
			ids = append(ids, a["id"].(string))
		}
	}
	if want := []string{"a", "b", "c", "loop", agentID("v1.2")}; code != 200 || !slices.Equal(ids, want) {
		t.Errorf("GET /devpanel/agents = %d %v, want the operator's %v", code, list, want)
	}

	// GET /events?runId= is the run's panel's stream: the timeline of its
	// inputs, with the seed's events as notes, which the runs a (finished)
	// and loop (an alert) show between them.
	if code, answer := s.do("GET", panel("a")+"/health", "", s.authed()); code != 200 || answer["status"] != "ok" {
		t.Errorf("GET %s/health = %d %v", panel("a"), code, answer)
	}
	seen := s.notes("a")
	for _, typ := range s.notes("loop") {
		if !slices.Contains(seen, typ) {
			seen = append(seen, typ)
		}
	}
	if len(seen) != len(seedEvents) {
		t.Errorf("the event streams' notes: %v, want all seven of the seed's events", seen)
	}

	// CORS: the allowed origin's preflight, and a stranger refused.
	pre := map[string]string{"Origin": "http://devpanel.example", "Access-Control-Request-Method": "POST"}
	req, _ := http.NewRequest("OPTIONS", "http://"+s.addr+"/run", nil)
	for k, v := range pre {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "http://devpanel.example" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight = %d %v", resp.StatusCode, resp.Header)
	}

	for _, bad := range []struct {
		name, method, path, body string
		header                   map[string]string
		code                     int
		says                     string
	}{
		{"no token", "POST", "/run", `{"goal":"x"}`, nil, 401, ""},
		{"not JSON", "POST", "/run", `{"goal":`, s.authed(), 400, "not a json object"},
		{"not an object", "POST", "/run", `null`, s.authed(), 400, "not a json object"},
		{"no goal", "POST", "/run", `{"runId":"z"}`, s.authed(), 400, "goal"},
		{"a bad runId", "POST", "/run", `{"runId":"a b","goal":"x"}`, s.authed(), 400, "/runid"},
		{"a limit out of range", "POST", "/run", `{"goal":"x","maxIterations":0}`, s.authed(), 400, "/maxiterations"},
		{"an unknown run", "GET", "/runs/nope", "", s.authed(), 404, "no run"},
		{"a reply to an unknown run", "POST", "/reply", `{"runId":"nope","content":"x"}`, s.authed(), 404, "no run"},
		{"the events of no run", "GET", "/events", "", s.authed(), 400, "name the run"},
		{"the events of an unknown run", "GET", "/events?runId=nope", "", s.authed(), 404, "no agent"},
		{"a stranger's origin", "POST", "/run", `{"goal":"x"}`, map[string]string{"Origin": "http://evil.example", "Authorization": "Bearer " + s.token}, 403, "not allowed"},
	} {
		code, answer := s.do(bad.method, bad.path, bad.body, bad.header)
		msg, _ := answer["error"].(string)
		if code != bad.code || !strings.Contains(strings.ToLower(msg), bad.says) {
			t.Errorf("%s: %d %v, want %d saying %q", bad.name, code, answer, bad.code, bad.says)
		}
	}
}

// TestServiceRunsTakeTurns: with -max-runs 1, a run waits for its turn
// while another is in progress (a run waiting for the user keeps its turn),
// then runs; runs asked for together run one after the other.
func TestServiceRunsTakeTurns(t *testing.T) {
	s := startService(t, "-max-runs", "1")
	async := map[string]string{"Authorization": "Bearer " + s.token, "Prefer": "respond-async"}
	if code, res := s.do("POST", "/run", `{"runId":"b","goal":"read ../secret"}`, async); code != 202 {
		t.Fatalf("POST /run b = %d %v", code, res)
	}
	s.waitState("b", "b's question", waiting)
	if code, res := s.do("POST", "/run", `{"runId":"c","goal":"compute 1/4"}`, async); code != 202 || res["agent"] != "c" {
		t.Fatalf("POST /run c = %d %v", code, res)
	}
	if _, st := s.do("GET", "/runs/c", "", s.authed()); st["status"] != "queued" {
		t.Errorf("run c is %v while b waits for the user", st)
	}
	if n := s.seq("c"); n != 2 {
		t.Errorf("c's journal has %d inputs while it waits for its turn, want its configuration and request only", n)
	}
	if code, answer := s.do("POST", "/reply", `{"runId":"b","content":"todo.txt"}`, s.authed()); code != 202 {
		t.Fatalf("POST /reply = %d %v", code, answer)
	}
	_, b := s.do("POST", "/run", `{"runId":"b","goal":"read ../secret"}`, s.authed())
	code, c := s.do("POST", "/run", `{"runId":"c","goal":"compute 1/4"}`, s.authed())
	if code != 200 || c["status"] != "finished" || c["answer"] != "compute 1/4: 0.25" {
		t.Fatalf("run c: %d %v", code, c)
	}
	if c["startedAt"].(float64) < b["endedAt"].(float64) {
		t.Errorf("c started at %v, before b ended at %v", c["startedAt"], b["endedAt"])
	}

	// Tasks asked for together run one after the other.
	results := make(chan map[string]any, 2)
	for _, id := range []string{"d", "e"} {
		go func() {
			results <- <-s.post(context.Background(), "/run", `{"runId":"`+id+`","goal":"compute 2+2 and compute 3+3"}`)
		}()
	}
	d, e := <-results, <-results
	if d["status"] != "finished" || e["status"] != "finished" {
		t.Fatalf("d and e: %v, %v", d, e)
	}
	if d["startedAt"].(float64) > e["startedAt"].(float64) {
		d, e = e, d
	}
	if e["startedAt"].(float64) < d["endedAt"].(float64) {
		t.Errorf("runs overlap: %s ran %v to %v, %s from %v", d["runId"], d["startedAt"], d["endedAt"], e["runId"], e["startedAt"])
	}
}

// TestSIGTERMStopsTheService: SIGTERM, with a run in a tool call, another
// waiting for its turn, a client waiting for each, and a run's event
// stream open, stops the process cleanly (exit status 0), each client told
// to come back (503) and the stream ended; started again on its data, the
// runs go on and finish.
func TestSIGTERMStopsTheService(t *testing.T) {
	data := t.TempDir()
	s := startService(t, "-max-runs", "1", "-data", data)
	async := map[string]string{"Authorization": "Bearer " + s.token, "Prefer": "respond-async"}
	if code, res := s.do("POST", "/run", `{"runId":"a","goal":"wait 5000 ms"}`, async); code != 202 {
		t.Fatalf("POST /run a = %d %v", code, res)
	}
	s.waitState("a", "a's tool call", func(st map[string]any) bool { return st["phase"] == "act" })
	if code, res := s.do("POST", "/run", `{"runId":"b","goal":"compute 2+3"}`, async); code != 202 {
		t.Fatalf("POST /run b = %d %v", code, res)
	}
	if _, st := s.do("GET", "/runs/b", "", s.authed()); st["status"] != "queued" {
		t.Fatalf("run b is %v while a runs", st)
	}
	var clients []<-chan map[string]any
	for _, body := range []string{`{"runId":"a","goal":"wait 5000 ms"}`, `{"runId":"b","goal":"compute 2+3"}`} {
		answer, sent := s.postTraced(context.Background(), "/run", body)
		<-sent
		clients = append(clients, answer)
	}
	req, _ := http.NewRequest("GET", "http://"+s.addr+"/events?runId=a", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /events: %v %v", resp, err)
	}
	streamEnded := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		streamEnded <- err
	}()

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the process ended with %v after SIGTERM", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("the process goes on after SIGTERM")
	}
	for i, c := range clients {
		if answer := <-c; !strings.Contains(fmt.Sprint(answer["error"]), "shutting down") {
			t.Errorf("client %d was answered %v", i, answer)
		}
	}
	if err := <-streamEnded; err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("the event stream ended with %v", err)
	}

	s = startService(t, "-max-runs", "1", "-data", data)
	for id, answer := range map[string]string{"a": "wait 5000 ms: waited 5000 ms", "b": "compute 2+3: 5"} {
		code, res := s.do("POST", "/run", `{"runId":"`+id+`","goal":"-"}`, s.authed())
		if code != 200 || res["status"] != "finished" || res["answer"] != answer {
			t.Errorf("run %s once started again: %d %v", id, code, res)
		}
	}
}

// seq returns the last sequence number of run runID's journal, as its panel
// reports it.
func (s *service) seq(runID string) int {
	s.t.Helper()
	code, answer := s.do("GET", panel(runID)+"/state", "", s.authed())
	if code != 200 {
		s.t.Fatalf("GET %s/state = %d %v", panel(runID), code, answer)
	}
	return int(answer["seq"].(float64))
}

// hasSpans reports whether a trace (devpanel's GET trace) has spans of
// each of names.
func hasSpans(trace map[string]any, names ...string) bool {
	spans, _ := trace["spans"].([]any)
	for _, name := range names {
		found := false
		for _, sp := range spans {
			if m, ok := sp.(map[string]any); ok && m["name"] == name {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
