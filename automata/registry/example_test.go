package registry_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/registry"
)

// The chat test agent by id, as the package documentation shows it: created
// for an owner, activated by its first input, held with a lease.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "agents")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	owner := "ann"
	var input decl.AgentInput = decl.SendUserMessage{ID: "u1", Content: "hello", Timestamp: 1}
	jobs := decl.JobFns{Llm: func(c decl.ContextOfLlm) map[string]automata.Job[decl.AgentInput] { return nil }}

	fleet, err := bolt.OpenFleet(filepath.Join(dir, "agents.db")) // many agents, one file
	if err != nil {
		panic(err)
	}
	defer fleet.Close()
	reg, err := registry.New(registry.Config[decl.AgentState, decl.AgentInput]{
		Fleet: fleet,
		Open: func(id string, s journal.Store) (*journal.Machine[decl.AgentState, decl.AgentInput], error) {
			return journal.Open(s, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
				Codec: journal.JSON[decl.AgentState](decl.DecodeInput),
			}, agent.WithJobs(jobs))
		},
	})
	if err != nil {
		panic(err)
	}
	defer reg.Close(ctx)
	id, err := reg.Create("", owner) // a new agent, a random id
	if err != nil {
		panic(err)
	}
	seq, err := reg.Dispatch(ctx, id, input) // activates it if need be
	if err != nil {
		panic(err)
	}
	a, release, err := reg.Get(ctx, id) // hold it: a.Machine()
	if err != nil {
		panic(err)
	}
	defer release()
	fmt.Println("seq", seq, "owner", a.Info().Owner, "messages", len(a.Machine().Current().UserMessages))
	// Output:
	// seq 1 owner ann messages 1
}
