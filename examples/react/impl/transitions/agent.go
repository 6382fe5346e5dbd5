package transitions

import (
	"fmt"
	"slices"

	"github.com/moora-go/moora/examples/react/decl"
)

// The agent's state machine (seed 002), as its inputs drive it:
//
//	idle|finished|error --agent-plan (start)-----> plan
//	plan    --agent-plan (subtasks)---> plan      the tree grows; plan again
//	plan    --agent-plan (step)-------> act       the step's first tool call
//	plan    --agent-plan (answer)-----> finished  (agent.finished)
//	plan    --agent-plan (abort)------> error
//	act     --agent-observe-----------> reflect   (Observe)
//	reflect --agent-reflect advance|rollback --> plan
//	reflect --agent-reflect retry|substitute --> act
//	reflect --agent-reflect ask-user ----------> waiting
//	reflect --agent-reflect abort -------------> error
//	waiting --agent-plan (step, after a reply)-> act
//	any running phase --a guard trips----------> error (system.alert)
//	error   --agent-recover replan-------------> plan     (a run not over)
//	error   --agent-recover ask-user-----------> waiting  (a run not over)
//	error   --agent-recover give-up------------> error, the run over
//	                (so is any agent-recover past maxRecoveries)
//	plan|waiting --agent-stop-for-budget-------> error, the run over (a budget alert)
//
// The guards are checked by every input of the agent, on its timestamp:
// maxDurationMs against the run's startedAt (agent-check is the watchdog's
// input when the time is up), maxIterations before each tool call,
// maxFailures after each failed one, maxDepth on each subtask planned. The
// budget of the planner's model is the jobs' guard (Work.Budget, checked
// before each ask of the planner on the state's usage), which hands in
// agent-stop-for-budget instead of the ask. An
// input that does not fit the phase (a decision about an earlier call, a
// plan for another run) changes nothing but the agent's clock.
//
// A run that enters error is over at once when it has recovered
// maxRecoveries times already (its record is written, its open tasks
// fail); until then it waits in error for the reflector's agent-recover.
// The run's limits are its configuration's guards (agent-configure), or
// less when its request asks for less: see Resolve.

// running reports whether a run is in progress.
func running(p decl.Phase) bool {
	switch p {
	case decl.PhasePlan, decl.PhaseAct, decl.PhaseReflect, decl.PhaseWaiting:
		return true
	}
	return false
}

// move enters phase to at time at, recording the transition.
func move(s decl.StateOfAgent, to decl.Phase, at int64, reason string) decl.StateOfAgent {
	s.Transitions = appended(s.Transitions, decl.PhaseChange{From: s.Phase, To: to, At: at, Reason: reason})
	s.Phase = to
	return s
}

// overtime trips maxDurationMs when the run has lasted longer than its
// limit at time at.
func overtime(s decl.StateOfAgent, at int64) (decl.StateOfAgent, bool) {
	if !running(s.Phase) || at-s.StartedAt <= s.Limits.MaxDurationMs {
		return s, false
	}
	return trip(s, decl.AlertGuardMaxDurationMs, at, fmt.Sprintf("the run has taken %d ms, more than maxDurationMs (%d)", at-s.StartedAt, s.Limits.MaxDurationMs)), true
}

// trip raises the guard's alert (system.alert) and ends the run in error.
func trip(s decl.StateOfAgent, guard decl.AlertGuard, at int64, message string) decl.StateOfAgent {
	s.Alerts = appended(s.Alerts, decl.Alert{Guard: guard, Message: message, At: at})
	return fail(s, at, message)
}

// fail sends the run to error. It is over there, its open tasks failed
// with it, when it may not recover (again): see Recovering.
func fail(s decl.StateOfAgent, at int64, reason string) decl.StateOfAgent {
	s.Error = reason
	s.Question = ""
	s = move(s, decl.PhaseError, at, reason)
	limit := deref(s.Limits.MaxRecoveries)
	if n := recovered(s); n >= limit {
		if limit > 0 {
			s.Alerts = appended(s.Alerts, decl.Alert{Guard: decl.AlertGuardMaxRecoveries, At: at,
				Message: fmt.Sprintf("the run has recovered %d times, maxRecoveries: %s", n, reason)})
		}
		return over(s, at)
	}
	return s
}

// over ends the run in error: the tasks still open fail with it, and the
// run is recorded.
func over(s decl.StateOfAgent, at int64) decl.StateOfAgent {
	for i, t := range s.Tasks {
		if t.Status == decl.TaskNodeStatusRunning || t.Status == decl.TaskNodeStatusPending && i == 0 {
			s = setTask(s, i, decl.TaskNodeStatusFailed, at, "error", s.Error)
		}
	}
	return record(s, decl.RunRecordOutcomeError, at)
}

// recovered returns how many times the run has recovered out of error.
func recovered(s decl.StateOfAgent) int64 {
	n := int64(0)
	for _, r := range s.Recoveries {
		if r.Strategy != decl.RecoveryStrategyGiveUp {
			n++
		}
	}
	return n
}

// Recovering reports whether run runID, in phase, is in error and not over:
// it waits for the reflector's agent-recover. A run is over once it is
// recorded among runs (a run that ended in error before runs could
// recover, under version 1 of the spec, always was).
func Recovering(phase decl.Phase, runID string, runs []decl.RunRecord) bool {
	return phase == decl.PhaseError && (len(runs) == 0 || runs[len(runs)-1].RunID != runID)
}

// record adds the run that ended to the runs, with its failed tool calls.
func record(s decl.StateOfAgent, outcome decl.RunRecordOutcome, at int64) decl.StateOfAgent {
	failures := []decl.Failure{}
	for _, c := range s.Calls {
		if c.Observed && !c.Success {
			failures = append(failures, decl.Failure{
				CallID: c.CallID, TaskID: c.TaskID, Tool: c.Tool, Attempt: c.Attempt,
				ErrorKind: c.ErrorKind, Error: c.Error, Strategy: c.Strategy,
			})
		}
	}
	s.Runs = appended(s.Runs, decl.RunRecord{
		RunID: s.RunID, Goal: s.Goal, Outcome: outcome, Answer: s.Answer, Error: s.Error,
		StartedAt: s.StartedAt, EndedAt: at, Iterations: s.Iteration, Failures: failures,
	})
	return s
}

// task returns the index of the task taskID, or -1.
func task(s decl.StateOfAgent, taskID string) int {
	return slices.IndexFunc(s.Tasks, func(t decl.TaskNode) bool { return t.TaskID == taskID })
}

// setTask sets the status of task i at time at, and a metadata entry when
// key is not empty.
func setTask(s decl.StateOfAgent, i int, status decl.TaskNodeStatus, at int64, key, value string) decl.StateOfAgent {
	t := s.Tasks[i]
	t.Status = status
	t.UpdatedAt = at
	if key != "" {
		t.Metadata = with(t.Metadata, key, value)
	}
	s.Tasks = replaced(s.Tasks, i, t)
	return s
}

// lastCall returns the run's current (latest) tool call.
func lastCall(s decl.StateOfAgent) (decl.ToolCall, bool) {
	if len(s.Calls) == 0 {
		return decl.ToolCall{}, false
	}
	return s.Calls[len(s.Calls)-1], true
}

// stepOf returns the latest step planned for taskID.
func stepOf(s decl.StateOfAgent, taskID string) (decl.PlanStep, bool) {
	for i := len(s.Steps) - 1; i >= 0; i-- {
		if s.Steps[i].TaskID == taskID {
			return s.Steps[i], true
		}
	}
	return decl.PlanStep{}, false
}

// act makes the tool call of step with tool (Act, tool.request), unless
// the run has made maxIterations calls already. The call's timeout is the
// tool's in the configuration, else the step's.
func act(s decl.StateOfAgent, step decl.PlanStep, tool string, attempt int64, at int64, reason string) decl.StateOfAgent {
	if s.Iteration >= s.Limits.MaxIterations {
		return trip(s, decl.AlertGuardMaxIterations, at, fmt.Sprintf("the run has made %d tool calls, maxIterations", s.Iteration))
	}
	timeout := step.TimeoutMs
	if t, ok := s.Config.Tools[tool]; ok && t.TimeoutMs > 0 {
		timeout = t.TimeoutMs
	}
	s.Iteration++
	s.Calls = appended(s.Calls, decl.ToolCall{
		CallID:          fmt.Sprintf("%s-c%d", s.RunID, len(s.Calls)+1),
		TaskID:          step.TaskID,
		Tool:            tool,
		Attempt:         attempt,
		Parameters:      step.ToolParameters,
		SuccessCriteria: step.SuccessCriteria,
		TimeoutMs:       timeout,
		RequestedAt:     at,
		ErrorKind:       decl.ErrorKindNone,
	})
	return move(s, decl.PhaseAct, at, reason)
}

// settled reports whether a task has ended: done, failed or skipped.
func settled(status decl.TaskNodeStatus) bool {
	switch status {
	case decl.TaskNodeStatusDone, decl.TaskNodeStatusFailed, decl.TaskNodeStatusSkipped:
		return true
	}
	return false
}

// settle ends the task parentID, and then its ancestors in turn, once all
// its subtasks have ended: done when they all are, else failed. The root
// ends with the run (its answer), not here.
func settle(s decl.StateOfAgent, parentID string, at int64) decl.StateOfAgent {
	for {
		p := task(s, parentID)
		if p <= 0 {
			return s
		}
		done := 0
		for _, id := range s.Tasks[p].Children {
			c := task(s, id)
			if c >= 0 && !settled(s.Tasks[c].Status) {
				return s
			}
			if c >= 0 && s.Tasks[c].Status == decl.TaskNodeStatusDone {
				done++
			}
		}
		status := decl.TaskNodeStatusDone
		if done < len(s.Tasks[p].Children) {
			status = decl.TaskNodeStatusFailed
		}
		s = setTask(s, p, status, at, "result", fmt.Sprintf("%d of %d subtasks done", done, len(s.Tasks[p].Children)))
		parentID = s.Tasks[p].ParentID
	}
}

// depth returns the depth of task i in the tree: 0 for the root, 1 for its
// subtasks, and so on.
func depth(s decl.StateOfAgent, i int) int64 {
	d := int64(0)
	for i > 0 && d <= MaxTasks {
		i = task(s, s.Tasks[i].ParentID)
		d++
	}
	return d
}

// maxDepth returns the run's maxDepth: its limit, or the default for a
// state that has none (one of version 1, before it is configured).
func maxDepth(s decl.StateOfAgent) int64 {
	if d := deref(s.Limits.MaxDepth); d > 0 {
		return d
	}
	return DefaultMaxDepth
}

// enabled reports whether the configuration in force lets the run call
// tool: one that lists its tools enables those; none (before the first
// agent-configure) enables every tool.
func enabled(s decl.StateOfAgent, tool string) bool {
	if s.Config.Digest == "" {
		return true
	}
	_, ok := s.Config.Tools[tool]
	return ok
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// The limits of a run that neither its request nor the configuration sets.
const (
	DefaultMaxIterations = 12
	DefaultMaxDurationMs = 60_000
	DefaultMaxFailures   = 3
	DefaultMaxDepth      = 3
)

// MaxTasks is the most tasks a run's tree may have: a plan past it ends the
// run in error.
const MaxTasks = 256

// Resolve returns the limits of a run that asked for asked under the
// configuration's guards: each is the guard (the default above when the
// configuration has none: no recovery, depth 3), or what the request asked
// for when that is less (0 asks for nothing, but a maxRecoveries of 0 that
// is there asks for no recovery).
func Resolve(asked, guards decl.Limits) decl.Limits {
	pick := func(ask, guard, def int64) int64 {
		if guard <= 0 {
			guard = def
		}
		if ask > 0 && ask < guard {
			return ask
		}
		return guard
	}
	recoveries := pick(deref(asked.MaxRecoveries), deref(guards.MaxRecoveries), 0)
	if asked.MaxRecoveries != nil && *asked.MaxRecoveries <= 0 {
		recoveries = 0 // asked for none (a run of version 1)
	}
	depth := pick(deref(asked.MaxDepth), deref(guards.MaxDepth), DefaultMaxDepth)
	return decl.Limits{
		MaxIterations: pick(asked.MaxIterations, guards.MaxIterations, DefaultMaxIterations),
		MaxDurationMs: pick(asked.MaxDurationMs, guards.MaxDurationMs, DefaultMaxDurationMs),
		MaxFailures:   pick(asked.MaxFailures, guards.MaxFailures, DefaultMaxFailures),
		MaxRecoveries: &recoveries,
		MaxDepth:      &depth,
	}
}
