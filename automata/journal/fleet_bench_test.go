package journal_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/moora-go/moora/automata/journal/internal/storetest"
)

// BenchmarkFleets: the Machines of a fleet's agents on each embedded
// backend, each agent with producers goroutines that dispatch and wait for
// the disk, b.N inputs in all on each, one backend after the other in one
// run. Both cases have 4,000 producers: spread over 1,000 agents (whose
// Appends a bbolt fleet commits in one transaction, and pebble syncs in one
// write of its log), or all on one agent, whose Machine groups them itself.
// Reports each backend's inputs/s and Appends per input, and pebble's rate
// as a ratio to bbolt's. Run it with a fixed count, e.g. -benchtime 200000x.
func BenchmarkFleets(b *testing.B) {
	for _, c := range []struct{ agents, producers int }{{1000, 4}, {1, 4000}} {
		b.Run(fmt.Sprintf("agents=%d,producers=%d", c.agents, c.producers), func(b *testing.B) {
			rates := map[string]float64{}
			for _, be := range backends {
				f, err := openFleet(filepath.Join(b.TempDir(), "fleet"+be.suffix))
				if err != nil {
					b.Fatal(err)
				}
				rate, appends := storetest.FleetRate(b, f, c.agents, c.producers, b.N)
				rates[be.name] = rate
				b.ReportMetric(rate, be.name+"-inputs/s")
				b.ReportMetric(appends, be.name+"-appends/input")
			}
			b.ReportMetric(rates["pebble"]/rates["bolt"], "pebble/bolt")
		})
	}
}
