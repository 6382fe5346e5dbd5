package transitions

import (
	"slices"

	"github.com/moora-go/moora/examples/react/decl"
)

// ToolkitObserve records the observation of a tool call (tool.result),
// stamped with the input's time, unless the call has one already (a job
// rerun after a crash reports again).
func ToolkitObserve(state decl.StateOfToolkit, input decl.ToolkitObserve) decl.StateOfToolkit {
	if stale(input.Timestamp, state.ToolkitUpdatedAt) {
		return state
	}
	state.ToolkitUpdatedAt = input.Timestamp
	if slices.ContainsFunc(state.Observations, func(o decl.Observation) bool { return o.CallID == input.Observation.CallID }) {
		return state
	}
	o := input.Observation
	o.Timestamp = input.Timestamp
	state.Observations = appended(state.Observations, o)
	return state
}
