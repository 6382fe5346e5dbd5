package initials

import "example.com/golden/names/decl"

// GoTo returns the initial state of actor go-to.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure: no clock, no randomness, no I/O.
func GoTo() decl.StateOfGoTo {
	panic("not implemented: initial state of go-to")
}
