package transitions

import (
	"slices"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
)

// BrainSendMessageStart creates an empty assistant message, streaming: its
// text goes to the page as it streams, and into the state only when it
// completes. A message id already started is not started again.
func BrainSendMessageStart(state decl.StateOfBrain, input decl.BrainSendMessageStart) decl.StateOfBrain {
	if stale(input.Timestamp, state.BrainUpdatedAt) {
		return state
	}
	if !slices.ContainsFunc(state.AssistantMessages, func(m decl.AssistantMessage) bool { return m.ID == input.MessageID }) {
		state.AssistantMessages = appended(state.AssistantMessages, decl.AssistantMessage{
			ID:            input.MessageID,
			Streaming:     true,
			Timestamp:     input.Timestamp,
			CalledBrainAt: input.CalledBrainAt,
		})
	}
	return answered(state, input.Timestamp, input.CalledBrainAt)
}
