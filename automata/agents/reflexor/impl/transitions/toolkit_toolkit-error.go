package transitions

import "github.com/moora-go/moora/automata/agents/reflexor/decl"

// ToolkitError records that a tool call failed, and why.
func ToolkitError(state decl.StateOfToolkit, input decl.ToolkitError) decl.StateOfToolkit {
	return result(state, decl.ToolResult{ToolCallID: input.ToolCallID, IsError: true, Content: input.Error, Timestamp: input.Timestamp})
}
