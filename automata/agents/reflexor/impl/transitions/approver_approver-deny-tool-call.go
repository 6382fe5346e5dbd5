package transitions

import "github.com/moora-go/moora/automata/agents/reflexor/decl"

// ApproverDenyToolCall records that the approver denied a tool call, and
// why.
func ApproverDenyToolCall(state decl.StateOfApprover, input decl.ApproverDenyToolCall) decl.StateOfApprover {
	return approve(state, decl.Approval{ToolCallID: input.ToolCallID, Approved: false, Reason: input.Reason, Timestamp: input.Timestamp})
}
