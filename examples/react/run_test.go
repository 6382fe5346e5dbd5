package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/examples/react/decl"
)

// testWork is the offline work on a fresh workspace: the rule-based
// planner and reflector, and the real tools in the demo's kit, with
// search_index failing as rebuilding says, and tools in place of those of
// their names.
func testWork(t *testing.T, rebuilding func(string) bool, tools ...toolkit.Tool) Work {
	t.Helper()
	ws, err := Workspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	kit, err := NewKit(replace(Tools(ws), append([]toolkit.Tool{SearchIndex(ws, rebuilding)}, tools...)...)...)
	if err != nil {
		t.Fatal(err)
	}
	return Work{Planner: RulePlanner{}, Reflector: RuleReflector{}, Toolkit: kit, RetryLimit: 1}
}

// replace returns tools with each of by in place of the tool of its name.
func replace(tools []toolkit.Tool, by ...toolkit.Tool) []toolkit.Tool {
	for _, b := range by {
		for i, t := range tools {
			if t.Name() == b.Name() {
				tools[i] = b
			}
		}
	}
	return tools
}

// testRuns opens the command's runs on a new fleet, with the purity check,
// at most maxRuns in progress at once (0: no bound), and closes them when
// the test ends. The runs have no configuration: Work's defaults apply,
// every tool is enabled, and no run recovers from error.
func testRuns(t *testing.T, work Work, maxRuns int) *runs {
	t.Helper()
	return testRunsWith(t, work, maxRuns, func() decl.Config { return decl.Config{} })
}

// testRunsWith is testRuns, the runs under the configuration config returns.
func testRunsWith(t *testing.T, work Work, maxRuns int, config func() decl.Config) *runs {
	t.Helper()
	fleet, err := bolt.OpenFleet(filepath.Join(t.TempDir(), "agents.db"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := openRuns(runsConfig{Fleet: fleet, Work: work, MaxRuns: maxRuns, Options: purityCheck, Config: config})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := errors.Join(rs.close(context.Background()), fleet.Close()); err != nil {
			t.Error(err)
		}
	})
	return rs
}

func purityCheck(string) []automata.Option[decl.AgentState, decl.AgentInput] {
	return []automata.Option[decl.AgentState, decl.AgentInput]{automata.WithPurityCheck[decl.AgentState, decl.AgentInput]()}
}

// testRun returns the agent of run runID, created if need be, and holds it
// active until the test ends.
func testRun(t *testing.T, rs *runs, runID string) *journal.Machine[decl.AgentState, decl.AgentInput] {
	t.Helper()
	a, release, err := rs.open(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return a.Machine()
}

// waitFor waits until the agent's state satisfies ok, and returns it. The
// bound only catches a hang.
func waitFor(t *testing.T, a *journal.Machine[decl.AgentState, decl.AgentInput], what string, ok func(decl.AgentState) bool) decl.AgentState {
	t.Helper()
	got := make(chan decl.AgentState, 1)
	unsubscribe := a.Subscribe(func(s decl.AgentState) {
		if ok(s) {
			select {
			case got <- s:
			default:
			}
		}
	})
	defer unsubscribe()
	select {
	case s := <-got:
		return s
	case <-a.Done():
		t.Fatalf("the agent stopped while waiting for %s: %v", what, a.Err())
	case <-time.After(time.Minute):
		t.Fatalf("hung waiting for %s; state: %+v", what, a.Current().StateOfAgent())
	}
	panic("unreachable")
}

// runTask asks for a task, a run of its own in rs, and waits until it
// ends; it returns the run's record and agent.
func runTask(t *testing.T, rs *runs, in decl.UserRunTask) (decl.RunRecord, *journal.Machine[decl.AgentState, decl.AgentInput]) {
	t.Helper()
	a := testRun(t, rs, in.RunID)
	if err := a.Dispatch(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, a, "run "+in.RunID+" to end", func(s decl.AgentState) bool { return ended(s, in.RunID) })
	return record(s, in.RunID), a
}

func ended(s decl.AgentState, runID string) bool {
	return record(s, runID).RunID != ""
}

func record(s decl.AgentState, runID string) decl.RunRecord {
	for _, r := range s.Runs {
		if r.RunID == runID {
			return r
		}
	}
	return decl.RunRecord{}
}

// strategies lists the strategies the reflector chose in the current run.
func strategies(s decl.AgentState) string {
	var out []string
	for _, c := range s.Calls {
		out = append(out, c.Tool+":"+c.Strategy)
	}
	return strings.Join(out, " ")
}

func never(string) bool  { return false }
func always(string) bool { return true }

// TestRunSucceeds: a goal of three parts, planned by rules, run with real
// tools, finishes with each part's result; the secret in config.txt is
// filtered out of the output.
func TestRunSucceeds(t *testing.T) {
	r, a := runTask(t, testRuns(t, testWork(t, never), 0), decl.UserRunTask{RunID: "ok", Goal: "compute 6*7 and count words in todo.txt then read config.txt"})
	if r.Outcome != decl.RunRecordOutcomeFinished || r.Iterations != 3 {
		t.Fatalf("run %+v", r)
	}
	for _, want := range []string{"compute 6*7: 42", "count words in todo.txt: 9", "region = local", "[redacted]"} {
		if !strings.Contains(r.Answer, want) {
			t.Errorf("the answer lacks %q:\n%s", want, r.Answer)
		}
	}
	if strings.Contains(r.Answer, "hunter2") {
		t.Errorf("the output filter let the password through:\n%s", r.Answer)
	}
	s := a.Current()
	if got := strategies(s); got != "calculator:advance word_count:advance read_file:advance" {
		t.Errorf("strategies %s", got)
	}
	if len(s.Observations) != 3 || s.Tasks[0].Status != decl.TaskNodeStatusDone {
		t.Errorf("observations %d, root %s", len(s.Observations), s.Tasks[0].Status)
	}
}

// TestFailingToolReplacedByFallback: search_index fails every time; the
// reflector retries it once (retryLimit 1), then substitutes grep, which
// finds the term.
func TestFailingToolReplacedByFallback(t *testing.T) {
	r, a := runTask(t, testRuns(t, testWork(t, always), 0), decl.UserRunTask{RunID: "heal", Goal: "find restart"})
	if r.Outcome != decl.RunRecordOutcomeFinished || !strings.Contains(r.Answer, "notes.txt:3") {
		t.Fatalf("run %+v", r)
	}
	if got := strategies(a.Current()); got != "search_index:retry search_index:substitute grep:advance" {
		t.Errorf("strategies %s", got)
	}
}

// TestFlakyToolIsDeterministic: the default search_index fails for some
// keys and not others, the same way on every run of the same calls.
func TestFlakyToolIsDeterministic(t *testing.T) {
	var first string
	for i := range 2 {
		_, a := runTask(t, testRuns(t, testWork(t, nil), 0), decl.UserRunTask{RunID: "flaky", Goal: "find plans and find jobs and find state and find restart"})
		got := strategies(a.Current())
		if i == 0 {
			first = got
			if !strings.Contains(got, "search_index:retry") && !strings.Contains(got, "search_index:substitute") {
				t.Logf("search_index never failed: %s", got)
			}
		} else if got != first {
			t.Errorf("the second run went %s, the first %s", got, first)
		}
	}
}

// TestToolTimeout: a call that takes longer than its step's timeout fails
// as a timeout; with no retry and no fallback the subtask is given up and
// the run finishes with the rest.
func TestToolTimeout(t *testing.T) {
	w := testWork(t, never)
	w.TimeoutMs, w.RetryLimit = 50, 0
	r, a := runTask(t, testRuns(t, w, 0), decl.UserRunTask{RunID: "slow", Goal: "wait 10s and compute 1+1"})
	s := a.Current()
	if r.Outcome != decl.RunRecordOutcomeFinished || s.Calls[0].ErrorKind != decl.ErrorKindTimeout || s.Calls[0].Strategy != "rollback" {
		t.Fatalf("run %+v, first call %+v", r, s.Calls[0])
	}
	if !strings.Contains(r.Answer, "wait 10s: not done (wait timed out after 50ms)") || !strings.Contains(r.Answer, "compute 1+1: 2") {
		t.Errorf("answer:\n%s", r.Answer)
	}
}

// TestRunOutOfTime: the watchdog ends a run that outlasts maxDurationMs,
// while its tool call is still running, which is then cancelled.
func TestRunOutOfTime(t *testing.T) {
	w := testWork(t, never)
	w.TimeoutMs = 60_000
	r, a := runTask(t, testRuns(t, w, 0), decl.UserRunTask{RunID: "late", Goal: "wait 30s", MaxDurationMs: ptr[int64](300)})
	s := a.Current()
	if r.Outcome != decl.RunRecordOutcomeError || len(s.Alerts) != 1 || s.Alerts[0].Guard != decl.AlertGuardMaxDurationMs {
		t.Fatalf("run %+v, alerts %+v", r, s.Alerts)
	}
	if len(s.Observations) != 0 {
		t.Errorf("the cancelled call was observed: %+v", s.Observations)
	}
}

// TestPermissionErrorAsksTheUser: a path outside the workspace is refused
// by the security check; the reflector asks the user, whose reply plans
// the task again; a reply of abort ends the run. Each run is an agent of
// its own.
func TestPermissionErrorAsksTheUser(t *testing.T) {
	rs := testRuns(t, testWork(t, never), 0)
	a := testRun(t, rs, "perm")
	ctx := context.Background()
	if err := a.Dispatch(ctx, decl.UserRunTask{RunID: "perm", Goal: "count words in ../../etc/passwd"}); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, a, "a question", func(s decl.AgentState) bool { return s.Phase == decl.PhaseWaiting })
	if s.Calls[0].ErrorKind != decl.ErrorKindPermission || !strings.Contains(s.Question, "outside the workspace") {
		t.Fatalf("call %+v, question %q", s.Calls[0], s.Question)
	}
	if err := a.Dispatch(ctx, decl.UserReply{RunID: "perm", Content: "notes.txt"}); err != nil {
		t.Fatal(err)
	}
	s = waitFor(t, a, "the run to end", func(s decl.AgentState) bool { return ended(s, "perm") })
	if r := record(s, "perm"); r.Outcome != decl.RunRecordOutcomeFinished || !strings.HasSuffix(r.Answer, ": 26") {
		t.Fatalf("run %+v", r)
	}

	a = testRun(t, rs, "perm2")
	if err := a.Dispatch(ctx, decl.UserRunTask{RunID: "perm2", Goal: "read /etc/shadow"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "a question", func(s decl.AgentState) bool { return s.RunID == "perm2" && s.Phase == decl.PhaseWaiting })
	if err := a.Dispatch(ctx, decl.UserReply{RunID: "perm2", Content: "abort"}); err != nil {
		t.Fatal(err)
	}
	s = waitFor(t, a, "the run to end", func(s decl.AgentState) bool { return ended(s, "perm2") })
	if r := record(s, "perm2"); r.Outcome != decl.RunRecordOutcomeError || !strings.Contains(r.Error, "the user aborted the run") {
		t.Fatalf("run %+v", r)
	}
}

// TestLoopLimit: a run that needs more tool calls than maxIterations ends
// in error with the alert. With one run at a time, the run asked for after
// it waits for its turn, which the run in error gives back, and runs next.
func TestLoopLimit(t *testing.T) {
	rs := testRuns(t, testWork(t, never), 1)
	loop := testRun(t, rs, "loop")
	if err := loop.Dispatch(context.Background(), decl.UserRunTask{RunID: "loop", Goal: "compute 1+1, compute 2+2, compute 3+3", MaxIterations: ptr[int64](2)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, loop, "loop to start", func(s decl.AgentState) bool { return s.RunID == "loop" })
	r, _ := runTask(t, rs, decl.UserRunTask{RunID: "after", Goal: "compute 4+4"})
	l := record(loop.Current(), "loop")
	if l.Outcome != decl.RunRecordOutcomeError || l.Iterations != 2 || !strings.Contains(l.Error, "maxIterations") {
		t.Errorf("run %+v", l)
	}
	if r.Outcome != decl.RunRecordOutcomeFinished || r.Answer != "compute 4+4: 8" {
		t.Errorf("the next run %+v", r)
	}
	if r.StartedAt < l.EndedAt {
		t.Errorf("the next run started at %d, before loop ended at %d", r.StartedAt, l.EndedAt)
	}
	if n := rs.turns.inUse(); n != 0 {
		t.Errorf("%d turns taken once both runs ended", n)
	}
}

// TestConsecutiveFailures: maxFailures failed calls in a row end the run.
func TestConsecutiveFailures(t *testing.T) {
	w := testWork(t, always)
	w.RetryLimit = 5
	r, a := runTask(t, testRuns(t, w, 0), decl.UserRunTask{RunID: "fails", Goal: "find plans", MaxFailures: ptr[int64](3)})
	s := a.Current()
	if r.Outcome != decl.RunRecordOutcomeError || r.Iterations != 3 || len(s.Alerts) != 1 || s.Alerts[0].Guard != decl.AlertGuardMaxFailures {
		t.Fatalf("run %+v, alerts %+v", r, s.Alerts)
	}
}

// blockingWait is the wait tool until release is closed: a call blocks
// until then, or until its context ends.
func blockingWait(release chan struct{}) toolkit.Tool {
	return toolkit.Func("wait", "Waits until the test lets it.", func(ctx context.Context, _ waitArgs) (string, error) {
		select {
		case <-release:
			return "waited", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
}

// TestRestartResumes: runs whose agents are closed (the command stops)
// while one waits for the user and another's tool call runs are resumed
// from their journals when the runs open again: each in the same phase, the
// tool call started again, and the reply finishes its run.
func TestRestartResumes(t *testing.T) {
	release := make(chan struct{})
	w := testWork(t, never, blockingWait(release))
	path := filepath.Join(t.TempDir(), "agents.db")
	ctx := context.Background()
	open := func() (*runs, func()) {
		fleet, err := bolt.OpenFleet(path)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := openRuns(runsConfig{Fleet: fleet, Work: w, MaxRuns: 2})
		if err != nil {
			t.Fatal(err)
		}
		return rs, func() {
			if err := errors.Join(rs.close(ctx), fleet.Close()); err != nil {
				t.Fatal(err)
			}
		}
	}
	rs, closeRuns := open()
	for _, in := range []decl.UserRunTask{{RunID: "r", Goal: "read ../x"}, {RunID: "w", Goal: "wait 1s and compute 1+1"}} {
		a, release, err := rs.open(ctx, in.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Machine().Dispatch(ctx, in); err != nil {
			t.Fatal(err)
		}
		phase := decl.PhaseWaiting
		if in.RunID == "w" {
			phase = decl.PhaseAct
		}
		waitFor(t, a.Machine(), in.RunID+" in "+string(phase), func(s decl.AgentState) bool { return s.Phase == phase })
		release()
	}
	closeRuns()
	// An agent whose journal is damaged, sorting before the others: its
	// damage is its own, and the others are resumed all the same.
	fleet, err := bolt.OpenFleet(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := fleet.Create("a-damaged", journal.AgentInfo{Owner: "operator"}); err != nil {
		t.Fatal(err)
	}
	damaged, err := fleet.Open("a-damaged")
	if err != nil {
		t.Fatal(err)
	}
	if err := damaged.Append([]journal.Record{{Seq: 1, Data: []byte("not a frame")}}); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(damaged.Close(), fleet.Close()); err != nil {
		t.Fatal(err)
	}

	rs, closeRuns = open()
	defer closeRuns()
	resumed := map[string]*journal.Machine[decl.AgentState, decl.AgentInput]{}
	agents, err := rs.resume(ctx, func(a *Agent, release func()) {
		resumed[a.ID()] = a.Machine()
		t.Cleanup(release)
	})
	if err != nil || agents != 3 || len(resumed) != 2 {
		t.Fatalf("resumed %d of %d agents (one damaged), %v", len(resumed), agents, err)
	}
	if n := rs.turns.inUse(); n != 2 {
		t.Errorf("the runs resumed in progress hold %d turns, want 2", n)
	}
	r := resumed["r"]
	if r.Current().Phase != decl.PhaseWaiting {
		t.Fatalf("r reopened in phase %s", r.Current().Phase)
	}
	if err := r.Dispatch(ctx, decl.UserReply{RunID: "r", Content: "todo.txt"}); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, r, "r to end", func(s decl.AgentState) bool { return ended(s, "r") })
	if r := record(s, "r"); r.Outcome != decl.RunRecordOutcomeFinished || !strings.Contains(r.Answer, "review the plan") {
		t.Fatalf("run %+v", r)
	}
	close(release) // the wait called again lets it go
	s = waitFor(t, resumed["w"], "w to end", func(s decl.AgentState) bool { return ended(s, "w") })
	if r := record(s, "w"); r.Outcome != decl.RunRecordOutcomeFinished || r.Answer != "wait 1s: waited\ncompute 1+1: 2" {
		t.Fatalf("run %+v", r)
	}
	if n := rs.turns.inUse(); n != 0 {
		t.Errorf("%d turns taken once the runs ended", n)
	}
	if st := rs.reg.Stats(); st.Activations != 2 {
		t.Errorf("%d activations, want one for each run resumed", st.Activations)
	}
}
