package initials

import "github.com/moora-go/moora/automata/agents/persistent/decl"

// Toolkit returns the initial state of actor toolkit.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure: no clock, no randomness, no I/O.
func Toolkit() decl.StateOfToolkit {
	return decl.StateOfToolkit{}
}
