package automata_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/moora-go/moora/automata"
)

// counter is the smallest useful definition: the state is a count, an input
// adds to it.
var counter = automata.Definition[int, int]{
	Initial:    func() int { return 0 },
	Transition: func(n, delta int) int { return n + delta },
}

func ExampleNew() {
	// A general machine sees each whole update; here it reports only the
	// updates that cross a multiple of 10, and nothing on subscribe.
	m := automata.New(counter, func(u automata.Update[int, int]) (string, bool) {
		if u.Replay || u.Prev/10 == u.State/10 {
			return "", false
		}
		return fmt.Sprintf("%d + %d crossed to %d", u.Prev, u.Input, u.State), true
	})
	m.Subscribe(func(s string) { fmt.Println(s) })
	for _, d := range []int{4, 4, 4, 10, 1} {
		m.Dispatch(d)
	}
	fmt.Println("current:", m.Current())
	// Output:
	// 8 + 4 crossed to 12
	// 12 + 10 crossed to 22
	// current: 23
}

func ExampleNewMoore() {
	m := automata.NewMoore(counter, func(n int) string { return fmt.Sprintf("count=%d", n) })
	m.Dispatch(2)
	// A new subscriber first receives the output of the current state.
	m.Subscribe(func(s string) { fmt.Println(s) })
	m.Dispatch(3)
	// Output:
	// count=2
	// count=5
}

func ExampleNewMealy() {
	m := automata.NewMealy(counter, func(n, delta int) string {
		return fmt.Sprintf("%d%+d", n, delta)
	})
	m.Dispatch(1)
	// A Mealy output needs an input: nothing is replayed on subscribe.
	m.Subscribe(func(s string) { fmt.Println(s) })
	m.Dispatch(2)
	m.Dispatch(-5)
	// Output:
	// 1+2
	// 3-5
}

func ExampleStateful() {
	// Print each new message once. The effect's local state (how many
	// messages it has printed) survives between calls because the effect
	// is built once, outside the calls.
	printNew := automata.Stateful(0, func(msgs []string, printed int, update func(func(int) int), _ automata.Dispatch[string]) {
		for _, msg := range msgs[printed:] {
			fmt.Println("new:", msg)
		}
		update(func(int) int { return len(msgs) })
	})
	chat := automata.Definition[[]string, string]{
		Initial:    func() []string { return nil },
		Transition: func(msgs []string, msg string) []string { return append(slices.Clip(msgs), msg) },
	}
	m := automata.NewMoore(chat, func(msgs []string) int { return len(msgs) }, automata.WithEffect(printNew))
	m.Dispatch("hello")
	m.Dispatch("world")
	// Output:
	// new: hello
	// new: world
}

// A download manager whose state is the set of wanted URLs. Each wanted URL
// has a keyed job; when the job hands in its result, the URL leaves the set
// and the job is done. An unwanted URL's job is cancelled.
func ExampleWithJobs() {
	type state struct{ wanted, done []string }
	type input struct{ want, fetched, drop string }
	def := automata.Definition[state, input]{
		Initial: func() state { return state{} },
		Transition: func(s state, in input) state {
			switch {
			case in.want != "":
				s.wanted = append(slices.Clip(s.wanted), in.want)
			case in.fetched != "":
				s.wanted = slices.DeleteFunc(slices.Clone(s.wanted), func(u string) bool { return u == in.fetched })
				s.done = append(slices.Clip(s.done), in.fetched)
			case in.drop != "":
				s.wanted = slices.DeleteFunc(slices.Clone(s.wanted), func(u string) bool { return u == in.drop })
			}
			return s
		},
	}
	block := make(chan struct{}) // the "slow" download never finishes by itself
	jobsAt := func(s state) map[string]automata.Job[input] {
		jobs := make(map[string]automata.Job[input])
		for _, url := range s.wanted {
			jobs["fetch "+url] = func(ctx context.Context, dispatch automata.Dispatch[input]) error {
				if strings.HasPrefix(url, "slow") {
					select {
					case <-block:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				dispatch(input{fetched: url})
				return nil
			}
		}
		return jobs
	}
	settled := make(chan struct{}, 8)
	m := automata.NewMoore(def, func(s state) state { return s },
		automata.WithJobs(jobsAt),
		automata.WithEvents(func(e automata.Event[state, input]) {
			switch e.Kind {
			case automata.EffectStarted, automata.EffectCancelled, automata.EffectCompleted:
				fmt.Println(e)
				settled <- struct{}{}
			}
		}))
	m.Dispatch(input{want: "a"})
	<-settled // started
	<-settled // completed
	m.Dispatch(input{want: "slow-b"})
	<-settled // started
	m.Dispatch(input{drop: "slow-b"})
	<-settled // cancelled
	if err := m.Close(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println("done:", m.Current().done)
	// Output:
	// effect-started fetch a
	// effect-completed fetch a
	// effect-started fetch slow-b
	// effect-cancelled fetch slow-b
	// done: [a]
}

// Events arrive in Moorex's order: the inputs of a batch, then the jobs
// started or cancelled for the resulting state, then the state update; a
// job's completion arrives when it returns.
func ExampleWithEvents() {
	type input struct{ ask, answer string }
	def := automata.Definition[[]string, input]{
		Initial: func() []string { return nil },
		Transition: func(pending []string, in input) []string {
			if in.ask != "" {
				return append(slices.Clip(pending), in.ask)
			}
			return slices.DeleteFunc(slices.Clone(pending), func(q string) bool { return q == in.answer })
		},
	}
	jobsAt := func(pending []string) map[string]automata.Job[input] {
		jobs := make(map[string]automata.Job[input])
		for _, q := range pending {
			jobs["answer:"+q] = func(ctx context.Context, dispatch automata.Dispatch[input]) error {
				dispatch(input{answer: q})
				return nil
			}
		}
		return jobs
	}
	done := make(chan struct{})
	m := automata.NewMoore(def, func(p []string) []string { return p },
		automata.WithJobs(jobsAt),
		automata.WithEvents(func(e automata.Event[[]string, input]) {
			fmt.Println(e)
			if e.Kind == automata.EffectCompleted {
				close(done)
			}
		}))
	m.Dispatch(input{ask: "why?"})
	<-done
	_ = m.Close(context.Background())
	// Output:
	// input-received {ask:why? answer:}
	// effect-started answer:why?
	// state-updated [why?]
	// input-received {ask: answer:why?}
	// state-updated []
	// effect-completed answer:why?
}

func ExampleCheckPure() {
	type state struct{ log []string }
	impure := automata.Definition[state, string]{
		Initial: func() state { return state{log: make([]string, 0, 4)} },
		// append writes into the backing array the old state still
		// shares: two transitions from the same state would clobber
		// each other.
		Transition: func(s state, in string) state { s.log = append(s.log, in); return s },
	}
	fmt.Println(automata.CheckPure(impure, "a", "b"))

	pure := impure
	pure.Transition = func(s state, in string) state { s.log = automata.Append(s.log, in); return s }
	fmt.Println(automata.CheckPure(pure, "a", "b"))
	// Output:
	// automata: impure transition on input #0 "a": mutated the state it was given: state.log[0] changed from "" to "a", past the slice's length: append wrote into a backing array the old state shares (use automata.Append instead)
	// <nil>
}

// A server stamps every input with the time it is admitted, as seed 000's
// backend does: whatever time a sender claims, time in the state never runs
// backwards. An input the admission step rejects is not applied, and the
// DispatchWait waiting for it is told why.
func ExampleWithAdmission() {
	type message struct {
		Text string
		At   int64 // milliseconds, stamped by the server
	}
	chat := automata.Definition[[]message, message]{
		Initial:    func() []message { return nil },
		Transition: func(s []message, m message) []message { return automata.Append(s, m) },
	}
	clock := int64(1000) // a stand-in for time.Now().UnixMilli()
	stamp := func(s []message, m message) (message, error) {
		if strings.TrimSpace(m.Text) == "" {
			return m, fmt.Errorf("empty message")
		}
		clock += 10
		m.At = clock
		return m, nil
	}
	m := automata.NewMoore(chat, func(s []message) []message { return s }, automata.WithAdmission(stamp))
	defer m.Close(context.Background())

	ctx := context.Background()
	fmt.Println(m.DispatchWait(ctx, message{Text: "hello", At: 99999}))
	fmt.Println(m.DispatchWait(ctx, message{Text: "  "}))
	fmt.Println(m.DispatchWait(ctx, message{Text: "anyone?"}))
	fmt.Println(m.Current())
	// Output:
	// <nil>
	// empty message
	// <nil>
	// [{hello 1010} {anyone? 1020}]
}

// A panic in a transition stops the machine (fail-stop): Err says what
// panicked on which input, later inputs are refused, and Close returns the
// same error. The state stays as it was before the input that failed.
func ExampleMachine_Err() {
	half := automata.Definition[int, int]{
		Initial: func() int { return 100 },
		Transition: func(n, d int) int {
			return n / d // panics on 0
		},
	}
	m := automata.NewMoore(half, func(n int) int { return n })
	m.Dispatch(2)
	m.Dispatch(0)
	fmt.Println(m.Err())
	fmt.Println(m.Dispatch(5) == m.Err(), m.Current())
	fmt.Println(m.Close(context.Background()) == m.Err())
	// Output:
	// automata: machine stopped: the transition panicked on input 0: runtime error: integer divide by zero
	// true 50
	// true
}
