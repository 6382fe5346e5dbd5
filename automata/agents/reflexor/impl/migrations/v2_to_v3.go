package migrations

import (
	"github.com/moora-go/moora/automata/agents/reflexor/decl/v2"
	decl "github.com/moora-go/moora/automata/agents/reflexor/decl/v3"
)

// AgentStateFromV2 brings the state of a snapshot taken under version 2 of
// the spec up to version 3, which added the brain's usage and
// budgetExhausted: a conversation of version 2 recorded no usage, and its
// totals start from zero (the calls made before are not counted against a
// budget), and its brain has not stopped for one.
func AgentStateFromV2(old v2.AgentState) decl.AgentState {
	return decl.AgentState{
		AssistantMessages: each(old.AssistantMessages, func(m v2.AssistantMessage) decl.AssistantMessage { return decl.AssistantMessage(m) }),
		BrainUpdatedAt:    old.BrainUpdatedAt,
		CalledBrainAt:     old.CalledBrainAt,
		ContextSummary:    old.ContextSummary,
		SummaryCutAt:      old.SummaryCutAt,
		ToolCalls:         each(old.ToolCalls, func(c v2.ToolCallRecord) decl.ToolCallRecord { return decl.ToolCallRecord(c) }),
		ToolResults:       each(old.ToolResults, func(r v2.ToolResult) decl.ToolResult { return decl.ToolResult(r) }),
		ToolkitUpdatedAt:  old.ToolkitUpdatedAt,
		UserMessages:      each(old.UserMessages, func(m v2.UserMessage) decl.UserMessage { return decl.UserMessage(m) }),
		UserUpdatedAt:     old.UserUpdatedAt,
	}
}
