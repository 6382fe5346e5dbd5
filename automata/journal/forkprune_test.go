package journal_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
)

// TestForkHistoryAfterPrune: a fork that has taken KeepSnapshots snapshots
// of its own still has its history from the fork on (Fork: "the fork's
// StateAt and Inputs reach back to seq"; Options.Compact: "Without it the
// whole journal is kept, and StateAt can reach any point of the history"),
// and a restart of it still picks its record up where it was.
//
// Machine.prune keeps the snapshot Fork wrote (Store.Prune's keepSnapshot),
// the base of the fork's journal and the record of its answers, besides the
// newest KeepSnapshots.
func TestForkHistoryAfterPrune(t *testing.T) {
	dir := t.TempDir()
	opts := journal.Options[state, input]{JobKeys: true}
	// A note, then 30 requests, whose jobs answer once all are in: the
	// fork after them has the 30 answers in its record.
	gate := make(chan struct{})
	parent := mustOpen(t, filepath.Join(dir, "parent.db"), opts, automata.WithJobs(func(s state) map[string]automata.Job[input] {
		jobs := map[string]automata.Job[input]{}
		for _, r := range s.Pending {
			jobs[jobKey(r)] = func(ctx context.Context, dispatch automata.Dispatch[input]) error {
				select {
				case <-gate:
				case <-ctx.Done():
					return ctx.Err()
				}
				dispatch(input{Answer: r})
				return nil
			}
		}
		return jobs
	}))
	const requests = 30
	ins := []input{{Note: "start"}}
	for r := 1; r <= requests; r++ {
		ins = append(ins, input{Request: r})
	}
	dispatchAll(t, parent, ins)
	close(gate)
	storetest.WaitFor(t, parent, "the parent's answers", func(s state) bool { return len(s.Answers) == requests })
	dispatchAll(t, parent, []input{{Note: "end"}})
	forkAt := uint64(len(ins))
	path := filepath.Join(dir, "fork.db")
	store := openBolt(t, path)
	stats, err := parent.Fork(forkAt, store)
	if err != nil || stats.Answers != requests {
		t.Fatalf("Fork(%d) = %+v, %v; want %d answers", forkAt, stats, err, requests)
	}
	store.Close()
	mustClose(t, parent)

	// The fork runs the jobs of requests 1 to 10, is closed (a snapshot),
	// then those of 11 to 20, and is closed again: their answers come from
	// the record, and the second snapshot prunes the fork's.
	fopts := opts
	var calls atomic.Int64
	upTo := func(last int) automata.Option[state, input] {
		return automata.WithJobs(func(s state) map[string]automata.Job[input] {
			jobs := map[string]automata.Job[input]{}
			for _, r := range s.Pending {
				if r <= last {
					jobs[jobKey(r)] = func(ctx context.Context, dispatch automata.Dispatch[input]) error {
						calls.Add(1)
						dispatch(input{Answer: r})
						return nil
					}
				}
			}
			return jobs
		})
	}
	for _, last := range []int{10, 20} {
		fork := mustOpen(t, path, fopts, upTo(last))
		storetest.WaitFor(t, fork, "answers from the record", func(s state) bool { return len(s.Answers) == last })
		if calls.Load() != 0 || fork.Departed() {
			t.Fatalf("the fork called its model %d times (departed %v), want none: its record answers", calls.Load(), fork.Departed())
		}
		entries, err := fork.Inputs(forkAt+1, fork.Seq())
		if err != nil || len(entries) != last {
			t.Fatalf("the fork's journal: %d entries, %v", len(entries), err)
		}
		mustClose(t, fork)
	}

	// What the fork's store holds now.
	store = openBolt(t, path)
	var snaps []uint64
	store.Snapshots(func(r journal.Record) error { snaps = append(snaps, r.Seq); return nil })
	store.Close()
	t.Logf("the fork at %d, its snapshots %v", forkAt, snaps)
	if len(snaps) != 3 || snaps[2] != forkAt {
		t.Fatalf("the fork's snapshots are %v, want its 2 newest and the one it was forked from, %d", snaps, forkAt)
	}

	calls.Store(0)
	fork := mustOpen(t, path, fopts, storetest.Answering(&calls))
	defer mustClose(t, fork)
	storetest.WaitFor(t, fork, "all the answers", func(s state) bool { return len(s.Answers) == requests })
	var failures []string
	if got, err := fork.StateAt(forkAt); err != nil || fmt.Sprint(got) != fmt.Sprint(fold(ins)) {
		failures = append(failures, fmt.Sprintf("StateAt(%d), the fork's position, = %v", forkAt, err))
	}
	if _, err := fork.StateAt(forkAt - 1); !errors.Is(err, journal.ErrBeforeFork) {
		failures = append(failures, fmt.Sprintf("StateAt(%d), before the fork, = %v, want ErrBeforeFork", forkAt-1, err))
	}
	if n := calls.Load(); n != 0 {
		failures = append(failures, fmt.Sprintf("after a restart the fork called its model %d times for the 10 answers its record holds", n))
	}
	if len(failures) > 0 {
		t.Fatalf("the fork at %d, its snapshots %v: %q", forkAt, snaps, failures)
	}
}

func openBolt(t testing.TB, path string) journal.Store {
	t.Helper()
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatalf("bolt.Open: %v", err)
	}
	return s
}
