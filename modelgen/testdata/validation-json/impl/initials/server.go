package initials

import "example.com/golden/validation-json/decl"

// Server returns the initial state of actor server.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure: no clock, no randomness, no I/O.
func Server() decl.StateOfServer {
	panic("not implemented: initial state of server")
}
