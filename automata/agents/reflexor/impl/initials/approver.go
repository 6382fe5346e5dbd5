package initials

import "github.com/moora-go/moora/automata/agents/reflexor/decl"

// Approver returns the initial state of actor approver: it has said
// nothing yet.
func Approver() decl.StateOfApprover { return decl.StateOfApprover{} }
