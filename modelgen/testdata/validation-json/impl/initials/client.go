package initials

import "example.com/golden/validation-json/decl"

// Client returns the initial state of actor client.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure: no clock, no randomness, no I/O.
func Client() decl.StateOfClient {
	panic("not implemented: initial state of client")
}
