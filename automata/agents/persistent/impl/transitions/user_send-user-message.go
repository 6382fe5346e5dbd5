package transitions

import "github.com/moora-go/moora/automata/agents/persistent/decl"

// SendUserMessage applies input send-user-message, dispatched by actor user,
// to the actor's state.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure and deterministic (no clock, randomness or I/O; time
// arrives inside inputs), and it must not write into memory the given state
// can reach: append to slices.Clip(s), copy a map before changing it.
func SendUserMessage(state decl.StateOfUser, input decl.SendUserMessage) decl.StateOfUser {
	state.UserMessages = insertByTime(state.UserMessages, input.Message, func(m decl.UserMessage) int64 { return m.Timestamp })
	return state
}
