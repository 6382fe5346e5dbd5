package initials

import "github.com/moora-go/moora/examples/supervisor/writer/decl"

// Writer starts with no text.
func Writer() decl.StateOfWriter {
	return decl.StateOfWriter{}
}
