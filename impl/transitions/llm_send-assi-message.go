package transitions

import (
	"slices"

	"github.com/moora-go/moora/decl"
)

// SendAssiMessage adds the llm's reply to its messages.
func SendAssiMessage(state decl.StateOfLlm, input decl.SendAssiMessage) decl.StateOfLlm {
	// The previous state may share the backing array: append to a clipped
	// slice, so that append copies instead of writing into it.
	state.AssiMessages = append(slices.Clip(state.AssiMessages), decl.AssiMessage{
		ID:        input.ID,
		Content:   input.Content,
		Timestamp: input.Timestamp,
	})
	return state
}
