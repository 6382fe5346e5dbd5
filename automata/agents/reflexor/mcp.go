package reflexor

import (
	"slices"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/httpbridge/mcpserve"
)

// mcpInstructions tell an MCP client (and its model) how to talk to the
// conversation.
const mcpInstructions = `A conversation with Reflexor, an assistant that streams its replies and calls tools. Send the user's message with the tool user-send-message (a messageId of your choosing, and the content); with "waitFor": "replied" the call answers once the brain has replied, with the conversation in "view". The conversation is the resource agent://self/state: read it, or subscribe to it to hear of each change.`

// mcpFront serves the conversation over MCP (package
// automata/httpbridge/mcpserve) at agent/mcp: the user's message is the
// tool user-send-message, which may wait for the reply ("replied"), and
// the user's view is the resource agent://self/state.
func mcpFront() httpbridge.Front[decl.AgentState, decl.AgentInput, decl.ContextOfUser] {
	return mcpserve.Front[decl.AgentState](mcpserve.Config[decl.AgentInput, decl.ContextOfUser]{
		Schema:       decl.InputSchema(),
		Name:         "reflexor",
		Instructions: mcpInstructions,
		Conditions: map[string]mcpserve.Condition[decl.AgentInput, decl.ContextOfUser]{
			"replied": {Description: "the brain has replied to the message sent: every tool call it made for it has its result, and its last answer is written", Holds: replied},
		},
	})
}

// replied says whether the view holds the brain's reply to the user's
// message in: every tool call of the turn it began has its result, and a
// message of the brain that answers the turn's newest signal (the message,
// or a result) is written, or failed; or the brain stopped for the budget
// after the message, and no reply comes.
func replied(in decl.AgentInput, v decl.ContextOfUser) bool {
	sent, ok := in.(decl.UserSendMessage)
	if !ok {
		return false
	}
	i := slices.IndexFunc(v.UserMessages, func(m decl.UserMessage) bool { return m.ID == sent.MessageID })
	if i < 0 {
		return false
	}
	from, to := v.UserMessages[i].Timestamp, int64(1<<62)
	if v.BudgetExhausted.Timestamp >= from {
		return true // the brain stopped for the budget: no reply comes
	}
	if i+1 < len(v.UserMessages) {
		to = v.UserMessages[i+1].Timestamp
	}
	results := map[string]int64{}
	for _, r := range after(v.ToolResults, from, func(r decl.ToolResult) int64 { return r.Timestamp }) {
		results[r.ToolCallID] = r.Timestamp
	}
	newest := from
	for _, c := range after(v.ToolCalls, from, func(c decl.ToolCallRecord) int64 { return c.Timestamp }) {
		if c.CalledBrainAt < from || c.CalledBrainAt >= to {
			continue
		}
		at, ok := results[c.ID]
		if !ok {
			return false
		}
		newest = max(newest, at)
	}
	for _, m := range after(v.AssistantMessages, from, func(m decl.AssistantMessage) int64 { return m.Timestamp }) {
		if m.CalledBrainAt >= newest && !m.Streaming {
			return true
		}
	}
	return false
}
