package transitions_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/examples/react/decl"
	"github.com/moora-go/moora/examples/react/impl/agent"
	"github.com/moora-go/moora/examples/react/impl/transitions"
)

func sub(id, parent string) decl.Subtask {
	s := decl.Subtask{TaskID: id, Description: "do " + id}
	if parent != "" {
		s.ParentID = ptr(parent)
	}
	return s
}

func status(s decl.AgentState) map[string]decl.TaskNodeStatus {
	m := map[string]decl.TaskNodeStatus{}
	for _, t := range s.Tasks {
		m[t.TaskID] = t.Status
	}
	return m
}

// threeLevels is a run r1 whose tree is root > t1, t2 > t2.1, t2.2, t2.3
// (t2 planned into subtasks at 150), t1 done with its call r1-c1.
func threeLevels() []decl.AgentInput {
	in := []decl.AgentInput{
		decl.UserRunTask{Timestamp: 100, RunID: "r1", Goal: "g"},
		decl.AgentPlan{Timestamp: 110, RunID: "r1", Start: ptr(request("r1", 100, roomy)),
			Subtasks: []decl.Subtask{sub("t1", ""), sub("t2", "root")}, Step: step("t1", "calc")},
	}
	in = append(in, observed("r1-c1", 120, true)...)
	return append(in, reflectOn("r1-c1", 130, decl.StrategyAdvance),
		decl.AgentPlan{Timestamp: 150, RunID: "r1", Subtasks: []decl.Subtask{sub("t2.1", "t2"), sub("t2.2", "t2"), sub("t2.3", "t2")}, Step: step("t2.1", "calc")})
}

// TestThreeLevelPlanWithARollbackToTheMiddleTask: a subtask of a subtask
// that is rolled back goes back to its parent, the middle task, whose next
// subtask runs; the middle task ends once its subtasks have, failed as one
// of them did; and the run goes on to its answer.
func TestThreeLevelPlanWithARollbackToTheMiddleTask(t *testing.T) {
	in := threeLevels()
	s := apply(in...)
	if got := status(s); got["t2"] != decl.TaskNodeStatusRunning || got["t2.1"] != decl.TaskNodeStatusRunning || got["t2.2"] != decl.TaskNodeStatusPending {
		t.Fatalf("after planning t2 into subtasks: %v", got)
	}
	if i := slices.IndexFunc(s.Tasks, func(n decl.TaskNode) bool { return n.TaskID == "t2" }); !slices.Equal(s.Tasks[i].Children, []string{"t2.1", "t2.2", "t2.3"}) || s.Tasks[i].ParentID != "root" {
		t.Fatalf("t2: %+v", s.Tasks[i])
	}
	in = append(in, observed("r1-c2", 160, false)...)
	in = append(in, reflectOn("r1-c2", 170, decl.StrategyRollback))
	s = apply(in...)
	last := s.Transitions[len(s.Transitions)-1]
	if s.Phase != decl.PhasePlan || !strings.HasSuffix(last.Reason, "(back to t2)") {
		t.Fatalf("phase %s, last transition %+v", s.Phase, last)
	}
	if got := status(s); got["t2.1"] != decl.TaskNodeStatusFailed || got["t2"] != decl.TaskNodeStatusRunning || got["t2.2"] != decl.TaskNodeStatusPending {
		t.Fatalf("after the rollback: %v", got)
	}
	in = append(in, decl.AgentPlan{Timestamp: 180, RunID: "r1", Step: step("t2.2", "calc")})
	in = append(in, observed("r1-c3", 190, true)...)
	in = append(in, reflectOn("r1-c3", 200, decl.StrategyAdvance), decl.AgentPlan{Timestamp: 210, RunID: "r1", Step: step("t2.3", "calc")})
	in = append(in, observed("r1-c4", 220, true)...)
	in = append(in, reflectOn("r1-c4", 230, decl.StrategyAdvance))
	s = apply(in...)
	if got := status(s); got["t2"] != decl.TaskNodeStatusFailed || got["t2.3"] != decl.TaskNodeStatusDone || got["root"] != decl.TaskNodeStatusRunning {
		t.Fatalf("after the last subtask: %v", got)
	}
	if i := slices.IndexFunc(s.Tasks, func(n decl.TaskNode) bool { return n.TaskID == "t2" }); s.Tasks[i].Metadata["result"] != "2 of 3 subtasks done" {
		t.Errorf("t2's result %q", s.Tasks[i].Metadata["result"])
	}
	s = apply(append(in, decl.AgentPlan{Timestamp: 240, RunID: "r1", Answer: ptr("partly")})...)
	if s.Phase != decl.PhaseFinished || status(s)["root"] != decl.TaskNodeStatusDone {
		t.Errorf("phase %s, tasks %v", s.Phase, status(s))
	}
	if err := automata.CheckPure(agent.Definition(), in...); err != nil {
		t.Fatal(err)
	}
}

// TestMiddleTaskDoneWhenItsSubtasksAre: the middle task and its parent's
// other subtasks settle bottom up.
func TestMiddleTaskDoneWhenItsSubtasksAre(t *testing.T) {
	in := threeLevels()
	for i, id := range []string{"t2.1", "t2.2", "t2.3"} {
		call := "r1-c" + string(rune('2'+i))
		at := int64(200 + 30*i)
		if i > 0 {
			in = append(in, decl.AgentPlan{Timestamp: at - 5, RunID: "r1", Step: step(id, "calc")})
		}
		in = append(in, observed(call, at, true)...)
		in = append(in, reflectOn(call, at+10, decl.StrategyAdvance))
	}
	if got := status(apply(in...)); got["t2"] != decl.TaskNodeStatusDone {
		t.Errorf("tasks %v", got)
	}
}

// TestPlanGuards: a subtask deeper than maxDepth trips it; a parent not in
// the tree, a step for a task with subtasks, and a tree past MaxTasks end
// the run in error.
func TestPlanGuards(t *testing.T) {
	depth := func(n int64) decl.Limits { l := roomy; l.MaxDepth = &n; return l }
	base := func(l decl.Limits) []decl.AgentInput {
		return []decl.AgentInput{decl.UserRunTask{Timestamp: 100, RunID: "r1", Goal: "g"},
			decl.AgentPlan{Timestamp: 110, RunID: "r1", Start: ptr(request("r1", 100, l)), Subtasks: []decl.Subtask{sub("t1", "")}}}
	}
	s := apply(append(base(depth(2)), decl.AgentPlan{Timestamp: 120, RunID: "r1", Subtasks: []decl.Subtask{sub("t1.1", "t1"), sub("t1.1.1", "t1.1")}})...)
	if s.Phase != decl.PhaseError || len(s.Alerts) != 1 || s.Alerts[0].Guard != decl.AlertGuardMaxDepth {
		t.Errorf("depth 3 under maxDepth 2: phase %s, alerts %+v", s.Phase, s.Alerts)
	}
	s = apply(append(base(depth(3)), decl.AgentPlan{Timestamp: 120, RunID: "r1", Subtasks: []decl.Subtask{sub("t1.1", "t1"), sub("t1.1.1", "t1.1")}, Step: step("t1.1.1", "calc")})...)
	if s.Phase != decl.PhaseAct {
		t.Errorf("depth 3 under maxDepth 3: phase %s (%s)", s.Phase, s.Error)
	}
	if s := apply(append(base(roomy), decl.AgentPlan{Timestamp: 120, RunID: "r1", Subtasks: []decl.Subtask{sub("x.1", "x")}})...); s.Phase != decl.PhaseError || !strings.Contains(s.Error, `under "x", which is not in the tree`) {
		t.Errorf("unknown parent: phase %s, error %q", s.Phase, s.Error)
	}
	if s := apply(append(base(roomy), decl.AgentPlan{Timestamp: 120, RunID: "r1", Subtasks: []decl.Subtask{sub("t1.1", "t1")}, Step: step("t1", "calc")})...); s.Phase != decl.PhaseError || !strings.Contains(s.Error, "has subtasks") {
		t.Errorf("a step for a task with subtasks: phase %s, error %q", s.Phase, s.Error)
	}
	var many []decl.Subtask
	for i := range transitions.MaxTasks {
		many = append(many, sub("m"+string(rune('A'+i%26))+string(rune('a'+i/26)), ""))
	}
	if s := apply(append(base(roomy), decl.AgentPlan{Timestamp: 120, RunID: "r1", Subtasks: many})...); s.Phase != decl.PhaseError || len(s.Tasks) != transitions.MaxTasks {
		t.Errorf("past MaxTasks: phase %s, %d tasks", s.Phase, len(s.Tasks))
	}
}

// recoverable is a run r1 whose limits allow n recoveries (from a
// configuration), whose first call r1-c1 failed maxFailures (1) times: in
// error at 121, not over.
func recoverable(n int64) []decl.AgentInput {
	cfg := decl.Config{Source: "react.yaml", Digest: "d1", Guards: decl.Limits{MaxIterations: 10, MaxDurationMs: 10_000, MaxFailures: 1, MaxRecoveries: &n}}
	in := []decl.AgentInput{decl.AgentConfigure{Timestamp: 90, Config: cfg}}
	in = append(in, started(decl.Limits{})...)
	return append(in, observed("r1-c1", 120, false)...)
}

// TestRecoveryOutOfError: a run in error that may recover waits for the
// reflector; replan goes back to plan with the task pending again and the
// failures forgotten, and the run can finish; the recovery is recorded.
func TestRecoveryOutOfError(t *testing.T) {
	in := recoverable(1)
	s := apply(in...)
	if s.Phase != decl.PhaseError || len(s.Runs) != 0 || !transitions.Recovering(s.Phase, s.RunID, s.Runs) || s.Alerts[0].Guard != decl.AlertGuardMaxFailures {
		t.Fatalf("phase %s, runs %+v, alerts %+v", s.Phase, s.Runs, s.Alerts)
	}
	if status(s)["t1"] != decl.TaskNodeStatusRunning {
		t.Errorf("t1 is %s while the run may recover", status(s)["t1"])
	}
	in = append(in, decl.AgentRecover{Timestamp: 130, RunID: "r1", Strategy: decl.RecoveryStrategyReplan, Reason: "try again"})
	s = apply(in...)
	if s.Phase != decl.PhasePlan || s.Error != "" || s.Failures != 0 || status(s)["t1"] != decl.TaskNodeStatusPending {
		t.Fatalf("after replan: phase %s, error %q, failures %d, t1 %s", s.Phase, s.Error, s.Failures, status(s)["t1"])
	}
	if len(s.Recoveries) != 1 || s.Recoveries[0].Strategy != decl.RecoveryStrategyReplan || !strings.Contains(s.Recoveries[0].Error, "maxFailures") || s.Recoveries[0].At != 130 {
		t.Errorf("recoveries %+v", s.Recoveries)
	}
	if last := s.Transitions[len(s.Transitions)-1]; last.From != decl.PhaseError || last.Reason != "recovered (replan): try again" {
		t.Errorf("transition %+v", last)
	}
	in = append(in, decl.AgentPlan{Timestamp: 140, RunID: "r1", Step: step("t1", "calc")})
	in = append(in, observed("r1-c2", 150, true)...)
	in = append(in, reflectOn("r1-c2", 160, decl.StrategyAdvance), decl.AgentPlan{Timestamp: 170, RunID: "r1", Answer: ptr("3")})
	if s := apply(in...); s.Phase != decl.PhaseFinished || len(s.Runs) != 1 || s.Runs[0].Outcome != decl.RunRecordOutcomeFinished {
		t.Errorf("phase %s, runs %+v", s.Phase, s.Runs)
	}
	if err := automata.CheckPure(agent.Definition(), in...); err != nil {
		t.Fatal(err)
	}
}

// TestRecoveryGuard: a loop of recoveries ends at maxRecoveries, with its
// alert, the run over in error; with no recovery allowed (no configuration:
// the runs of version 1) the run is over at once.
func TestRecoveryGuard(t *testing.T) {
	in := recoverable(2)
	for i := range 3 {
		at := int64(200 + 100*i)
		call := "r1-c" + string(rune('2'+i))
		in = append(in, decl.AgentRecover{Timestamp: at, RunID: "r1", Strategy: decl.RecoveryStrategyReplan, Reason: "again"},
			decl.AgentPlan{Timestamp: at + 10, RunID: "r1", Step: step("t1", "calc")})
		in = append(in, observed(call, at+20, false)...)
	}
	s := apply(in...)
	if len(s.Recoveries) != 2 {
		t.Errorf("%d recoveries: the third agent-recover should have found the run over", len(s.Recoveries))
	}
	if s.Phase != decl.PhaseError || len(s.Runs) != 1 || s.Runs[0].Outcome != decl.RunRecordOutcomeError || transitions.Recovering(s.Phase, s.RunID, s.Runs) {
		t.Fatalf("phase %s, runs %+v", s.Phase, s.Runs)
	}
	a := s.Alerts[len(s.Alerts)-1]
	if a.Guard != decl.AlertGuardMaxRecoveries || !strings.Contains(a.Message, "recovered 2 times") {
		t.Errorf("last alert %+v", a)
	}
	if status(s)["t1"] != decl.TaskNodeStatusFailed {
		t.Errorf("t1 is %s, the run over", status(s)["t1"])
	}

	plain := apply(append(started(decl.Limits{MaxIterations: 10, MaxDurationMs: 10_000, MaxFailures: 1}), observed("r1-c1", 120, false)...)...)
	if plain.Phase != decl.PhaseError || len(plain.Runs) != 1 || len(plain.Alerts) != 1 {
		t.Errorf("without a configuration: phase %s, runs %+v, alerts %+v", plain.Phase, plain.Runs, plain.Alerts)
	}
}

// TestRecoveryByAskingAndGivingUp: ask-user waits for the reply with the
// question, and the planner's step after it acts; give-up ends the run.
func TestRecoveryByAskingAndGivingUp(t *testing.T) {
	in := append(recoverable(1), decl.AgentRecover{Timestamp: 130, RunID: "r1", Strategy: decl.RecoveryStrategyAskUser, Reason: "ask", Question: ptr("how?")})
	s := apply(in...)
	if s.Phase != decl.PhaseWaiting || s.Question != "how?" || s.AskedAt != 130 || status(s)["t1"] != decl.TaskNodeStatusPending {
		t.Fatalf("phase %s, question %q at %d, t1 %s", s.Phase, s.Question, s.AskedAt, status(s)["t1"])
	}
	in = append(in, decl.UserReply{Timestamp: 140, RunID: "r1", Content: "like so"}, decl.AgentPlan{Timestamp: 150, RunID: "r1", Step: step("t1", "calc")})
	if s := apply(in...); s.Phase != decl.PhaseAct || len(s.Calls) != 2 {
		t.Errorf("after the reply: phase %s, %d calls", s.Phase, len(s.Calls))
	}
	s = apply(append(recoverable(1), decl.AgentRecover{Timestamp: 130, RunID: "r1", Strategy: decl.RecoveryStrategyGiveUp, Reason: "no"})...)
	if s.Phase != decl.PhaseError || len(s.Runs) != 1 || len(s.Recoveries) != 1 || s.Recoveries[0].Strategy != decl.RecoveryStrategyGiveUp {
		t.Errorf("give-up: phase %s, runs %+v, recoveries %+v", s.Phase, s.Runs, s.Recoveries)
	}
	// A run in error that may recover is not over: the next run waits.
	s = apply(append(recoverable(1), decl.UserRunTask{Timestamp: 130, RunID: "r2", Goal: "g2"},
		decl.AgentPlan{Timestamp: 140, RunID: "r2", Start: ptr(request("r2", 130, roomy)), Answer: ptr("x")})...)
	if s.RunID != "r1" || s.Phase != decl.PhaseError {
		t.Errorf("a new run started while r1 may recover: run %s, phase %s", s.RunID, s.Phase)
	}
}

// TestConfigureMidRun: a configuration applied while a run is in progress
// resolves its limits again (a request's own limit below the guard stays),
// and the next call meets the new maxIterations.
func TestConfigureMidRun(t *testing.T) {
	in := started(decl.Limits{MaxFailures: 1})
	s := apply(in...)
	if s.Limits.MaxIterations != transitions.DefaultMaxIterations || s.Limits.MaxFailures != 1 || *s.Limits.MaxRecoveries != 0 || *s.Limits.MaxDepth != transitions.DefaultMaxDepth {
		t.Fatalf("limits without a configuration: %+v", s.Limits)
	}
	two, three := int64(2), int64(3)
	cfg := decl.Config{Source: "react.yaml", Digest: "d2", Guards: decl.Limits{MaxIterations: 1, MaxDurationMs: 5_000, MaxFailures: 5, MaxRecoveries: &two, MaxDepth: &three}}
	in = append(in, decl.AgentConfigure{Timestamp: 115, Config: cfg})
	s = apply(in...)
	if s.Limits.MaxIterations != 1 || s.Limits.MaxDurationMs != 5_000 || s.Limits.MaxFailures != 1 || *s.Limits.MaxRecoveries != 2 || s.Config.Digest != "d2" {
		t.Fatalf("limits after the configuration: %+v", s.Limits)
	}
	in = append(in, observed("r1-c1", 120, true)...)
	in = append(in, reflectOn("r1-c1", 130, decl.StrategyAdvance), decl.AgentPlan{Timestamp: 140, RunID: "r1", Step: step("t2", "wc")})
	s = apply(in...)
	if s.Phase != decl.PhaseError || s.Alerts[0].Guard != decl.AlertGuardMaxIterations {
		t.Errorf("phase %s, alerts %+v", s.Phase, s.Alerts)
	}
	// A configuration when no run is in progress is kept for the next.
	idle := apply(decl.AgentConfigure{Timestamp: 10, Config: cfg})
	if idle.Config.Digest != "d2" || idle.Limits.MaxIterations != 0 {
		t.Errorf("idle: config %q, limits %+v", idle.Config.Digest, idle.Limits)
	}
}
