package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/examples/persistent/decl"
)

// LLM answers a conversation. key is the job's key (llm-{lastMessageId}),
// the same after a restart: send it as the idempotency key of the call.
type LLM interface {
	Reply(ctx context.Context, key string, req Request) (Reply, error)
}

// Request is what the llm is sent: the system prompt and the conversation,
// oldest first.
type Request struct {
	SystemPrompt string
	Messages     []Message
}

// Message is one message of the conversation, whoever wrote it.
type Message struct {
	Role      string // "user", "assistant" or "tool"
	ID        string
	Content   string
	Timestamp int64
	ToolCalls []decl.ToolCall // assistant messages
	CallID    string          // tool messages
}

// Reply is the llm's answer, which may ask for tool calls.
type Reply struct {
	Content   string
	ToolCalls []decl.ToolCall
}

// Tool runs one tool call. key is the job's key
// (tool-{assistantMessageId}-{toolCallId}): its idempotency key.
type Tool func(ctx context.Context, key, input string) (string, error)

// Work is the injected side of the agent: the llm, the tools and a clock.
type Work struct {
	LLM   LLM
	Tools map[string]Tool
	Now   func() time.Time
}

// Jobs returns the work the state calls for:
//
//  1. the earliest unfulfilled tool call of the newest assistant message
//     after lastSentToLLMAt, keyed tool-{assistantMessageId}-{toolCallId};
//  2. otherwise, if user or tool messages are newer than lastSentToLLMAt, a
//     call of the llm, keyed llm-{lastMessageId};
//  3. otherwise nothing: the agent is idle.
//
// It is a pure function of state: a restored state asks for the same jobs,
// under the same keys.
func (w Work) Jobs(s decl.AgentState) map[string]automata.Job[decl.AgentInput] {
	if msg, call, ok := pendingToolCall(s); ok {
		key := fmt.Sprintf("tool-%s-%s", msg.ID, call.ID)
		return map[string]automata.Job[decl.AgentInput]{key: w.toolJob(key, msg, call)}
	}
	if req, last, ok := pendingLLMCall(s); ok {
		key := "llm-" + last.ID
		return map[string]automata.Job[decl.AgentInput]{key: w.llmJob(key, req, last.Timestamp)}
	}
	return nil
}

// Idle reports whether the state calls for no work.
func (w Work) Idle(s decl.AgentState) bool { return len(w.Jobs(s)) == 0 }

func pendingToolCall(s decl.AgentState) (decl.AssistantMessage, decl.ToolCall, bool) {
	if len(s.AssistantMessages) == 0 {
		return decl.AssistantMessage{}, decl.ToolCall{}, false
	}
	newest := s.AssistantMessages[len(s.AssistantMessages)-1] // kept sorted by timestamp
	if newest.Timestamp <= s.LastSentToLlmAt {
		return decl.AssistantMessage{}, decl.ToolCall{}, false
	}
	for _, call := range newest.ToolCalls { // in the order the llm asked
		if !slices.ContainsFunc(s.ToolMessages, func(m decl.ToolMessage) bool { return m.CallID == call.ID }) {
			return newest, call, true
		}
	}
	return decl.AssistantMessage{}, decl.ToolCall{}, false
}

func pendingLLMCall(s decl.AgentState) (Request, Message, bool) {
	conv := Conversation(s)
	if len(conv) == 0 {
		return Request{}, Message{}, false
	}
	var last Message
	newer := false
	for _, m := range conv {
		if m.Role != "assistant" && m.Timestamp > s.LastSentToLlmAt {
			newer, last = true, m
		}
	}
	if !newer {
		return Request{}, Message{}, false
	}
	sent := slices.DeleteFunc(conv, func(m Message) bool { return m.Timestamp > last.Timestamp })
	return Request{SystemPrompt: s.SystemPrompt, Messages: sent}, last, true
}

// Conversation returns every message of the state, oldest first.
func Conversation(s decl.AgentState) []Message {
	var conv []Message
	for _, m := range s.UserMessages {
		conv = append(conv, Message{Role: "user", ID: m.ID, Content: m.Content, Timestamp: m.Timestamp})
	}
	for _, m := range s.AssistantMessages {
		conv = append(conv, Message{Role: "assistant", ID: m.ID, Content: m.Content, Timestamp: m.Timestamp, ToolCalls: m.ToolCalls})
	}
	for _, m := range s.ToolMessages {
		conv = append(conv, Message{Role: "tool", ID: m.ID, Content: m.Content, Timestamp: m.Timestamp, CallID: m.CallID})
	}
	slices.SortStableFunc(conv, func(a, b Message) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
	return conv
}

func (w Work) llmJob(key string, req Request, upTo int64) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		reply, err := w.LLM.Reply(ctx, key, req)
		if err != nil {
			return fmt.Errorf("llm: %w", err)
		}
		dispatch(decl.SendAssistantMessage{
			Message: decl.AssistantMessage{
				ID:        "assistant-" + key,
				Content:   reply.Content,
				Timestamp: w.after(upTo),
				ToolCalls: reply.ToolCalls,
			},
			AnsweredUpTo: upTo,
		})
		return nil
	}
}

func (w Work) toolJob(key string, msg decl.AssistantMessage, call decl.ToolCall) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		tool, ok := w.Tools[call.Name]
		var out string
		if !ok {
			out = fmt.Sprintf("error: no tool named %q", call.Name)
		} else {
			var err error
			if out, err = tool(ctx, key, call.Input); err != nil {
				if ctx.Err() != nil {
					return err // cancelled: nothing to report
				}
				out = "error: " + err.Error()
			}
		}
		dispatch(decl.SendToolMessage{Message: decl.ToolMessage{
			ID:        "tool-" + call.ID,
			CallID:    call.ID,
			Content:   out,
			Timestamp: w.after(msg.Timestamp),
		}})
		return nil
	}
}

// after returns the current time in Unix milliseconds, but always after t:
// the conversation stays in order even if the clock steps back.
func (w Work) after(t int64) int64 {
	return max(w.Now().UnixMilli(), t+1)
}
