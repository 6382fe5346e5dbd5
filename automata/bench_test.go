package automata_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

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

// chains is the state of BenchmarkReconcile: the open keys and the next key
// to open.
type chains struct {
	open []string
	next int
}

// BenchmarkReconcile: each input opens a keyed job, and the job completes by
// dispatching the input that removes its key (which opens the next key).
// chains=N runs N chains at once; nothing else runs, so the time is the
// runtime's alone. Reports jobs per second. Compare chains=4 with
// BenchmarkJobFloor, which does the part of this no runtime can avoid.
func BenchmarkReconcile(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run("chains="+strconv.Itoa(n), func(b *testing.B) { benchmarkReconcile(b, n) })
	}
}

func benchmarkReconcile(b *testing.B, width int) {
	b.ReportAllocs()
	r := newChainRun(width, b.N)
	m := automata.NewMoore(r.def, func(s chains) int { return len(s.open) }, automata.WithJobs(r.jobsAt))
	b.ResetTimer()
	m.Dispatch("") // opens the first keys
	<-r.finished
	b.StopTimer()
	closeOrFail(b, m)
	if s := m.Current(); len(s.open) != 0 || s.next != b.N {
		b.Fatalf("%d keys still open, %d of %d opened", len(s.open), s.next, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// chainRun is BenchmarkReconcile's workload: width chains of keyed jobs,
// total jobs in all.
type chainRun struct {
	def      automata.Definition[chains, string]
	jobsAt   func(chains) map[string]automata.Job[string]
	finished chan struct{} // closed once total jobs have returned
}

func newChainRun(width, total int) *chainRun {
	r := &chainRun{finished: make(chan struct{})}
	r.def = automata.Definition[chains, string]{
		Initial: func() chains { return chains{} },
		Transition: func(s chains, closed string) chains {
			// One new slice (the old one may not be written to):
			// the open keys but closed, and as many new ones as fit.
			// A key is made as it opens, rather than taken from
			// total keys made beforehand: a heap that grew with
			// b.N would be marked by the garbage collector again
			// and again, and the time per job would depend on b.N.
			open := make([]string, 0, width)
			for _, key := range s.open {
				if key != closed {
					open = append(open, key)
				}
			}
			for len(open) < width && s.next < total {
				open = append(open, strconv.Itoa(s.next))
				s.next++
			}
			return chains{open: open, next: s.next}
		},
	}
	var returned atomic.Int64
	job := func(ctx context.Context, dispatch automata.Dispatch[string]) error {
		dispatch(automata.JobKey(ctx))
		if returned.Add(1) == int64(total) {
			close(r.finished)
		}
		return nil
	}
	r.jobsAt = func(s chains) map[string]automata.Job[string] {
		jobs := make(map[string]automata.Job[string], len(s.open))
		for _, key := range s.open {
			jobs[key] = job
		}
		return jobs
	}
	return r
}

// BenchmarkJobFloor is what a job costs at the least, without a runtime: a
// context.WithCancel and a goroutine that waits on it and ends, 4 at a time
// (as in BenchmarkReconcile/chains=4), each 4 cancelled and waited for.
func BenchmarkJobFloor(b *testing.B) {
	const atOnce = 4
	b.ReportAllocs()
	var wg sync.WaitGroup
	var ended atomic.Int64
	cancels := make([]context.CancelFunc, 0, atOnce)
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		wg.Add(1)
		go func() {
			<-ctx.Done()
			ended.Add(1)
			wg.Done()
		}()
		cancels = append(cancels, cancel)
		if len(cancels) == atOnce {
			for _, cancel := range cancels {
				cancel()
			}
			wg.Wait()
			cancels = cancels[:0]
		}
	}
	for _, cancel := range cancels {
		cancel()
	}
	wg.Wait()
	if got := ended.Load(); got != int64(b.N) {
		b.Fatalf("%d goroutines ended, %d started", got, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkTelemetry is BenchmarkDispatch with WithTelemetry: off (the
// option not given), and on the real SDK: every input traced (sampled,
// handed to a batching processor whose exporter drops it) and measured (a
// manual reader's aggregation).
func BenchmarkTelemetry(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var opts []automata.Option[int, int]
			if on {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter())))
				defer tp.Shutdown(context.Background())
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				opts = append(opts, automata.WithTelemetry[int, int](tp, mp))
			}
			m := automata.NewMoore(counter, func(n int) int { return n }, opts...)
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
		})
	}
}
