package jetstream_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/nats-io/nats.go"
)

// manyAgentsCombined runs agents Machines on stores with CombineAppends,
// producers goroutines each dispatching inputs, and then reads every
// journal back with a store that does not combine: each holds its
// records, numbered from 1 to the last its Machine journaled, the inputs
// among them.
func manyAgentsCombined(t *testing.T, nc *nats.Conn, cfg jetstream.Config, agents, producers, inputs int) {
	cfg.CombineAppends = true
	opts := journal.Options[int, note]{Codec: journal.JSON[int, note](nil), SnapshotEvery: -1}
	machines := make([]*journal.Machine[int, note], agents)
	for i := range machines {
		s, err := jetstream.Open(context.Background(), nc, cfg, fmt.Sprintf("many-%03d", i))
		if err != nil {
			t.Fatal(err)
		}
		if machines[i], err = journal.Open[int, note](s, notesModel, opts); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range agents * producers {
		m := machines[i%agents]
		wg.Go(func() {
			for k := range inputs {
				if err := m.Dispatch(context.Background(), note{Text: fmt.Sprintf("producer %d, input %d", i/agents, k)}); err != nil {
					t.Errorf("agent %d: %v", i%agents, err)
					return
				}
			}
		})
	}
	wg.Wait()
	last := make([]uint64, agents)
	for i, m := range machines {
		if got := m.Current(); got != producers*inputs {
			t.Errorf("agent %d: state %d, want %d", i, got, producers*inputs)
		}
		last[i] = m.Seq()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := m.Close(ctx); err != nil {
			t.Error(err)
		}
		cancel()
	}
	cfg.CombineAppends = false
	for i := range agents {
		s, err := jetstream.Open(context.Background(), nc, cfg, fmt.Sprintf("many-%03d", i))
		if err != nil {
			t.Fatal(err)
		}
		next := uint64(1)
		if err := s.Scan(1, func(r journal.Record) error {
			if r.Seq != next {
				return fmt.Errorf("record %d where %d was expected", r.Seq, next)
			}
			next++
			return nil
		}); err != nil {
			t.Fatalf("agent %d: %v", i, err)
		}
		if next-1 != last[i] || last[i] < uint64(producers*inputs) {
			t.Errorf("agent %d holds records 1 to %d, its Machine journaled to %d, %d inputs", i, next-1, last[i], producers*inputs)
		}
		s.Close()
	}
}

// TestManyAgentsCombined: agents that append at the same time on one
// connection, with CombineAppends, each journal every input it
// acknowledged, once and in order; on a single server.
func TestManyAgentsCombined(t *testing.T) {
	_, nc := startServer(t, false)
	manyAgentsCombined(t, nc, jetstream.Config{}, 100, 4, 25)
}

// TestManyAgentsCombinedR3: the same on a three-node cluster, the stream
// replicated three times.
func TestManyAgentsCombinedR3(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	nc := startCluster(t)
	manyAgentsCombined(t, nc, jetstream.Config{Replicas: 3}, 50, 4, 10)
}
