package initials

import "github.com/moora-go/moora/examples/react/decl"

// Toolkit returns the initial state of actor toolkit: no call observed.
func Toolkit() decl.StateOfToolkit { return decl.StateOfToolkit{} }
