package transitions

import "github.com/moora-go/moora/automata/agents/persistent/decl"

// SetSystemPrompt applies input set-system-prompt, dispatched by actor user,
// to the actor's state.
//
// agentgen created this stub once and never changes it: the body is yours.
// It must be pure and deterministic (no clock, randomness or I/O; time
// arrives inside inputs), and it must not write into memory the given state
// can reach: append to slices.Clip(s), copy a map before changing it.
func SetSystemPrompt(state decl.StateOfUser, input decl.SetSystemPrompt) decl.StateOfUser {
	state.SystemPrompt = input.Content
	return state
}
