package initials

import "github.com/moora-go/moora/automata/agents/persistent/decl"

// User returns the initial state of actor user.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure: no clock, no randomness, no I/O.
func User() decl.StateOfUser {
	return decl.StateOfUser{}
}
