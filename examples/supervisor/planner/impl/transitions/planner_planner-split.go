package transitions

import "github.com/moora-go/moora/examples/supervisor/planner/decl"

// PlannerSplit takes up the next request, split into its two tasks: the
// planner researches it. A split of any other request than the next, or
// while a request is at work, changes nothing.
func PlannerSplit(state decl.StateOfPlanner, input decl.PlannerSplit) decl.StateOfPlanner {
	if !Between(state.Phase) || input.Working != state.Working+1 {
		return state
	}
	return decl.StateOfPlanner{
		Phase:        decl.PhaseResearching,
		Working:      input.Working,
		Request:      input.Request,
		ResearchTask: input.ResearchTask,
		WritingTask:  input.WritingTask,
	}
}
