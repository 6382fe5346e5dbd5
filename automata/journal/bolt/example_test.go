package bolt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// Many agents in one bbolt file, as the package documentation shows: each
// created under its id with its owner, opened one Store at a time.
func ExampleOpenFleet() {
	dir, err := os.MkdirTemp("", "agents")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	opts := journal.Options[decl.AgentState, decl.AgentInput]{Codec: journal.JSON[decl.AgentState](decl.DecodeInput)}

	fleet, err := bolt.OpenFleet(filepath.Join(dir, "agents.db"))
	if err != nil {
		panic(err)
	}
	defer fleet.Close()
	err = fleet.Create("ann-1", journal.AgentInfo{Owner: "ann", Created: time.Now()})
	if err != nil {
		panic(err)
	}
	store, err := fleet.Open("ann-1") // ErrInUse while it is open
	if err != nil {
		panic(err)
	}
	m, err := journal.Open(store, agent.Definition(), opts)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := m.Dispatch(ctx, decl.SendUserMessage{ID: "u1", Content: "hello", Timestamp: 1}); err != nil {
		panic(err)
	}
	if err := m.Close(ctx); err != nil { // closes the agent's store too
		panic(err)
	}
	info, err := fleet.Info("ann-1")
	if err != nil {
		panic(err)
	}
	fmt.Println("ann-1 belongs to", info.Owner)
	// Output:
	// ann-1 belongs to ann
}
