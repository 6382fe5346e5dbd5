package transitions

import "example.com/golden/maps/decl"

// Report applies input report, dispatched by actor tool, to the actor's state.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure and deterministic (no clock, randomness or I/O; time
// arrives inside inputs), and it must not write into memory the given state
// can reach: append with automata.Append, copy a map before changing it.
func Report(state decl.StateOfTool, input decl.Report) decl.StateOfTool {
	panic("not implemented: tool/report")
}
