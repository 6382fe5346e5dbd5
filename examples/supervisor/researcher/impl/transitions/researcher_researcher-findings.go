package transitions

import "github.com/moora-go/moora/examples/supervisor/researcher/decl"

// ResearcherFindings keeps the model's findings; the first are final.
func ResearcherFindings(state decl.StateOfResearcher, input decl.ResearcherFindings) decl.StateOfResearcher {
	if state.Findings == "" {
		state.Findings = input.Findings
	}
	return state
}
