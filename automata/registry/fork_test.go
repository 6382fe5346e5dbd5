package registry_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/registry"
)

// TestFork: a fork by id starts from its parent's state at the position
// asked, owned by who forked it, naming its origin; it lives on its own and
// the parent is untouched; who may not see the parent cannot fork it; a
// fork that fails leaves no agent.
func TestFork(t *testing.T) {
	f := newFixture(t, registry.Config[state, input]{})
	f.create(t, "p")
	for _, n := range []string{"a", "b", "c"} {
		f.dispatch(t, "p", input{Note: n})
	}
	owner := registry.Identity{Name: "owner"}
	id, info, err := f.reg.Fork(context.Background(), owner, "p", 2, "p-fork")
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	if id != "p-fork" || info.Owner != "owner" || !reflect.DeepEqual(info.Fork, &journal.ForkOrigin{Agent: "p", Seq: 2}) {
		t.Fatalf("Fork = %q, %+v", id, info)
	}
	if got, err := f.reg.Info("p-fork"); err != nil || !reflect.DeepEqual(got.Fork, info.Fork) {
		t.Fatalf("Info(p-fork) = %+v, %v", got, err)
	}
	if st := f.state(t, "p-fork"); !reflect.DeepEqual(st.Notes, []string{"a", "b"}) {
		t.Fatalf("the fork's notes: %v, want a b", st.Notes)
	}
	f.dispatch(t, "p-fork", input{Note: "z"})
	if st := f.state(t, "p-fork"); !reflect.DeepEqual(st.Notes, []string{"a", "b", "z"}) {
		t.Fatalf("the fork's notes after its own input: %v", st.Notes)
	}
	if st := f.state(t, "p"); !reflect.DeepEqual(st.Notes, []string{"a", "b", "c"}) {
		t.Fatalf("the parent's notes after its fork's input: %v", st.Notes)
	}

	// seq 0 forks at the last input; a random id when none is given.
	id, _, err = f.reg.Fork(context.Background(), owner, "p", 0, "")
	if err != nil || len(id) != 32 {
		t.Fatalf("Fork(at the end, no id) = %q, %v", id, err)
	}
	if st := f.state(t, id); len(st.Notes) != 3 {
		t.Fatalf("a fork at the end holds %v", st.Notes)
	}

	for name, tc := range map[string]struct {
		who    registry.Identity
		parent string
		seq    uint64
		child  string
		want   error
	}{
		"another's agent":  {registry.Identity{Name: "mallory"}, "p", 1, "m1", journal.ErrNoAgent},
		"no such agent":    {owner, "nobody", 1, "m2", journal.ErrNoAgent},
		"an id taken":      {owner, "p", 1, "p-fork", journal.ErrAgentExists},
		"an id refused":    {owner, "p", 1, "a b", journal.ErrInvalidAgentID},
		"past the journal": {owner, "p", 9, "m3", nil},
	} {
		_, _, err := f.reg.Fork(context.Background(), tc.who, tc.parent, tc.seq, tc.child)
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: Fork = %v, want %v", name, err, tc.want)
		}
		if tc.child != "p-fork" {
			if _, err := f.reg.Info(tc.child); !errors.Is(err, journal.ErrNoAgent) {
				t.Errorf("%s: a failed fork left agent %q: %v", name, tc.child, err)
			}
		}
	}
}

// TestForkNotActivatedEarly: Gets of a fork's id while the fork is made
// wait for it, and find its state, not an empty agent's.
func TestForkNotActivatedEarly(t *testing.T) {
	f := newFixture(t, registry.Config[state, input]{})
	f.create(t, "p")
	f.dispatch(t, "p", input{Note: "a"})
	var wg sync.WaitGroup
	results := make(chan []string, 8)
	start := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			<-start
			a, release, err := f.reg.Get(context.Background(), "early")
			if err != nil {
				results <- nil // not created yet: fine
				return
			}
			results <- a.Machine().Current().Notes
			release()
		})
	}
	close(start)
	if _, _, err := f.reg.Fork(context.Background(), registry.Identity{Name: "owner"}, "p", 1, "early"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(results)
	for notes := range results {
		if notes != nil && !reflect.DeepEqual(notes, []string{"a"}) {
			t.Fatalf("a Get during the fork found notes %v, want the fork's [a]", notes)
		}
	}
}
