package transitions

import "github.com/moora-go/moora/automata/agents/reflexor/decl"

// UserSendMessage appends the user's message.
func UserSendMessage(state decl.StateOfUser, input decl.UserSendMessage) decl.StateOfUser {
	if stale(input.Timestamp, state.UserUpdatedAt) {
		return state
	}
	state.UserMessages = appended(state.UserMessages, decl.UserMessage{ID: input.MessageID, Content: input.Content, Timestamp: input.Timestamp})
	state.UserUpdatedAt = input.Timestamp
	return state
}
