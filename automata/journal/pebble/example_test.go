package pebble_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/pebble"
)

// One agent's journal in a directory of its own: an input dispatched, the
// process gone, and the next Open recovers it.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "agent")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	opts := journal.Options[decl.AgentState, decl.AgentInput]{Codec: journal.JSON[decl.AgentState](decl.DecodeInput)}
	for run := range 2 {
		store, err := pebble.Open(filepath.Join(dir, "journal")) // a directory
		if err != nil {
			panic(err)
		}
		m, err := journal.Open(store, agent.Definition(), opts)
		if err != nil {
			panic(err)
		}
		if run == 0 {
			err = m.Dispatch(context.Background(), decl.SendUserMessage{ID: "m1", Content: "hi", Timestamp: 1})
			if err != nil {
				panic(err)
			}
		}
		fmt.Printf("run %d: %d inputs, %d user messages\n", run, m.Seq(), len(m.Current().UserMessages))
		if err := m.Close(context.Background()); err != nil {
			panic(err)
		}
	}
	// Output:
	// run 0: 1 inputs, 1 user messages
	// run 1: 1 inputs, 1 user messages
}

// Many agents in one pebble database, as the package documentation shows:
// each created under its id with its owner, opened one Store at a time.
func ExampleOpenFleet() {
	dir, err := os.MkdirTemp("", "agents")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	opts := journal.Options[decl.AgentState, decl.AgentInput]{Codec: journal.JSON[decl.AgentState](decl.DecodeInput)}

	fleet, err := pebble.OpenFleet(filepath.Join(dir, "agents")) // a directory
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
	err = m.Dispatch(context.Background(), decl.SendUserMessage{ID: "m1", Content: "hi", Timestamp: 1})
	if err != nil {
		panic(err)
	}
	if err := m.Close(context.Background()); err != nil {
		panic(err)
	}
	info, err := fleet.Info("ann-1")
	fmt.Println(info.Owner, err, fleet.Stats().Appends)
	// Output: ann <nil> 1
}
