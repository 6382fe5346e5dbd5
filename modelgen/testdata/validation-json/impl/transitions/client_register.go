package transitions

import "example.com/golden/validation-json/decl"

// Register applies input register, dispatched by actor client, to the actor's
// state.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure and deterministic (no clock, randomness or I/O; time
// arrives inside inputs), and it must not write into memory the given state
// can reach: append with automata.Append, copy a map before changing it.
func Register(state decl.StateOfClient, input decl.Register) decl.StateOfClient {
	panic("not implemented: client/register")
}
