package transitions

import "example.com/golden/names/decl"

// Data applies input data, dispatched by actor go-to, to the actor's state.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure and deterministic (no clock, randomness or I/O; time
// arrives inside inputs), and it must not write into memory the given state
// can reach: append with automata.Append, copy a map before changing it.
func Data(state decl.StateOfGoTo, input decl.Data) decl.StateOfGoTo {
	panic("not implemented: go-to/data")
}
