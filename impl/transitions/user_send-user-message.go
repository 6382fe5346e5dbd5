package transitions

import (
	"slices"

	"github.com/moora-go/moora/decl"
)

// SendUserMessage adds the message the user sent to the user's messages.
func SendUserMessage(state decl.StateOfUser, input decl.SendUserMessage) decl.StateOfUser {
	// The previous state may share the backing array: append to a clipped
	// slice, so that append copies instead of writing into it.
	state.UserMessages = append(slices.Clip(state.UserMessages), decl.UserMessage{
		ID:        input.ID,
		Content:   input.Content,
		Timestamp: input.Timestamp,
	})
	return state
}
