package reflexor

import (
	"cmp"
	"encoding/json"
	"slices"
	"sort"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/httpbridge"
)

// chat is the conversation as the AI SDK's UI message stream sees it
// (httpbridge.Chat): the user's message is a user-send-message, and the
// reply to it is what the brain and the toolkit did for it — each ask of
// the brain a step, its message a text and its tool calls tool calls with
// their results.
func chat() *httpbridge.Chat[decl.AgentState, decl.AgentInput] {
	return &httpbridge.Chat[decl.AgentState, decl.AgentInput]{
		Input:  chatInput,
		Reply:  chatReply,
		Active: chatActive,
		History: func(s decl.AgentState) []httpbridge.ChatTurn {
			replies := turns(s, 0)
			out := make([]httpbridge.ChatTurn, len(replies))
			for i, r := range replies {
				m := s.UserMessages[i]
				out[i] = httpbridge.ChatTurn{User: httpbridge.ChatMessage{ID: m.ID, Text: m.Content}, Reply: r}
			}
			return out
		},
	}
}

// chatInput is the input of the user's message m, validated as a POSTed
// one is: the spec's bounds on its id and content hold.
func chatInput(m httpbridge.ChatMessage) (decl.AgentInput, error) {
	data, err := json.Marshal(struct {
		Type      string `json:"type"`
		MessageID string `json:"messageId"`
		Content   string `json:"content"`
	}{decl.UserSendMessage{}.InputType(), m.ID, m.Text})
	if err != nil {
		return nil, err
	}
	return decl.DecodeClientInput(data)
}

// chatReply is the reply to the user's message id: what the state holds
// of the turn that message began.
func chatReply(s decl.AgentState, id string) (httpbridge.ChatReply, bool) {
	for i := len(s.UserMessages) - 1; i >= 0; i-- {
		if s.UserMessages[i].ID == id {
			return turns(s, i)[0], true
		}
	}
	return httpbridge.ChatReply{}, false
}

// chatActive is the user's newest message while its reply is under way.
func chatActive(s decl.AgentState) string {
	n := len(s.UserMessages)
	if n == 0 {
		return ""
	}
	if r := turns(s, n-1)[0]; !r.Done {
		return s.UserMessages[n-1].ID
	}
	return ""
}

// turns returns the replies to the user's messages from the from-th on.
// The turn of a user message is what the brain did for the signals from
// its time to the next user message's: the messages and tool calls whose
// calledBrainAt falls there, with the tool calls' results. It is done when
// the brain has answered its newest signal (the message, or a result of
// one of its tool calls), no message of it streams and no tool call of it
// waits. Every list of the state is in the order of its timestamps, which
// the server stamps always later, and nothing of a turn is older than its
// message: only what comes after the from-th message is read.
func turns(s decl.AgentState, from int) []httpbridge.ChatReply {
	users := s.UserMessages[from:]
	out := make([]httpbridge.ChatReply, len(users))
	if len(users) == 0 {
		return out
	}
	type turn struct {
		items   []item
		pending int
		newest  int64 // the newest signal
	}
	ts := make([]turn, len(users))
	for i, u := range users {
		out[i].ID = messageID(u.Timestamp)
		ts[i].newest = u.Timestamp
	}
	since := users[0].Timestamp
	// of is the turn of an ask for the signals up to calledBrainAt, or -1.
	of := func(calledBrainAt int64) int {
		return sort.Search(len(users), func(i int) bool { return users[i].Timestamp > calledBrainAt }) - 1
	}
	results := map[string]decl.ToolResult{}
	for _, r := range after(s.ToolResults, since, func(r decl.ToolResult) int64 { return r.Timestamp }) {
		results[r.ToolCallID] = r
	}
	for _, m := range after(s.AssistantMessages, since, func(m decl.AssistantMessage) int64 { return m.Timestamp }) {
		if t := of(m.CalledBrainAt); t >= 0 {
			ts[t].items = append(ts[t].items, item{at: m.Timestamp, message: &m})
			if m.Streaming {
				ts[t].pending++
			}
		}
	}
	for _, c := range after(s.ToolCalls, since, func(c decl.ToolCallRecord) int64 { return c.Timestamp }) {
		if t := of(c.CalledBrainAt); t >= 0 {
			it := item{at: c.Timestamp, call: &c}
			if r, ok := results[c.ID]; ok {
				it.result = &r
				ts[t].newest = max(ts[t].newest, r.Timestamp)
			} else {
				ts[t].pending++
			}
			ts[t].items = append(ts[t].items, it)
		}
	}
	for i := range ts {
		slices.SortStableFunc(ts[i].items, func(a, b item) int { return cmp.Compare(a.at, b.at) })
		parts := make([]httpbridge.ChatPart, len(ts[i].items))
		var last *decl.AssistantMessage
		for j, it := range ts[i].items {
			parts[j] = it.part()
			if it.message != nil {
				last = it.message
			}
		}
		out[i].Parts = parts
		out[i].Done = ts[i].pending == 0 && s.CalledBrainAt >= ts[i].newest
		switch stop := s.BudgetExhausted.Timestamp; {
		case !out[i].Done:
		case stop > 0 && stop >= users[i].Timestamp && (i+1 == len(users) || stop < users[i+1].Timestamp) && (last == nil || last.Timestamp < stop):
			// The brain stopped for the budget instead of answering.
			out[i].Error = "no reply: the conversation's budget is exhausted"
		case last != nil && last.Error != nil:
			out[i].Error = *last.Error // the brain's last answer failed
		}
	}
	return out
}

// item is a message or a tool call of a turn, at its time.
type item struct {
	at      int64
	message *decl.AssistantMessage
	call    *decl.ToolCallRecord
	result  *decl.ToolResult
}

func (it item) part() httpbridge.ChatPart {
	if m := it.message; m != nil {
		return httpbridge.ChatPart{Step: m.CalledBrainAt, ID: m.ID, Text: m.Content, Streaming: m.Streaming, Stream: m.ID}
	}
	c := it.call
	p := httpbridge.ChatPart{Step: c.CalledBrainAt, ID: c.ID, Tool: c.Name, Input: json.RawMessage(c.Arguments)}
	if !json.Valid(p.Input) {
		p.Input, _ = json.Marshal(c.Arguments) // as the brain wrote them
	}
	if r := it.result; r != nil {
		p.Answered = true
		if r.IsError {
			p.Err = r.Content
		} else {
			p.Output, _ = json.Marshal(r.Content)
		}
	}
	return p
}

// after returns the tail of list, in the order of time, from the first
// element at since or later.
func after[T any](list []T, since int64, time func(T) int64) []T {
	i := sort.Search(len(list), func(i int) bool { return time(list[i]) >= since })
	return list[i:]
}
