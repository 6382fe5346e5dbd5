package initials

import "github.com/moora-go/moora/examples/react/decl"

// User returns the initial state of actor user: no task asked for.
func User() decl.StateOfUser { return decl.StateOfUser{} }
