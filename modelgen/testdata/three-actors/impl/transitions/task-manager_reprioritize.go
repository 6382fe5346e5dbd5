package transitions

import "example.com/golden/three-actors/decl"

// Reprioritize applies input reprioritize, dispatched by actor task-manager,
// to the actor's state.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure and deterministic (no clock, randomness or I/O; time
// arrives inside inputs), and it must not write into memory the given state
// can reach: append with automata.Append, copy a map before changing it.
func Reprioritize(state decl.StateOfTaskManager, input decl.Reprioritize) decl.StateOfTaskManager {
	panic("not implemented: task-manager/reprioritize")
}
