package transitions

import "example.com/golden/oneof/decl"

// Redraw applies input redraw, dispatched by actor canvas, to the actor's
// state.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure and deterministic (no clock, randomness or I/O; time
// arrives inside inputs), and it must not write into memory the given state
// can reach: append with automata.Append, copy a map before changing it.
func Redraw(state decl.StateOfCanvas, input decl.Redraw) decl.StateOfCanvas {
	panic("not implemented: canvas/redraw")
}
