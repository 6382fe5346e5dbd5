package transitions

import "example.com/golden/optional-nullable/decl"

// SetMood applies input set-mood, dispatched by actor llm, to the actor's
// state.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure and deterministic (no clock, randomness or I/O; time
// arrives inside inputs), and it must not write into memory the given state
// can reach: append with automata.Append, copy a map before changing it.
func SetMood(state decl.StateOfLlm, input decl.SetMood) decl.StateOfLlm {
	panic("not implemented: llm/set-mood")
}
