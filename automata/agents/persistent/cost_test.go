package persistent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/agents/persistent/decl"
	"github.com/moora-go/moora/automata/agents/persistent/impl/agent"
	"github.com/moora-go/moora/internal/allocs"
)

// TestJobsCostWhatAStateAdds: the work the agent's jobs functions and Idle
// do on a state that adds a message (the bytes they allocate) is the same
// after 1,000 exchanges as after 10. The llm's jobs function made the
// whole conversation into the llm's request on every state.
func TestJobsCostWhatAStateAdds(t *testing.T) {
	w := work{model: countingModel(), kit: newKit(t, wordCount), promptBytes: DefaultPromptBytes}
	jobs := w.jobFns()
	type costs struct{ jobs, idle uint64 }
	cost := func(exchanges int) costs {
		// A new message after the exchanges: the llm is to be called.
		s := agent.Transition(exchangesOf(exchanges), decl.SendUserMessage{Message: decl.UserMessage{
			ID: "new", Content: "one two three", Timestamp: int64(4*exchanges + 4), Channel: "terminal"}})
		if len(jobs.Llm(s.ContextOfLlm())) != 1 || Idle(s) {
			t.Fatalf("after %d exchanges, a new message calls for no llm call", exchanges)
		}
		return costs{
			jobs: allocs.Least(func() uint64 {
				return allocs.Bytes(func() {
					jobs.Llm(s.ContextOfLlm())
					jobs.Toolkit(s.ContextOfToolkit())
				})
			}),
			idle: allocs.Least(func() uint64 { return allocs.Bytes(func() { Idle(s) }) }),
		}
	}
	short, long := cost(10), cost(1000)
	t.Logf("bytes allocated after 10 exchanges: %+v; after 1,000: %+v", short, long)
	const slack = 1 << 10
	if long.jobs > short.jobs+slack {
		t.Errorf("the jobs functions allocate %d bytes after 1,000 exchanges, %d after 10", long.jobs, short.jobs)
	}
	if long.idle > short.idle+slack {
		t.Errorf("Idle allocates %d bytes after 1,000 exchanges, %d after 10", long.idle, short.idle)
	}
}

// exchangesOf is the state after n exchanges, each input through the
// agent's transition: a user message of 1 KB, the llm's call of the word
// count on it, the count, the llm's answer.
func exchangesOf(n int) decl.AgentState {
	s := agent.Definition().Initial()
	s = agent.Transition(s, decl.SetSystemPrompt{Content: "Count words."})
	text := strings.Repeat("word ", 200)
	for i := range n {
		at := int64(4 * i)
		args := fmt.Sprintf(`{"text":%q}`, text)
		for _, in := range []decl.AgentInput{
			decl.SendUserMessage{Message: decl.UserMessage{ID: fmt.Sprintf("user-%d", at), Content: text, Timestamp: at, Channel: "terminal"}},
			decl.SendAssistantMessage{Message: decl.AssistantMessage{ID: fmt.Sprintf("assistant-%d", at+1), Content: "Let me count the words of that.", Timestamp: at + 1,
				ToolCalls: []decl.ToolCall{{ID: fmt.Sprintf("call-%d", i), Name: "word-count", Input: args}}}, AnsweredUpTo: at},
			decl.SendToolMessage{Message: decl.ToolMessage{ID: fmt.Sprintf("tool-%d", i), CallID: fmt.Sprintf("call-%d", i), Content: "200", Timestamp: at + 2}},
			decl.SendAssistantMessage{Message: decl.AssistantMessage{ID: fmt.Sprintf("assistant-%d", at+3), Content: "Your message has 200 words.", Timestamp: at + 3}, AnsweredUpTo: at + 2},
		} {
			s = agent.Transition(s, in)
		}
	}
	return s
}
