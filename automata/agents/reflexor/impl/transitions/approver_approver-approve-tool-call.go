package transitions

import "github.com/moora-go/moora/automata/agents/reflexor/decl"

// ApproverApproveToolCall records that the approver approved a tool call,
// with the arguments to run it with (the brain's when left out).
func ApproverApproveToolCall(state decl.StateOfApprover, input decl.ApproverApproveToolCall) decl.StateOfApprover {
	return approve(state, decl.Approval{ToolCallID: input.ToolCallID, Approved: true, Arguments: input.Arguments, Timestamp: input.Timestamp})
}
