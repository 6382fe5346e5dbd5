// Package longrun measures the examples' long-run benchmarks, which feed an
// agent a thousand large inputs to see whether what an input costs grows
// with the history: the time of the last inputs over the first, the
// process's memory, and the journal's size.
package longrun

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal/bolt"
)

// Memory is what the process holds at the end of a run, with the agent
// still open: its resident set and its live heap.
type Memory struct {
	RSS  int64
	Heap uint64
}

// Measure reads the process's Memory, after a garbage collection.
func Measure(tb testing.TB) Memory {
	tb.Helper()
	rss := ProcStatus(tb, "self", "VmRSS")
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Memory{RSS: rss, Heap: ms.HeapAlloc}
}

// Report reports a run: the median time of the last inputs over that of
// the first (last/first), each in ms, the resident memory before the run
// (startRSS) and at its end, the live heap at its end, and the bytes of
// inputs and of snapshots in the bbolt journal at journalPath, which the
// agent must have closed.
func Report(b *testing.B, first, last []time.Duration, startRSS int64, end Memory, journalPath string) {
	b.Helper()
	store, err := bolt.Open(journalPath)
	if err != nil {
		b.Fatal(err)
	}
	journalBytes, snapshotBytes, err := store.Size()
	store.Close()
	if err != nil {
		b.Fatal(err)
	}
	f, l := Median(first), Median(last)
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	b.ReportMetric(float64(l)/float64(f), "last/first")
	b.ReportMetric(float64(f)/1e6, "first-ms")
	b.ReportMetric(float64(l)/1e6, "last-ms")
	b.ReportMetric(mib(startRSS), "rss-start-MiB")
	b.ReportMetric(mib(end.RSS), "rss-MiB")
	b.ReportMetric(mib(int64(end.Heap)), "heap-MiB")
	b.ReportMetric(mib(journalBytes), "journal-MiB")
	b.ReportMetric(mib(snapshotBytes), "snapshots-MiB")
}

// Median is the median of d, which it leaves as it is.
func Median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

// ProcStatus is a size in /proc/{proc}/status, such as VmRSS, in bytes;
// proc is a pid, or "self". Without /proc the test is skipped.
func ProcStatus(tb testing.TB, proc, field string) int64 {
	tb.Helper()
	status, err := os.ReadFile("/proc/" + proc + "/status")
	if err != nil {
		tb.Skip("no /proc:", err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatalf("no %s in /proc/%s/status", field, proc)
	return 0
}

// Message is the n-th of the long messages a benchmark sends: about size
// bytes of words of a sentence that calls for no tool, or, when words is
// false, one word of a single letter.
func Message(n, size int, words bool) string {
	if !words {
		return strings.Repeat(string(rune('a'+n%26)), size)
	}
	var b strings.Builder
	for b.Len() < size {
		fmt.Fprintf(&b, "message %d says nothing in particular and goes on and on. ", n)
	}
	return b.String()[:size]
}
