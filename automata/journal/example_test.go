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

// A fork of a conversation at its 12th input: a new agent on a store of its
// own, from the state after that input, the original untouched.
func ExampleMachine_Fork() {
	dir, err := os.MkdirTemp("", "fork")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	opts := journal.Options[decl.AgentState, decl.AgentInput]{Codec: journal.JSON[decl.AgentState](decl.DecodeInput)}
	open := func(name string) *journal.Machine[decl.AgentState, decl.AgentInput] {
		store, err := bolt.Open(filepath.Join(dir, name))
		if err != nil {
			panic(err)
		}
		m, err := journal.Open(store, agent.Definition(), opts)
		if err != nil {
			panic(err)
		}
		return m
	}
	m := open("agent.db")
	defer m.Close(ctx)
	for i := range 20 {
		var input decl.AgentInput = decl.SendUserMessage{ID: fmt.Sprint(i + 1), Content: fmt.Sprint("message ", i+1), Timestamp: int64(i + 1)}
		if err := m.Dispatch(ctx, input); err != nil {
			panic(err)
		}
	}
	store, err := bolt.Open(filepath.Join(dir, "fork.db")) // empty
	if err != nil {
		panic(err)
	}
	stats, err := m.Fork(12, store)
	if err != nil {
		panic(err)
	}
	store.Close()
	fork := open("fork.db")
	defer fork.Close(ctx)
	fmt.Println("forked at", stats.Seq, "writing", stats.Bytes > 0, "one record")
	fmt.Println("the fork has", len(fork.Current().UserMessages), "messages; the original", len(m.Current().UserMessages))
	// Output:
	// forked at 12 writing true one record
	// the fork has 12 messages; the original 20
}
