package persistent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/agents/persistent/decl"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
)

// Message is one message of the conversation, whoever wrote it.
type Message struct {
	Role      string // "user", "assistant" or "tool"
	ID        string
	Content   string
	Timestamp int64
	ToolCalls []decl.ToolCall // assistant messages
	CallID    string          // tool messages
	// Error is why the call of the llm failed, for an assistant message
	// that is a failed reply (its Content is empty); "" for the others.
	Error string
}

// work is the injected side of the agent: the llm, the tools and a clock.
type work struct {
	model       llm.Model
	kit         *toolkit.Kit
	tools       []llm.Tool // kit.LLMTools(), what every request offers
	now         func() time.Time
	promptBytes int // see Prompt
	// logger logs the failed calls of the llm; nil: slog.Default().
	logger *slog.Logger
}

// DefaultPromptBytes is how much of the conversation the llm is sent by
// default (Config.PromptBytes): about 32,000 tokens of English.
const DefaultPromptBytes = 128 << 10

// jobFns returns the work each actor calls for, each on its own context
// (agent.WithJobs prefixes the keys with the actor's name):
//
//  1. the toolkit: every tool call of the newest assistant message that
//     has no result yet, each a job of its own, keyed
//     toolkit/tool-{assistantMessageId}-{toolCallId}, so that the calls a
//     model makes at once run at once, within the kit's limits;
//  2. the llm, unless a tool call is pending: a call of the llm if user or
//     tool messages are newer than lastSentToLLMAt, keyed
//     llm/llm-{lastMessageId};
//  3. otherwise nothing: the agent is idle.
//
// Both are pure functions of their context: a restored state asks for the
// same jobs, under the same keys.
func (w work) jobFns() decl.JobFns {
	return decl.JobFns{Llm: w.llmJobs, Toolkit: w.toolkitJobs}
}

func (w work) toolkitJobs(c decl.ContextOfToolkit) map[string]automata.Job[decl.AgentInput] {
	if len(c.AssistantMessages) == 0 {
		return nil
	}
	newest := c.AssistantMessages[len(c.AssistantMessages)-1] // kept sorted by timestamp
	var jobs map[string]automata.Job[decl.AgentInput]
	for _, call := range newest.ToolCalls {
		if answered(newest, call, c.ToolMessages) {
			continue
		}
		if jobs == nil {
			jobs = map[string]automata.Job[decl.AgentInput]{}
		}
		jobs[fmt.Sprintf("tool-%s-%s", newest.ID, call.ID)] = w.toolJob(newest, call)
	}
	return jobs
}

func (w work) llmJobs(c decl.ContextOfLlm) map[string]automata.Job[decl.AgentInput] {
	if toolCallPending(c.AssistantMessages, c.ToolMessages) {
		return nil // the tools' results first
	}
	if last, ok := pendingLLMCall(c); ok {
		key := "llm-" + last.ID
		return map[string]automata.Job[decl.AgentInput]{key: w.llmJob(key, c, last.Timestamp)}
	}
	return nil
}

// keys returns the keys of the jobs s calls for, as the machine knows them:
// prefixed with their actor's name.
func (w work) keys(s decl.AgentState) map[string]bool {
	keys := map[string]bool{}
	for key := range w.llmJobs(s.ContextOfLlm()) {
		keys["llm/"+key] = true
	}
	for key := range w.toolkitJobs(s.ContextOfToolkit()) {
		keys["toolkit/"+key] = true
	}
	return keys
}

// Idle reports whether the state s calls for no work: no tool call of the
// newest assistant message lacks its result, and the llm has answered
// every user and tool message. An agent that is idle has answered
// everything it was sent.
func Idle(s decl.AgentState) bool {
	if toolCallPending(s.AssistantMessages, s.ToolMessages) {
		return false
	}
	_, ok := pendingLLMCall(s.ContextOfLlm())
	return !ok
}

// toolCallPending reports whether a tool call of the newest assistant
// message has no result yet.
func toolCallPending(assistant []decl.AssistantMessage, results []decl.ToolMessage) bool {
	if len(assistant) == 0 {
		return false
	}
	newest := assistant[len(assistant)-1] // kept sorted by timestamp
	for _, call := range newest.ToolCalls {
		if !answered(newest, call, results) {
			return true
		}
	}
	return false
}

// answered reports whether call, of the assistant message msg, has its
// result among results. A result is stamped after the message that asked
// for it (Stamp), and results are kept sorted by time: it is looked for
// among the results from msg's time on, the newest messages, from the end,
// so that the cost follows the calls of msg, not the conversation.
func answered(msg decl.AssistantMessage, call decl.ToolCall, results []decl.ToolMessage) bool {
	for i := len(results) - 1; i >= 0 && results[i].Timestamp >= msg.Timestamp; i-- {
		if results[i].CallID == call.ID {
			return true
		}
	}
	return false
}

// pendingLLMCall returns the newest user or tool message, if it is newer
// than lastSentToLLMAt: the llm is to be called with the conversation up
// to it. Each list is kept sorted by time, so it is the last of one of
// them: of the two, the one Conversation puts last (a tool message after
// a user message of the same time).
func pendingLLMCall(c decl.ContextOfLlm) (Message, bool) {
	var last Message
	if n := len(c.UserMessages); n > 0 {
		last = userMessage(c.UserMessages[n-1])
	}
	if n := len(c.ToolMessages); n > 0 && (last.Role == "" || c.ToolMessages[n-1].Timestamp >= last.Timestamp) {
		last = toolMessage(c.ToolMessages[n-1])
	}
	if last.Role == "" || last.Timestamp <= c.LastSentToLlmAt {
		return Message{}, false
	}
	return last, true
}

// Prompt returns the conversation the llm is sent when it is called up to
// time upTo: the messages up to then, in the order of Conversation, but
// only the newest of them, from a user message on, that take up to budget
// bytes (Message.Size); if the messages from the newest user message on
// take more, those. A conversation that takes up to budget is sent whole;
// a longer one, from where it fits, so that neither the llm's input nor
// the work of a call grows with the conversation.
func Prompt(c decl.ContextOfLlm, upTo int64, budget int) []Message {
	// The messages of each list up to upTo: c.UserMessages[:u] and so on.
	u := sort.Search(len(c.UserMessages), func(i int) bool { return c.UserMessages[i].Timestamp > upTo })
	a := sort.Search(len(c.AssistantMessages), func(i int) bool { return c.AssistantMessages[i].Timestamp > upTo })
	t := sort.Search(len(c.ToolMessages), func(i int) bool { return c.ToolMessages[i].Timestamp > upTo })
	var newestFirst []Message
	keep, size := -1, 0 // the window is newestFirst[:keep]
	for u > 0 || a > 0 || t > 0 {
		// The message Conversation puts last of those left: the newest;
		// of the same time, a tool message, then an assistant message.
		var m Message
		switch {
		case t > 0 && (a == 0 || c.ToolMessages[t-1].Timestamp >= c.AssistantMessages[a-1].Timestamp) && (u == 0 || c.ToolMessages[t-1].Timestamp >= c.UserMessages[u-1].Timestamp):
			t--
			m = toolMessage(c.ToolMessages[t])
		case a > 0 && (u == 0 || c.AssistantMessages[a-1].Timestamp >= c.UserMessages[u-1].Timestamp):
			a--
			m = assistantMessage(c.AssistantMessages[a])
		default:
			u--
			m = userMessage(c.UserMessages[u])
		}
		size += m.Size()
		if size > budget && keep >= 0 {
			break // what is kept fits; more would not
		}
		newestFirst = append(newestFirst, m)
		if m.Role == "user" {
			keep = len(newestFirst)
			if size > budget {
				break // the newest user message on: more than budget, but sent
			}
		}
	}
	if u == 0 && a == 0 && t == 0 && (size <= budget || keep < 0) {
		keep = len(newestFirst) // all of it
	}
	window := newestFirst[:keep]
	slices.Reverse(window)
	return window
}

// messageBytes is what a message takes of the prompt besides its text and
// its tool calls: its role, its place.
const messageBytes = 32

// Size is what the message takes of the prompt: its text, its tool calls,
// and 32 bytes for its role and place.
func (m Message) Size() int {
	n := messageBytes + len(m.Content)
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Input)
	}
	return n
}

// request is the llm call for the conversation conv. Each tool result goes
// right after the assistant message that asked for it, in the order of its
// calls (not of their results, which parallel calls give in any order), as
// chat APIs require: a user message typed while a tool ran comes after the
// results, not between the call and its result.
func (w work) request(system string, conv []Message) llm.Request {
	req := llm.Request{System: system, Tools: w.tools}
	results := map[string]Message{}
	for _, m := range conv {
		if m.Role == "tool" {
			results[m.CallID] = m
		}
	}
	for _, m := range conv {
		switch m.Role {
		case "user":
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: m.Content})
		case "assistant":
			if m.Error != "" {
				continue // a failed reply: the llm wrote nothing
			}
			msg := llm.Message{Role: llm.RoleAssistant, Content: m.Content}
			for _, c := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: json.RawMessage(c.Input)})
			}
			req.Messages = append(req.Messages, msg)
			for _, c := range m.ToolCalls {
				if r, ok := results[c.ID]; ok {
					req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Content: r.Content})
				}
			}
		}
	}
	return req
}

// Conversation returns every message, oldest first: of the same time, user
// messages, then assistant messages, then tool messages.
func Conversation(user []decl.UserMessage, assistant []decl.AssistantMessage, tool []decl.ToolMessage) []Message {
	var conv []Message
	for _, m := range user {
		conv = append(conv, userMessage(m))
	}
	for _, m := range assistant {
		conv = append(conv, assistantMessage(m))
	}
	for _, m := range tool {
		conv = append(conv, toolMessage(m))
	}
	slices.SortStableFunc(conv, func(a, b Message) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
	return conv
}

func userMessage(m decl.UserMessage) Message {
	return Message{Role: "user", ID: m.ID, Content: m.Content, Timestamp: m.Timestamp}
}

func assistantMessage(m decl.AssistantMessage) Message {
	msg := Message{Role: "assistant", ID: m.ID, Content: m.Content, Timestamp: m.Timestamp, ToolCalls: m.ToolCalls}
	if m.Error != nil {
		msg.Error = *m.Error
	}
	return msg
}

func toolMessage(m decl.ToolMessage) Message {
	return Message{Role: "tool", ID: m.ID, Content: m.Content, Timestamp: m.Timestamp, CallID: m.CallID}
}

// llmJob calls the llm with the conversation of c up to upTo (Prompt),
// under the job's key as the idempotency key, and hands in its reply.
//
// A call that fails (a wrong key, no server, a limit of the provider, an
// HTTP error, a timeout, a broken connection, a reply the provider's
// content filter withheld) is logged and handed in as the reply too: a
// failed one, whose Error says why, with no content. The llm has answered
// up to upTo, and the user sees the failure at once; the next message is
// answered as any other. A call cut short by its context (the agent
// closing) hands in nothing: the state still calls for it, and the next
// run of the agent makes it again.
func (w work) llmJob(key string, c decl.ContextOfLlm, upTo int64) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		call := w.request(c.SystemPrompt, Prompt(c, upTo, w.promptBytes))
		call.IdempotencyKey = automata.JobKey(ctx)
		resp, err := w.model.Complete(ctx, call, nil)
		if err == nil && resp.FinishReason == llm.FinishContentFilter {
			err = errContentFilter
		}
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("llm: %w", err)
		}
		if err != nil {
			why := reason(fmt.Errorf("llm: %w", err))
			w.log().LogAttrs(ctx, slog.LevelWarn, "persistent: the call of the llm failed",
				slog.String("moora.job.key", call.IdempotencyKey), slog.String("error", err.Error()))
			dispatch(decl.SendAssistantMessage{
				Message:      decl.AssistantMessage{ID: "assistant-" + key, Timestamp: w.after(upTo), Error: &why},
				AnsweredUpTo: upTo,
			})
			return nil
		}
		var calls []decl.ToolCall
		for _, c := range resp.ToolCalls {
			calls = append(calls, decl.ToolCall{ID: c.ID, Name: c.Name, Input: string(c.Arguments)})
		}
		dispatch(decl.SendAssistantMessage{
			Message: decl.AssistantMessage{
				ID:        "assistant-" + key,
				Content:   resp.Text,
				Timestamp: w.after(upTo),
				ToolCalls: calls,
			},
			AnsweredUpTo: upTo,
		})
		return nil
	}
}

// errContentFilter is the error of a reply that the provider's content
// filter withheld.
var errContentFilter = errors.New("the provider's content filter withheld the reply")

// maxReason bounds what a failed reply says of its error, in characters.
const maxReason = 1000

// reason is what a failed reply says of err: its message, on one line, cut
// to maxReason characters.
func reason(err error) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(err.Error(), "\uFFFD")), " ")
	if utf8.RuneCountInString(s) > maxReason {
		s = string([]rune(s)[:maxReason-1]) + "…"
	}
	return s
}

func (w work) log() *slog.Logger {
	if w.logger != nil {
		return w.logger
	}
	return slog.Default()
}

// toolJob runs call, of the assistant message msg, with the kit, under the
// job's key as the idempotency key, and hands in what the llm is to be told
// of it: its output, or why it failed. The kit says why a call is refused
// (no such tool, arguments that do not match its schema, a permission), so
// that the llm can correct itself; a job that is cancelled reports nothing.
func (w work) toolJob(msg decl.AssistantMessage, call decl.ToolCall) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		r := w.kit.Run(ctx, toolkit.Call{ID: call.ID, Name: call.Name, Arguments: json.RawMessage(call.Input), Key: automata.JobKey(ctx)})
		if r.Kind == toolkit.KindCancelled {
			return ctx.Err()
		}
		dispatch(decl.SendToolMessage{Message: decl.ToolMessage{
			ID:        "tool-" + call.ID,
			CallID:    call.ID,
			Content:   r.Content(),
			Timestamp: w.after(msg.Timestamp),
		}})
		return nil
	}
}

// stamp is the agent's admission step: every message is stamped after the
// newest message the state holds, so that no two messages share a time. A
// user message gets the time it arrives, and the id user-{time} when it has
// none; one whose id a user message of the conversation has already is
// refused (a client that gives ids gives each message its own). An
// assistant or tool message keeps the time its job gave it unless that is
// not after the newest. Two lines typed in one millisecond are two
// messages, each newer than the last one sent to the llm: the llm's answer
// to the first is not taken for an answer to the second, and each call of
// the llm gets its own key.
func (w work) stamp(s decl.AgentState, in decl.AgentInput) (decl.AgentInput, error) {
	after := newest(s) + 1
	switch in := in.(type) {
	case decl.SendUserMessage:
		in.Message.Timestamp = max(w.now().UnixMilli(), after)
		if in.Message.ID == "" {
			in.Message.ID = fmt.Sprintf("user-%d", in.Message.Timestamp)
		} else if slices.ContainsFunc(s.UserMessages, func(m decl.UserMessage) bool { return m.ID == in.Message.ID }) {
			return nil, fmt.Errorf("a user message with id %q is in the conversation already", in.Message.ID)
		}
		return in, nil
	case decl.SendAssistantMessage:
		in.Message.Timestamp = max(in.Message.Timestamp, after)
		return in, nil
	case decl.SendToolMessage:
		in.Message.Timestamp = max(in.Message.Timestamp, after)
		return in, nil
	}
	return in, nil
}

// newest is the time of the newest message of s; each list is kept sorted
// by time.
func newest(s decl.AgentState) int64 {
	var t int64
	if n := len(s.UserMessages); n > 0 {
		t = max(t, s.UserMessages[n-1].Timestamp)
	}
	if n := len(s.AssistantMessages); n > 0 {
		t = max(t, s.AssistantMessages[n-1].Timestamp)
	}
	if n := len(s.ToolMessages); n > 0 {
		t = max(t, s.ToolMessages[n-1].Timestamp)
	}
	return t
}

// after returns the current time in Unix milliseconds, but always after t:
// the conversation stays in order even if the clock steps back.
func (w work) after(t int64) int64 {
	return max(w.now().UnixMilli(), t+1)
}
