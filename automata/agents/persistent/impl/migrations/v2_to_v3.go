package migrations

import (
	"github.com/moora-go/moora/automata/agents/persistent/decl/v2"
	"github.com/moora-go/moora/automata/agents/persistent/decl/v3"
)

// AgentStateFromV2 brings the state of a snapshot taken under version 2 of the
// spec up to version 3. (v3 is decl while 3 is the spec's version.)
//
// What changed (agentgen check lists it with file:line):
//
//	/assistantMessages/[]/error: new optional property (breaking)
func AgentStateFromV2(old v2.AgentState) v3.AgentState {
	return v3.AgentState{
		AssistantMessages: each(old.AssistantMessages, func(m v2.AssistantMessage) v3.AssistantMessage {
			return v3.AssistantMessage{ID: m.ID, Content: m.Content, Timestamp: m.Timestamp,
				ToolCalls: each(m.ToolCalls, func(c v2.ToolCall) v3.ToolCall { return v3.ToolCall(c) })}
		}),
		LastSentToLlmAt: old.LastSentToLlmAt,
		SystemPrompt:    old.SystemPrompt,
		ToolMessages:    each(old.ToolMessages, func(m v2.ToolMessage) v3.ToolMessage { return v3.ToolMessage(m) }),
		UserMessages:    each(old.UserMessages, func(m v2.UserMessage) v3.UserMessage { return v3.UserMessage(m) }),
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
