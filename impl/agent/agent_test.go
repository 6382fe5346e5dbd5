package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/decl"
	"github.com/moora-go/moora/impl/agent"
)

// echo is an llm effect that answers the last user message, if it has no
// answer yet, by dispatching from the effect itself.
func echo(view decl.ContextOfLlm, dispatch automata.Dispatch[decl.AgentInput]) {
	if n := len(view.UserMessages); n > len(view.AssiMessages) {
		m := view.UserMessages[n-1]
		dispatch(decl.SendAssiMessage{ID: "re-" + m.ID, Content: "echo: " + m.Content, Timestamp: m.Timestamp + 1})
	}
}

func closeAgent(t *testing.T, m *agent.Machine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Error(err)
	}
}

// TestStarterAgent drives the repository's agent: a user message goes in,
// the injected llm effect replies, and the state holds both messages.
func TestStarterAgent(t *testing.T) {
	var seen []decl.ContextOfUser
	m := agent.Create(decl.EffectFns{
		User: func(view decl.ContextOfUser, _ automata.Dispatch[decl.AgentInput]) { seen = append(seen, view) },
		Llm:  echo,
	}, automata.WithPurityCheck[decl.AgentState, decl.AgentInput]())
	defer closeAgent(t, m)

	// Dispatch from one goroutine is synchronous: when it returns, the input
	// and everything the effects dispatched in response have been applied.
	m.Dispatch(decl.SendUserMessage{ID: "u1", Content: "hello", Timestamp: 100})
	got := m.Current()
	want := decl.AgentState{
		UserMessages: []decl.UserMessage{{ID: "u1", Content: "hello", Timestamp: 100}},
		AssiMessages: []decl.AssiMessage{{ID: "re-u1", Content: "echo: hello", Timestamp: 101}},
	}
	if !slices.Equal(got.UserMessages, want.UserMessages) || !slices.Equal(got.AssiMessages, want.AssiMessages) {
		t.Fatalf("state = %+v, want %+v", got, want)
	}
	// The user's effect saw its context: the initial one, then the reply.
	last := seen[len(seen)-1]
	if len(last.UserMessages) != 1 || len(last.AssiMessages) != 1 || last.AssiMessages[0].Content != "echo: hello" {
		t.Errorf("the user's last context = %+v", last)
	}
}

// TestStarterIsPure checks the hand-written transitions with
// automata.CheckPure: none writes into the state it was given (a plain
// append would, once a slice has room: at the fourth message of a kind), and
// each is deterministic.
func TestStarterIsPure(t *testing.T) {
	var inputs []decl.AgentInput
	for i := range 6 {
		id := fmt.Sprint(i)
		inputs = append(inputs,
			decl.SendUserMessage{ID: "u" + id, Content: "question " + id, Timestamp: int64(2 * i)},
			decl.SendAssiMessage{ID: "a" + id, Content: "answer " + id, Timestamp: int64(2*i + 1)},
		)
	}
	if err := automata.CheckPure(agent.Definition(), inputs...); err != nil {
		t.Fatal(err)
	}
}

// TestTransitionRoutes checks that each input reaches its actor's state only.
func TestTransitionRoutes(t *testing.T) {
	s := agent.Initial()
	s = agent.Transition(s, decl.SendAssiMessage{ID: "a1", Content: "first", Timestamp: 1})
	if len(s.AssiMessages) != 1 || len(s.UserMessages) != 0 {
		t.Fatalf("after send-assi-message: %+v", s)
	}
	defer func() {
		if recover() == nil {
			t.Error("Transition of a nil input did not panic")
		}
	}()
	agent.Transition(s, nil)
}

// TestDurableStarter builds the durable agent from the same pieces as
// Create, as the package doc shows: the conversation survives a restart.
func TestDurableStarter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	open := func() (*journal.Machine[decl.AgentState, decl.AgentInput], func()) {
		store, err := journal.OpenBolt(path)
		if err != nil {
			t.Fatal(err)
		}
		m, err := journal.Open(store, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
			Codec: journal.JSON[decl.AgentState](decl.DecodeInput),
		}, automata.WithEffect(agent.Effect(decl.EffectFns{Llm: echo})))
		if err != nil {
			t.Fatal(err)
		}
		return m, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := m.Close(ctx); err != nil {
				t.Error(err)
			}
			if err := store.Close(); err != nil {
				t.Error(err)
			}
		}
	}
	m, closeIt := open()
	if err := m.Dispatch(context.Background(), decl.SendUserMessage{ID: "u1", Content: "hello", Timestamp: 1}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(m.Current().AssiMessages) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	closeIt()

	m, closeIt = open()
	defer closeIt()
	s := m.Current()
	if len(s.UserMessages) != 1 || len(s.AssiMessages) != 1 || s.AssiMessages[0].Content != "echo: hello" {
		t.Errorf("state after a restart = %+v", s)
	}
}

// A chat of one message: the llm's effect, injected at Create, answers it.
func ExampleCreate() {
	m := agent.Create(decl.EffectFns{Llm: echo})
	defer m.Close(context.Background())
	m.Dispatch(decl.SendUserMessage{ID: "u1", Content: "hello", Timestamp: 1})
	for _, msg := range m.Current().AssiMessages {
		fmt.Println(msg.Content)
	}
	// Output: echo: hello
}
