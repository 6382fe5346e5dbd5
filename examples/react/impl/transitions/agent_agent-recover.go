package transitions

import (
	"fmt"

	"github.com/moora-go/moora/examples/react/decl"
)

// AgentRecover applies the reflector's choice for a run in error that may
// recover (Recovering): replan goes back to plan, the task the run was at
// pending again and the failures in a row forgotten; ask-user waits for the
// user's reply, which the planner plans that task again with; give-up ends
// the run there. Each is recorded among the run's recoveries, with the
// error it answers; a run that enters error again after maxRecoveries
// recoveries is over (fail), and so is a run whose maxRecoveries a new
// configuration lowered to those it has made, whatever the reflector chose.
func AgentRecover(state decl.StateOfAgent, input decl.AgentRecover) decl.StateOfAgent {
	if stale(input.Timestamp, state.AgentUpdatedAt) {
		return state
	}
	state.AgentUpdatedAt = input.Timestamp
	at := input.Timestamp
	if input.RunID != state.RunID || !Recovering(state.Phase, state.RunID, state.Runs) {
		return state
	}
	if limit := deref(state.Limits.MaxRecoveries); input.Strategy != decl.RecoveryStrategyGiveUp && recovered(state) >= limit {
		// A configuration put in force meanwhile lowered the limit.
		state.Alerts = appended(state.Alerts, decl.Alert{Guard: decl.AlertGuardMaxRecoveries, At: at,
			Message: fmt.Sprintf("the run has recovered %d times, maxRecoveries (%d): %s", recovered(state), limit, state.Error)})
		return over(state, at)
	}
	state.Recoveries = appended(state.Recoveries, decl.Recovery{At: at, Error: state.Error, Strategy: input.Strategy, Reason: input.Reason})
	why := fmt.Sprintf("recovered (%s): %s", input.Strategy, input.Reason)
	switch input.Strategy {
	case decl.RecoveryStrategyReplan:
		state = reopen(state, at)
		return move(state, decl.PhasePlan, at, why)
	case decl.RecoveryStrategyAskUser:
		state = reopen(state, at)
		q := input.Reason
		if input.Question != nil && *input.Question != "" {
			q = *input.Question
		}
		state.Question, state.AskedAt = q, at
		return move(state, decl.PhaseWaiting, at, why)
	default: // give-up
		state = move(state, decl.PhaseError, at, "given up: "+input.Reason)
		return over(state, at)
	}
}

// reopen takes a run out of error: the error and the failures in a row are
// forgotten, and the tasks it was running that have no subtasks are
// pending again, for the planner to plan again.
func reopen(s decl.StateOfAgent, at int64) decl.StateOfAgent {
	s.Error, s.Failures = "", 0
	for i, t := range s.Tasks {
		if i > 0 && t.Status == decl.TaskNodeStatusRunning && len(t.Children) == 0 {
			s = setTask(s, i, decl.TaskNodeStatusPending, at, "", "")
		}
	}
	return s
}
