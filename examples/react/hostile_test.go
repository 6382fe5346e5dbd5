package main

// Hostile tests of the task trees, the recovery out of error and the
// configuration reload: each failed on the code before its fix (1136f54),
// and its comment says, in parentheses, what was wrong.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/examples/react/decl"
)

// hangBound only catches a hang.
const hangBound = time.Minute

func within[T any](t *testing.T, what string, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(hangBound):
		t.Fatalf("hung waiting for %s", what)
	}
	panic("unreachable")
}

// hostileRuns is testRunsWith, with the purity check and handle given
// every event of every agent.
func hostileRuns(t *testing.T, work Work, maxRuns int, config func() decl.Config, handle func(automata.Event[decl.AgentState, decl.AgentInput])) *runs {
	t.Helper()
	fleet, err := bolt.OpenFleet(filepath.Join(t.TempDir(), "agents.db"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := openRuns(runsConfig{Fleet: fleet, Work: work, MaxRuns: maxRuns, Config: config,
		Options: func(string) []automata.Option[decl.AgentState, decl.AgentInput] {
			return []automata.Option[decl.AgentState, decl.AgentInput]{
				automata.WithPurityCheck[decl.AgentState, decl.AgentInput](),
				automata.WithEvents(handle),
			}
		}})
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

// jobKeys are the keys of the agent's jobs at s, as the machine names them
// (the actor's name first).
func jobKeys(w Work, s decl.AgentState) []string {
	var keys []string
	for k := range w.agentJobs(s.ContextOfAgent()) {
		keys = append(keys, "agent/"+k)
	}
	return keys
}

// TestHostileReloadWhileAgentOpens: a reload that lands while an agent
// opens, between the agent's reading of the configuration in force and its
// dispatch of it, is not overwritten by the configuration the agent read:
// the agent ends under the new one. (runs.configure read the configuration
// outside the lock that orders the dispatches: the old one was dispatched
// last, and nothing gave the agent the new one again.) The config function
// here is configs.current with the goroutine descheduled between its read
// and configure's dispatch.
func TestHostileReloadWhileAgentOpens(t *testing.T) {
	old, reloaded := builtin(), builtin()
	reloaded.Source, reloaded.Digest = "react.yaml", "the-reloaded-file"
	var cur atomic.Pointer[decl.Config]
	cur.Store(&old)
	var hold atomic.Bool
	hold.Store(true)
	entered, resume := make(chan struct{}), make(chan struct{})
	config := func() decl.Config {
		c := *cur.Load()
		if hold.CompareAndSwap(true, false) {
			close(entered)
			<-resume
		}
		return c
	}
	rs := testRunsWith(t, testWork(t, never), 0, config)
	type opened struct {
		a       *Agent
		release func()
		err     error
	}
	done := make(chan opened, 1)
	go func() {
		a, release, err := rs.open(context.Background(), "race")
		done <- opened{a, release, err}
	}()
	within(t, "the agent's Open to read the configuration", entered)
	// What configs.watch does with a new file: put it in force, then give
	// it to every active agent.
	cur.Store(&reloaded)
	reconfigured := make(chan struct{})
	go func() { defer close(reconfigured); rs.reconfigure() }()
	close(resume)
	within(t, "the reload to be given to the agents", reconfigured)
	o := within(t, "the agent to open", done)
	if o.err != nil {
		t.Fatal(o.err)
	}
	defer o.release()
	if got := o.a.Machine().Current().Config.Digest; got != reloaded.Digest {
		t.Errorf("the agent runs under configuration %.16q; in force: %q (the reload was lost)", got, reloaded.Digest)
	}
}

// TestHostileQueuedRunStartsUnderNewConfig: a run waiting for its turn
// (-max-runs) when a configuration is put in force plans, once its turn
// comes, under the new one: a tool it disables is not called. (The start
// job planned with the configuration it was made with, under a key that a
// reload does not change; it now only starts the run, and the plan job,
// made from the state, plans.)
func TestHostileQueuedRunStartsUnderNewConfig(t *testing.T) {
	release := make(chan struct{})
	old := builtin()
	noCalc := builtin()
	noCalc.Source, noCalc.Digest = "react.yaml", "without-the-calculator"
	noCalc.Tools = maps.Clone(old.Tools)
	delete(noCalc.Tools, "calculator")
	var cur atomic.Pointer[decl.Config]
	cur.Store(&old)
	rs := testRunsWith(t, testWork(t, never, blockingWait(release)), 1, func() decl.Config { return *cur.Load() })
	ctx := context.Background()
	first := testRun(t, rs, "first")
	if err := first.Dispatch(ctx, decl.UserRunTask{RunID: "first", Goal: "wait 1 ms"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, first, "the first run's call", func(s decl.AgentState) bool { return s.Phase == decl.PhaseAct })
	queued := testRun(t, rs, "queued")
	if err := queued.Dispatch(ctx, decl.UserRunTask{RunID: "queued", Goal: "compute 1+2"}); err != nil {
		t.Fatal(err)
	}
	// The queued run's start job is waiting for the turn the first run has.
	cur.Store(&noCalc)
	rs.reconfigure()
	waitFor(t, queued, "the reload", func(s decl.AgentState) bool { return s.Config.Digest == noCalc.Digest })
	close(release)
	s := waitFor(t, queued, "the queued run to end or ask", func(s decl.AgentState) bool {
		return ended(s, "queued") || s.Phase == decl.PhaseWaiting
	})
	for _, c := range s.Calls {
		if c.Tool == "calculator" {
			t.Errorf("the queued run started after the reload called %s, which the configuration in force (%s) disables; record %+v", c.Tool, s.Config.Digest, record(s, "queued"))
		}
	}
}

// brokenRecovery is the rule reflector whose Recover fails: a model that
// is down.
type brokenRecovery struct{ RuleReflector }

func (brokenRecovery) Recover(context.Context, string, Trouble) (decl.RecoveryStrategy, string, string, error) {
	return "", "", "", errors.New("the model is down")
}

// TestHostileRecoverErrorEndsTheRun: when Reflector.Recover fails, the
// run is given up with the reflector's error, not left in error with no
// job to take it out, holding its turn. (The recover job returned the
// error: the machine does not start a job whose key is still wanted again,
// and a run in error has no deadline job.)
func TestHostileRecoverErrorEndsTheRun(t *testing.T) {
	w := testWork(t, never)
	w.Reflector = brokenRecovery{}
	rs := testRunsWith(t, w, 1, builtin)
	a := testRun(t, rs, "sing")
	if err := a.Dispatch(context.Background(), decl.UserRunTask{RunID: "sing", Goal: "sing a song"}); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, a, "the run to end", func(s decl.AgentState) bool { return ended(s, "sing") })
	if len(s.Recoveries) != 1 || s.Recoveries[0].Strategy != decl.RecoveryStrategyGiveUp || s.Recoveries[0].Reason != "the reflector failed: the model is down" {
		t.Errorf("recoveries %+v", s.Recoveries)
	}
	if !Idle(s) || rs.turns.inUse() != 0 {
		t.Errorf("idle %v, %d turns in use", Idle(s), rs.turns.inUse())
	}
}

// stubbornPlanner is the rule planner, except that a task written LABEL
// (GOAL) that may not be split is split anyway (as a model may do: the
// planNext comment says "past maxDepth: the transition trips the guard"),
// once release is closed; the job's key is sent on entered first.
type stubbornPlanner struct {
	RulePlanner
	entered chan string
	release chan struct{}
}

func (p stubbornPlanner) PlanTask(ctx context.Context, key string, t Task) (Planned, error) {
	if m := composite.FindStringSubmatch(strings.TrimSpace(t.Description)); m != nil && !t.MaySplit {
		select {
		case p.entered <- key:
		default:
		}
		select {
		case <-p.release:
		case <-ctx.Done():
			return Planned{}, ctx.Err()
		}
		return Planned{Subtasks: splitParts(m[2])}, nil
	}
	return p.RulePlanner.PlanTask(ctx, key, t)
}

// TestHostileMaxDepthRaisedMidPlan: planNext decides with the job's limits
// (maxDepth 1: the task may not be split) and dispatches the planner's
// subtasks alone, counting on the transition to trip maxDepth. A reload
// raising maxDepth while the planner thinks makes the transition take the
// subtasks, with no step, answer or abort: the phase stays plan, and the
// plan job is keyed by the tree too, so that another plans the next task,
// and the run finishes. (Keyed by the transitions alone, the job that had
// returned was the one the state called for: the run sat in plan until its
// deadline.)
func TestHostileMaxDepthRaisedMidPlan(t *testing.T) {
	one, three := int64(1), int64(3)
	shallow, deep := builtin(), builtin()
	shallow.Source, shallow.Digest, shallow.Guards.MaxDepth = "react.yaml", "depth-1", &one
	deep.Source, deep.Digest, deep.Guards.MaxDepth = "react.yaml", "depth-3", &three
	var cur atomic.Pointer[decl.Config]
	cur.Store(&shallow)
	w := testWork(t, never)
	p := stubbornPlanner{entered: make(chan string, 1), release: make(chan struct{})}
	w.Planner = p
	rs := testRunsWith(t, w, 0, func() decl.Config { return *cur.Load() })
	a := testRun(t, rs, "deeper")
	if err := a.Dispatch(context.Background(), decl.UserRunTask{RunID: "deeper",
		Goal: "compute 3+3 and sums (compute 1+1 and compute 2+2)", MaxDurationMs: ptr(int64(5_000))}); err != nil {
		t.Fatal(err)
	}
	key := within(t, "the planner to plan t2", p.entered)
	cur.Store(&deep)
	rs.reconfigure()
	waitFor(t, a, "the reload", func(s decl.AgentState) bool { return s.Config.Digest == deep.Digest })
	close(p.release)
	s := waitFor(t, a, "t2's subtasks", func(s decl.AgentState) bool { return taskIndex(s, "t2.1") >= 0 || ended(s, "deeper") })
	if s.Phase == decl.PhasePlan {
		for _, k := range jobKeys(w, s) {
			if k == key {
				t.Errorf("in phase plan, the state calls again for job %s, which has returned: nothing plans t2.1 (tasks %v)", key, taskStatus(s))
			}
		}
	}
	s = waitFor(t, a, "the run to end", func(s decl.AgentState) bool { return ended(s, "deeper") })
	if r := record(s, "deeper"); r.Outcome != decl.RunRecordOutcomeFinished {
		t.Errorf("run %+v", r)
	}
}

// TestHostileSplitIsLinear: split costs what the subtasks are, not their
// square: n is the planner's (a model's reply), and appending each subtask
// to a clipped copy of the children (as split did) allocated ~160 MB for
// 4000. (checkParts refuses more than a tree holds before split runs.)
func TestHostileSplitIsLinear(t *testing.T) {
	parts := make([]string, 4000)
	for i := range parts {
		parts[i] = "x"
	}
	tasks := []decl.TaskNode{{TaskID: "root", Status: decl.TaskNodeStatusRunning, Children: []string{}}}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tasks, subs := split(tasks, 0, parts)
	runtime.ReadMemStats(&after)
	if len(subs) != len(parts) || len(tasks[0].Children) != len(parts) {
		t.Fatalf("%d subtasks, %d children", len(subs), len(tasks[0].Children))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("splitting a task into %d subtasks allocated %d MB", len(parts), alloc>>20)
	}
}

// flakyDecompose is the rule planner whose first Decompose fails: a model
// that was down for a moment.
type flakyDecompose struct {
	RulePlanner
	calls *atomic.Int64
}

func (p flakyDecompose) Decompose(ctx context.Context, key, goal, prompt string) ([]string, error) {
	if p.calls.Add(1) == 1 {
		return nil, errors.New("the model is down")
	}
	return p.RulePlanner.Decompose(ctx, key, goal, prompt)
}

// TestHostileRecoveryAfterTheGoalWasNotSplit: when Decompose fails, the run
// enters error with the root alone in its tree; the reflector asks the user
// about the goal, and the reply is planned as the goal's one call, which
// finishes the run. (Focus found no task: the question was about "", and
// every reply was refused with "no task to plan with the reply".)
func TestHostileRecoveryAfterTheGoalWasNotSplit(t *testing.T) {
	w := testWork(t, never)
	w.Planner = flakyDecompose{calls: new(atomic.Int64)}
	rs := testRunsWith(t, w, 0, builtin)
	a := testRun(t, rs, "blip")
	ctx := context.Background()
	if err := a.Dispatch(ctx, decl.UserRunTask{RunID: "blip", Goal: "compute 1+2"}); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, a, "a question", func(s decl.AgentState) bool { return s.Phase == decl.PhaseWaiting })
	question := s.Question
	if err := a.Dispatch(ctx, decl.UserReply{RunID: "blip", Content: "compute 1+2"}); err != nil {
		t.Fatal(err)
	}
	s = waitFor(t, a, "the run to end, or recover again", func(s decl.AgentState) bool {
		return ended(s, "blip") || len(s.Recoveries) >= 2
	})
	if r := record(s, "blip"); r.Outcome != decl.RunRecordOutcomeFinished || r.Answer != "compute 1+2: 3" || !strings.Contains(question, `another way to do "compute 1+2"`) {
		t.Errorf("asked %q, replied \"compute 1+2\": phase %s, error %q, recoveries %d, record %+v", question, s.Phase, s.Error, len(s.Recoveries), r)
	}
}

// TestHostileUnboundedTemplates: a prompt template that ranges over
// anything but a field of its data, or defines or calls templates, is
// refused when the file is loaded, and rendered as its error (without
// running it) when it comes in an agent-configure from elsewhere:
// {{range (100000)}}{{range (100000)}}{{end}}{{end}} would run for hours,
// writing nothing, and text/template cannot be stopped. (Only a literal
// {{range N}} was refused.) Small counts here, so that the test ends.
func TestHostileUnboundedTemplates(t *testing.T) {
	for _, tmpl := range []string{
		`{{range 3}}x{{end}}`, // refused: the control
		`{{range (3)}}x{{end}}`,
		`{{range $i := (3)}}x{{end}}`,
		`{{define "n"}}{{range .}}x{{end}}{{end}}{{template "n" 3}}`,
		`{{with 3}}{{range .}}x{{end}}{{end}}`,
		`{{$n := 3}}{{range $n}}x{{end}}`,
	} {
		text := strings.Replace(string(builtinConfigFile), `answer: '{{.Task}}: `, `answer: '`+tmpl+`{{.Task}}: `, 1)
		if text == string(builtinConfigFile) {
			t.Fatal("the built-in configuration has no answer template to edit")
		}
		if _, err := ParseConfig("react.yaml", []byte(text), demoToolNames()); err == nil || !strings.Contains(err.Error(), "react.yaml:") ||
			!strings.Contains(err.Error(), "ranges over something other than a field") && !strings.Contains(err.Error(), "defines templates") {
			t.Errorf("answer template %s: err %v, want it refused with its line", tmpl, err)
		}
		cfg := builtin()
		cfg.Prompts = map[string]string{PromptAnswer: tmpl}
		if got := render(cfg, PromptAnswer, AnswerPrompt{}); !strings.HasPrefix(got, "prompt answer: ") || strings.Contains(got, "x") {
			t.Errorf("answer template %s rendered %q", tmpl, got)
		}
	}
}

// emptyPart is the rule planner whose Decompose adds an empty subtask, as
// a model may: LLMPlanner.Decompose checks only that there is one.
type emptyPart struct{ RulePlanner }

func (p emptyPart) Decompose(ctx context.Context, key, goal, prompt string) ([]string, error) {
	parts, err := p.RulePlanner.Decompose(ctx, key, goal, prompt)
	return append(parts, ""), err
}

// TestHostileInvalidSubtasksAreRefused: subtasks the planner gives that a
// plan cannot take (here an empty one, as a model may give: the schema of
// Subtask wants 1 to 2000 characters) make the planner give up, with why,
// instead of an input the journal refuses; the run recovers by asking the
// user. (The start job dispatched them as they were: the input was
// rejected, and the run never started, holding its turn.)
func TestHostileInvalidSubtasksAreRefused(t *testing.T) {
	w := testWork(t, never)
	w.Planner = emptyPart{}
	rs := testRunsWith(t, w, 1, builtin)
	a := testRun(t, rs, "empty")
	if err := a.Dispatch(context.Background(), decl.UserRunTask{RunID: "empty", Goal: "compute 1+2"}); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, a, "a question", func(s decl.AgentState) bool { return s.Phase == decl.PhaseWaiting })
	if len(s.Recoveries) != 1 || !strings.Contains(s.Recoveries[0].Error, "splitting the goal: subtask 2 is empty or longer than 2000 characters") {
		t.Errorf("recoveries %+v", s.Recoveries)
	}
	parts := make([]string, 300)
	for i := range parts {
		parts[i] = "x"
	}
	if err := checkParts(parts, 1); err == nil || !strings.Contains(err.Error(), "300 subtasks, more than a tree of 256") {
		t.Errorf("300 subtasks: %v", err)
	}
}

// TestHostileLongGoalRecovers: a goal of 1985 characters (user-run-task
// admits 2000) that no rule plans makes the planner's error, and so the
// reflector's reason and question, longer than agent-recover admits (2000
// characters): clipped to fit, the recovery is applied. (clip cut to 2000
// bytes and added "…": 2001 characters, the input was rejected, and the
// run sat in error for good.)
func TestHostileLongGoalRecovers(t *testing.T) {
	w := testWork(t, never)
	outcome := make(chan string, 8)
	rs := hostileRuns(t, w, 0, builtin, func(e automata.Event[decl.AgentState, decl.AgentInput]) {
		var o string
		switch {
		case e.Kind == automata.EffectFailed:
			o = fmt.Sprintf("job %s failed: %.300v", e.Key, e.Err)
		case e.Kind == automata.StateUpdated && len(e.State.Recoveries) > 0:
			o = "recovered"
		default:
			return
		}
		select {
		case outcome <- o:
		default:
		}
	})
	a := testRun(t, rs, "long")
	goal := "sing " + strings.Repeat("la", 990)
	if err := a.Dispatch(context.Background(), decl.UserRunTask{RunID: "long", Goal: goal}); err != nil {
		t.Fatal(err)
	}
	if o := within(t, "the run to recover, or a job to fail", outcome); o != "recovered" {
		s := a.Current()
		t.Errorf("%s; the run is in %s, idle %v, and calls for jobs %v only", o, s.Phase, Idle(s), jobKeys(w, s))
	}
}
