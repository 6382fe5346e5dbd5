package transitions

import "github.com/moora-go/moora/examples/supervisor/planner/decl"

// PlannerResearched keeps the researcher's findings of the request at work,
// and the planner has it written.
func PlannerResearched(state decl.StateOfPlanner, input decl.PlannerResearched) decl.StateOfPlanner {
	if state.Phase != decl.PhaseResearching || input.Working != state.Working {
		return state
	}
	state.Research = input.Research
	state.Phase = decl.PhaseWriting
	return state
}
