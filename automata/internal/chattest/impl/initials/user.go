package initials

import "github.com/moora-go/moora/automata/internal/chattest/decl"

// User returns the initial state of actor user: no messages yet.
func User() decl.StateOfUser {
	return decl.StateOfUser{}
}
