package transitions

import (
	"fmt"
	"slices"

	"github.com/moora-go/moora/examples/react/decl"
)

// AgentReflect applies the reflector's choice for the current call
// (Reflect): advance marks the task done and plans the next; retry calls
// the same tool again; substitute calls the step's next tool candidate
// (each of which the configuration in force must enable);
// rollback gives up the subtask and goes back to its parent, whose next
// subtask is planned (the parent ends once its subtasks have: failed, as
// one of them did; see settle); ask-user
// waits for the user's reply; abort ends the run in error.
func AgentReflect(state decl.StateOfAgent, input decl.AgentReflect) decl.StateOfAgent {
	if stale(input.Timestamp, state.AgentUpdatedAt) {
		return state
	}
	state.AgentUpdatedAt = input.Timestamp
	at := input.Timestamp
	call, ok := lastCall(state)
	if input.RunID != state.RunID || state.Phase != decl.PhaseReflect || !ok || call.CallID != input.CallID {
		return state
	}
	state, over := overtime(state, at)
	if over {
		return state
	}
	call.Strategy = string(input.Strategy)
	state.Calls = replaced(state.Calls, len(state.Calls)-1, call)
	i := task(state, call.TaskID)
	step, _ := stepOf(state, call.TaskID)
	why := fmt.Sprintf("%s %s: %s", input.Strategy, call.TaskID, input.Reason)
	switch input.Strategy {
	case decl.StrategyAdvance:
		state = setTask(state, i, decl.TaskNodeStatusDone, at, "result", input.Reason)
		state = settle(state, state.Tasks[i].ParentID, at)
		return move(state, decl.PhasePlan, at, why)
	case decl.StrategyRetry:
		if !enabled(state, call.Tool) {
			return fail(state, at, fmt.Sprintf("tool %s of task %s is disabled by the configuration in force", call.Tool, call.TaskID))
		}
		return act(state, step, call.Tool, call.Attempt+1, at, why)
	case decl.StrategySubstitute:
		next := ""
		if j := slices.Index(step.ToolCandidates, call.Tool); j >= 0 {
			for _, t := range step.ToolCandidates[j+1:] {
				if enabled(state, t) {
					next = t
					break
				}
			}
		}
		if next == "" {
			return fail(state, at, fmt.Sprintf("no fallback for tool %s of task %s", call.Tool, call.TaskID))
		}
		return act(state, step, next, call.Attempt+1, at, fmt.Sprintf("%s (%s instead of %s)", why, next, call.Tool))
	case decl.StrategyRollback:
		if i <= 0 {
			return fail(state, at, "rolled back the root task: "+input.Reason)
		}
		parent := state.Tasks[i].ParentID
		state = setTask(state, i, decl.TaskNodeStatusFailed, at, "rollback", input.Reason)
		state = settle(state, parent, at)
		return move(state, decl.PhasePlan, at, why+" (back to "+parent+")")
	case decl.StrategyAskUser:
		q := input.Reason
		if input.Question != nil && *input.Question != "" {
			q = *input.Question
		}
		state.Question, state.AskedAt = q, at
		return move(state, decl.PhaseWaiting, at, why)
	case decl.StrategyAbort:
		return fail(state, at, "aborted: "+input.Reason)
	}
	return state
}
