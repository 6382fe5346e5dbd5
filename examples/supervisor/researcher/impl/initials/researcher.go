package initials

import "github.com/moora-go/moora/examples/supervisor/researcher/decl"

// Researcher starts with no findings.
func Researcher() decl.StateOfResearcher {
	return decl.StateOfResearcher{}
}
