package agent_test

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
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
		store, err := bolt.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		m, err := journal.Open(store, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
			Codec: journal.JSON[decl.AgentState](decl.DecodeInput),
		}, agent.WithEffects(decl.EffectFns{Llm: echo}))
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

// TestPerActorJobs gives the llm its replies through jobs: its jobs function
// sees only the llm's context, each job's key is the llm's key prefixed with
// "llm/", the reply a job dispatches lands in the state, and a job that
// completed is not started again when later inputs reconcile the jobs.
func TestPerActorJobs(t *testing.T) {
	var (
		mu      sync.Mutex
		jobKeys []string           // automata.JobKey of each job run, in order
		started = map[string]int{} // EffectStarted events by key
	)
	completed := make(chan string, 16) // the keys of EffectCompleted events
	var reply decl.JobsFnOfLlm = func(view decl.ContextOfLlm) map[string]automata.Job[decl.AgentInput] {
		answered := make(map[string]bool, len(view.AssiMessages))
		for _, a := range view.AssiMessages {
			answered[a.ID] = true
		}
		jobs := map[string]automata.Job[decl.AgentInput]{}
		for _, msg := range view.UserMessages {
			id := "re-" + msg.ID
			if answered[id] {
				continue
			}
			jobs[id] = func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
				mu.Lock()
				jobKeys = append(jobKeys, automata.JobKey(ctx))
				mu.Unlock()
				dispatch(decl.SendAssiMessage{ID: id, Content: "job: " + msg.Content, Timestamp: msg.Timestamp + 1})
				return nil
			}
		}
		return jobs
	}
	m := agent.Create(decl.EffectFns{},
		agent.WithJobs(decl.JobFns{Llm: reply}),
		automata.WithEvents(func(e automata.Event[decl.AgentState, decl.AgentInput]) {
			switch e.Kind {
			case automata.EffectStarted:
				mu.Lock()
				started[e.Key]++
				mu.Unlock()
			case automata.EffectCompleted:
				completed <- e.Key
			case automata.EffectFailed, automata.EffectCancelled:
				t.Errorf("%v", e)
			}
		}),
		automata.WithPurityCheck[decl.AgentState, decl.AgentInput](),
	)
	defer closeAgent(t, m)

	// EffectCompleted comes after the StateUpdated of the batch that applied
	// the job's reply: once it is seen, the reply is in the state.
	waitCompleted := func(want string) {
		t.Helper()
		select {
		case key := <-completed:
			if key != want {
				t.Fatalf("completed job %q, want %q", key, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("job %q did not complete; machine error: %v", want, m.Err())
		}
	}
	m.Dispatch(decl.SendUserMessage{ID: "u1", Content: "hello", Timestamp: 100})
	waitCompleted("llm/re-u1")
	if got := m.Current().AssiMessages; !slices.Equal(got, []decl.AssiMessage{{ID: "re-u1", Content: "job: hello", Timestamp: 101}}) {
		t.Fatalf("assistant messages after the first job = %+v", got)
	}
	// A later input reconciles the jobs again: the completed job stays done,
	// and only the new message's job starts.
	m.Dispatch(decl.SendUserMessage{ID: "u2", Content: "again", Timestamp: 200})
	waitCompleted("llm/re-u2")
	closeAgent(t, m)

	want := []decl.AssiMessage{{ID: "re-u1", Content: "job: hello", Timestamp: 101}, {ID: "re-u2", Content: "job: again", Timestamp: 201}}
	if got := m.Current().AssiMessages; !slices.Equal(got, want) {
		t.Errorf("assistant messages = %+v, want %+v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"llm/re-u1", "llm/re-u2"}; !slices.Equal(jobKeys, want) {
		t.Errorf("automata.JobKey in the jobs = %q, want %q", jobKeys, want)
	}
	if want := map[string]int{"llm/re-u1": 1, "llm/re-u2": 1}; !maps.Equal(started, want) {
		t.Errorf("EffectStarted by key = %v, want %v", started, want)
	}
	select {
	case key := <-completed:
		t.Errorf("job %q completed again", key)
	default:
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
