// Package migrations brings the records an agent journaled under earlier
// versions of its spec up to the current version: one function per input type
// whose shape changed in a breaking way, or that was removed, and one for the
// state when its shape did. agentgen generate writes a stub for each, once,
// and agentgen check fails until it is written. The journal runs them as it
// opens (package automata/migrate); like transitions, they are pure.
//
// Version 2 added the optional property error to AssistantMessage: why the
// brain's call of the model failed. No message of version 1 has one (a
// failed call left its message streaming, or wrote none).
package migrations

import (
	"github.com/moora-go/moora/automata/agents/reflexor/decl/v1"
	"github.com/moora-go/moora/automata/agents/reflexor/decl/v2"
)

// AgentStateFromV1 brings the state of a snapshot taken under version 1 of the
// spec up to version 2. (v2 is decl while 2 is the spec's version.)
//
// What changed (agentgen check lists it with file:line):
//
//	/assistantMessages/[]/error: new optional property (breaking)
func AgentStateFromV1(old v1.AgentState) v2.AgentState {
	return v2.AgentState{
		AssistantMessages: each(old.AssistantMessages, func(m v1.AssistantMessage) v2.AssistantMessage {
			return v2.AssistantMessage{ID: m.ID, Content: m.Content, Streaming: m.Streaming, Timestamp: m.Timestamp, CalledBrainAt: m.CalledBrainAt}
		}),
		BrainUpdatedAt:   old.BrainUpdatedAt,
		CalledBrainAt:    old.CalledBrainAt,
		ContextSummary:   old.ContextSummary,
		SummaryCutAt:     old.SummaryCutAt,
		ToolCalls:        each(old.ToolCalls, func(c v1.ToolCallRecord) v2.ToolCallRecord { return v2.ToolCallRecord(c) }),
		ToolResults:      each(old.ToolResults, func(r v1.ToolResult) v2.ToolResult { return v2.ToolResult(r) }),
		ToolkitUpdatedAt: old.ToolkitUpdatedAt,
		UserMessages:     each(old.UserMessages, func(m v1.UserMessage) v2.UserMessage { return v2.UserMessage(m) }),
		UserUpdatedAt:    old.UserUpdatedAt,
	}
}

// each returns f of every element of s, nil for nil (the state's JSON keeps
// null and [] apart).
func each[T, U any](s []T, f func(T) U) []U {
	if s == nil {
		return nil
	}
	out := make([]U, len(s))
	for i, x := range s {
		out[i] = f(x)
	}
	return out
}
