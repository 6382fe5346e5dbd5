package registry_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/registry"
)

// The agents of these tests keep notes, and hold a job open for each name in
// Hold until Let names it.
type state struct {
	Notes []string `json:"notes"`
	Hold  []string `json:"hold"`
}

type input struct {
	Note string `json:"note,omitempty"`
	Hold string `json:"hold,omitempty"`
	Let  string `json:"let,omitempty"`
}

var model = automata.Definition[state, input]{
	Initial: func() state { return state{} },
	Transition: func(s state, in input) state {
		switch {
		case in.Note != "":
			s.Notes = automata.Append(s.Notes, in.Note)
		case in.Hold != "":
			s.Hold = automata.Append(s.Hold, in.Hold)
		case in.Let != "":
			s.Hold = slices.DeleteFunc(slices.Clone(s.Hold), func(h string) bool { return h == in.Let })
		}
		return s
	},
}

// fixture is a registry over a bbolt fleet, counting the machines it opens.
type fixture struct {
	fleet    *bolt.Fleet
	reg      *registry.Registry[state, input]
	opens    atomic.Int64
	jobs     chan string // the key of each job, as it starts
	now      atomic.Int64
	openHook func(id string)
	open     func(id string, s journal.Store) (*journal.Machine[state, input], error)
}

func newFixture(t *testing.T, cfg registry.Config[state, input]) *fixture {
	t.Helper()
	f := &fixture{jobs: make(chan string, 16)}
	f.now.Store(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC).UnixNano())
	fleet, err := bolt.OpenFleet(filepath.Join(t.TempDir(), "fleet.db"))
	if err != nil {
		t.Fatal(err)
	}
	f.fleet = fleet
	cfg.Fleet = fleet
	cfg.Now = func() time.Time { return time.Unix(0, f.now.Load()) }
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Open = func(id string, s journal.Store) (*journal.Machine[state, input], error) {
		f.opens.Add(1)
		if f.openHook != nil {
			f.openHook(id)
		}
		return journal.Open(s, model, journal.Options[state, input]{Codec: journal.JSON[state, input](nil), Logger: slog.New(slog.DiscardHandler)},
			automata.WithJobs(func(s state) map[string]automata.Job[input] {
				jobs := map[string]automata.Job[input]{}
				for _, h := range s.Hold {
					jobs[h] = func(ctx context.Context, _ automata.Dispatch[input]) error {
						f.jobs <- automata.JobKey(ctx)
						<-ctx.Done()
						return nil
					}
				}
				return jobs
			}))
	}
	f.open = cfg.Open
	reg, err := registry.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.reg = reg
	t.Cleanup(func() {
		if err := reg.Close(context.Background()); err != nil {
			t.Error(err)
		}
		if err := fleet.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// inactive fails the test unless agent id's store is closed: the fleet
// opens it.
func (f *fixture) inactive(t *testing.T, id, why string) {
	t.Helper()
	s, err := f.fleet.Open(id)
	if err != nil {
		t.Fatalf("%s: %v", why, err)
	}
	s.Close()
}

func (f *fixture) advance(d time.Duration) { f.now.Add(int64(d)) }

func (f *fixture) create(t *testing.T, id string) {
	t.Helper()
	if _, err := f.reg.Create(id, "owner"); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) dispatch(t *testing.T, id string, in input) uint64 {
	t.Helper()
	seq, err := f.reg.Dispatch(context.Background(), id, in)
	if err != nil {
		t.Fatalf("Dispatch(%s, %+v): %v", id, in, err)
	}
	return seq
}

func (f *fixture) state(t *testing.T, id string) state {
	t.Helper()
	a, release, err := f.reg.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	return a.Machine().Current()
}

// TestConcurrentGetActivatesOnce: many goroutines' first Get of one id open
// its machine once, and all get that one activation.
func TestConcurrentGetActivatesOnce(t *testing.T) {
	f := newFixture(t, registry.Config[state, input]{})
	f.create(t, "a")
	gate := make(chan struct{})
	f.openHook = func(string) { <-gate } // hold the activation until all have asked
	const n = 64
	agents := make([]*registry.Agent[state, input], n)
	var wg, asked sync.WaitGroup
	asked.Add(n)
	for i := range n {
		wg.Go(func() {
			asked.Done()
			a, release, err := f.reg.Get(context.Background(), "a")
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			agents[i] = a
		})
	}
	asked.Wait()
	close(gate)
	wg.Wait()
	if got := f.opens.Load(); got != 1 {
		t.Fatalf("%d concurrent Gets opened the machine %d times, want 1", n, got)
	}
	for i, a := range agents {
		if a != agents[0] {
			t.Fatalf("Get %d returned another activation", i)
		}
	}
	if s := f.reg.Stats(); s.Activations != 1 || s.Active != 1 {
		t.Fatalf("Stats = %+v, want one activation, one active", s)
	}
}

// TestIdleDeactivationKeepsEveryInput: an agent idle for IdleTimeout is
// deactivated (its snapshot taken, its store closed); the next input
// activates it again, with every acknowledged input there.
func TestIdleDeactivationKeepsEveryInput(t *testing.T) {
	f := newFixture(t, registry.Config[state, input]{IdleTimeout: time.Hour})
	f.create(t, "a")
	var want []string
	for i := range 5 {
		want = append(want, fmt.Sprint("n", i))
		f.dispatch(t, "a", input{Note: want[i]})
	}
	if n := f.reg.Sweep(); n != 0 {
		t.Fatalf("Sweep before the timeout deactivated %d", n)
	}
	f.advance(time.Hour)
	if n := f.reg.Sweep(); n != 1 {
		t.Fatalf("Sweep after the timeout deactivated %d, want 1", n)
	}
	if s := f.reg.Stats(); s.Active != 0 || s.Deactivations != 1 {
		t.Fatalf("Stats after the sweep = %+v", s)
	}
	// Its store is closed: the fleet opens it for someone else, and it
	// holds the snapshot Close took, at the last input.
	s, err := f.fleet.Open("a")
	if err != nil {
		t.Fatalf("the deactivated agent's store is still open: %v", err)
	}
	var snaps []uint64
	if err := s.Snapshots(func(r journal.Record) error { snaps = append(snaps, r.Seq); return nil }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !slices.Contains(snaps, 5) {
		t.Fatalf("snapshots after deactivation = %v, want one at seq 5", snaps)
	}
	want = append(want, "after")
	if seq := f.dispatch(t, "a", input{Note: "after"}); seq != 6 {
		t.Fatalf("the input after re-activation has seq %d, want 6", seq)
	}
	if got := f.state(t, "a").Notes; !reflect.DeepEqual(got, want) {
		t.Fatalf("notes after re-activation = %v, want %v", got, want)
	}
	if got := f.opens.Load(); got != 2 {
		t.Fatalf("opened %d times, want 2", got)
	}
}

// TestCapEvictsLeastRecentlyUsed: with MaxActive 3, activating a fourth
// agent deactivates the least recently used idle one.
func TestCapEvictsLeastRecentlyUsed(t *testing.T) {
	f := newFixture(t, registry.Config[state, input]{MaxActive: 3, IdleTimeout: -1})
	for _, id := range []string{"a", "b", "c", "d"} {
		f.create(t, id)
	}
	f.dispatch(t, "a", input{Note: "1"})
	f.dispatch(t, "b", input{Note: "1"})
	f.dispatch(t, "c", input{Note: "1"})
	f.dispatch(t, "a", input{Note: "2"}) // b is now the least recently used
	f.dispatch(t, "d", input{Note: "1"})
	if s := f.reg.Stats(); s.Active != 3 || s.Deactivations != 1 {
		t.Fatalf("Stats = %+v, want 3 active after one eviction", s)
	}
	f.inactive(t, "b", "b, the least recently used, was not the one evicted")
}

// TestCapSkipsAgentsInUse: the cap evicts neither an agent with a lease nor
// one with a job in flight, and says so when nothing can go.
func TestCapSkipsAgentsInUse(t *testing.T) {
	f := newFixture(t, registry.Config[state, input]{MaxActive: 2, IdleTimeout: -1})
	for _, id := range []string{"leased", "busy", "new"} {
		f.create(t, id)
	}
	_, release, err := f.reg.Get(context.Background(), "leased")
	if err != nil {
		t.Fatal(err)
	}
	f.dispatch(t, "busy", input{Hold: "work"})
	<-f.jobs
	_, _, err = f.reg.Get(context.Background(), "new")
	if !errors.Is(err, registry.ErrTooManyActive) {
		t.Fatalf("Get beyond the cap with every agent in use = %v, want ErrTooManyActive", err)
	}
	release()
	if _, err := f.reg.Dispatch(context.Background(), "new", input{Note: "x"}); err != nil {
		t.Fatalf("Get after the lease was released: %v", err)
	}
	f.inactive(t, "leased", "the released agent was not the one evicted")
}

// TestJobInFlightKeepsAgentActive: an agent with a job running is not
// deactivated however long it is idle; once the job ends, it is.
func TestJobInFlightKeepsAgentActive(t *testing.T) {
	f := newFixture(t, registry.Config[state, input]{IdleTimeout: time.Minute})
	f.create(t, "a")
	f.dispatch(t, "a", input{Hold: "work"})
	<-f.jobs
	f.advance(time.Hour)
	if n := f.reg.Sweep(); n != 0 {
		t.Fatalf("Sweep deactivated %d agents with a job in flight", n)
	}
	f.dispatch(t, "a", input{Let: "work"})
	a, release, err := f.reg.Get(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	release()
	for a.Machine().Jobs() > 0 {
		time.Sleep(time.Millisecond) // the cancelled job returns
	}
	f.advance(time.Hour)
	if n := f.reg.Sweep(); n != 1 {
		t.Fatalf("Sweep after the job ended deactivated %d, want 1", n)
	}
	<-a.Deactivated()
}

// TestReactivationRestartsJobs: an agent whose state calls for a job,
// deactivated while none runs (closed by the registry), starts the job
// again when it is activated.
func TestReactivationRestartsJobs(t *testing.T) {
	f := newFixture(t, registry.Config[state, input]{IdleTimeout: -1})
	f.create(t, "a")
	f.dispatch(t, "a", input{Hold: "work"})
	if key := <-f.jobs; key != "work" {
		t.Fatalf("job %q", key)
	}
	if err := f.reg.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(registry.Config[state, input]{Fleet: f.fleet, Open: f.open, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	if _, release, err := reg.Get(context.Background(), "a"); err != nil {
		t.Fatal(err)
	} else {
		defer release()
	}
	if key := <-f.jobs; key != "work" {
		t.Fatalf("job %q after re-activation, want work", key)
	}
}

// TestDeleteEndsLeasesAndRemoves: Delete of an active agent closes it under
// the lease holders and removes it from the fleet; the others stay.
func TestDeleteEndsLeasesAndRemoves(t *testing.T) {
	f := newFixture(t, registry.Config[state, input]{})
	f.create(t, "a")
	f.create(t, "b")
	f.dispatch(t, "b", input{Note: "kept"})
	a, release, err := f.reg.Get(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := f.reg.Delete(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	<-a.Deactivated()
	if err := a.Machine().Dispatch(context.Background(), input{Note: "late"}); !errors.Is(err, automata.ErrClosed) {
		t.Fatalf("Dispatch on a deleted agent = %v, want ErrClosed", err)
	}
	if _, _, err := f.reg.Get(context.Background(), "a"); !errors.Is(err, journal.ErrNoAgent) {
		t.Fatalf("Get after Delete = %v, want ErrNoAgent", err)
	}
	if got := f.state(t, "b").Notes; !reflect.DeepEqual(got, []string{"kept"}) {
		t.Fatalf("b after a's delete = %v", got)
	}
	if err := f.reg.Delete(context.Background(), "a"); !errors.Is(err, journal.ErrNoAgent) {
		t.Fatalf("second Delete = %v, want ErrNoAgent", err)
	}
}

func TestGetOfUnknownID(t *testing.T) {
	f := newFixture(t, registry.Config[state, input]{})
	if _, _, err := f.reg.Get(context.Background(), "nobody"); !errors.Is(err, journal.ErrNoAgent) {
		t.Fatalf("Get(nobody) = %v, want ErrNoAgent", err)
	}
	if s := f.reg.Stats(); s.Active != 0 {
		t.Fatalf("a failed activation left %d active", s.Active)
	}
}

// TestPut: an agent of the id the caller chose is created once for its
// owner and found again by the same Put; another owner's is ErrNoAgent, as
// if it did not exist, and an operator's Put finds it; an id that is not
// one is refused before anything is created.
func TestPut(t *testing.T) {
	f := newFixture(t, registry.Config[state, input]{})
	ann, bob := registry.Identity{Name: "ann"}, registry.Identity{Name: "bob"}
	info, created, err := f.reg.Put(ann, "report-19")
	if err != nil || !created || info.Owner != "ann" {
		t.Fatalf("first Put: %+v, created %v, %v; want ann's, created", info, created, err)
	}
	if info, created, err = f.reg.Put(ann, "report-19"); err != nil || created || info.Owner != "ann" {
		t.Errorf("the same Put again: %+v, created %v, %v; want ann's, found", info, created, err)
	}
	if _, created, err = f.reg.Put(bob, "report-19"); !errors.Is(err, journal.ErrNoAgent) || created {
		t.Errorf("bob's Put of ann's id: created %v, %v; want ErrNoAgent", created, err)
	}
	if info, created, err = f.reg.Put(registry.Identity{Operator: true}, "report-19"); err != nil || created || info.Owner != "ann" {
		t.Errorf("the operator's Put: %+v, created %v, %v; want ann's, found", info, created, err)
	}
	if _, _, err = f.reg.Put(ann, "bad id"); err == nil || errors.Is(err, journal.ErrNoAgent) {
		t.Errorf("Put of an invalid id: %v, want the id's error", err)
	}
	if _, _, err = f.reg.Put(registry.Identity{}, "nameless"); err == nil {
		t.Error("Put by an identity without a name succeeded")
	}
	if _, err := f.reg.Info("nameless"); !errors.Is(err, journal.ErrNoAgent) {
		t.Errorf("a nameless Put created the agent: %v", err)
	}
}
