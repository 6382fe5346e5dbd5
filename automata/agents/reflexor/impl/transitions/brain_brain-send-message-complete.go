package transitions

import (
	"slices"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
)

// BrainSendMessageComplete writes the whole text of a message and ends its
// streaming. A message that never started (its start was rejected) is
// added whole.
func BrainSendMessageComplete(state decl.StateOfBrain, input decl.BrainSendMessageComplete) decl.StateOfBrain {
	if stale(input.Timestamp, state.BrainUpdatedAt) {
		return state
	}
	i := slices.IndexFunc(state.AssistantMessages, func(m decl.AssistantMessage) bool { return m.ID == input.MessageID })
	if i < 0 {
		state.AssistantMessages = appended(state.AssistantMessages, decl.AssistantMessage{
			ID:            input.MessageID,
			Content:       input.Content,
			Timestamp:     input.Timestamp,
			CalledBrainAt: input.CalledBrainAt,
		})
	} else {
		m := state.AssistantMessages[i]
		m.Content, m.Streaming = input.Content, false
		state.AssistantMessages = replaced(state.AssistantMessages, i, m)
	}
	return answered(state, input.Timestamp, input.CalledBrainAt)
}
