package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &service{t: t, addr: addr, token: "test-token"}
	cmd := exec.Command(os.Args[0], append([]string{"-addr", addr, "-data", t.TempDir(), "-token", s.token}, args...)...)
	cmd.Env = append(os.Environ(), "REACT_CHILD=1", "OPENAI_MODEL=")
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

// waitState waits until the agent's state, as the devpanel reports it,
// satisfies ok, and returns it: it reads the state again after each event
// of the panel's stream, so that no change goes unseen. The bound only
// catches a hang.
func (s *service) waitState(what string, ok func(st map[string]any) bool) map[string]any {
	s.t.Helper()
	var st map[string]any
	s.untilEvent(what, func() bool {
		_, answer := s.do("GET", "/devpanel/state", "", s.authed())
		st, _ = answer["state"].(map[string]any)
		return st != nil && ok(st)
	})
	return st
}

// quiet waits until the devpanel's hold says no step is in progress and no
// job runs but those watch allows (the watchdog, which sleeps until the
// run's deadline): every other job waits at the gate or the route, or has
// ended. Like waitState, it reads the hold again after each event.
func (s *service) quiet(watch func(key string) bool) map[string]any {
	s.t.Helper()
	var h map[string]any
	s.untilEvent("the jobs to stop at the hold", func() bool {
		_, h = s.do("GET", "/devpanel/hold", "", s.authed())
		busy := h["stepping"] == true
		for _, k := range h["running"].([]any) {
			busy = busy || !watch(k.(string))
		}
		return !busy
	})
	return h
}

// untilEvent calls done, and again after each event of the panel's stream,
// until it returns true: no change goes unseen. The bound only catches a
// hang.
func (s *service) untilEvent(what string, done func() bool) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+s.addr+"/devpanel/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
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

// TestServiceOverHTTP: the seed's bridge as a process: health, a task run
// to its result, a question answered, tasks serialised, a client that goes
// away losing nothing, CORS, and bad requests refused with a message that
// says what is wrong.
func TestServiceOverHTTP(t *testing.T) {
	s := startService(t, "-allow-origin", "http://devpanel.example")
	if code, answer := s.do("GET", "/health", "", nil); code != 200 || answer["status"] != "ok" {
		t.Fatalf("GET /health = %d %v", code, answer)
	}
	// POST /run runs the task and answers its result.
	code, res := s.do("POST", "/run", `{"runId":"a","goal":"compute 6*7 and count words in notes.txt"}`, s.authed())
	if code != 200 || res["runId"] != "a" || res["status"] != "finished" || !strings.Contains(res["answer"].(string), "compute 6*7: 42") ||
		res["iterations"] != float64(2) || len(res["failures"].([]any)) != 0 || res["seq"] != float64(1) || res["endedAt"].(float64) < res["startedAt"].(float64) {
		t.Fatalf("POST /run = %d %v", code, res)
	}
	if _, st := s.do("GET", "/runs/a", "", s.authed()); st["status"] != "finished" {
		t.Errorf("GET /runs/a = %v", st)
	}
	// A run that trips a guard ends in error, and says so.
	code, res = s.do("POST", "/run", `{"runId":"loop","goal":"compute 1+1, compute 2+2, compute 3+3","maxIterations":2}`, s.authed())
	if code != 200 || res["status"] != "error" || !strings.Contains(res["error"].(string), "maxIterations") || res["iterations"] != float64(2) {
		t.Errorf("a run over its limit: %d %v", code, res)
	}

	// Run b asks a question (asynchronously: 202 at once); c, asked for
	// by a client that then goes away, waits behind it.
	code, res = s.do("POST", "/run", `{"runId":"b","goal":"read ../secret"}`, map[string]string{"Authorization": "Bearer " + s.token, "Prefer": "respond-async"})
	if code != 202 || res["runId"] != "b" || res["seq"] == nil {
		t.Fatalf("POST /run, respond-async = %d %v", code, res)
	}
	ctx, leave := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+s.addr+"/run", strings.NewReader(`{"runId":"c","goal":"compute 1/4"}`))
	req.Header.Set("Authorization", "Bearer "+s.token)
	gone := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		gone <- err
	}()
	st := s.waitState("b's question, with c queued", func(st map[string]any) bool {
		return st["runId"] == "b" && st["phase"] == "waiting" && hasRequest(st, "c")
	})
	if !strings.Contains(st["question"].(string), "outside the workspace") {
		t.Errorf("question %v", st["question"])
	}
	leave()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client that left got %v", err)
	}
	if _, st := s.do("GET", "/runs/c", "", s.authed()); st["status"] != "queued" {
		t.Errorf("run c is %v while b waits", st)
	}
	if code, answer := s.do("POST", "/reply", `{"runId":"b","content":"todo.txt"}`, s.authed()); code != 202 {
		t.Fatalf("POST /reply = %d %v", code, answer)
	}
	// The same POST again waits for the same run: nothing was lost.
	code, res = s.do("POST", "/run", `{"runId":"c","goal":"compute 1/4"}`, s.authed())
	if code != 200 || res["status"] != "finished" || res["answer"] != "compute 1/4: 0.25" {
		t.Errorf("run c, asked for again: %d %v", code, res)
	}
	// b is over (c ran after it), with its failed call in its result.
	code, res = s.do("POST", "/run", `{"runId":"b","goal":"read ../secret"}`, s.authed())
	failures, _ := res["failures"].([]any)
	if code != 200 || !strings.Contains(res["answer"].(string), "review the plan") || len(failures) != 1 ||
		failures[0].(map[string]any)["errorKind"] != "permission" || failures[0].(map[string]any)["strategy"] != "ask-user" {
		t.Errorf("run b: %d %v", code, res)
	}

	// Tasks asked for together run one after the other.
	results := make(chan map[string]any, 2)
	for _, id := range []string{"d", "e"} {
		go func() {
			req, _ := http.NewRequest("POST", "http://"+s.addr+"/run", strings.NewReader(`{"runId":"`+id+`","goal":"compute 2+2 and compute 3+3"}`))
			req.Header.Set("Authorization", "Bearer "+s.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				results <- map[string]any{"error": err.Error()}
				return
			}
			defer resp.Body.Close()
			var r map[string]any
			json.NewDecoder(resp.Body).Decode(&r)
			results <- r
		}()
	}
	d, e := <-results, <-results
	if d["status"] != "finished" || e["status"] != "finished" {
		t.Fatalf("d and e: %v, %v", d, e)
	}
	if first, second := d, e; first["seq"].(float64) > second["seq"].(float64) {
		d, e = e, d
	}
	if e["startedAt"].(float64) < d["endedAt"].(float64) {
		t.Errorf("runs overlap: %s ran %v to %v, %s from %v", d["runId"], d["startedAt"], d["endedAt"], e["runId"], e["startedAt"])
	}

	// GET / leads to the panel with the token.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get("http://" + s.addr + "/?token=" + s.token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != 302 || loc != "/devpanel/?token="+s.token {
		t.Errorf("GET / = %d to %q", resp.StatusCode, loc)
	}

	// The devpanel is mounted, and GET /events is its stream: the
	// timeline of the runs, with the seed's events as notes.
	if code, answer := s.do("GET", "/devpanel/health", "", s.authed()); code != 200 || answer["status"] != "ok" {
		t.Errorf("GET /devpanel/health = %d %v", code, answer)
	}
	req0, _ := http.NewRequest("GET", "http://"+s.addr+"/events", nil)
	req0.Header.Set("Authorization", "Bearer "+s.token)
	resp0, err := http.DefaultClient.Do(req0)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	sc := bufio.NewScanner(resp0.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "event: snapshot") {
		for _, typ := range []string{"user.input", "tool.request", "tool.result", "agent.transition", "agent.log", "system.alert", "agent.finished"} {
			if strings.Contains(sc.Text(), `"type":"`+typ+`"`) && !slices.Contains(seen, typ) {
				seen = append(seen, typ)
			}
		}
	}
	resp0.Body.Close()
	if len(seen) != 7 {
		t.Errorf("the event stream's notes: %v, want all seven of the seed's events", seen)
	}

	// CORS: the allowed origin's preflight, and a stranger refused.
	pre := map[string]string{"Origin": "http://devpanel.example", "Access-Control-Request-Method": "POST"}
	req, _ = http.NewRequest("OPTIONS", "http://"+s.addr+"/run", nil)
	for k, v := range pre {
		req.Header.Set(k, v)
	}
	resp, err = http.DefaultClient.Do(req)
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
		{"a stranger's origin", "POST", "/run", `{"goal":"x"}`, map[string]string{"Origin": "http://evil.example", "Authorization": "Bearer " + s.token}, 403, "not allowed"},
	} {
		code, answer := s.do(bad.method, bad.path, bad.body, bad.header)
		msg, _ := answer["error"].(string)
		if code != bad.code || !strings.Contains(strings.ToLower(msg), bad.says) {
			t.Errorf("%s: %d %v, want %d saying %q", bad.name, code, answer, bad.code, bad.says)
		}
	}
}

// seq returns the journal's last sequence number, as the panel reports it.
func (s *service) seq() int {
	s.t.Helper()
	code, answer := s.do("GET", "/devpanel/state", "", s.authed())
	if code != 200 {
		s.t.Fatalf("GET /devpanel/state = %d %v", code, answer)
	}
	return int(answer["seq"].(float64))
}
