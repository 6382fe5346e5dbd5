package initials

import "github.com/moora-go/moora/examples/supervisor/planner/decl"

// Planner starts idle, at no request.
func Planner() decl.StateOfPlanner {
	return decl.StateOfPlanner{Phase: decl.PhaseIdle}
}
