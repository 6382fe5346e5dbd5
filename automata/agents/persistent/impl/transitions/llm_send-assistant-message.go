package transitions

import "github.com/moora-go/moora/automata/agents/persistent/decl"

// SendAssistantMessage applies input send-assistant-message, dispatched by
// actor llm, to the actor's state.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure and deterministic (no clock, randomness or I/O; time
// arrives inside inputs), and it must not write into memory the given state
// can reach: append to slices.Clip(s), copy a map before changing it.
func SendAssistantMessage(state decl.StateOfLlm, input decl.SendAssistantMessage) decl.StateOfLlm {
	state.AssistantMessages = insertByTime(state.AssistantMessages, input.Message, func(m decl.AssistantMessage) int64 { return m.Timestamp })
	// The llm has now seen everything up to what it was sent.
	state.LastSentToLlmAt = max(state.LastSentToLlmAt, input.AnsweredUpTo)
	return state
}
