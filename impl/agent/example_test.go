package agent_test

import (
	"context"
	"fmt"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/decl"
	"github.com/moora-go/moora/impl/agent"
)

// The starter agent in memory, as the package documentation shows it: the
// llm's jobs (here an echo, where a model would be called) answer each user
// message, and the user's effect sees the answer in its context.
func ExampleCreate_jobs() {
	answered := make(chan string, 1)
	effects := decl.EffectFns{
		User: func(view decl.ContextOfUser, _ automata.Dispatch[decl.AgentInput]) {
			if len(view.AssiMessages) > 0 {
				select {
				case answered <- view.AssiMessages[0].Content:
				default:
				}
			}
		},
	}
	llmJobs := func(view decl.ContextOfLlm) map[string]automata.Job[decl.AgentInput] {
		if len(view.UserMessages) == 0 || len(view.AssiMessages) > 0 {
			return nil
		}
		m := view.UserMessages[0]
		return map[string]automata.Job[decl.AgentInput]{
			"re-" + m.ID: func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
				dispatch(decl.SendAssiMessage{ID: "re-" + m.ID, Content: "echo: " + m.Content, Timestamp: m.Timestamp + 1})
				return nil
			},
		}
	}
	m := agent.Create(effects, agent.WithJobs(decl.JobFns{Llm: llmJobs}))
	defer m.Close(context.Background())
	m.Dispatch(decl.SendUserMessage{ID: "u1", Content: "hi", Timestamp: 1})
	select {
	case reply := <-answered:
		fmt.Println(reply)
	case <-time.After(10 * time.Second):
		fmt.Println("no answer")
	}
	// Output:
	// echo: hi
}
