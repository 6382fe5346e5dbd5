package journal_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// BenchmarkReplay compares, on one journal of 100,000 starter-agent
// messages with sampled digests (journal.DigestSampled, as Accept writes
// them) and no snapshot, the recovery of journal.Open ("open": every input
// decoded, validated and applied) with journal.Replay ("replay": the same,
// and the state's digest computed and compared wherever a record has one).
// The ratio of the two is what replay costs over plain recovery.
func BenchmarkReplay(b *testing.B) {
	const total = 100_000
	codec := starterCodec()
	dir := b.TempDir()
	plain, path := filepath.Join(dir, "plain.db"), filepath.Join(dir, "digested.db")
	buildStarterStore(b, plain, codec, total, nil)
	opts := journal.Options[decl.AgentState, decl.AgentInput]{Codec: codec, Digests: journal.DigestSampled, SnapshotEvery: -1, SkipCloseSnapshot: true}
	src, err := bolt.Open(plain)
	if err != nil {
		b.Fatal(err)
	}
	dst, err := bolt.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := journal.Accept(src, dst, starter, opts); err != nil {
		b.Fatal(err)
	}
	src.Close()
	dst.Close()

	// Each iteration runs both, one after the other, so that a machine
	// shared with other work slows both alike: the ratio of their sums
	// is reported (replay/open), as are their times per run, and the
	// ratio of the CPU time each took (replay/open-cpu), which other
	// processes on the machine disturb less.
	var openTime, replayTime, openCPU, replayCPU time.Duration
	var digests int
	for b.Loop() {
		runtime.GC() // neither pays for the other's garbage
		start, cpu := time.Now(), cpuTime()
		store, err := bolt.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		m, err := journal.Open(store, starter, opts)
		if err != nil {
			b.Fatal(err)
		}
		if m.Seq() != total {
			b.Fatalf("recovered %d inputs, want %d", m.Seq(), total)
		}
		openTime, openCPU = openTime+time.Since(start), openCPU+cpuTime()-cpu
		if err := m.Close(context.Background()); err != nil {
			b.Fatal(err)
		}

		runtime.GC()
		start, cpu = time.Now(), cpuTime()
		if store, err = bolt.Open(path); err != nil {
			b.Fatal(err)
		}
		rep, err := journal.Replay(store, starter, opts)
		if err != nil {
			b.Fatal(err)
		}
		replayTime, replayCPU = replayTime+time.Since(start), replayCPU+cpuTime()-cpu
		if !rep.Identical() || rep.Inputs != total || rep.Digests == 0 {
			b.Fatalf("replay: %+v, want identical, %d inputs, digests compared", rep, total)
		}
		digests = rep.Digests
		store.Close()
	}
	n := float64(b.N)
	b.ReportMetric(openTime.Seconds()/n, "open-s/op")
	b.ReportMetric(replayTime.Seconds()/n, "replay-s/op")
	b.ReportMetric(replayTime.Seconds()/openTime.Seconds(), "replay/open")
	if openCPU > 0 {
		b.ReportMetric(replayCPU.Seconds()/openCPU.Seconds(), "replay/open-cpu")
	}
	b.ReportMetric(float64(digests), "digests")
}
