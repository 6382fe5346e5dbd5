package transitions

import (
	"slices"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
)

// BrainLoadToolCall marks a tool call as loaded: its details are sent to the
// brain again although it is older than the summary. An unknown id changes
// nothing. Like compression, it leaves calledBrainAt alone: the ask that
// loaded it goes on.
func BrainLoadToolCall(state decl.StateOfBrain, input decl.BrainLoadToolCall) decl.StateOfBrain {
	_ = input.CalledBrainAt // for the journal only: which ask it was
	if stale(input.Timestamp, state.BrainUpdatedAt) {
		return state
	}
	if i := slices.IndexFunc(state.ToolCalls, func(c decl.ToolCallRecord) bool { return c.ID == input.ToolCallID }); i >= 0 && !state.ToolCalls[i].IsLoaded {
		c := state.ToolCalls[i]
		c.IsLoaded = true
		state.ToolCalls = replaced(state.ToolCalls, i, c)
	}
	state.BrainUpdatedAt = input.Timestamp
	return state
}
