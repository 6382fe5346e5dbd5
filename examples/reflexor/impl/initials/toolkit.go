package initials

import "github.com/moora-go/moora/examples/reflexor/decl"

// Toolkit returns the initial state of actor toolkit: no results yet.
func Toolkit() decl.StateOfToolkit { return decl.StateOfToolkit{} }
