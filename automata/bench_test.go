package automata_test

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/moora-go/moora/automata"
)

// BenchmarkBareTransition is the floor: the counter's transition in a plain
// loop, no machine.
func BenchmarkBareTransition(b *testing.B) {
	b.ReportAllocs()
	n := counter.Initial()
	for b.Loop() {
		n = counter.Transition(n, 1)
	}
	if n == 0 {
		b.Fatal("no transitions")
	}
}

// BenchmarkDispatch: one producer, the counter machine, one subscriber.
func BenchmarkDispatch(b *testing.B) {
	b.ReportAllocs()
	m := automata.NewMoore(counter, func(n int) int { return n })
	var last int
	m.Subscribe(func(n int) { last = n })
	for b.Loop() {
		m.Dispatch(1)
	}
	b.StopTimer()
	closeOrFail(b, m)
	if last != m.Current() || last == 0 {
		b.Fatalf("subscriber saw %d, state is %d", last, m.Current())
	}
}

// BenchmarkDispatchParallel: GOMAXPROCS producers, one subscriber. The time
// includes applying every queued input (Close drains the queue).
func BenchmarkDispatchParallel(b *testing.B) {
	b.ReportAllocs()
	m := automata.NewMoore(counter, func(n int) int { return n })
	var seen atomic.Int64
	m.Subscribe(func(int) { seen.Add(1) })
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Dispatch(1)
		}
	})
	closeOrFail(b, m)
	if got := m.Current(); got != b.N {
		b.Fatalf("applied %d inputs, dispatched %d", got, b.N)
	}
}

type reconcileInput struct {
	key  string
	open bool
}

// BenchmarkReconcile: each input opens a keyed job; the job completes by
// dispatching an input that closes its key. At most reconcileWindow jobs are
// in flight, as a producer with backpressure would have it. The time covers
// every job returning; jobs/s is the throughput.
func BenchmarkReconcile(b *testing.B) {
	const reconcileWindow = 4
	b.ReportAllocs()
	def := automata.Definition[[]string, reconcileInput]{
		Initial: func() []string { return nil },
		Transition: func(open []string, in reconcileInput) []string {
			if in.open {
				return append(slices.Clip(open), in.key)
			}
			i := slices.Index(open, in.key)
			if i < 0 {
				return open
			}
			return slices.Delete(slices.Clone(open), i, i+1)
		},
	}
	var returned atomic.Int64
	job := func(ctx context.Context, dispatch automata.Dispatch[reconcileInput]) error {
		dispatch(reconcileInput{key: automata.JobKey(ctx)})
		returned.Add(1)
		return nil
	}
	jobsAt := func(open []string) map[string]automata.Job[reconcileInput] {
		jobs := make(map[string]automata.Job[reconcileInput], len(open))
		for _, key := range open {
			jobs[key] = job
		}
		return jobs
	}
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	m := automata.NewMoore(def, func(open []string) int { return len(open) }, automata.WithJobs(jobsAt))
	b.ResetTimer()
	for i := range b.N {
		for int64(i)-returned.Load() >= reconcileWindow {
			runtime.Gosched()
		}
		m.Dispatch(reconcileInput{key: keys[i], open: true})
	}
	for returned.Load() < int64(b.N) {
		runtime.Gosched()
	}
	b.StopTimer()
	closeOrFail(b, m)
	if open := m.Current(); len(open) != 0 {
		b.Fatalf("%d keys still open", len(open))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
