package initials

import "github.com/moora-go/moora/examples/supervisor/researcher/decl"

// Lead starts with no task.
func Lead() decl.StateOfLead {
	return decl.StateOfLead{}
}
