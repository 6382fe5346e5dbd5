package initials

import "github.com/moora-go/moora/examples/supervisor/planner/decl"

// User starts having asked for nothing.
func User() decl.StateOfUser {
	return decl.StateOfUser{Requests: []string{}}
}
