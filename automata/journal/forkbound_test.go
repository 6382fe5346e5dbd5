package journal_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
)

// TestForkRecordIsBounded: a conversation whose jobs answered more after
// the fork's position than a fork carries gives the fork at most
// MaxForkAnswers inputs, and at most MaxForkAnswerBytes bytes of them,
// whatever the jobs dispatched: the fork's snapshot does not grow with them.
func TestForkRecordIsBounded(t *testing.T) {
	for _, c := range []struct {
		name  string
		n     int // inputs the job dispatches
		size  int // bytes of each
		check func(t *testing.T, stats journal.ForkStats)
	}{
		{"count", journal.MaxForkAnswers + 500, 8, func(t *testing.T, s journal.ForkStats) {
			if s.Answers != journal.MaxForkAnswers {
				t.Fatalf("the fork carries %d answers, want the limit, %d", s.Answers, journal.MaxForkAnswers)
			}
		}},
		{"bytes", 20, 1 << 20, func(t *testing.T, s journal.ForkStats) {
			if s.Answers == 0 || s.Answers >= 20 || s.Bytes > journal.MaxForkAnswerBytes+1<<20 {
				t.Fatalf("the fork carries %d answers in %d bytes, want fewer than 20 within %d", s.Answers, s.Bytes, journal.MaxForkAnswerBytes)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			note := strings.Repeat("x", c.size)
			jobs := automata.WithJobs(func(s state) map[string]automata.Job[input] {
				if len(s.Pending) == 0 {
					return nil
				}
				return map[string]automata.Job[input]{"flood": func(_ context.Context, dispatch automata.Dispatch[input]) error {
					for range c.n {
						dispatch(input{Note: note})
					}
					dispatch(input{Answer: s.Pending[0]})
					return nil
				}}
			})
			m := mustOpen(t, filepath.Join(dir, "parent.db"), journal.Options[state, input]{JobKeys: true}, jobs)
			defer mustClose(t, m)
			if err := m.Dispatch(context.Background(), input{Request: 1}); err != nil {
				t.Fatal(err)
			}
			storetest.WaitFor(t, m, "the flood", func(s state) bool { return len(s.Answers) == 1 })
			store := openBolt(t, filepath.Join(dir, "fork.db"))
			defer store.Close()
			stats, err := m.Fork(1, store)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, stats)
		})
	}
}
