package storetest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
)

// Answering is the jobs function of the fork tests: a job per pending
// request, which answers it at once and counts its call in calls (the
// "model" a fork must not call while its record answers).
func Answering(calls *atomic.Int64) automata.Option[State, Input] {
	return automata.WithJobs(func(s State) map[string]automata.Job[Input] {
		jobs := map[string]automata.Job[Input]{}
		for _, r := range s.Pending {
			jobs[fmt.Sprintf("req-%d", r)] = func(ctx context.Context, dispatch automata.Dispatch[Input]) error {
				calls.Add(1)
				dispatch(Input{Answer: r})
				return nil
			}
		}
		return jobs
	})
}

// Digest is a digest of everything store holds, journal and snapshots.
func Digest(t testing.TB, s journal.Store) [32]byte {
	t.Helper()
	h := sha256.New()
	for _, r := range scan(t, s, 0) {
		fmt.Fprintf(h, "input %d %x\n", r.Seq, r.Data)
	}
	for _, r := range snapshots(t, s) {
		fmt.Fprintf(h, "snapshot %d %x\n", r.Seq, r.Data)
	}
	return [32]byte(h.Sum(nil))
}

// WaitFor waits until m's state satisfies ok, failing t after 30 s.
func WaitFor(t testing.TB, m *journal.Machine[State, Input], what string, ok func(State) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok(m.Current()) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: the state is %+v", what, m.Current())
		}
		time.Sleep(time.Millisecond)
	}
}

// testFork: a fork at N resumes from the state after N and lives on its own;
// its jobs are answered from what the conversation forked answered, with
// no call, until an input comes that the record does not hold; the
// original is untouched; a restart of the fork picks the record up.
func testFork(t *testing.T, open Opener) {
	parentName, childName, lateName := newName(t), newName(t), newName(t)
	var parentCalls, childCalls atomic.Int64
	opts := journal.Options[state, input]{JobKeys: true}
	parent := mustOpen(t, open, parentName, opts, Answering(&parentCalls))
	DispatchAll(t, parent, []input{{Request: 1}})
	WaitFor(t, parent, "answer 1", func(s State) bool { return len(s.Answers) == 1 })
	DispatchAll(t, parent, []input{{Note: "a"}, {Request: 2}})
	WaitFor(t, parent, "answer 2", func(s State) bool { return len(s.Answers) == 2 })
	entries, err := parent.Inputs(1, 5)
	if err != nil || len(entries) != 5 {
		t.Fatalf("the parent's journal: %+v, %v", entries, err)
	}
	if entries[1].Job != "req-1" || entries[1].Recorded || entries[0].Job != "" || entries[4].Job != "req-2" {
		t.Fatalf("job keys of the parent's inputs: %+v; want req-1 on 2, req-2 on 5, none on 1", entries)
	}
	before, beforeDigest := parent.Current(), digestOf(t, parent)

	// Refusals, which write nothing.
	for _, seq := range []uint64{0, 6} {
		s := open(t, newName(t))
		if _, err := parent.Fork(seq, s); err == nil {
			t.Errorf("Fork(%d) of a journal of 5 inputs succeeded", seq)
		}
		if got := scan(t, s, 0); len(got) != 0 || len(snapshots(t, s)) != 0 {
			t.Errorf("Fork(%d) refused, but wrote records", seq)
		}
		mustCloseStore(t, s)
	}
	full := open(t, newName(t))
	mustAppend(t, full, records(1, 1))
	if _, err := parent.Fork(1, full); err == nil {
		t.Error("Fork into a store that holds a record succeeded")
	}
	mustCloseStore(t, full)

	// Fork at 1: the request is pending, and its answer is in the record.
	s := open(t, childName)
	stats, err := parent.Fork(1, s)
	if err != nil {
		t.Fatalf("Fork(1): %v", err)
	}
	if stats.Seq != 1 || stats.Answers != 1 || stats.Bytes == 0 {
		t.Fatalf("Fork(1) = %+v, want 1 answer (the record ends at the note, input 3)", stats)
	}
	if got := scan(t, s, 0); len(got) != 0 {
		t.Fatalf("the fork's store holds %d journal records, want none: the parent's are not copied", len(got))
	}
	child, err := openMachine(t, s, opts, Answering(&childCalls))
	if err != nil {
		t.Fatalf("Open of the fork: %v", err)
	}
	WaitFor(t, child, "the fork's answer 1", func(s State) bool { return len(s.Answers) == 1 })
	if n := childCalls.Load(); n != 0 {
		t.Fatalf("the fork called its model %d times for an answer the record holds", n)
	}
	if child.ForkedAt() != 1 {
		t.Fatalf("ForkedAt() = %d, want 1", child.ForkedAt())
	}
	if child.Departed() {
		t.Fatal("the fork departed from its record before any input of its own")
	}
	DispatchAll(t, child, []input{{Request: 3}})
	WaitFor(t, child, "the fork's answer 3", func(s State) bool { return len(s.Answers) == 2 })
	if n := childCalls.Load(); n != 1 || !child.Departed() {
		t.Fatalf("after a user's input the fork called its model %d times (departed %v), want 1 (true)", n, child.Departed())
	}
	got, err := child.Inputs(0, 10)
	if err != nil || len(got) != 3 || got[0].Seq != 2 || got[0].Job != "req-1" || !got[0].Recorded ||
		got[1].Input.Request != 3 || got[1].Job != "" || got[2].Job != "req-3" || got[2].Recorded {
		t.Fatalf("the fork's journal: %+v, %v; want 2 (req-1, from the record), 3 (the request), 4 (req-3, its own)", got, err)
	}
	if _, err := child.StateAt(0); err == nil {
		t.Error("StateAt(0) of a fork at 1 succeeded: its history before the fork is the parent's")
	}
	want := State{Pending: []int{}, Answers: []string{"answer-1", "answer-3"}}
	if st := child.Current(); fmt.Sprint(st) != fmt.Sprint(want) {
		t.Fatalf("the fork's state is %+v, want %+v", st, want)
	}
	if p := parent.Current(); !reflect.DeepEqual(p, before) || parent.Seq() != 5 {
		t.Fatalf("the parent changed with its fork: %+v at %d, was %+v at 5", p, parent.Seq(), before)
	}
	MustClose(t, child)
	childState := want

	// The fork reopens as it was, and calls nothing: nothing is pending.
	child = mustOpen(t, open, childName, opts, Answering(&childCalls))
	if st := child.Current(); fmt.Sprint(st) != fmt.Sprint(childState) || child.Seq() != 4 {
		t.Fatalf("the fork reopened as %+v at %d, want %+v at 4", st, child.Seq(), childState)
	}
	MustClose(t, child)

	// A fork at 4 opened first without jobs, then with them: the record is
	// where it was, and answers.
	s = open(t, lateName)
	if _, err := parent.Fork(4, s); err != nil {
		t.Fatalf("Fork(4): %v", err)
	}
	late, err := openMachine(t, s, opts)
	if err != nil {
		t.Fatalf("Open of the fork at 4: %v", err)
	}
	MustClose(t, late)
	var lateCalls atomic.Int64
	late = mustOpen(t, open, lateName, opts, Answering(&lateCalls))
	WaitFor(t, late, "the fork's answer 2", func(s State) bool { return len(s.Answers) == 2 })
	if n := lateCalls.Load(); n != 0 {
		t.Fatalf("the reopened fork called its model %d times for an answer its record holds", n)
	}
	MustClose(t, late)

	// The parent is as it was.
	if digestOf(t, parent) != beforeDigest {
		t.Fatal("the parent's journal or state changed with its forks")
	}
	MustClose(t, parent)
}

// digestOf is the digest of the inputs and state of m.
func digestOf(t testing.TB, m *journal.Machine[State, Input]) [32]byte {
	t.Helper()
	entries, err := m.Inputs(0, m.Seq())
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(fmt.Appendf(nil, "%+v %+v", entries, m.Current()))
}
