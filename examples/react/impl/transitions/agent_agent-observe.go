package transitions

import (
	"fmt"

	"github.com/moora-go/moora/examples/react/decl"
)

// AgentObserve takes the observation of the current call into the agent's
// history (Observe) and moves to reflect; a failed call counts towards
// maxFailures, a successful one resets the count.
func AgentObserve(state decl.StateOfAgent, input decl.AgentObserve) decl.StateOfAgent {
	if stale(input.Timestamp, state.AgentUpdatedAt) {
		return state
	}
	state.AgentUpdatedAt = input.Timestamp
	at := input.Timestamp
	call, ok := lastCall(state)
	if input.RunID != state.RunID || state.Phase != decl.PhaseAct || !ok || call.CallID != input.CallID {
		return state
	}
	state, over := overtime(state, at)
	if over {
		return state
	}
	call.Observed, call.Success, call.ErrorKind, call.Error, call.ObservedAt = true, input.Success, input.ErrorKind, input.Error, at
	state.Calls = replaced(state.Calls, len(state.Calls)-1, call)
	outcome := "ok"
	if input.Success {
		state.Failures = 0
	} else {
		state.Failures++
		outcome = fmt.Sprintf("failed (%s): %s", input.ErrorKind, input.Error)
		if state.Failures >= state.Limits.MaxFailures {
			return trip(state, decl.AlertGuardMaxFailures, at, fmt.Sprintf("%d tool calls in a row failed, maxFailures; the last: %s", state.Failures, input.Error))
		}
	}
	return move(state, decl.PhaseReflect, at, fmt.Sprintf("observed %s (%s): %s", call.CallID, call.Tool, outcome))
}
