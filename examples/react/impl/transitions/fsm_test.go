package transitions_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/examples/react/decl"
	"github.com/moora-go/moora/examples/react/impl/agent"
)

// apply folds inputs into the initial state.
func apply(inputs ...decl.AgentInput) decl.AgentState {
	s := agent.Definition().Initial()
	for _, in := range inputs {
		s = agent.Transition(s, in)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func request(runID string, at int64, limits decl.Limits) decl.TaskRequest {
	return decl.TaskRequest{RunID: runID, Goal: "compute 1+2 and count words in notes.txt", Timestamp: at, Limits: limits}
}

var roomy = decl.Limits{MaxIterations: 10, MaxDurationMs: 10_000, MaxFailures: 3}

func step(taskID string, tools ...string) *decl.PlanStep {
	return &decl.PlanStep{TaskID: taskID, Goal: "do " + taskID, ToolCandidates: tools, SuccessCriteria: "nonempty", TimeoutMs: 1000, RetryLimit: 1, ToolParameters: map[string]string{"x": "1"}}
}

// started is a run r1 that has planned t1 with calc (fallback calc2) and
// made its first call, r1-c1, at 110.
func started(limits decl.Limits) []decl.AgentInput {
	return []decl.AgentInput{
		decl.UserRunTask{Timestamp: 100, RunID: "r1", Goal: "g"},
		decl.AgentPlan{Timestamp: 110, RunID: "r1", Start: ptr(request("r1", 100, limits)),
			Subtasks: []decl.Subtask{{TaskID: "t1", Description: "one"}, {TaskID: "t2", Description: "two"}},
			Step:     step("t1", "calc", "calc2")},
	}
}

// observed adds the toolkit's observation of callID and the observer's
// input, at time at.
func observed(callID string, at int64, ok bool) []decl.AgentInput {
	kind, msg := decl.ErrorKindNone, ""
	if !ok {
		kind, msg = decl.ErrorKindFailure, "broken"
	}
	return []decl.AgentInput{
		decl.ToolkitObserve{Timestamp: at, Observation: decl.Observation{CallID: callID, Source: "calc", RelatedTaskID: "t1", Payload: "3", Success: ok, ErrorKind: kind, Error: msg}},
		decl.AgentObserve{Timestamp: at + 1, RunID: "r1", CallID: callID, Success: ok, ErrorKind: kind, Error: msg},
	}
}

func reflectOn(callID string, at int64, strategy decl.Strategy) decl.AgentInput {
	return decl.AgentReflect{Timestamp: at, RunID: "r1", CallID: callID, Strategy: strategy, Reason: "because"}
}

func phases(s decl.AgentState) []decl.Phase {
	var p []decl.Phase
	for _, c := range s.Transitions {
		p = append(p, c.To)
	}
	return p
}

// TestRunFinishes: a run through Plan, Act, Observe, Reflect twice, then
// Finish: the task tree, the calls and the run's record.
func TestRunFinishes(t *testing.T) {
	in := started(roomy)
	in = append(in, observed("r1-c1", 120, true)...)
	in = append(in, reflectOn("r1-c1", 130, decl.StrategyAdvance),
		decl.AgentPlan{Timestamp: 140, RunID: "r1", Step: step("t2", "wc")})
	in = append(in, observed("r1-c2", 150, true)...)
	in = append(in, reflectOn("r1-c2", 160, decl.StrategyAdvance),
		decl.AgentPlan{Timestamp: 170, RunID: "r1", Answer: ptr("3 and 2")})
	s := apply(in...)
	want := []decl.Phase{"plan", "act", "reflect", "plan", "act", "reflect", "plan", "finished"}
	if got := phases(s); !slices.Equal(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
	if s.Phase != decl.PhaseFinished || s.Answer != "3 and 2" || s.Iteration != 2 {
		t.Errorf("phase %s, answer %q, iteration %d", s.Phase, s.Answer, s.Iteration)
	}
	for _, task := range s.Tasks {
		if task.Status != decl.TaskNodeStatusDone {
			t.Errorf("task %s is %s", task.TaskID, task.Status)
		}
	}
	if root := s.Tasks[0]; !slices.Equal(root.Children, []string{"t1", "t2"}) || s.Tasks[1].ParentID != "root" {
		t.Errorf("tree: root's children %v, t1's parent %q", root.Children, s.Tasks[1].ParentID)
	}
	if len(s.Runs) != 1 || s.Runs[0].Outcome != decl.RunRecordOutcomeFinished || s.Runs[0].StartedAt != 110 || s.Runs[0].EndedAt != 170 {
		t.Errorf("runs %+v", s.Runs)
	}
	if len(s.Calls) != 2 || !s.Calls[0].Observed || s.Calls[0].Strategy != "advance" || s.Calls[1].Tool != "wc" {
		t.Errorf("calls %+v", s.Calls)
	}
}

// TestStrategies: each strategy of the reflector, applied to a failed call.
func TestStrategies(t *testing.T) {
	failed := append(started(roomy), observed("r1-c1", 120, false)...)
	cases := []struct {
		name     string
		strategy decl.Strategy
		check    func(t *testing.T, s decl.AgentState)
	}{
		{"retry calls the same tool again", decl.StrategyRetry, func(t *testing.T, s decl.AgentState) {
			c := s.Calls[len(s.Calls)-1]
			if s.Phase != decl.PhaseAct || c.CallID != "r1-c2" || c.Tool != "calc" || c.Attempt != 2 || s.Iteration != 2 {
				t.Errorf("phase %s, call %+v, iteration %d", s.Phase, c, s.Iteration)
			}
		}},
		{"substitute calls the fallback", decl.StrategySubstitute, func(t *testing.T, s decl.AgentState) {
			c := s.Calls[len(s.Calls)-1]
			if s.Phase != decl.PhaseAct || c.Tool != "calc2" || c.Attempt != 2 {
				t.Errorf("phase %s, call %+v", s.Phase, c)
			}
		}},
		{"rollback gives up the subtask for its parent", decl.StrategyRollback, func(t *testing.T, s decl.AgentState) {
			if s.Phase != decl.PhasePlan || s.Tasks[1].Status != decl.TaskNodeStatusFailed || s.Tasks[0].Status != decl.TaskNodeStatusRunning {
				t.Errorf("phase %s, tasks %+v", s.Phase, s.Tasks)
			}
		}},
		{"ask-user waits for a reply", decl.StrategyAskUser, func(t *testing.T, s decl.AgentState) {
			if s.Phase != decl.PhaseWaiting || s.Question != "because" || s.AskedAt != 130 {
				t.Errorf("phase %s, question %q at %d", s.Phase, s.Question, s.AskedAt)
			}
		}},
		{"abort ends the run in error", decl.StrategyAbort, func(t *testing.T, s decl.AgentState) {
			if s.Phase != decl.PhaseError || s.Error != "aborted: because" || len(s.Runs) != 1 || s.Runs[0].Outcome != decl.RunRecordOutcomeError {
				t.Errorf("phase %s, error %q, runs %+v", s.Phase, s.Error, s.Runs)
			}
			if s.Tasks[1].Status != decl.TaskNodeStatusFailed {
				t.Errorf("the running task is %s", s.Tasks[1].Status)
			}
		}},
		{"advance marks the task done", decl.StrategyAdvance, func(t *testing.T, s decl.AgentState) {
			if s.Phase != decl.PhasePlan || s.Tasks[1].Status != decl.TaskNodeStatusDone || s.Tasks[1].Metadata["result"] != "because" {
				t.Errorf("phase %s, task %+v", s.Phase, s.Tasks[1])
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := apply(append(slices.Clone(failed), reflectOn("r1-c1", 130, c.strategy))...)
			if s.Calls[0].Strategy != string(c.strategy) {
				t.Errorf("the call's strategy is %q", s.Calls[0].Strategy)
			}
			c.check(t, s)
		})
	}
}

// TestSubstituteWithoutFallback: a substitution when the step has no other
// tool is an error, not a call of nothing.
func TestSubstituteWithoutFallback(t *testing.T) {
	in := started(roomy)
	in = append(in, observed("r1-c1", 120, false)...)
	in = append(in, reflectOn("r1-c1", 130, decl.StrategySubstitute))
	in = append(in, observed("r1-c2", 140, false)...)
	s := apply(append(in, reflectOn("r1-c2", 150, decl.StrategySubstitute))...)
	if s.Phase != decl.PhaseError || s.Error != "no fallback for tool calc2 of task t1" {
		t.Errorf("phase %s, error %q", s.Phase, s.Error)
	}
}

// TestAskUserThenReplan: after a reply, the planner's new step leaves
// waiting for act.
func TestAskUserThenReplan(t *testing.T) {
	in := append(started(roomy), observed("r1-c1", 120, false)...)
	in = append(in, reflectOn("r1-c1", 130, decl.StrategyAskUser),
		decl.UserReply{Timestamp: 140, RunID: "r1", Content: "use 2+2"},
		decl.AgentPlan{Timestamp: 150, RunID: "r1", Step: step("t1", "calc")})
	s := apply(in...)
	if s.Phase != decl.PhaseAct || s.Question != "" || len(s.Replies) != 1 || len(s.Calls) != 2 {
		t.Errorf("phase %s, question %q, replies %v, calls %d", s.Phase, s.Question, s.Replies, len(s.Calls))
	}
}

// TestGuards: each guard sends the run to error, from the phase it is in,
// with an alert; below its limit it does not.
func TestGuards(t *testing.T) {
	cases := []struct {
		name   string
		limits decl.Limits
		then   []decl.AgentInput
		guard  decl.AlertGuard // "" when no guard trips
		from   decl.Phase
	}{
		{"maxIterations: a retry past the limit", decl.Limits{MaxIterations: 1, MaxDurationMs: 10_000, MaxFailures: 5},
			append(observed("r1-c1", 120, false), reflectOn("r1-c1", 130, decl.StrategyRetry)), decl.AlertGuardMaxIterations, decl.PhaseReflect},
		{"maxIterations: at the limit", decl.Limits{MaxIterations: 2, MaxDurationMs: 10_000, MaxFailures: 5},
			append(observed("r1-c1", 120, false), reflectOn("r1-c1", 130, decl.StrategyRetry)), "", ""},
		{"maxFailures: two failures in a row", decl.Limits{MaxIterations: 10, MaxDurationMs: 10_000, MaxFailures: 2},
			slices.Concat(observed("r1-c1", 120, false), []decl.AgentInput{reflectOn("r1-c1", 130, decl.StrategyRetry)}, observed("r1-c2", 140, false)), decl.AlertGuardMaxFailures, decl.PhaseAct},
		{"maxFailures: a success between resets the count", decl.Limits{MaxIterations: 10, MaxDurationMs: 10_000, MaxFailures: 2},
			slices.Concat(observed("r1-c1", 120, false), []decl.AgentInput{reflectOn("r1-c1", 130, decl.StrategyRetry)}, observed("r1-c2", 140, true),
				[]decl.AgentInput{reflectOn("r1-c2", 150, decl.StrategyAdvance), decl.AgentPlan{Timestamp: 160, RunID: "r1", Step: step("t2", "wc")}},
				observed("r1-c3", 170, false)), "", ""},
		{"maxDurationMs: the watchdog after the limit", decl.Limits{MaxIterations: 10, MaxDurationMs: 1_000, MaxFailures: 3},
			[]decl.AgentInput{decl.AgentCheck{Timestamp: 1_111, RunID: "r1"}}, decl.AlertGuardMaxDurationMs, decl.PhaseAct},
		{"maxDurationMs: the watchdog at the limit", decl.Limits{MaxIterations: 10, MaxDurationMs: 1_000, MaxFailures: 3},
			[]decl.AgentInput{decl.AgentCheck{Timestamp: 1_110, RunID: "r1"}}, "", ""},
		{"maxDurationMs: an observation after the limit", decl.Limits{MaxIterations: 10, MaxDurationMs: 1_000, MaxFailures: 3},
			observed("r1-c1", 2_000, true), decl.AlertGuardMaxDurationMs, decl.PhaseAct},
		{"maxDurationMs: while waiting for the user", decl.Limits{MaxIterations: 10, MaxDurationMs: 1_000, MaxFailures: 3},
			append(observed("r1-c1", 120, false), reflectOn("r1-c1", 130, decl.StrategyAskUser), decl.AgentCheck{Timestamp: 5_000, RunID: "r1"}), decl.AlertGuardMaxDurationMs, decl.PhaseWaiting},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := apply(append(started(c.limits), c.then...)...)
			if c.guard == "" {
				if s.Phase == decl.PhaseError || len(s.Alerts) > 0 {
					t.Fatalf("a guard tripped: %s, %+v", s.Phase, s.Alerts)
				}
				return
			}
			if s.Phase != decl.PhaseError || len(s.Alerts) != 1 || s.Alerts[0].Guard != c.guard {
				t.Fatalf("phase %s, alerts %+v; want error by %s", s.Phase, s.Alerts, c.guard)
			}
			last := s.Transitions[len(s.Transitions)-1]
			if last.From != c.from || last.To != decl.PhaseError {
				t.Errorf("last transition %+v, want from %s", last, c.from)
			}
			if len(s.Runs) != 1 || s.Runs[0].Outcome != decl.RunRecordOutcomeError || s.Runs[0].Error != s.Alerts[0].Message {
				t.Errorf("runs %+v", s.Runs)
			}
		})
	}
}

// TestInputsOutOfPlaceChangeNothing: a decision about an earlier call, an
// observation in the wrong phase, a plan of another run while one runs, or
// an input older than the agent's newest leave the run as it is.
func TestInputsOutOfPlaceChangeNothing(t *testing.T) {
	base := apply(append(started(roomy), observed("r1-c1", 120, true)...)...)
	cases := []struct {
		name string
		in   decl.AgentInput
	}{
		{"a reflection on another call", reflectOn("r1-c9", 200, decl.StrategyAdvance)},
		{"an observation while reflecting", decl.AgentObserve{Timestamp: 200, RunID: "r1", CallID: "r1-c1", Success: true, ErrorKind: decl.ErrorKindNone}},
		{"a plan while reflecting", decl.AgentPlan{Timestamp: 200, RunID: "r1", Step: step("t2", "wc")}},
		{"a new run while one runs", decl.AgentPlan{Timestamp: 200, RunID: "r2", Start: ptr(request("r2", 200, roomy)), Answer: ptr("x")}},
		{"a watchdog of another run", decl.AgentCheck{Timestamp: 99_999, RunID: "r0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := agent.Transition(base, c.in)
			got.AgentUpdatedAt = base.AgentUpdatedAt
			if !reflect.DeepEqual(got, base) {
				t.Errorf("changed the state")
			}
		})
	}
	t.Run("an input older than the agent's newest", func(t *testing.T) {
		if got := agent.Transition(base, reflectOn("r1-c1", 100, decl.StrategyAdvance)); !reflect.DeepEqual(got, base) {
			t.Errorf("changed the state")
		}
	})
}

// TestRunsOneAtATime: a finished run lets the next start; its state is
// fresh, and the runs keep the record of both.
func TestRunsOneAtATime(t *testing.T) {
	in := append(started(roomy), observed("r1-c1", 120, false)...)
	in = append(in, reflectOn("r1-c1", 130, decl.StrategyAbort),
		decl.UserRunTask{Timestamp: 140, RunID: "r2", Goal: "g2"},
		decl.UserRunTask{Timestamp: 141, RunID: "r2", Goal: "again"},
		decl.AgentPlan{Timestamp: 150, RunID: "r2", Start: ptr(request("r2", 140, roomy)), Answer: ptr("nothing to do")})
	s := apply(in...)
	if len(s.Requests) != 2 {
		t.Errorf("requests %+v: a runId asked for twice is queued once", s.Requests)
	}
	if s.RunID != "r2" || s.Phase != decl.PhaseFinished || len(s.Calls) != 0 || len(s.Alerts) != 0 || s.Error != "" || s.Failures != 0 {
		t.Errorf("the new run is not fresh: %+v", s.StateOfAgent())
	}
	if len(s.Runs) != 2 || s.Runs[0].Outcome != decl.RunRecordOutcomeError || s.Runs[1].Outcome != decl.RunRecordOutcomeFinished {
		t.Errorf("runs %+v", s.Runs)
	}
}

// TestTransitionsArePure: CheckPure over every path above.
func TestTransitionsArePure(t *testing.T) {
	in := append(started(roomy), observed("r1-c1", 120, false)...)
	in = append(in, reflectOn("r1-c1", 130, decl.StrategyRetry))
	in = append(in, observed("r1-c2", 140, false)...)
	in = append(in, reflectOn("r1-c2", 150, decl.StrategySubstitute))
	in = append(in, observed("r1-c3", 160, false)...)
	in = append(in, reflectOn("r1-c3", 170, decl.StrategyAskUser),
		decl.UserReply{Timestamp: 180, RunID: "r1", Content: "skip it"},
		decl.AgentPlan{Timestamp: 190, RunID: "r1", Subtasks: []decl.Subtask{{TaskID: "t3", Description: "three"}}, Step: step("t1", "calc")})
	in = append(in, observed("r1-c4", 200, false)...)
	in = append(in, reflectOn("r1-c4", 210, decl.StrategyRollback),
		decl.AgentPlan{Timestamp: 220, RunID: "r1", Step: step("t2", "wc")})
	in = append(in, observed("r1-c5", 230, true)...)
	in = append(in, reflectOn("r1-c5", 240, decl.StrategyAdvance),
		decl.AgentPlan{Timestamp: 250, RunID: "r1", Answer: ptr("done")},
		decl.UserRunTask{Timestamp: 260, RunID: "r2", Goal: "g"},
		decl.AgentPlan{Timestamp: 270, RunID: "r2", Start: ptr(request("r2", 260, decl.Limits{MaxIterations: 1, MaxDurationMs: 10, MaxFailures: 1})), Step: step("root", "calc")},
		decl.AgentCheck{Timestamp: 300, RunID: "r2"})
	if err := automata.CheckPure(agent.Definition(), in...); err != nil {
		t.Fatal(err)
	}
	if s := apply(in...); len(s.Runs) != 2 || s.Runs[1].Outcome != decl.RunRecordOutcomeError {
		t.Errorf("runs %+v", s.Runs)
	}
}
