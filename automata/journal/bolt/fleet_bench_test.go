package bolt_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
)

// BenchmarkFleetDurableInputs: the Machines of a fleet's agents, each with
// producers goroutines that dispatch and wait for the disk; b.N inputs in
// all. Both cases have 4,000 producers: spread over 1,000 agents, whose
// Appends the fleet commits together, or all on one agent, whose Machine
// groups them itself. Reports inputs/s, and the fleet's commits (bbolt
// transactions) and Appends per input.
func BenchmarkFleetDurableInputs(b *testing.B) {
	for _, c := range []struct{ agents, producers int }{{1000, 4}, {1, 4000}} {
		b.Run(fmt.Sprintf("agents=%d,producers=%d", c.agents, c.producers), func(b *testing.B) {
			f, err := bolt.OpenFleet(filepath.Join(b.TempDir(), "fleet.db"))
			if err != nil {
				b.Fatal(err)
			}
			machines := make([]*journal.Machine[storetest.State, storetest.Input], c.agents)
			for i := range machines {
				machines[i], err = journal.Open(fleetAgent(b, f, fmt.Sprintf("agent-%04d", i)), storetest.Model, journal.Options[storetest.State, storetest.Input]{Codec: journal.JSON[storetest.State, storetest.Input](nil), SnapshotEvery: -1})
				if err != nil {
					b.Fatal(err)
				}
			}
			in := storetest.Input{Note: "a note of a typical length for a chat message"}
			var next atomic.Int64
			before := f.Stats()
			b.ReportAllocs()
			b.ResetTimer()
			// Each producer dispatches until b.N inputs are taken, or one
			// fails.
			dispatch := func(m *journal.Machine[storetest.State, storetest.Input]) bool {
				err := m.Dispatch(context.Background(), in)
				if err != nil {
					b.Error(err)
				}
				return err == nil
			}
			var wg sync.WaitGroup
			for i := range c.agents * c.producers {
				m := machines[i%c.agents]
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) && dispatch(m) {
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			after := f.Stats()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "inputs/s")
			b.ReportMetric(float64(after.Commits-before.Commits)/float64(b.N), "commits/input")
			b.ReportMetric(float64(after.Appends-before.Appends)/float64(b.N), "appends/input")
			for _, m := range machines {
				mustClose(b, m)
			}
			closeFleet(b, f)
		})
	}
}

// BenchmarkFleetHeapPerAgent measures the heap a fleet of 10,000 agents
// takes: open with none of their Stores open, and then with all of them
// open. It reports bytes per agent; b.N does not enter into it (run it with
// -benchtime 1x).
func BenchmarkFleetHeapPerAgent(b *testing.B) {
	const agents = 10_000
	path := filepath.Join(b.TempDir(), "fleet.db")
	f, err := bolt.OpenFleet(path)
	if err != nil {
		b.Fatal(err)
	}
	for i := range agents {
		s := fleetAgent(b, f, fmt.Sprintf("agent-%05d", i))
		if err := s.Append(fleetRecords(1, 10, 100)); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	closeFleet(b, f)
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	for b.Loop() {
		base := heap()
		f, err = bolt.OpenFleet(path)
		if err != nil {
			b.Fatal(err)
		}
		fleet := heap()
		stores := make([]journal.Store, agents)
		for i := range stores {
			if stores[i], err = f.Open(fmt.Sprintf("agent-%05d", i)); err != nil {
				b.Fatal(err)
			}
		}
		open := heap()
		b.ReportMetric(float64(fleet-base)/agents, "B/agent-closed")
		b.ReportMetric(float64(open-fleet)/agents, "B/agent-open")
		for _, s := range stores {
			s.Close()
		}
		closeFleet(b, f)
	}
}
