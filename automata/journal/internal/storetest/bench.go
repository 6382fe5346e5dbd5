package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal"
)

// FleetRate creates agents agents in f, opens a Machine of the test model
// on each (no snapshots), and has producers goroutines for each dispatch
// and wait for the journal, n inputs in all; it closes the Machines and f.
// It returns the inputs per second, and the Appends per input (below 1:
// Machines grouped inputs of their agent into one Append).
func FleetRate(b testing.TB, f journal.Fleet, agents, producers, n int) (rate, appendsPerInput float64) {
	var appends atomic.Int64
	machines := make([]*journal.Machine[State, Input], agents)
	for i := range machines {
		id := fmt.Sprintf("agent-%04d", i)
		if err := f.Create(id, journal.AgentInfo{Owner: "bench", Created: time.Unix(1, 0).UTC()}); err != nil {
			b.Fatal(err)
		}
		s, err := f.Open(id)
		if err != nil {
			b.Fatal(err)
		}
		machines[i], err = journal.Open[State, Input](countingAppends{s, &appends}, Model, journal.Options[State, Input]{Codec: journal.JSON[State, Input](nil), SnapshotEvery: -1})
		if err != nil {
			b.Fatal(err)
		}
	}
	in := Input{Note: "a note of a typical length for a chat message"}
	var next, failed atomic.Int64
	var first sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for i := range agents * producers {
		m := machines[i%agents]
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := m.Dispatch(context.Background(), in); err != nil {
					failed.Add(1)
					first.Do(func() { b.Errorf("first failed Dispatch: %v", err) })
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if k := failed.Load(); k > 0 {
		b.Errorf("%d producers of %d stopped on a failed Dispatch", k, agents*producers)
	}
	for _, m := range machines {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := m.Close(ctx); err != nil {
			b.Error(err)
		}
		cancel()
	}
	if err := f.Close(); err != nil {
		b.Error(err)
	}
	return float64(n) / elapsed.Seconds(), float64(appends.Load()) / float64(n)
}

// countingAppends counts a Store's Appends.
type countingAppends struct {
	journal.Store
	n *atomic.Int64
}

func (c countingAppends) Append(rs []journal.Record) error {
	c.n.Add(1)
	return c.Store.Append(rs)
}
