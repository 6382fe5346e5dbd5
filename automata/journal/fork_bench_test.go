package journal_test

import (
	"bytes"
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
)

// forkBenchInputs is the length of the conversation BenchmarkFork forks.
const forkBenchInputs = 10_000

// smallModel is the test model with a small state: the count of notes, the
// last one, and the requests pending and answered by count.
type smallState struct {
	Notes    int    `json:"notes"`
	Last     string `json:"last"`
	Pending  []int  `json:"pending"`
	Answered int    `json:"answered"`
}

var smallModel = automata.Definition[smallState, input]{
	Initial: func() smallState { return smallState{} },
	Transition: func(s smallState, in input) smallState {
		switch {
		case in.Note != "":
			s.Notes, s.Last = s.Notes+1, in.Note
		case in.Request != 0:
			s.Pending = automata.Append(s.Pending, in.Request)
		case in.Answer != 0:
			for i, r := range s.Pending {
				if r == in.Answer {
					s.Pending = append(append([]int(nil), s.Pending[:i]...), s.Pending[i+1:]...)
					s.Answered++
					break
				}
			}
		}
		return s
	},
}

// BenchmarkFork: a conversation of 10,000 inputs on bbolt (notes, and
// requests a job answers: 5,000 notes, 2,500 requests, 2,500 answers,
// journaled with JobKeys; closed and opened again, so that its snapshot is
// at its end) forked at its end into a fresh empty store ("fork"),
// against its 10,000 journal records copied into a fresh store, 1,000 an
// Append ("copy"). Two states: "small" (counts, the last note: some 100
// bytes) and "moderate" (storetest's model, which keeps every note and
// answer: some 200 KB). Opening and closing the fresh store is not timed.
// Reported: bytes/op, what was written (ForkStats.Bytes, or the records'
// bytes), and journal-bytes, the parent's journal records.
//
// Sharing, not copying: a fork writes one snapshot record, of the state;
// a copy writes the journal. Measured with
//
//	go test -run XXX -bench BenchmarkFork -benchmem ./automata/journal/
//
// (linux/amd64, 2 cores, Intel Xeon, a virtual disk whose fsyncs vary
// from run to run by a factor of up to 5):
//
//	state=small/fork-2      3752    316834 ns/op      132.0 bytes/fork  618766 journal-bytes    11519 B/op    121 allocs/op
//	state=small/copy-2        82  17832653 ns/op     618766 bytes/copy  618766 journal-bytes  4107196 B/op  63008 allocs/op
//	state=moderate/fork-2    100  11094905 ns/op     344687 bytes/fork  618766 journal-bytes  2427583 B/op   7667 allocs/op
//	state=moderate/copy-2     26  60484850 ns/op     618766 bytes/copy  618766 journal-bytes  4057752 B/op  63031 allocs/op
//
// Fork/copy: small state, time 0.018 (1/56), bytes written 0.00021
// (1/4,688); moderate state, time 0.18 (1/5.5), bytes 0.56 (the state that
// keeps every note is 56% of the journal's bytes; the fork writes it once,
// whatever the length of the conversation). An earlier run of the same
// command: small 497361 vs 23515294 ns/op (0.021), moderate 4575552 vs
// 12061821 ns/op (0.38); the bytes are the same in every run.
func BenchmarkFork(b *testing.B) {
	b.Run("state=small", func(b *testing.B) {
		benchFork(b, smallModel, func(s smallState) []int { return s.Pending })
	})
	b.Run("state=moderate", func(b *testing.B) {
		benchFork(b, model, func(s state) []int { return s.Pending })
	})
}

func benchFork[S any](b *testing.B, def automata.Definition[S, input], pending func(S) []int) {
	dir := b.TempDir()
	path := filepath.Join(dir, "parent.db")
	opts := journal.Options[S, input]{Codec: journal.JSON[S, input](nil), JobKeys: true}
	open := func(options ...automata.Option[S, input]) *journal.Machine[S, input] {
		store, err := bolt.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		m, err := journal.Open(store, def, opts, options...)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	jobs := automata.WithJobs(func(s S) map[string]automata.Job[input] {
		jobs := map[string]automata.Job[input]{}
		for _, r := range pending(s) {
			jobs[jobKey(r)] = func(ctx context.Context, dispatch automata.Dispatch[input]) error {
				dispatch(input{Answer: r})
				return nil
			}
		}
		return jobs
	})
	parent := open(jobs)
	const producers, external = 16, forkBenchInputs * 3 / 4
	var next atomic.Int64
	var wg sync.WaitGroup
	for range producers {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= external; i = int(next.Add(1)) {
				in := input{Note: fmt.Sprintf("a note of a typical length for a chat message, number %05d", i)}
				if i%3 == 0 {
					in = input{Request: i}
				}
				if err := parent.Dispatch(context.Background(), in); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for parent.Seq() < forkBenchInputs {
		time.Sleep(time.Millisecond) // the jobs' answers
	}
	if parent.Seq() != forkBenchInputs || len(pending(parent.Current())) != 0 {
		b.Fatalf("the conversation has %d inputs, %d requests pending; want %d, none", parent.Seq(), len(pending(parent.Current())), forkBenchInputs)
	}
	if err := parent.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	// The journal's records, as a copy would read them.
	var records []journal.Record
	journalBytes := 0
	store, err := bolt.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	err = store.Scan(0, func(r journal.Record) error {
		records = append(records, journal.Record{Seq: r.Seq, Data: bytes.Clone(r.Data)})
		journalBytes += len(r.Data)
		return nil
	})
	if err != nil || len(records) != forkBenchInputs {
		b.Fatalf("the journal holds %d records, %v", len(records), err)
	}
	store.Close()
	parent = open()
	defer func() {
		if err := parent.Close(context.Background()); err != nil {
			b.Error(err)
		}
	}()

	fresh := func(i int) journal.Store {
		s, err := bolt.Open(filepath.Join(dir, fmt.Sprintf("new-%d.db", i)))
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	b.Run("fork", func(b *testing.B) {
		written, i := 0, 0
		for b.Loop() {
			b.StopTimer()
			i++
			s := fresh(i)
			b.StartTimer()
			stats, err := parent.Fork(forkBenchInputs, s)
			if err != nil {
				b.Fatal(err)
			}
			written = stats.Bytes
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(written), "bytes/fork")
		b.ReportMetric(float64(journalBytes), "journal-bytes")
	})
	b.Run("copy", func(b *testing.B) {
		i := 0
		for b.Loop() {
			b.StopTimer()
			i++
			s := fresh(1_000_000 + i)
			b.StartTimer()
			for from := 0; from < len(records); from += 1_000 {
				if err := s.Append(records[from:min(from+1_000, len(records))]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(journalBytes), "bytes/copy")
		b.ReportMetric(float64(journalBytes), "journal-bytes")
	})
}
