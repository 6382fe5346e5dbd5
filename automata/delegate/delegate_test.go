package delegate_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/delegate"
	"github.com/moora-go/moora/automata/journal"
)

// waitParent waits until the state of parent id satisfies ok.
func (tm *team) waitParent(t testing.TB, id string, what string, ok func(parentState) bool) parentState {
	t.Helper()
	return waitState(t, what, func() (parentState, error) {
		a, release, err := tm.parents.Get(context.Background(), id)
		if err != nil {
			return parentState{}, err
		}
		defer release()
		return a.Machine().Current(), nil
	}, ok)
}

func (tm *team) waitChild(t testing.TB, id string, what string, ok func(childState) bool) childState {
	t.Helper()
	return waitState(t, what, func() (childState, error) {
		a, release, err := tm.children.Get(context.Background(), id)
		if err != nil {
			return childState{}, err
		}
		defer release()
		return a.Machine().Current(), nil
	}, ok)
}

func waitState[S any](t testing.TB, what string, get func() (S, error), ok func(S) bool) S {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := get()
		if err == nil && ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %+v, %v", what, s, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (tm *team) ask(t testing.TB, id string, in parentInput) {
	t.Helper()
	if _, err := tm.parents.Dispatch(context.Background(), id, in); err != nil {
		t.Fatal(err)
	}
}

// TestDelegation: a task is done by a child agent of its own, named by
// the parent's id and the job's key, which knows who delegated to it; the
// result reaches the parent; the child got its task once.
func TestDelegation(t *testing.T) {
	tm := openTeam(t, t.TempDir(), delegate.Config[childState, childInput]{}, nil)
	defer tm.close(t)
	if _, err := tm.parents.Create("boss", "ann"); err != nil {
		t.Fatal(err)
	}
	tm.ask(t, "boss", parentInput{Ask: "write"})
	tm.ask(t, "boss", parentInput{Ask: "read"})
	s := tm.waitParent(t, "boss", "both results", func(s parentState) bool { return len(s.Results) == 2 })
	if !reflect.DeepEqual(s.Results, map[string]string{"write": "WRITE", "read": "READ"}) {
		t.Fatalf("results %v", s.Results)
	}
	infos := tm.childInfos(t)
	if len(infos) != 2 {
		t.Fatalf("%d children, want one per task", len(infos))
	}
	for _, task := range []string{"write", "read"} {
		id := delegate.ChildID("boss", "task/"+task)
		info, ok := infos[id]
		if !ok || !reflect.DeepEqual(info.Delegated, &journal.Delegation{Agent: "boss", Job: "task/" + task, Depth: 1}) || info.Owner != "team" {
			t.Fatalf("child %s: %+v (found %v)", id, info, ok)
		}
		a, release, err := tm.children.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := a.Machine().Inputs(1, a.Machine().Seq())
		release()
		if err != nil || len(entries) != 2 || entries[0].Input.Task != task || entries[1].Input.Answer != strings.ToUpper(task) {
			t.Fatalf("child %s's journal: %+v, %v; want its task, then its answer", id, entries, err)
		}
	}
	if a, b := delegate.ChildID("boss", "k"), delegate.ChildID("bos", "sk"); a == b || journal.CheckAgentID(a) != nil {
		t.Fatalf("ChildID: %q and %q", a, b)
	}
}

// TestCancelTellsTheChild: a task the parent drops (its job's key vanished)
// is cancelled in the child; a parent that closes tells its children
// nothing, and the work goes on when it opens again.
func TestCancelTellsTheChild(t *testing.T) {
	dir := t.TempDir()
	gate := make(chan struct{})
	let := func(ctx context.Context, _ string) error {
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	tm := openTeam(t, dir, delegate.Config[childState, childInput]{}, let)
	if _, err := tm.parents.Create("boss", "ann"); err != nil {
		t.Fatal(err)
	}
	tm.ask(t, "boss", parentInput{Ask: "dropped"})
	tm.ask(t, "boss", parentInput{Ask: "kept"})
	dropped, kept := delegate.ChildID("boss", "task/dropped"), delegate.ChildID("boss", "task/kept")
	tm.waitChild(t, dropped, "the task", func(s childState) bool { return s.Task == "dropped" })
	tm.waitChild(t, kept, "the task", func(s childState) bool { return s.Task == "kept" })
	tm.ask(t, "boss", parentInput{Drop: "dropped"})
	tm.waitChild(t, dropped, "the cancel", func(s childState) bool { return s.Cancelled })
	tm.close(t) // the parent's job of "kept" is cut off by the close
	tm = openTeam(t, dir, delegate.Config[childState, childInput]{}, let)
	defer tm.close(t)
	if s := tm.waitChild(t, kept, "the task", func(s childState) bool { return s.Task == "kept" }); s.Cancelled {
		t.Fatal("a parent that closed cancelled its child")
	}
	close(gate)
	s := tm.waitParent(t, "boss", "the result", func(s parentState) bool { return len(s.Results) == 1 })
	if s.Results["kept"] != "KEPT" {
		t.Fatalf("results %v", s.Results)
	}
}

// TestLimits: a delegation past MaxDepth fails without a child; one past
// Timeout fails and cancels its child; past MaxChildren, a parent's
// delegations wait for one to end.
func TestLimits(t *testing.T) {
	t.Run("Depth", func(t *testing.T) {
		tm := openTeam(t, t.TempDir(), delegate.Config[childState, childInput]{MaxDepth: 2,
			Parents: func(id string) (journal.AgentInfo, error) {
				return journal.AgentInfo{Delegated: &journal.Delegation{Agent: "x", Job: "y", Depth: 2}}, nil
			}}, nil)
		defer tm.close(t)
		tm.parents.Create("deep", "ann")
		tm.ask(t, "deep", parentInput{Ask: "t"})
		s := tm.waitParent(t, "deep", "the result", func(s parentState) bool { return len(s.Results) == 1 })
		if !strings.Contains(s.Results["t"], delegate.ErrTooDeep.Error()) || len(tm.childInfos(t)) != 0 {
			t.Fatalf("result %q with %d children; want ErrTooDeep and none", s.Results["t"], len(tm.childInfos(t)))
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		tm := openTeam(t, t.TempDir(), delegate.Config[childState, childInput]{Timeout: 20 * time.Millisecond},
			func(ctx context.Context, _ string) error { <-ctx.Done(); return ctx.Err() })
		defer tm.close(t)
		tm.parents.Create("slow", "ann")
		tm.ask(t, "slow", parentInput{Ask: "t"})
		s := tm.waitParent(t, "slow", "the result", func(s parentState) bool { return len(s.Results) == 1 })
		if !strings.Contains(s.Results["t"], delegate.ErrTimeout.Error()) {
			t.Fatalf("result %q, want ErrTimeout", s.Results["t"])
		}
		tm.waitChild(t, delegate.ChildID("slow", "task/t"), "the cancel", func(s childState) bool { return s.Cancelled })
	})
	t.Run("Children", func(t *testing.T) {
		var atWork, most atomic.Int64
		gate := make(chan struct{})
		tm := openTeam(t, t.TempDir(), delegate.Config[childState, childInput]{MaxChildren: 2}, func(ctx context.Context, _ string) error {
			n := atWork.Add(1)
			defer atWork.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			select {
			case <-gate:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		defer tm.close(t)
		tm.parents.Create("busy", "ann")
		for _, task := range []string{"a", "b", "c", "d", "e"} {
			tm.ask(t, "busy", parentInput{Ask: task})
		}
		waitState(t, "two children at work", func() (int64, error) { return atWork.Load(), nil }, func(n int64) bool { return n == 2 })
		if n := len(tm.childInfos(t)); n != 2 {
			t.Fatalf("%d children created while 2 may work at once", n)
		}
		close(gate)
		s := tm.waitParent(t, "busy", "every result", func(s parentState) bool { return len(s.Results) == 5 })
		if most.Load() > 2 || len(tm.childInfos(t)) != 5 {
			t.Fatalf("at most %d children at work at once (limit 2), %d in all, results %v", most.Load(), len(tm.childInfos(t)), s.Results)
		}
	})
}

// TestRunNeedsAJob: the child's id comes from the job's key.
func TestRunNeedsAJob(t *testing.T) {
	tm := openTeam(t, t.TempDir(), delegate.Config[childState, childInput]{}, nil)
	defer tm.close(t)
	if _, err := tm.d.Run(context.Background(), "p", childInput{Task: "x"}, func(childState) bool { return true }); !errors.Is(err, delegate.ErrNotAJob) {
		t.Fatalf("Run outside a job: %v", err)
	}
}
