package transitions

import "github.com/moora-go/moora/examples/supervisor/writer/decl"

// LeadTask gives the writer its task and the findings to write from; a
// task once given stays.
func LeadTask(state decl.StateOfLead, input decl.LeadTask) decl.StateOfLead {
	if state.Task == "" {
		state.Task, state.Research = input.Task, input.Research
	}
	return state
}
