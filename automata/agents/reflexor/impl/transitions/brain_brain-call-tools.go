package transitions

import (
	"maps"
	"slices"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
)

// BrainCallTools records the tool calls the brain asked for, in the order
// of their ids, with whether each waits for approval; a call whose id is
// already recorded is not recorded again.
func BrainCallTools(state decl.StateOfBrain, input decl.BrainCallTools) decl.StateOfBrain {
	if stale(input.Timestamp, state.BrainUpdatedAt) {
		return state
	}
	for _, id := range slices.Sorted(maps.Keys(input.ToolCalls)) {
		if slices.ContainsFunc(state.ToolCalls, func(c decl.ToolCallRecord) bool { return c.ID == id }) {
			continue
		}
		call := input.ToolCalls[id]
		state.ToolCalls = appended(state.ToolCalls, decl.ToolCallRecord{
			ID:            id,
			Name:          call.Name,
			Arguments:     call.Arguments,
			Timestamp:     input.Timestamp,
			CalledBrainAt: input.CalledBrainAt,
			// A call that waits for approval says so, and until when.
			NeedsApproval:    call.NeedsApproval,
			ApprovalDeadline: call.ApprovalDeadline,
		})
	}
	return answered(state, input.Timestamp, input.CalledBrainAt)
}
