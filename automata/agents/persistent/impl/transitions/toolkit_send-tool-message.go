package transitions

import "github.com/moora-go/moora/automata/agents/persistent/decl"

// SendToolMessage applies input send-tool-message, dispatched by actor
// toolkit, to the actor's state.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure and deterministic (no clock, randomness or I/O; time
// arrives inside inputs), and it must not write into memory the given state
// can reach: append to slices.Clip(s), copy a map before changing it.
func SendToolMessage(state decl.StateOfToolkit, input decl.SendToolMessage) decl.StateOfToolkit {
	state.ToolMessages = insertByTime(state.ToolMessages, input.Message, func(m decl.ToolMessage) int64 { return m.Timestamp })
	return state
}
