package initials

import "github.com/moora-go/moora/examples/react/decl"

// Agent returns the initial state of actor agent: idle, no run yet.
func Agent() decl.StateOfAgent { return decl.StateOfAgent{Phase: decl.PhaseIdle} }
