package transitions

import "github.com/moora-go/moora/examples/supervisor/researcher/decl"

// LeadTask gives the researcher its task; a task once given stays.
func LeadTask(state decl.StateOfLead, input decl.LeadTask) decl.StateOfLead {
	if state.Task == "" {
		state.Task = input.Task
	}
	return state
}
