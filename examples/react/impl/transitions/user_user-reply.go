package transitions

import "github.com/moora-go/moora/examples/react/decl"

// UserReply records the user's answer to the agent's question.
func UserReply(state decl.StateOfUser, input decl.UserReply) decl.StateOfUser {
	if stale(input.Timestamp, state.UserUpdatedAt) {
		return state
	}
	state.UserUpdatedAt = input.Timestamp
	state.Replies = appended(state.Replies, decl.Reply{RunID: input.RunID, Content: input.Content, Timestamp: input.Timestamp})
	return state
}
