package jetstream_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/moora-go/moora/automata/journal/jetstream/embedded"
	"github.com/moora-go/moora/automata/journal/pebble"
)

type note struct {
	Text string `json:"text"`
}

var notesModel = automata.Definition[int, note]{
	Initial:    func() int { return 0 },
	Transition: func(n int, _ note) int { return n + 1 },
}

// durableRate dispatches n inputs from producers goroutines, each waiting
// for its input to be durable, and returns inputs per second.
func durableRate(b *testing.B, store journal.Store, producers, n int) float64 {
	m, err := journal.Open(store, notesModel, journal.Options[int, note]{Codec: journal.JSON[int, note](nil), SnapshotEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(context.Background())
	in := note{Text: "a note of a typical length for a chat message"}
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range producers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := m.Dispatch(context.Background(), in); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkDurableDispatch: b.N inputs, each acknowledged once durable, on
// the bbolt store and on JetStream (an embedded single server, R1, every
// write fsync'd), in the same run; reports both rates and their ratio.
func BenchmarkDurableDispatch(b *testing.B) {
	_, nc := startServer(b, false)
	for _, producers := range []int{1, 64} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			bolt, err := bolt.Open(filepath.Join(b.TempDir(), "agent.db"))
			if err != nil {
				b.Fatal(err)
			}
			js, err := jetstream.Open(context.Background(), nc, jetstream.Config{}, fmt.Sprintf("bench-%d-%d", producers, b.N))
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			boltRate := durableRate(b, bolt, producers, b.N)
			jsRate := durableRate(b, js, producers, b.N)
			b.StopTimer()
			b.ReportMetric(boltRate, "bbolt-inputs/s")
			b.ReportMetric(jsRate, "jetstream-inputs/s")
			b.ReportMetric(jsRate/boltRate, "jetstream/bbolt")
		})
	}
}

// countingStore counts the Appends of the journal.Store it wraps.
type countingStore struct {
	journal.Store
	appends *atomic.Int64
}

func (s countingStore) Append(records []journal.Record) error {
	s.appends.Add(1)
	return s.Store.Append(records)
}

// BenchmarkFleetDurableInputs: 1,000 agents with producers goroutines
// each, every one dispatching to its agent's Machine and waiting for the
// input to be durable; b.N inputs in all, in the same run, on:
//
//   - a bolt.Fleet (one file, whose Appends of many agents share a
//     transaction, two fsyncs) and a pebble.Fleet (a directory, whose
//     Appends of many agents share a batch, one fsync), the embedded
//     backends;
//   - a Fleet on JetStream, an embedded single server (R1) with every
//     write fsync'd before it is acknowledged (sync_always), the bbolt
//     store's guarantee, with Config.CombineAppends (the appends of
//     agents that wait together are one atomic batch, one fsync);
//   - the same on a server that fsyncs every two minutes, nats-server's
//     default (sync_interval): an acknowledged input survives a crash of
//     the server's process, not of the machine, unless a cluster
//     replicates it; without CombineAppends, which costs more than it
//     saves there.
//
// Reports the rates, the ratios to bbolt and to pebble, and each side's Appends per
// input (below 1: a Machine grouped inputs of its agent into one Append,
// which on JetStream is one message). With 1 producer per agent every
// Append is a single record. Opening the 1,000 agents (on JetStream, a
// claim each) is not timed; their lease renewals are part of the run. Run
// it with a fixed count, e.g. -benchtime 20000x.
//
// See "Speed" in the package documentation for the figures.
func BenchmarkFleetDurableInputs(b *testing.B) {
	const agents = 1000
	for _, producers := range []int{4, 1} {
		b.Run(fmt.Sprintf("agents=%d,producers=%d", agents, producers), func(b *testing.B) {
			_, nc := startServer(b, false)
			lazy, err := embedded.Start(embedded.Options{Dir: b.TempDir(), SyncInterval: 2 * time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			defer lazy.Shutdown()
			lnc, err := lazy.Connect()
			if err != nil {
				b.Fatal(err)
			}
			defer lnc.Close()
			bolt, err := bolt.OpenFleet(filepath.Join(b.TempDir(), "fleet.db"))
			if err != nil {
				b.Fatal(err)
			}
			peb, err := pebble.OpenFleet(filepath.Join(b.TempDir(), "fleet"))
			if err != nil {
				b.Fatal(err)
			}
			js, err := jetstream.OpenFleet(context.Background(), nc, jetstream.Config{CombineAppends: true}, "bench")
			if err != nil {
				b.Fatal(err)
			}
			jsLazy, err := jetstream.OpenFleet(context.Background(), lnc, jetstream.Config{}, "bench")
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			boltRate, boltAppends := storetest.FleetRate(b, bolt, agents, producers, b.N)
			pebbleRate, _ := storetest.FleetRate(b, peb, agents, producers, b.N)
			jsRate, jsAppends := storetest.FleetRate(b, js, agents, producers, b.N)
			lazyRate, lazyAppends := storetest.FleetRate(b, jsLazy, agents, producers, b.N)
			b.StopTimer()
			b.ReportMetric(boltRate, "bbolt-inputs/s")
			b.ReportMetric(jsRate, "jetstream-inputs/s")
			b.ReportMetric(jsRate/boltRate, "jetstream/bbolt")
			b.ReportMetric(lazyRate, "jetstream-interval-inputs/s")
			b.ReportMetric(lazyRate/boltRate, "jetstream-interval/bbolt")
			b.ReportMetric(pebbleRate, "pebble-inputs/s")
			b.ReportMetric(jsRate/pebbleRate, "jetstream/pebble")
			b.ReportMetric(lazyRate/pebbleRate, "jetstream-interval/pebble")
			b.ReportMetric(boltAppends, "bbolt-appends/input")
			b.ReportMetric(jsAppends, "jetstream-appends/input")
			b.ReportMetric(lazyAppends, "jetstream-interval-appends/input")
		})
	}
}
