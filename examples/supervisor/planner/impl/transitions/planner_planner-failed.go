package transitions

import "github.com/moora-go/moora/examples/supervisor/planner/decl"

// PlannerFailed ends a request in failure: the one at work (a delegation
// failed), or the next one (its split failed), which the planner then
// leaves for the one after it.
func PlannerFailed(state decl.StateOfPlanner, input decl.PlannerFailed) decl.StateOfPlanner {
	switch {
	case !Between(state.Phase) && input.Working == state.Working:
	case Between(state.Phase) && input.Working == state.Working+1:
		state = decl.StateOfPlanner{Working: input.Working}
	default:
		return state
	}
	state.Phase = decl.PhaseFailed
	state.Error = input.Error
	state.Answer = ""
	return state
}
