package migrations

import (
	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/agents/reflexor/decl/v3"
)

// AgentStateFromV3 brings the state of a snapshot taken under version 3 of
// the spec up to version 4, which added approvals: no tool call of version
// 3 waited for one, and the approver has said nothing.
func AgentStateFromV3(old v3.AgentState) decl.AgentState {
	return decl.AgentState{
		AssistantMessages: each(old.AssistantMessages, func(m v3.AssistantMessage) decl.AssistantMessage { return decl.AssistantMessage(m) }),
		BrainUpdatedAt:    old.BrainUpdatedAt,
		BudgetExhausted:   decl.BudgetExhausted(old.BudgetExhausted),
		CalledBrainAt:     old.CalledBrainAt,
		ContextSummary:    old.ContextSummary,
		SummaryCutAt:      old.SummaryCutAt,
		ToolCalls: each(old.ToolCalls, func(c v3.ToolCallRecord) decl.ToolCallRecord {
			return decl.ToolCallRecord{ID: c.ID, Name: c.Name, Arguments: c.Arguments, Timestamp: c.Timestamp, CalledBrainAt: c.CalledBrainAt, IsLoaded: c.IsLoaded}
		}),
		ToolResults:      each(old.ToolResults, func(r v3.ToolResult) decl.ToolResult { return decl.ToolResult(r) }),
		ToolkitUpdatedAt: old.ToolkitUpdatedAt,
		Usage:            decl.Usage(old.Usage),
		UserMessages:     each(old.UserMessages, func(m v3.UserMessage) decl.UserMessage { return decl.UserMessage(m) }),
		UserUpdatedAt:    old.UserUpdatedAt,
	}
}
