// Package migrations brings the records the persistent agent journaled under
// earlier versions of its spec up to the current version. agentgen generate
// wrote a stub for each function, once; the journal runs them as it opens
// (package automata/migrate). Like transitions, they are pure.
//
// Version 2 added the required property channel to UserMessage: where the
// user typed the message. Every message of version 1 was typed at the
// terminal, the only place the agent read them from.
//
// Version 3 added the optional property error to AssistantMessage: why a
// call of the llm failed. No message of version 2 has one: a failed call
// wrote none, and the next run made it again.
package migrations

import (
	"github.com/moora-go/moora/automata/agents/persistent/decl/v1"
	"github.com/moora-go/moora/automata/agents/persistent/decl/v2"
)

// channelV1 is where every message of version 1 was typed.
const channelV1 = "terminal"

// SendUserMessageFromV1 brings a send-user-message journaled under version 1
// of the spec up to version 2. (v2 is decl while 2 is the spec's version.)
//
// What changed (agentgen check lists it with file:line):
//
//	/message/channel: new required property (breaking)
func SendUserMessageFromV1(old v1.SendUserMessage) v2.SendUserMessage {
	return v2.SendUserMessage{Message: userMessage(old.Message)}
}

// AgentStateFromV1 brings the state of a snapshot taken under version 1 of the
// spec up to version 2. (v2 is decl while 2 is the spec's version.)
//
// What changed (agentgen check lists it with file:line):
//
//	/userMessages/[]/channel: new required property (breaking)
func AgentStateFromV1(old v1.AgentState) v2.AgentState {
	s := v2.AgentState{
		SystemPrompt:    old.SystemPrompt,
		LastSentToLlmAt: old.LastSentToLlmAt,
	}
	for _, m := range old.UserMessages {
		s.UserMessages = append(s.UserMessages, userMessage(m))
	}
	for _, m := range old.AssistantMessages {
		var calls []v2.ToolCall
		for _, c := range m.ToolCalls {
			calls = append(calls, v2.ToolCall{ID: c.ID, Name: c.Name, Input: c.Input})
		}
		s.AssistantMessages = append(s.AssistantMessages, v2.AssistantMessage{ID: m.ID, Content: m.Content, Timestamp: m.Timestamp, ToolCalls: calls})
	}
	for _, m := range old.ToolMessages {
		s.ToolMessages = append(s.ToolMessages, v2.ToolMessage{ID: m.ID, CallID: m.CallID, Content: m.Content, Timestamp: m.Timestamp})
	}
	return s
}

func userMessage(m v1.UserMessage) v2.UserMessage {
	return v2.UserMessage{ID: m.ID, Content: m.Content, Timestamp: m.Timestamp, Channel: channelV1}
}
