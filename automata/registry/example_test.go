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

// A fork by id of ann's conversation at its 12th input, for ann.
func ExampleRegistry_Fork() {
	dir, err := os.MkdirTemp("", "agents")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	fleet, err := bolt.OpenFleet(filepath.Join(dir, "agents.db"))
	if err != nil {
		panic(err)
	}
	defer fleet.Close()
	reg, err := registry.New(registry.Config[decl.AgentState, decl.AgentInput]{
		Fleet: fleet,
		Open: func(id string, s journal.Store) (*journal.Machine[decl.AgentState, decl.AgentInput], error) {
			return journal.Open(s, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
				Codec: journal.JSON[decl.AgentState](decl.DecodeInput),
			})
		},
	})
	if err != nil {
		panic(err)
	}
	defer reg.Close(ctx)
	who := registry.Identity{Name: "ann"}
	if _, err := reg.Create("ann-1", who.Name); err != nil {
		panic(err)
	}
	for i := range 15 {
		var input decl.AgentInput = decl.SendUserMessage{ID: fmt.Sprint(i + 1), Content: "hello", Timestamp: int64(i + 1)}
		if _, err := reg.Dispatch(ctx, "ann-1", input); err != nil {
			panic(err)
		}
	}
	id, info, err := reg.Fork(ctx, who, "ann-1", 12, "")
	if err != nil {
		panic(err)
	}
	a, release, err := reg.Get(ctx, id)
	if err != nil {
		panic(err)
	}
	defer release()
	fmt.Println("a fork of", info.Fork.Agent, "at", info.Fork.Seq, "owned by", info.Owner, "with", len(a.Machine().Current().UserMessages), "messages")
	// Output:
	// a fork of ann-1 at 12 owned by ann with 12 messages
}
