package transitions

import (
	"fmt"
	"slices"

	"github.com/moora-go/moora/examples/react/decl"
)

// The agent's state machine (seed 002), as its inputs drive it:
//
//	idle|finished|error --agent-plan (start)-----> plan
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
//
// The guards are checked by every input of the agent, on its timestamp:
// maxDurationMs against the run's startedAt (agent-check is the watchdog's
// input when the time is up), maxIterations before each tool call,
// maxFailures after each failed one. An input that does not fit the phase
// (a decision about an earlier call, a plan for another run) changes
// nothing but the agent's clock.

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

// fail ends the run in error: the tasks still open fail with it.
func fail(s decl.StateOfAgent, at int64, reason string) decl.StateOfAgent {
	for i, t := range s.Tasks {
		if t.Status == decl.TaskNodeStatusRunning || t.Status == decl.TaskNodeStatusPending && i == 0 {
			s = setTask(s, i, decl.TaskNodeStatusFailed, at, "error", reason)
		}
	}
	s.Error = reason
	s.Question = ""
	s = move(s, decl.PhaseError, at, reason)
	return record(s, decl.RunRecordOutcomeError, at)
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
// the run has made maxIterations calls already.
func act(s decl.StateOfAgent, step decl.PlanStep, tool string, attempt int64, at int64, reason string) decl.StateOfAgent {
	if s.Iteration >= s.Limits.MaxIterations {
		return trip(s, decl.AlertGuardMaxIterations, at, fmt.Sprintf("the run has made %d tool calls, maxIterations", s.Iteration))
	}
	s.Iteration++
	s.Calls = appended(s.Calls, decl.ToolCall{
		CallID:          fmt.Sprintf("%s-c%d", s.RunID, len(s.Calls)+1),
		TaskID:          step.TaskID,
		Tool:            tool,
		Attempt:         attempt,
		Parameters:      step.ToolParameters,
		SuccessCriteria: step.SuccessCriteria,
		TimeoutMs:       step.TimeoutMs,
		RequestedAt:     at,
		ErrorKind:       decl.ErrorKindNone,
	})
	return move(s, decl.PhaseAct, at, reason)
}
