package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/examples/react/decl"
)

// TestAgentID: a run id that may name an agent is its agent's id; any other
// (one with a '.', the one character the spec's run ids have that agent ids
// do not) has an agent id of its own that may.
func TestAgentID(t *testing.T) {
	for _, id := range []string{"a", "run-1f2e3d4c", "form_1", strings.Repeat("x", 64)} {
		if got := agentID(id); got != id {
			t.Errorf("agentID(%q) = %q, want it as it is", id, got)
		}
	}
	seen := map[string]string{}
	for _, id := range []string{"v1.2", "a.b", "a_b.", ".", strings.Repeat("y", 63) + "."} {
		got := agentID(id)
		if err := journal.CheckAgentID(got); err != nil || !strings.HasPrefix(got, "run_") {
			t.Errorf("agentID(%q) = %q: %v", id, got, err)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("%q and %q have the same agent id %q", id, other, got)
		}
		seen[got] = id
		if agentID(id) != got {
			t.Errorf("agentID(%q) changes", id)
		}
	}
}

// TestOneRunPerAgent: a run's agent refuses the task of another run, even
// one whose run id is its own agent id, and a reply to a run it does not
// run, before they are journaled.
func TestOneRunPerAgent(t *testing.T) {
	rs := testRuns(t, testWork(t, never), 0)
	ctx := context.Background()
	a := testRun(t, rs, "one")
	for _, in := range []decl.AgentInput{
		decl.UserRunTask{RunID: "two", Goal: "compute 1+1"},
		decl.UserReply{RunID: "one", Content: "too early"},
	} {
		if err := a.Dispatch(ctx, in); !errors.Is(err, errOtherRun) {
			t.Errorf("%T %+v: %v, want errOtherRun", in, in, err)
		}
	}
	if n := a.Seq(); n != 0 {
		t.Fatalf("refused inputs were journaled: seq %d", n)
	}
	if err := a.Dispatch(ctx, decl.UserRunTask{RunID: "one", Goal: "compute 1+1"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "run one to end", func(s decl.AgentState) bool { return ended(s, "one") })
	for _, in := range []decl.AgentInput{
		decl.UserRunTask{RunID: "two", Goal: "compute 1+1"},
		decl.UserReply{RunID: "two", Content: "x"},
	} {
		if err := a.Dispatch(ctx, in); !errors.Is(err, errOtherRun) {
			t.Errorf("%T %+v once one has run: %v, want errOtherRun", in, in, err)
		}
	}
	dotted := testRun(t, rs, "v1.2")
	if err := dotted.Dispatch(ctx, decl.UserRunTask{RunID: "v1.2", Goal: "compute 2+2"}); err != nil {
		t.Fatal(err)
	}
	if err := dotted.Dispatch(ctx, decl.UserRunTask{RunID: agentID("v1.2"), Goal: "compute 2+2"}); !errors.Is(err, errOtherRun) {
		t.Errorf("the run named as v1.2's agent, in that agent: %v, want errOtherRun", err)
	}
}

// TestTurns: the turns go to the runs waiting in the order they asked; a
// run that stops waiting leaves its place; a claim takes one past the bound.
func TestTurns(t *testing.T) {
	tu := &turns{max: 1}
	ctx := context.Background()
	if err := tu.take(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 3)
	gone, leave := context.WithCancel(ctx)
	left := make(chan error, 1)
	go func() { left <- tu.take(gone) }()
	waitUntil := func(what string, ok func() bool) { // the waiters are queued in order
		t.Helper()
		for deadline := time.Now().Add(hangGuard); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("hung waiting for %s", what)
			}
		}
	}
	queued := func(n int) func() bool {
		return func() bool { tu.mu.Lock(); defer tu.mu.Unlock(); return len(tu.waiting) == n }
	}
	waitUntil("one waiting", queued(1))
	for i := 1; i <= 2; i++ {
		go func() {
			if tu.take(ctx) == nil {
				got <- i
			}
		}()
		waitUntil(fmt.Sprint(i+1, " waiting"), queued(i+1))
	}
	leave()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Fatalf("the run that stopped waiting got %v", err)
	}
	tu.give()
	if first := <-got; first != 1 {
		t.Fatalf("run %d got the turn first", first)
	}
	tu.claim()
	if n := tu.inUse(); n != 2 {
		t.Fatalf("%d turns in use after a claim, want 2", n)
	}
	tu.give()
	select {
	case n := <-got:
		t.Fatalf("run %d got a turn with the claim's in use", n)
	default:
	}
	tu.give()
	if second := <-got; second != 2 {
		t.Fatalf("run %d got the turn second", second)
	}
}

// inProcess is the command's server in this process, over a fleet in a
// new directory, its agents deactivated as soon as they are idle: a test
// waits for a deactivation on Agent.Deactivated.
type inProcess struct {
	t     *testing.T
	srv   *server
	http  *httptest.Server
	token string
}

func startInProcess(t *testing.T) *inProcess {
	t.Helper()
	fleet, err := bolt.OpenFleet(filepath.Join(t.TempDir(), "agents.db"))
	if err != nil {
		t.Fatal(err)
	}
	p := &inProcess{t: t, token: "in-process"}
	p.srv, err = openServer(runsConfig{Fleet: fleet, Work: testWork(t, never), MaxRuns: defaultMaxRuns,
		IdleTimeout: time.Millisecond, Logger: slog.New(slog.DiscardHandler)}, p.token, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.http = httptest.NewServer(p.srv.http.Handler)
	t.Cleanup(func() {
		p.http.CloseClientConnections()
		p.http.Close()
		if err := errors.Join(p.srv.runs.close(context.Background()), fleet.Close()); err != nil {
			t.Error(err)
		}
	})
	return p
}

func (p *inProcess) do(method, path, body string) (int, map[string]any) {
	p.t.Helper()
	req, _ := http.NewRequest(method, p.http.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		p.t.Fatalf("the answer to %s %s is not JSON: %v", method, path, err)
	}
	return resp.StatusCode, answer
}

// timelineInput is an input of a panel's timeline.
type timelineInput struct {
	Seq   uint64         `json:"seq"`
	Type  string         `json:"type"`
	Input map[string]any `json:"input"`
}

// timeline returns the inputs of the timeline of run runID's panel, up to
// input last: those it sends on connect, then those that follow (the panel
// folds the journal's inputs as the agent applies them, after them).
func (p *inProcess) timeline(runID string, last uint64) []timelineInput {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", p.http.URL+panel(runID)+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		p.t.Fatalf("the events of run %s: %d %s", runID, resp.StatusCode, body)
	}
	var inputs []timelineInput
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			event = e
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && event == "input" {
			var in timelineInput
			if err := json.Unmarshal([]byte(data), &in); err != nil {
				p.t.Fatal(err)
			}
			inputs = append(inputs, in)
			if in.Seq >= last {
				return inputs
			}
		}
	}
	p.t.Fatalf("the events of run %s ended before input %d: %v", runID, last, sc.Err())
	return nil
}

// seq returns the last sequence number of run runID's journal, as its
// panel reports it.
func (p *inProcess) seq(runID string) uint64 {
	p.t.Helper()
	code, st := p.do("GET", panel(runID)+"/state", "")
	if code != 200 {
		p.t.Fatalf("GET %s/state = %d %v", panel(runID), code, st)
	}
	return uint64(st["seq"].(float64))
}

// deactivated waits until run runID's agent is not active: it takes the
// agent (activating it if it is not), lets it go, and waits for that
// activation to end. The bound only catches a hang.
func (p *inProcess) deactivated(runID string) {
	p.t.Helper()
	a, release, err := p.srv.runs.get(context.Background(), runID)
	if err != nil {
		p.t.Fatal(err)
	}
	release()
	select {
	case <-a.Deactivated():
	case <-time.After(hangGuard):
		p.t.Fatalf("run %s's agent was never deactivated", runID)
	}
}

// TestRunsAreAgents: two runs are two agents, each with a journal of its
// own: one run's inputs never appear in the other's panel timeline; the
// panel's root lists both; a run whose agent was deactivated once idle
// opens again (GET /runs/{runId}, its panel) from its journal, which it
// kept whole.
func TestRunsAreAgents(t *testing.T) {
	p := startInProcess(t)
	goals := map[string]string{"a": "compute 6*7 and read todo.txt", "b": "count words in notes.txt then find restart"}
	for _, id := range []string{"a", "b"} {
		code, res := p.do("POST", "/run", `{"runId":"`+id+`","goal":"`+goals[id]+`"}`)
		// Input 1 of a run's journal is its configuration; 2 the request.
		if code != 200 || res["status"] != "finished" || res["agent"] != id || res["seq"] != float64(2) {
			t.Fatalf("POST /run %s = %d %v", id, code, res)
		}
	}
	code, list := p.do("GET", "/devpanel/agents", "")
	var ids []string
	for _, a := range list["agents"].([]any) {
		ids = append(ids, a.(map[string]any)["id"].(string))
	}
	if code != 200 || !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("GET /devpanel/agents = %d %v", code, list)
	}

	timelines := map[string][]timelineInput{}
	for _, id := range []string{"a", "b"} {
		other := map[string]string{"a": "b", "b": "a"}[id]
		seq := p.seq(id)
		tl := p.timeline(id, seq)
		if uint64(len(tl)) != seq {
			t.Fatalf("run %s's timeline has %d inputs up to input %d", id, len(tl), seq)
		}
		for i, in := range tl {
			data, _ := json.Marshal(in.Input)
			if in.Seq != uint64(i+1) {
				t.Errorf("run %s's input %d has seq %d", id, i+1, in.Seq)
			}
			if runID, ok := in.Input["runId"]; ok && runID != id {
				t.Errorf("run %s's timeline has input %d of run %v: %s", id, in.Seq, runID, data)
			}
			if o, ok := in.Input["observation"].(map[string]any); ok && !strings.HasPrefix(o["callId"].(string), id+"-c") {
				t.Errorf("run %s's timeline has another run's observation: %s", id, data)
			}
			if strings.Contains(string(data), goals[other]) {
				t.Errorf("run %s's timeline has %s's goal: %s", id, other, data)
			}
		}
		if len(tl) < 2 || tl[0].Type != "agent-configure" || tl[1].Type != "user-run-task" || tl[1].Input["goal"] != goals[id] {
			t.Errorf("run %s's first inputs are not its configuration and its request: %+v", id, tl[:min(2, len(tl))])
		}
		timelines[id] = tl
	}

	// Idle, both are deactivated; each opens again from its journal.
	p.deactivated("a")
	p.deactivated("b")
	before := p.srv.runs.reg.Stats()
	if before.Active != 0 {
		t.Fatalf("%d agents active once both were deactivated", before.Active)
	}
	code, st := p.do("GET", "/runs/a", "")
	if run, _ := st["run"].(map[string]any); code != 200 || st["status"] != "finished" || !strings.Contains(run["answer"].(string), "compute 6*7: 42") {
		t.Fatalf("GET /runs/a once deactivated = %d %v", code, st)
	}
	if after := p.srv.runs.reg.Stats(); after.Activations != before.Activations+1 {
		t.Errorf("activations went from %d to %d: GET /runs/a activates a once", before.Activations, after.Activations)
	}
	p.deactivated("a")
	before = p.srv.runs.reg.Stats()
	code, st = p.do("GET", panel("b")+"/state", "")
	if state, _ := st["state"].(map[string]any); code != 200 || state["phase"] != "finished" || state["runId"] != "b" {
		t.Fatalf("GET %s/state once deactivated = %d %v", panel("b"), code, st)
	}
	if after := p.srv.runs.reg.Stats(); after.Activations != before.Activations+1 {
		t.Errorf("activations went from %d to %d: opening b's panel activates b", before.Activations, after.Activations)
	}
	for _, id := range []string{"a", "b"} {
		again := p.timeline(id, p.seq(id))
		if len(again) != len(timelines[id]) {
			t.Fatalf("run %s's timeline had %d inputs, has %d once activated again", id, len(timelines[id]), len(again))
		}
		for i := range again {
			if again[i].Seq != timelines[id][i].Seq || again[i].Type != timelines[id][i].Type {
				t.Errorf("run %s's input %d was %d %s, is %d %s", id, i, timelines[id][i].Seq, timelines[id][i].Type, again[i].Seq, again[i].Type)
			}
		}
	}
}
