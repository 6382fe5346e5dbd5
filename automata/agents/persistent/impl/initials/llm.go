package initials

import "github.com/moora-go/moora/automata/agents/persistent/decl"

// Llm returns the initial state of actor llm.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure: no clock, no randomness, no I/O.
func Llm() decl.StateOfLlm {
	return decl.StateOfLlm{}
}
