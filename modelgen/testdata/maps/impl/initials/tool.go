package initials

import "example.com/golden/maps/decl"

// Tool returns the initial state of actor tool.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure: no clock, no randomness, no I/O.
func Tool() decl.StateOfTool {
	panic("not implemented: initial state of tool")
}
