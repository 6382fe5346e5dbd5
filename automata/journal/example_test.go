package journal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// A generated agent (here the runtime's chat test agent) on a bbolt
// journal, as the README, this package's documentation and the generated
// impl/agent package show it: what is dispatched is on disk, and the next
// Open recovers it.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "agent")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	// The pieces agent.Create takes: the actors' effects and jobs (none
	// here), and an admission step that stamps the time of arrival.
	effects := decl.EffectFns{}
	jobs := decl.JobFns{}
	stamp := func(_ decl.AgentState, in decl.AgentInput) (decl.AgentInput, error) {
		if t, ok := in.(decl.Timestamped); ok {
			return t.WithTimestamp(time.Now().UnixMilli()), nil
		}
		return in, nil
	}
	open := func() *journal.Machine[decl.AgentState, decl.AgentInput] {
		store, err := bolt.Open(filepath.Join(dir, "agent.db")) // dir must exist
		if err != nil {
			panic(err)
		}
		m, err := journal.Open(store, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
			Codec: journal.JSONGob[decl.AgentState](decl.DecodeInput),
		}, agent.WithEffects(effects), agent.WithJobs(jobs), automata.WithAdmission(stamp))
		if err != nil {
			panic(err)
		}
		return m
	}

	m := open()
	ctx := context.Background()
	var input decl.AgentInput = decl.SendUserMessage{ID: "u1", Content: "hello"}
	err = m.Dispatch(ctx, input) // nil: on disk and applied; an error: not journaled
	if err != nil {
		panic(err)
	}
	fmt.Println("journaled:", m.Seq(), "under version", m.Version(), "of the spec")
	if err := m.Close(ctx); err != nil {
		panic(err)
	}

	m = open() // another run
	defer m.Close(ctx)
	msg := m.Current().UserMessages[0]
	fmt.Println("recovered:", msg.Content, "stamped:", msg.Timestamp > 0)
	// Output:
	// journaled: 1 under version 1 of the spec
	// recovered: hello stamped: true
}
