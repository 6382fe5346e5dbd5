package transitions

import "github.com/moora-go/moora/automata/agents/reflexor/decl"

// ToolkitRespond records a tool's result.
func ToolkitRespond(state decl.StateOfToolkit, input decl.ToolkitRespond) decl.StateOfToolkit {
	return result(state, decl.ToolResult{ToolCallID: input.ToolCallID, Content: input.Result, Timestamp: input.Timestamp})
}
