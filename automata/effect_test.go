package automata_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
)

func TestSequentialRunsInOrder(t *testing.T) {
	var got []string
	step := func(name string) automata.Effect[int, int] {
		return func(v int, _ automata.Dispatch[int]) { got = append(got, name) }
	}
	automata.Sequential(step("a"), step("b"), step("c"))(0, nil)
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("ran %v, want %v", got, want)
	}
}

func TestParallelRunsConcurrentlyAndWaits(t *testing.T) {
	// Each effect waits for the other to have started: run one after the
	// other, they would never finish.
	aStarted, bStarted := make(chan struct{}), make(chan struct{})
	var finished sync.WaitGroup
	finished.Add(2)
	a := func(int, automata.Dispatch[int]) { close(aStarted); <-bStarted; finished.Done() }
	b := func(int, automata.Dispatch[int]) { close(bStarted); <-aStarted; finished.Done() }
	done := make(chan struct{})
	go func() {
		automata.Parallel[int, int](a, b)(0, nil)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Parallel did not run its effects concurrently")
	}
	finished.Wait() // both had returned when Parallel did (or this would block)
}

func TestProjectHandsTheEffectItsView(t *testing.T) {
	type state struct{ user, llm string }
	var seen []string
	userEffect := func(view string, _ automata.Dispatch[int]) { seen = append(seen, view) }
	eff := automata.Project(func(s state) string { return s.user }, userEffect)
	eff(state{user: "u", llm: "l"}, nil)
	if want := []string{"u"}; !slices.Equal(seen, want) {
		t.Fatalf("saw %v, want %v", seen, want)
	}
}

func TestStatefulRerunsOnlyWhenItsStateChanges(t *testing.T) {
	type call struct{ view, local int }
	var calls []call
	eff := automata.Stateful(0, func(view, local int, update func(func(int) int), _ automata.Dispatch[int]) {
		calls = append(calls, call{view, local})
		update(func(int) int { return view / 10 }) // changes only every 10
	})
	for _, v := range []int{1, 2, 15, 16} {
		eff(v, nil)
	}
	// 1: local 0 → 0 (same, no rerun); 2: same; 15: 0 → 1, rerun with
	// local 1 (then 1 → 1, stop); 16: local 1 → 1, no rerun.
	want := []call{{1, 0}, {2, 0}, {15, 0}, {15, 1}, {16, 1}}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls = %v, want %v", calls, want)
	}
}

func TestStatefulUpdateFromAnotherGoroutineReruns(t *testing.T) {
	var mu sync.Mutex
	var locals []string
	ran := make(chan struct{}, 10)
	var later func(func(string) string)
	eff := automata.Stateful("idle", func(view int, local string, update func(func(string) string), _ automata.Dispatch[int]) {
		mu.Lock()
		locals = append(locals, local)
		later = update
		mu.Unlock()
		ran <- struct{}{}
	})
	eff(1, nil)
	<-ran
	mu.Lock()
	update := later
	mu.Unlock()
	go update(func(string) string { return "busy" }) // as an async callback would
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("update from another goroutine did not rerun the effect")
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"idle", "busy"}; !slices.Equal(locals, want) {
		t.Fatalf("locals = %v, want %v", locals, want)
	}
}

func TestWithEffectGivenTwiceRunsBoth(t *testing.T) {
	var ran []string
	first := func(int, automata.Dispatch[int]) { ran = append(ran, "first") }
	second := func(int, automata.Dispatch[int]) { ran = append(ran, "second") }
	automata.NewMoore(counter, func(n int) int { return n },
		automata.WithEffect(first), automata.WithEffect(second))
	if want := []string{"first", "second"}; !slices.Equal(ran, want) {
		t.Fatalf("effects ran %v, want %v", ran, want)
	}
}
