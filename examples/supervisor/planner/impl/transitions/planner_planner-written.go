package transitions

import "github.com/moora-go/moora/examples/supervisor/planner/decl"

// PlannerWritten takes the writer's text as the answer of the request at
// work, which is done.
func PlannerWritten(state decl.StateOfPlanner, input decl.PlannerWritten) decl.StateOfPlanner {
	if state.Phase != decl.PhaseWriting || input.Working != state.Working {
		return state
	}
	state.Answer = input.Answer
	state.Phase = decl.PhaseDone
	return state
}
