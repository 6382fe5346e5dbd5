package invariants

import "github.com/moora-go/moora/examples/supervisor/researcher/decl"

// Admit is the admission step FuzzTransitions runs before each input, as
// the agent's automata.WithAdmission step does: it returns the input to
// apply (stamped, say) or an error that rejects it, and a rejected input is
// skipped, not a failure. Inputs are drawn from their schemas, so the
// target tries what admission refuses; make Admit refuse what the agent's
// admission refuses. Unlike the agent's, it must be deterministic: derive a
// time from the state, never from the clock.
func Admit(state decl.AgentState, input decl.AgentInput) (decl.AgentInput, error) {
	return input, nil
}
