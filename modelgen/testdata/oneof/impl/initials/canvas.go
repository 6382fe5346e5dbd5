package initials

import "example.com/golden/oneof/decl"

// Canvas returns the initial state of actor canvas.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure: no clock, no randomness, no I/O.
func Canvas() decl.StateOfCanvas {
	panic("not implemented: initial state of canvas")
}
