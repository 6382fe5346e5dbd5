package transitions

import (
	"github.com/moora-go/moora/automata"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
)

// SendUserMessage adds the message the user sent to the user's messages.
func SendUserMessage(state decl.StateOfUser, input decl.SendUserMessage) decl.StateOfUser {
	// automata.Append, not append: the previous state may share the
	// backing array, and Append never writes where another state can see
	// (yet stays O(1), unlike copying the whole slice on every message).
	state.UserMessages = automata.Append(state.UserMessages, decl.UserMessage{
		ID:        input.ID,
		Content:   input.Content,
		Timestamp: input.Timestamp,
	})
	return state
}
