package initials

import "github.com/moora-go/moora/automata/agents/reflexor/decl"

// Brain returns the initial state of actor brain: nothing said, nothing
// summarised, nothing asked.
func Brain() decl.StateOfBrain { return decl.StateOfBrain{} }
