package bolt_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// TestFleetScanWhileTheLogMoves: an agent's Scan reads its records where
// they are, the inputs and the shared log, while its Appends go on and the
// log is moved under it (a small LogBytes moves it every few commits, other
// agents' Appends with it): every Scan sees the records 1..n of some n at
// least as large as the last acknowledged when it started, each once, in
// order, with the bytes appended.
func TestFleetScanWhileTheLogMoves(t *testing.T) {
	f, err := bolt.OpenFleetWith(filepath.Join(t.TempDir(), "fleet.db"), bolt.FleetOptions{LogBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer closeFleet(t, f)
	a, other := fleetAgent(t, f, "a"), fleetAgent(t, f, "other")
	defer a.Close()
	defer other.Close()
	const n = 400
	var acked atomic.Uint64
	var wg sync.WaitGroup
	wg.Go(func() {
		for seq := uint64(1); seq <= n; seq++ {
			if err := a.Append(fleetRecords(seq, seq, 100)); err != nil {
				t.Error(err)
				return
			}
			acked.Store(seq)
		}
	})
	wg.Go(func() {
		for seq := uint64(1); seq <= n; seq++ {
			if err := other.Append(fleetRecords(seq, seq, 100)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	scans := 0
	for acked.Load() < n && !t.Failed() {
		least := acked.Load()
		var next uint64 = 1
		err := a.Scan(0, func(r journal.Record) error {
			if r.Seq != next {
				return fmt.Errorf("record %d where %d was next", r.Seq, next)
			}
			if want := fmt.Sprintf("%0*d", 100, r.Seq); string(r.Data) != want {
				return fmt.Errorf("record %d holds %q", r.Seq, r.Data)
			}
			next++
			return nil
		})
		if err != nil {
			t.Fatalf("scan %d: %v", scans, err)
		}
		if next-1 < least {
			t.Fatalf("scan %d saw records 1..%d; %d were acknowledged before it began", scans, next-1, least)
		}
		scans++
	}
	wg.Wait()
	if st := f.Stats(); st.Moves == 0 {
		t.Fatalf("the log was never moved (stats %+v): the test tested nothing", st)
	}
	if got := fleetSeqs(t, a); len(got) != n {
		t.Fatalf("a holds %d records at the end, want %d", len(got), n)
	}
	t.Logf("%d scans, stats %+v", scans, f.Stats())
}
