package transitions

import (
	"github.com/moora-go/moora/automata"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
)

// SendAssiMessage adds the llm's reply to its messages.
func SendAssiMessage(state decl.StateOfLlm, input decl.SendAssiMessage) decl.StateOfLlm {
	// automata.Append, not append: the previous state may share the
	// backing array, and Append never writes where another state can see
	// (yet stays O(1), unlike copying the whole slice on every message).
	state.AssiMessages = automata.Append(state.AssiMessages, decl.AssiMessage{
		ID:        input.ID,
		Content:   input.Content,
		Timestamp: input.Timestamp,
	})
	return state
}
