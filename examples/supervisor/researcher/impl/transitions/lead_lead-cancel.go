package transitions

import "github.com/moora-go/moora/examples/supervisor/researcher/decl"

// LeadCancel records that the lead no longer wants the work: the researcher's
// model is no longer called.
func LeadCancel(state decl.StateOfLead, input decl.LeadCancel) decl.StateOfLead {
	state.Cancelled = true
	return state
}
