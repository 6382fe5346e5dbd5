package transitions

import "example.com/golden/validation-json/decl"

// SetStatus applies input set-status, dispatched by actor server, to the
// actor's state.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure and deterministic (no clock, randomness or I/O; time
// arrives inside inputs), and it must not write into memory the given state
// can reach: append with automata.Append, copy a map before changing it.
func SetStatus(state decl.StateOfServer, input decl.SetStatus) decl.StateOfServer {
	panic("not implemented: server/set-status")
}
