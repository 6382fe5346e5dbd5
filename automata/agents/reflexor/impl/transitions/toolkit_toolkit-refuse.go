package transitions

import "github.com/moora-go/moora/automata/agents/reflexor/decl"

// ToolkitRefuse records that a tool call waiting for approval was refused:
// denied, or not approved by its deadline. The brain is told as of a failed
// call.
func ToolkitRefuse(state decl.StateOfToolkit, input decl.ToolkitRefuse) decl.StateOfToolkit {
	content := "the approver denied the call"
	if input.Reason == decl.ToolkitRefuseReasonDeadline {
		content = "the call was not approved by its deadline"
	}
	if input.Detail != nil && *input.Detail != "" {
		content += ": " + *input.Detail
	}
	return result(state, decl.ToolResult{ToolCallID: input.ToolCallID, IsError: true, Content: content, Timestamp: input.Timestamp})
}
