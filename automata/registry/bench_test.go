package registry_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/registry"
)

// BenchmarkFleetOf10000 keeps 10,000 agents in one bbolt file, each with a
// snapshot of 10 notes and 5 notes after it, and measures the live heap per
// agent active (all 10,000 activated) and idle (all deactivated again), and
// how long an activation takes: open the store, read the newest snapshot,
// replay the 5 inputs after it; the first time, and again. Run it once:
//
//	go test -run XXX -bench FleetOf10000 -benchtime 1x ./automata/registry/
func BenchmarkFleetOf10000(b *testing.B) {
	const agents = 10_000
	logger := slog.New(slog.DiscardHandler)
	fleet, err := bolt.OpenFleet(filepath.Join(b.TempDir(), "fleet.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer fleet.Close()
	opts := func(skipCloseSnapshot bool) journal.Options[state, input] {
		return journal.Options[state, input]{Codec: journal.JSON[state, input](nil), Logger: logger, SnapshotEvery: -1, SkipCloseSnapshot: skipCloseSnapshot}
	}
	open := func(skip bool) func(string, journal.Store) (*journal.Machine[state, input], error) {
		return func(_ string, s journal.Store) (*journal.Machine[state, input], error) {
			return journal.Open(s, model, opts(skip))
		}
	}
	// Fill the fleet: 10 notes and a snapshot (taken on Close), then 5
	// notes after it (no snapshot), from 64 goroutines at once, so that
	// their appends share commits.
	start := time.Now()
	for _, phase := range []struct {
		notes int
		skip  bool
	}{{10, false}, {5, true}} {
		reg, err := registry.New(registry.Config[state, input]{Fleet: fleet, Open: open(phase.skip), MaxActive: agents, IdleTimeout: -1, Logger: logger})
		if err != nil {
			b.Fatal(err)
		}
		ids := make(chan string)
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				for id := range ids {
					for n := range phase.notes {
						if _, err := reg.Dispatch(context.Background(), id, input{Note: fmt.Sprintf("note %d of %s", n, id)}); err != nil {
							b.Error(err)
							return
						}
					}
				}
			})
		}
		for i := range agents {
			id := fmt.Sprintf("agent-%05d", i)
			if !phase.skip {
				if _, err := reg.Create(id, "bench"); err != nil {
					b.Fatal(err)
				}
			}
			ids <- id
		}
		close(ids)
		wg.Wait()
		if err := reg.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("filled %d agents in %v", agents, time.Since(start).Round(time.Millisecond))

	var now atomic.Int64 // the registry's clock, moved past IdleTimeout to deactivate them all
	reg, err := registry.New(registry.Config[state, input]{Fleet: fleet, Open: open(true), MaxActive: agents, IdleTimeout: time.Hour, Logger: logger,
		Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close(context.Background())
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	activateAll := func() []time.Duration {
		took := make([]time.Duration, 0, agents)
		for i := range agents {
			t0 := time.Now()
			a, release, err := reg.Get(context.Background(), fmt.Sprintf("agent-%05d", i))
			took = append(took, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			if len(a.Machine().Current().Notes) != 15 {
				b.Fatalf("agent %d recovered %d notes, want 15", i, len(a.Machine().Current().Notes))
			}
			release()
		}
		slices.Sort(took)
		return took
	}
	deactivateAll := func() {
		now.Add(int64(2 * time.Hour))
		if n := reg.Sweep(); n != agents {
			b.Fatalf("deactivated %d agents, want %d", n, agents)
		}
	}
	for b.Loop() {
		// The first activation of each agent finds its last inputs in
		// the fleet's shared log, and reads them there; the second, the
		// same.
		before := heap()
		first := activateAll()
		active := heap()
		deactivateAll()
		idle := heap()
		again := activateAll()
		deactivateAll()
		b.ReportMetric(float64(int64(active)-int64(before))/agents, "heap-B/active-agent")
		b.ReportMetric(float64(int64(idle)-int64(before))/agents, "heap-B/idle-agent")
		b.ReportMetric(float64(first[len(first)/2].Microseconds()), "first-p50-µs")
		b.ReportMetric(float64(first[len(first)*99/100].Microseconds()), "first-p99-µs")
		b.ReportMetric(float64(again[len(again)/2].Microseconds()), "again-p50-µs")
		b.ReportMetric(float64(again[len(again)*99/100].Microseconds()), "again-p99-µs")
	}
}
