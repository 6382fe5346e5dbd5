package initials

import "github.com/moora-go/moora/automata/agents/reflexor/decl"

// Toolkit returns the initial state of actor toolkit: no results yet.
func Toolkit() decl.StateOfToolkit { return decl.StateOfToolkit{} }
