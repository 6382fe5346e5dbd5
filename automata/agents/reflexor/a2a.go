package reflexor

import (
	"sort"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/httpbridge/a2aserve"
)

// a2aFront serves the conversation over A2A (package
// automata/httpbridge/a2aserve) at agent/a2a: the conversation is one
// task, a message is the user's (user-send-message, the default mapping
// of a chat-shaped agent), and the task waits for its client
// (input-required) once the brain has replied.
func a2aFront() httpbridge.Front[decl.AgentState, decl.AgentInput, decl.ContextOfUser] {
	return a2aserve.Front[decl.AgentState](a2aConfig())
}

func a2aConfig() a2aserve.Config[decl.AgentInput, decl.ContextOfUser] {
	return a2aserve.Config[decl.AgentInput, decl.ContextOfUser]{
		Schema:      decl.InputSchema(),
		Name:        "reflexor",
		Description: "Reflexor, an assistant that answers messages and calls tools. A task is a conversation: each message of the user is answered, and the task then waits for the next (input-required).",
		Task:        a2aTask,
	}
}

// a2aTask is the conversation as a task: working while the brain answers
// the user's newest message, input-required once it has replied (the
// reply its status message); each reply written is an artifact, and the
// messages are its history.
func a2aTask(v decl.ContextOfUser) a2aserve.Status {
	var st a2aserve.Status
	type entry struct {
		at int64
		m  a2aserve.Message
	}
	var history []entry
	for _, u := range v.UserMessages {
		history = append(history, entry{u.Timestamp, a2aserve.Message{MessageID: u.ID, Role: a2aserve.RoleUser, Parts: []a2aserve.Part{{Text: u.Content}}}})
	}
	var reply *a2aserve.Message
	for _, m := range v.AssistantMessages {
		if m.Streaming {
			continue
		}
		text := m.Content
		if m.Error != nil && *m.Error != "" {
			text = "The reply failed: " + *m.Error
		} else if text != "" {
			st.Artifacts = append(st.Artifacts, a2aserve.Artifact{ArtifactID: m.ID, Name: "reply", Parts: []a2aserve.Part{{Text: text}}})
		}
		if text == "" {
			continue
		}
		msg := a2aserve.Message{MessageID: m.ID, Role: a2aserve.RoleAgent, Parts: []a2aserve.Part{{Text: text}}}
		history = append(history, entry{m.Timestamp, msg})
		reply = &msg
	}
	sort.SliceStable(history, func(i, j int) bool { return history[i].at < history[j].at })
	for _, e := range history {
		st.History = append(st.History, e.m)
	}
	n := len(v.UserMessages)
	switch {
	case n == 0:
		st.State = a2aserve.StateInputRequired
	case replied(decl.UserSendMessage{MessageID: v.UserMessages[n-1].ID}, v):
		st.State, st.Message = a2aserve.StateInputRequired, reply
		if v.BudgetExhausted.Timestamp >= v.UserMessages[n-1].Timestamp {
			st.Message = &a2aserve.Message{MessageID: "budget", Role: a2aserve.RoleAgent, Parts: []a2aserve.Part{{Text: "The conversation's budget is spent: no reply comes until it is raised."}}}
		}
	default:
		st.State = a2aserve.StateWorking
	}
	return st
}
