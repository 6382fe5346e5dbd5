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
	"github.com/moora-go/moora/automata/journal/jetstream"
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
			bolt, err := journal.OpenBolt(filepath.Join(b.TempDir(), "agent.db"))
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
