package transitions

import (
	"slices"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
)

// BrainSendMessageFail ends a message as a failed reply: the brain's call of
// the model failed, and the message keeps why, with no content (what
// streamed before the failure is not the brain's answer). A message that
// never started is added, failed; a message that completed stays as it is.
// Either way the brain has answered the signals up to calledBrainAt: the
// ask is not made again, and the next signal (the user's next message) is
// answered as any other.
func BrainSendMessageFail(state decl.StateOfBrain, input decl.BrainSendMessageFail) decl.StateOfBrain {
	if stale(input.Timestamp, state.BrainUpdatedAt) {
		return state
	}
	reason := input.Error
	i := slices.IndexFunc(state.AssistantMessages, func(m decl.AssistantMessage) bool { return m.ID == input.MessageID })
	switch {
	case i < 0:
		state.AssistantMessages = appended(state.AssistantMessages, decl.AssistantMessage{
			ID:            input.MessageID,
			Error:         &reason,
			Timestamp:     input.Timestamp,
			CalledBrainAt: input.CalledBrainAt,
		})
	case state.AssistantMessages[i].Streaming:
		m := state.AssistantMessages[i]
		m.Content, m.Streaming, m.Error = "", false, &reason
		state.AssistantMessages = replaced(state.AssistantMessages, i, m)
	}
	return answered(state, input.Timestamp, input.CalledBrainAt)
}
