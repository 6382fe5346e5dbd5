package transitions

import (
	"slices"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
)

// approve records the approver's word on a tool call that waits for it,
// unless it said one already (the first word stands): a word on a call
// that does not wait for approval, or was answered already, is kept too,
// and changes nothing, since only a pending call waiting for approval is
// run or refused by it.
func approve(state decl.StateOfApprover, a decl.Approval) decl.StateOfApprover {
	if stale(a.Timestamp, state.ApproverUpdatedAt) {
		return state
	}
	if !slices.ContainsFunc(state.Approvals, func(x decl.Approval) bool { return x.ToolCallID == a.ToolCallID }) {
		state.Approvals = appended(state.Approvals, a)
	}
	state.ApproverUpdatedAt = a.Timestamp
	return state
}
