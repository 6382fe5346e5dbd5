package persistent

import (
	"slices"

	"github.com/moora-go/moora/automata/agents/persistent/decl"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/httpbridge/mcpserve"
)

// mcpInstructions tell an MCP client (and its model) how to talk to the
// agent.
const mcpInstructions = `A conversation with an assistant that calls tools and survives crashes. Send the user's message with the tool send-user-message; with "waitFor": "replied" the call answers once the assistant has replied, with the conversation in "view". The conversation is the resource agent://self/state: read it, or subscribe to it to hear of each change.`

// mcpFront serves the agent over MCP (package
// automata/httpbridge/mcpserve) at the handler's mcp: the user's message is
// the tool send-user-message, which may wait for the reply ("replied"), and
// the user's view is the resource agent://self/state.
func mcpFront() httpbridge.Front[decl.AgentState, decl.AgentInput, decl.ContextOfUser] {
	return mcpserve.Front[decl.AgentState](mcpserve.Config[decl.AgentInput, decl.ContextOfUser]{
		Schema:       decl.InputSchema(),
		Name:         "persistent",
		Instructions: mcpInstructions,
		Conditions: map[string]mcpserve.Condition[decl.AgentInput, decl.ContextOfUser]{
			"replied": {Description: "the assistant has replied to the message sent: a message of it after the user's that calls no tool, or that failed", Holds: replied},
		},
	})
}

// replied says whether the view holds the assistant's reply to the user's
// message in: a message of the assistant after it that calls no tool (its
// answer), or that failed.
func replied(in decl.AgentInput, v decl.ContextOfUser) bool {
	sent, ok := in.(decl.SendUserMessage)
	if !ok {
		return false
	}
	i := slices.IndexFunc(v.UserMessages, func(m decl.UserMessage) bool { return m.ID == sent.Message.ID })
	if i < 0 {
		return false
	}
	at := v.UserMessages[i].Timestamp
	for j := len(v.AssistantMessages) - 1; j >= 0 && v.AssistantMessages[j].Timestamp >= at; j-- {
		if m := v.AssistantMessages[j]; len(m.ToolCalls) == 0 || m.Error != nil {
			return true
		}
	}
	return false
}
