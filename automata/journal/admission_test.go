package journal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/inputjson"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// ticket is an input whose schema has limits, read back by a real
// inputjson.Decoder, as a generated decl.DecodeInput is.
type ticket struct {
	Title    string `json:"title"`
	Priority string `json:"priority"`
}

func (t ticket) MarshalJSON() ([]byte, error) {
	type plain ticket
	return json.Marshal(struct {
		Type string `json:"type"`
		plain
	}{"ticket", plain(t)})
}

const ticketSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "inputs": {
    "ticket": {
      "type": "object",
      "properties": {
        "type": {"const": "ticket"},
        "title": {"type": "string", "maxLength": 20},
        "priority": {"enum": ["low", "high"]}
      },
      "required": ["type", "title", "priority"]
    }
  }
}`

var ticketDecoder = inputjson.NewDecoder(ticketSchema, map[string]func([]byte) (ticket, error){
	"ticket": func(data []byte) (ticket, error) {
		var t ticket
		err := json.Unmarshal(data, &t)
		return t, err
	},
})

var tickets = automata.Definition[[]ticket, ticket]{
	Initial:    func() []ticket { return nil },
	Transition: func(s []ticket, t ticket) []ticket { return automata.Append(s, t) },
}

func openTickets(t *testing.T, path string, options ...automata.Option[[]ticket, ticket]) *journal.Machine[[]ticket, ticket] {
	t.Helper()
	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := journal.Open(store, tickets, journal.Options[[]ticket, ticket]{Codec: journal.JSON[[]ticket](ticketDecoder.Decode)}, options...)
	if err != nil {
		store.Close()
		t.Fatalf("Open: %v", err)
	}
	return m
}

func closeTickets(t *testing.T, m *journal.Machine[[]ticket, ticket]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestDispatchRefusesAnInputItCouldNotReadBack is the regression test of a
// journal bricked by its own acknowledgement: an input that encodes but that
// the codec's decoder rejects (over maxLength, out of the enum) used to be
// acknowledged, and every later Open failed with a *CorruptError. Now
// Dispatch refuses it naming the field, writes nothing, and the machine goes
// on; the same holds for an input a job dispatches.
func TestDispatchRefusesAnInputItCouldNotReadBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	var rejected atomic.Int32
	jobDone := make(chan struct{})
	m := openTickets(t, path,
		automata.WithJobs(func(s []ticket) map[string]automata.Job[ticket] {
			if len(s) != 1 {
				return nil
			}
			return map[string]automata.Job[ticket]{"follow-up": func(ctx context.Context, dispatch automata.Dispatch[ticket]) error {
				defer close(jobDone)
				dispatch(ticket{Title: "follow-up", Priority: "someday"})
				return nil
			}}
		}),
		automata.WithEvents(func(e automata.Event[[]ticket, ticket]) {
			if e.Kind == automata.InputRejected {
				rejected.Add(1)
			}
		}))
	ctx := context.Background()
	if err := m.Dispatch(ctx, ticket{Title: "printer on fire", Priority: "high"}); err != nil {
		t.Fatal(err)
	}
	<-jobDone
	for _, tt := range []struct {
		in   ticket
		want []string // in the error
	}{
		{ticket{Title: strings.Repeat("x", 21), Priority: "low"}, []string{`"ticket"`, "/title", "length"}},
		{ticket{Title: "ok", Priority: "urgent"}, []string{`"ticket"`, "/priority", "low", "high"}},
	} {
		err := m.Dispatch(ctx, tt.in)
		if err == nil {
			t.Fatalf("Dispatch(%+v) = nil, want it refused", tt.in)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Dispatch(%+v) = %q, does not say %q", tt.in, err, w)
			}
		}
	}
	if err := m.Dispatch(ctx, ticket{Title: "coffee machine", Priority: "low"}); err != nil {
		t.Fatalf("the machine did not go on: %v", err)
	}
	if m.Seq() != 2 {
		t.Errorf("Seq = %d, want 2: only the valid inputs are journaled", m.Seq())
	}
	// Events come from the goroutine applying inputs, in order: the last
	// Dispatch returned after the rejections were reported.
	if n := rejected.Load(); n != 3 {
		t.Errorf("%d InputRejected events, want 3 (two dispatched, one from the job)", n)
	}
	closeTickets(t, m)

	m = openTickets(t, path)
	defer closeTickets(t, m)
	want := []ticket{{"printer on fire", "high"}, {"coffee machine", "low"}}
	if got := m.Current(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reopened state = %v, want %v", got, want)
	}
}

// TestDispatchOfNilOrAPanickingInputWritesNothing on the generated chat test agent:
// nil is refused and the machine goes on; an input whose transition panics
// is not journaled (the machine stops, fail-stop), so the next Open works.
func TestDispatchOfNilOrAPanickingInputWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	open := func(options ...automata.Option[decl.AgentState, decl.AgentInput]) *journal.Machine[decl.AgentState, decl.AgentInput] {
		store, err := bolt.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		m, err := journal.Open(store, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{Codec: journal.JSON[decl.AgentState](decl.DecodeInput)}, options...)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return m
	}
	m := open()
	ctx := context.Background()
	if err := m.Dispatch(ctx, nil); err == nil || !strings.Contains(err.Error(), "nil input") {
		t.Fatalf("Dispatch(nil) = %v, want it refused", err)
	}
	if err := m.Dispatch(ctx, decl.SendUserMessage{ID: "u1", Content: "hi", Timestamp: 1}); err != nil {
		t.Fatalf("the machine did not go on after nil: %v", err)
	}
	m.Close(ctx)

	// A transition that panics on an input, as a stub still does.
	stubbed := agent.Definition()
	stubbed.Transition = func(s decl.AgentState, in decl.AgentInput) decl.AgentState {
		if _, ok := in.(decl.SendAssiMessage); ok {
			panic("not implemented: transitions.Llm")
		}
		return agent.Transition(s, in)
	}
	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err = journal.Open(store, stubbed, journal.Options[decl.AgentState, decl.AgentInput]{Codec: journal.JSON[decl.AgentState](decl.DecodeInput)})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Dispatch(ctx, decl.SendAssiMessage{ID: "a1", Content: "hello", Timestamp: 2})
	var f *automata.FailError
	if !errors.As(err, &f) || f.Value != "not implemented: transitions.Llm" {
		t.Fatalf("Dispatch of an input whose transition panics = %v, want the *FailError", err)
	}
	if m.Seq() != 1 {
		t.Errorf("Seq = %d, want 1: the input that panicked is not journaled", m.Seq())
	}
	if err := m.Close(ctx); !errors.As(err, &f) {
		t.Errorf("Close = %v, want the failure", err)
	}

	m = open()
	defer m.Close(ctx)
	if s := m.Current(); len(s.UserMessages) != 1 || len(s.AssiMessages) != 0 {
		t.Errorf("reopened state = %+v, want the one user message", s)
	}
}

// TestDispatchErrorMeansNotJournaled is the regression test of Dispatch with
// an expiring context, which used to return the context's error for inputs
// it then journaled and applied, so that a caller retrying on error
// duplicated them. Every input Dispatch acknowledged is in the journal once,
// and no input it returned an error for is.
func TestDispatchErrorMeansNotJournaled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	m := mustOpen(t, path, journal.Options[state, input]{SnapshotEvery: -1})
	var mu sync.Mutex
	acked := map[string]bool{}
	refused := 0
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				note := fmt.Sprintf("g%d-%d", g, i)
				ctx, cancel := context.WithCancel(context.Background())
				if i%2 == 0 {
					cancel() // already done
				} else {
					ctx, cancel = context.WithTimeout(context.Background(), time.Duration(i*3)*time.Microsecond)
				}
				err := m.Dispatch(ctx, input{Note: note})
				cancel()
				mu.Lock()
				if err == nil {
					acked[note] = true
				} else if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					refused++
				} else {
					t.Errorf("Dispatch: %v", err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	mustClose(t, m)
	if refused < 100 {
		t.Errorf("only %d of 200 calls saw their context end: the test does not exercise the rule", refused)
	}

	m = mustOpen(t, path, journal.Options[state, input]{SnapshotEvery: -1})
	defer mustClose(t, m)
	entries, err := m.Inputs(1, m.Seq())
	if err != nil {
		t.Fatal(err)
	}
	journaled := map[string]int{}
	for _, e := range entries {
		journaled[e.Input.Note]++
	}
	for note, n := range journaled {
		if !acked[note] || n != 1 {
			t.Errorf("%s is journaled %d times, acknowledged: %v", note, n, acked[note])
		}
	}
	if len(journaled) != len(acked) {
		t.Errorf("%d inputs journaled, %d acknowledged", len(journaled), len(acked))
	}
	t.Logf("%d acknowledged and journaled, %d refused with the context's error", len(acked), refused)
}

// chat is seed 000's rule of time irreversibility in miniature: an input
// older than the state it would change is stale, and ignored.
type chat struct {
	Messages []line `json:"messages"`
	LastAt   int64  `json:"lastAt"`
}

type line struct {
	From string `json:"from"`
	Text string `json:"text"`
	At   int64  `json:"at"`
}

var chatModel = automata.Definition[chat, line]{
	Initial: func() chat { return chat{} },
	Transition: func(s chat, in line) chat {
		if in.At <= s.LastAt {
			return s // stale
		}
		s.Messages = automata.Append(s.Messages, in)
		s.LastAt = in.At
		return s
	},
}

// answered reports whether the brain answered the last user message.
func answered(s chat) bool {
	for i := len(s.Messages) - 1; i >= 0; i-- {
		switch s.Messages[i].From {
		case "brain":
			return true
		case "user":
			return false
		}
	}
	return true
}

// TestStampedLateResultFinishesTheConversation: the brain's job stamps its
// reply when it starts, and a user's "typing" notice stamped later is
// applied first. Without admission the reply is stale, the job has finished,
// and the agent waits forever; with the server stamping every input as it is
// admitted (seed 000), time never runs backwards and the conversation
// finishes.
func TestStampedLateResultFinishesTheConversation(t *testing.T) {
	for _, stamping := range []bool{false, true} {
		t.Run(fmt.Sprintf("stamping=%v", stamping), func(t *testing.T) {
			var clock atomic.Int64
			clock.Store(100)
			now := func() int64 { return clock.Add(1) }
			proceed := make(chan struct{})
			ended := make(chan automata.EventKind, 1)
			states := make(chan chat, 100)
			jobs := func(s chat) map[string]automata.Job[line] {
				if answered(s) {
					return nil
				}
				return map[string]automata.Job[line]{"reply": func(ctx context.Context, dispatch automata.Dispatch[line]) error {
					at := now() // stamped when the job starts, as a job's own clock would
					<-proceed
					dispatch(line{From: "brain", Text: "hello", At: at})
					return nil
				}}
			}
			options := []automata.Option[chat, line]{
				automata.WithJobs(jobs),
				automata.WithEvents(func(e automata.Event[chat, line]) {
					if e.Kind == automata.EffectCompleted || e.Kind == automata.EffectFailed {
						ended <- e.Kind
					}
				}),
			}
			if stamping {
				options = append(options, automata.WithAdmission(func(s chat, in line) (line, error) {
					in.At = max(now(), s.LastAt+1)
					return in, nil
				}))
			}
			store, err := bolt.Open(filepath.Join(t.TempDir(), "chat.db"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := journal.Open(store, chatModel, journal.Options[chat, line]{Codec: journal.JSON[chat, line](nil)}, options...)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close(context.Background())
			m.Subscribe(func(s chat) { states <- s })
			ctx := context.Background()
			if err := m.Dispatch(ctx, line{From: "user", Text: "hi", At: now()}); err != nil {
				t.Fatal(err)
			}
			// The job has started (and stamped its reply): the typing
			// notice comes after it in time, and is applied first.
			if err := m.Dispatch(ctx, line{From: "user-typing", Text: "…", At: now() + 50}); err != nil {
				t.Fatal(err)
			}
			close(proceed)
			select {
			case kind := <-ended:
				if kind != automata.EffectCompleted {
					t.Fatalf("the job ended with %v", kind)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("hung: the job never ended")
			}
			// The job's end is reported after the state its input made.
			var last chat
			for len(states) > 0 {
				last = <-states
			}
			if stamping != answered(last) {
				t.Fatalf("stamping=%v: answered=%v, state %+v", stamping, answered(last), last)
			}
			if !stamping {
				// The reply was stale: the job is done, its key still
				// wanted, and nothing will ever start it again.
				if err := m.Dispatch(ctx, line{From: "user-typing", Text: "…", At: now() + 100}); err != nil {
					t.Fatal(err)
				}
				if answered(m.Current()) {
					t.Fatal("answered after all")
				}
			}
		})
	}
}

// TestAutomataOptionsWorkOnTheJournal: Open takes automata options, and they
// behave as on an in-memory machine: WithPurityCheck catches an effect that
// writes into the state (there was no journal equivalent before), WithEvents
// reports in Moorex's order, WithAdmission's output is what is journaled.
func TestAutomataOptionsWorkOnTheJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	var events []string
	var mu sync.Mutex
	m := mustOpen(t, path, journal.Options[state, input]{SnapshotEvery: -1},
		automata.WithAdmission(func(_ state, in input) (input, error) {
			in.Note = strings.ToUpper(in.Note)
			return in, nil
		}),
		automata.WithEvents(func(e automata.Event[state, input]) {
			mu.Lock()
			events = append(events, e.Kind.String())
			mu.Unlock()
		}),
		automata.WithActorEffect("scribbler", func(s state, _ automata.Dispatch[input]) {
			if len(s.Notes) == 2 {
				s.Notes[0] = "scribbled"
			}
		}),
		automata.WithPurityCheck[state, input]())
	ctx := context.Background()
	if err := m.Dispatch(ctx, input{Note: "one"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Dispatch(ctx, input{Note: "two"}); err != nil {
		t.Fatalf("Dispatch = %v: the input was journaled before the effect ran", err)
	}
	<-m.Done()
	var ie *automata.ImpurityError
	if !errors.As(m.Err(), &ie) || ie.Where != `the effect of actor "scribbler"` || ie.Path != "state.Notes[0]" {
		t.Fatalf("Err() = %v, want the scribbler's impurity at state.Notes[0]", m.Err())
	}
	if err := m.Close(ctx); !errors.As(err, &ie) {
		t.Errorf("Close = %v", err)
	}
	mu.Lock()
	got := strings.Join(events, " ")
	mu.Unlock()
	want := "input-received state-updated input-received machine-failed"
	if got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}

	// Both inputs are in the journal, as admitted; the next Open applies
	// them (without the scribbler) and takes no snapshot of a failed state.
	m = mustOpen(t, path, journal.Options[state, input]{SnapshotEvery: -1})
	defer mustClose(t, m)
	if got := m.Current().Notes; fmt.Sprint(got) != "[ONE TWO]" {
		t.Errorf("reopened notes = %v, want [ONE TWO]", got)
	}
}

// TestNilInputWithAdmissionIsRefused: Dispatch(ctx, nil) is refused and the
// machine keeps running, also with an admission step (the package doc's
// usage, automata.WithAdmission(stamp)) that looks at its input. nil used to
// reach the admission step before the journal's own check, which panicked
// and stopped the whole agent.
func TestNilInputWithAdmissionIsRefused(t *testing.T) {
	store, err := bolt.Open(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	stamp := func(s decl.AgentState, in decl.AgentInput) (decl.AgentInput, error) {
		if in.InputType() == "send-user-message" {
			m := in.(decl.SendUserMessage)
			m.Timestamp = 42
			return m, nil
		}
		return in, nil
	}
	m, err := journal.Open(store, agent.Definition(),
		journal.Options[decl.AgentState, decl.AgentInput]{Codec: journal.JSON[decl.AgentState](decl.DecodeInput)},
		automata.WithAdmission(stamp))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer m.Close(ctx)
	err = m.Dispatch(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "nil input") {
		t.Errorf("Dispatch(nil) = %v, want it refused as a nil input", err)
	}
	if err := m.Dispatch(ctx, decl.SendUserMessage{ID: "u1", Content: "hi", Timestamp: 1}); err != nil {
		t.Fatalf("the machine did not go on after Dispatch(nil): %v", err)
	}
}

// TestDispatchSeqIsTheInputsOwnNumber: concurrent Dispatches share group
// commits, and each learns its own input's sequence number: the state
// after it, StateAt(seq), ends with that input.
func TestDispatchSeqIsTheInputsOwnNumber(t *testing.T) {
	m := openTickets(t, filepath.Join(t.TempDir(), "t.db"))
	defer closeTickets(t, m)
	var wg sync.WaitGroup
	seqs := make([]uint64, 64)
	for i := range seqs {
		wg.Go(func() {
			seq, err := m.DispatchSeq(context.Background(), ticket{Title: fmt.Sprintf("t%d", i), Priority: "low"})
			if err != nil {
				t.Error(err)
			}
			seqs[i] = seq
		})
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for i, seq := range seqs {
		if seen[seq] {
			t.Fatalf("two inputs were told sequence number %d", seq)
		}
		seen[seq] = true
		s, err := m.StateAt(seq)
		if err != nil {
			t.Fatal(err)
		}
		if last := s[len(s)-1]; last.Title != fmt.Sprintf("t%d", i) {
			t.Fatalf("input t%d was told %d, but the state after %d ends with %q", i, seq, seq, last.Title)
		}
	}
}
