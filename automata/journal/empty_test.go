package journal_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// TestEmptyListsStayEmpty: a state whose lists are empty, not nil (as an
// initial state makes them), is written as [] before a restart and after
// it, though the gob snapshot it is restored from keeps no empty slice,
// and so is its projection, what a bridge or a panel shows; a migration
// or a transition that leaves a list nil is written as [] too.
func TestEmptyListsStayEmpty(t *testing.T) {
	for name, codec := range map[string]journal.Codec[decl.AgentState, decl.AgentInput]{
		"JSON":    journal.JSON[decl.AgentState](decl.DecodeInput),
		"JSONGob": journal.JSONGob[decl.AgentState](decl.DecodeInput),
	} {
		t.Run(name, func(t *testing.T) {
			def := agent.Definition()
			def.Initial = func() decl.AgentState {
				return decl.AgentState{UserMessages: []decl.UserMessage{}, AssiMessages: []decl.AssiMessage{}}
			}
			path := filepath.Join(t.TempDir(), "agent.db")
			ctx := context.Background()
			open := func() *journal.Machine[decl.AgentState, decl.AgentInput] {
				store, err := bolt.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				m, err := journal.Open(store, def, journal.Options[decl.AgentState, decl.AgentInput]{Codec: codec})
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			show := func(s decl.AgentState) string {
				t.Helper()
				state, err := json.Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				view, err := json.Marshal(s.ContextOfUser())
				if err != nil {
					t.Fatal(err)
				}
				return string(state) + " " + string(view)
			}
			m := open()
			if err := m.Dispatch(ctx, decl.SendUserMessage{ID: "u1", Content: "hi", Timestamp: 1}); err != nil {
				t.Fatal(err)
			}
			before := show(m.Current())
			want := `{"assiMessages":[],"userMessages":[{"id":"u1","content":"hi","timestamp":1}]} {"assiMessages":[],"userMessages":[{"id":"u1","content":"hi","timestamp":1}]}`
			if before != want {
				t.Fatalf("before the restart: %s\nwant %s", before, want)
			}
			if err := m.Close(ctx); err != nil { // takes a snapshot
				t.Fatal(err)
			}
			m = open()
			defer m.Close(ctx)
			if after := show(m.Current()); after != before {
				t.Errorf("after the restart: %s\nbefore it: %s", after, before)
			}
		})
	}
	// What a hand-written migration or a transition makes of a list it
	// does not set.
	if got, err := json.Marshal(decl.AgentState{}); err != nil || string(got) != `{"assiMessages":[],"userMessages":[]}` {
		t.Errorf("the zero state encodes as %s (%v), want empty lists", got, err)
	}
}
