package transitions

import (
	"slices"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
)

// result records the toolkit's answer to a tool call, unless the call has
// one already (a job rerun after a crash answers again).
func result(state decl.StateOfToolkit, r decl.ToolResult) decl.StateOfToolkit {
	if stale(r.Timestamp, state.ToolkitUpdatedAt) {
		return state
	}
	if !slices.ContainsFunc(state.ToolResults, func(x decl.ToolResult) bool { return x.ToolCallID == r.ToolCallID }) {
		state.ToolResults = appended(state.ToolResults, r)
	}
	state.ToolkitUpdatedAt = r.Timestamp
	return state
}
