package transitions

import "github.com/moora-go/moora/examples/supervisor/planner/decl"

// Between reports whether the planner is between requests: idle, done or
// failed, it takes up the next one asked.
func Between(phase decl.Phase) bool {
	switch phase {
	case decl.PhaseIdle, decl.PhaseDone, decl.PhaseFailed:
		return true
	}
	return false
}
