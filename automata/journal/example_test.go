package journal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/decl"
	"github.com/moora-go/moora/impl/agent"
)

// A generated agent (here the starter, this repository's own) on a bbolt
// journal, as the README and the generated impl/agent package show it:
// what is dispatched is on disk, and the next Open recovers it.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "agent")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	open := func() *journal.Machine[decl.AgentState, decl.AgentInput] {
		store, err := journal.OpenBolt(filepath.Join(dir, "agent.db"))
		if err != nil {
			panic(err)
		}
		m, err := journal.Open(store, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
			Codec: journal.JSONGob[decl.AgentState](decl.DecodeInput),
		})
		if err != nil {
			panic(err)
		}
		return m
	}

	m := open()
	ctx := context.Background()
	if err := m.Dispatch(ctx, decl.SendUserMessage{ID: "u1", Content: "hello", Timestamp: 1}); err != nil {
		panic(err)
	}
	fmt.Println("journaled:", m.Seq(), "under version", m.Version(), "of the spec")
	if err := m.Close(ctx); err != nil {
		panic(err)
	}

	m = open() // another run
	defer m.Close(ctx)
	fmt.Println("recovered:", m.Current().UserMessages[0].Content)
	// Output:
	// journaled: 1 under version 1 of the spec
	// recovered: hello
}
