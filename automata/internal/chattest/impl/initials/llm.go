package initials

import "github.com/moora-go/moora/automata/internal/chattest/decl"

// Llm returns the initial state of actor llm: no replies yet.
func Llm() decl.StateOfLlm {
	return decl.StateOfLlm{}
}
