package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/examples/internal/browsertest"
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

// waitRun polls GET /runs/{runId} until the run has ended; the bound only
// catches a hang.
func (s *service) waitRun(runID string) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		code, answer := s.do("GET", "/runs/"+runID, "", s.authed())
		if code != 200 {
			s.t.Fatalf("GET /runs/%s = %d %v", runID, code, answer)
		}
		if answer["status"] == "finished" || answer["status"] == "error" {
			return answer
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("run %s did not end", runID)
	return nil
}

// TestServiceOverHTTP: the seed's bridge as a process: health, a task run
// to its answer, a question answered, tasks queued while one runs, CORS,
// and bad requests refused with a message that says what is wrong.
func TestServiceOverHTTP(t *testing.T) {
	s := startService(t, "-allow-origin", "http://devpanel.example")
	if code, answer := s.do("GET", "/health", "", nil); code != 200 || answer["status"] != "ok" {
		t.Fatalf("GET /health = %d %v", code, answer)
	}
	code, answer := s.do("POST", "/run", `{"runId":"a","goal":"compute 6*7 and count words in notes.txt"}`, s.authed())
	if code != 202 || answer["runId"] != "a" || answer["seq"] == nil {
		t.Fatalf("POST /run = %d %v", code, answer)
	}
	s.do("POST", "/run", `{"runId":"b","goal":"read ../secret"}`, s.authed())
	_, queued := s.do("POST", "/run", `{"goal":"compute 1/4"}`, s.authed())
	c := queued["runId"].(string)
	if !strings.HasPrefix(c, "run-") {
		t.Errorf("a run without an id got %q", c)
	}
	run := s.waitRun("a")["run"].(map[string]any)
	if !strings.Contains(run["answer"].(string), "compute 6*7: 42") {
		t.Errorf("run a: %v", run)
	}
	// Run b asks a question; c waits behind it.
	deadline := time.Now().Add(hangGuard)
	for {
		_, st := s.do("GET", "/runs/b", "", s.authed())
		if st["phase"] == "waiting" {
			if !strings.Contains(st["question"].(string), "outside the workspace") {
				t.Errorf("question %v", st["question"])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run b never asked: %v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, st := s.do("GET", "/runs/"+c, "", s.authed()); st["status"] != "queued" {
		t.Errorf("run %s is %v while b waits", c, st)
	}
	if code, answer := s.do("POST", "/reply", `{"runId":"b","content":"todo.txt"}`, s.authed()); code != 202 {
		t.Fatalf("POST /reply = %d %v", code, answer)
	}
	if run := s.waitRun("b")["run"].(map[string]any); !strings.Contains(run["answer"].(string), "review the plan") {
		t.Errorf("run b: %v", run)
	}
	if run := s.waitRun(c)["run"].(map[string]any); run["answer"] != "compute 1/4: 0.25" {
		t.Errorf("run %s: %v", c, run)
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
		for _, typ := range []string{"user.input", "tool.request", "tool.result", "agent.transition", "agent.log", "agent.finished"} {
			if strings.Contains(sc.Text(), `"type":"`+typ+`"`) && !slices.Contains(seen, typ) {
				seen = append(seen, typ)
			}
		}
	}
	resp0.Body.Close()
	if len(seen) != 6 {
		t.Errorf("the event stream's notes: %v, want all six of the seed's events but system.alert", seen)
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
