package registry_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/registry"
)

// The hostile tests run a registry over a real bbolt fleet, as newFixture
// does, with knobs to make activations fail, panic or wait, to hold a
// deactivation in its store's Close, and to make the transition panic.
type hostile struct {
	t     *testing.T
	fleet *bolt.Fleet
	reg   *registry.Registry[state, input]
	now   atomic.Int64
	opens atomic.Int64

	openErr   atomic.Pointer[error]         // Config.Open fails with it
	openPanic atomic.Bool                   // Config.Open panics
	openGate  atomic.Pointer[chan struct{}] // Config.Open waits for it to close
	opening   chan string                   // an id, each time Config.Open waits at the gate
	closeGate atomic.Pointer[chan struct{}] // a store's Close waits for it to close
	closing   chan string                   // an id, each time a store's Close waits at the gate
	explode   atomic.Bool                   // the transition panics on the note "boom"
}

// gatedStore is an agent's real store whose Close waits at the hostile's
// close gate, if any.
type gatedStore struct {
	journal.Store
	h  *hostile
	id string
}

func (s gatedStore) Close() error {
	if g := s.h.closeGate.Load(); g != nil {
		select {
		case s.h.closing <- s.id:
		default:
		}
		<-*g
	}
	return s.Store.Close()
}

func newHostile(t *testing.T, cfg registry.Config[state, input]) *hostile {
	t.Helper()
	h := &hostile{t: t, opening: make(chan string, 64), closing: make(chan string, 64)}
	h.now.Store(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC).UnixNano())
	fleet, err := bolt.OpenFleet(filepath.Join(t.TempDir(), "fleet.db"))
	if err != nil {
		t.Fatal(err)
	}
	h.fleet = fleet
	def := automata.Definition[state, input]{
		Initial: model.Initial,
		Transition: func(s state, in input) state {
			if in.Note == "boom" && h.explode.Load() {
				panic("boom")
			}
			return model.Transition(s, in)
		},
	}
	cfg.Fleet = fleet
	cfg.Now = func() time.Time { return time.Unix(0, h.now.Load()) }
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Open = func(id string, s journal.Store) (*journal.Machine[state, input], error) {
		h.opens.Add(1)
		if g := h.openGate.Load(); g != nil {
			h.opening <- id
			<-*g
		}
		if h.openPanic.Load() {
			panic("Config.Open panics for " + id)
		}
		if err := h.openErr.Load(); err != nil {
			return nil, *err
		}
		return journal.Open(gatedStore{s, h, id}, def, journal.Options[state, input]{Codec: journal.JSON[state, input](nil), Logger: slog.New(slog.DiscardHandler)})
	}
	reg, err := registry.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.reg = reg
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := reg.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		// A store left open by the registry (leaked) makes this fail.
		if err := fleet.Close(); err != nil {
			t.Errorf("closing the fleet after the registry: %v", err)
		}
	})
	return h
}

func (h *hostile) create(id, owner string) {
	h.t.Helper()
	if _, err := h.reg.Create(id, owner); err != nil {
		h.t.Fatal(err)
	}
}

// released fails the test unless agent id's store is closed.
func (h *hostile) released(id, why string) {
	h.t.Helper()
	s, err := h.fleet.Open(id)
	if err != nil {
		h.t.Fatalf("%s: its store is still open: %v", why, err)
	}
	s.Close()
}

func (h *hostile) notes(id string) []string {
	h.t.Helper()
	a, release, err := h.reg.Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	defer release()
	return a.Machine().Current().Notes
}

// TestHostileAckedInputsSurviveChurn: many goroutines dispatch to many
// agents while a sweeper deactivates every idle agent in a loop and
// MaxActive is 2, so agents are evicted and re-activated all the time.
// Every input Dispatch acknowledged is in its agent's journal, at the seq
// it was given, and nothing that was refused is.
func TestHostileAckedInputsSurviveChurn(t *testing.T) {
	h := newHostile(t, registry.Config[state, input]{MaxActive: 2, IdleTimeout: time.Minute})
	const agents, writers, each = 6, 12, 40
	for i := range agents {
		h.create(fmt.Sprint("a", i), "o")
	}
	stop := make(chan struct{})
	var sweeps sync.WaitGroup
	sweeps.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			h.now.Add(int64(time.Minute))
			h.reg.Sweep()
		}
	})
	type ack struct {
		seq  uint64
		note string
	}
	var mu sync.Mutex
	acked := map[string][]ack{}
	var refused, busy atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for n := range each {
				id := fmt.Sprint("a", rng.IntN(agents))
				note := fmt.Sprintf("w%d-%d", w, n)
				for {
					seq, err := h.reg.Dispatch(context.Background(), id, input{Note: note})
					if errors.Is(err, registry.ErrTooManyActive) {
						busy.Add(1)
						time.Sleep(time.Millisecond)
						continue
					}
					if err != nil {
						refused.Add(1)
						t.Logf("Dispatch(%s, %s): %v", id, note, err)
						break
					}
					mu.Lock()
					acked[id] = append(acked[id], ack{seq, note})
					mu.Unlock()
					break
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	sweeps.Wait()
	total := 0
	for i := range agents {
		id := fmt.Sprint("a", i)
		notes := h.notes(id)
		if len(notes) != len(acked[id]) {
			t.Errorf("%s holds %d notes, %d were acknowledged", id, len(notes), len(acked[id]))
		}
		for _, a := range acked[id] {
			total++
			if a.seq < 1 || a.seq > uint64(len(notes)) || notes[a.seq-1] != a.note {
				t.Errorf("%s: the acknowledged %s at seq %d is not in the journal there", id, a.note, a.seq)
			}
		}
	}
	s := h.reg.Stats()
	t.Logf("%d inputs acknowledged, %d refused, %d ErrTooManyActive retries; %d activations, %d deactivations", total, refused.Load(), busy.Load(), s.Activations, s.Deactivations)
	if total+int(refused.Load()) != writers*each {
		t.Fatalf("%d acknowledged + %d refused, want %d", total, refused.Load(), writers*each)
	}
	if s.Deactivations < 10 {
		t.Fatalf("only %d deactivations: the churn did not happen", s.Deactivations)
	}
}

// TestHostileCapWaitsForADeactivationUnderWay: with MaxActive 1 and the one
// active agent idle and being deactivated (by Sweep, slow to close its
// store), a Get of another agent waits for the room being made rather than
// failing with ErrTooManyActive: no agent is in use.
func TestHostileCapWaitsForADeactivationUnderWay(t *testing.T) {
	h := newHostile(t, registry.Config[state, input]{MaxActive: 1, IdleTimeout: time.Minute})
	h.create("a", "o")
	h.create("b", "o")
	if _, err := h.reg.Dispatch(context.Background(), "a", input{Note: "1"}); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	h.closeGate.Store(&gate)
	h.now.Add(int64(time.Hour))
	swept := make(chan int)
	go func() { swept <- h.reg.Sweep() }()
	if id := <-h.closing; id != "a" {
		t.Fatalf("closing %s", id)
	}
	h.closeGate.Store(nil)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, release, err := h.reg.Get(ctx, "b")
		if err == nil {
			release()
		}
		got <- err
	}()
	select {
	case err := <-got:
		close(gate)
		<-swept
		t.Fatalf("Get(b) while a, idle, was being deactivated returned at once: %v; want it to wait for the room", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(gate)
	if n := <-swept; n != 1 {
		t.Fatalf("Sweep deactivated %d", n)
	}
	if err := <-got; err != nil {
		t.Fatalf("Get(b) once a was deactivated: %v", err)
	}
}

// TestHostileCapAllLeased: with every active agent leased, a Get of another
// fails with ErrTooManyActive at once and leaves nothing behind; once a lease
// is released it succeeds.
func TestHostileCapAllLeased(t *testing.T) {
	h := newHostile(t, registry.Config[state, input]{MaxActive: 2, IdleTimeout: -1})
	for _, id := range []string{"a", "b", "c"} {
		h.create(id, "o")
	}
	var releases []func()
	for _, id := range []string{"a", "b"} {
		_, release, err := h.reg.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	for range 10 {
		if _, _, err := h.reg.Get(context.Background(), "c"); !errors.Is(err, registry.ErrTooManyActive) {
			t.Fatalf("Get(c) with a and b leased: %v, want ErrTooManyActive", err)
		}
	}
	if s := h.reg.Stats(); s.Active != 2 {
		t.Fatalf("Stats %+v after refused Gets", s)
	}
	h.released("c", "c, refused")
	releases[0]()
	releases[0]() // a second call does nothing
	if _, err := h.reg.Dispatch(context.Background(), "c", input{Note: "x"}); err != nil {
		t.Fatal(err)
	}
	h.released("a", "a, evicted for c")
	releases[1]()
}

// TestHostileFailedActivationLeaksNothing: an activation that fails —
// Config.Open returning an error, or the fleet refusing to open the store —
// fails every Get waiting for it and leaves no lease, no active agent and
// no store open; the next Get tries again.
func TestHostileFailedActivationLeaksNothing(t *testing.T) {
	h := newHostile(t, registry.Config[state, input]{MaxActive: 4})
	h.create("a", "o")
	sentinel := errors.New("the program cannot open it")
	h.openErr.Store(&sentinel)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			if _, _, err := h.reg.Get(context.Background(), "a"); !errors.Is(err, sentinel) {
				t.Errorf("Get while Config.Open fails: %v", err)
			}
		})
	}
	wg.Wait()
	if s := h.reg.Stats(); s.Active != 0 || s.Activations != 0 {
		t.Fatalf("Stats after failed activations: %+v", s)
	}
	h.released("a", "after failed activations")
	h.openErr.Store(nil)
	if _, err := h.reg.Dispatch(context.Background(), "a", input{Note: "1"}); err != nil {
		t.Fatal(err)
	}
	// The fleet refuses: someone else holds the store.
	h.now.Add(int64(time.Hour))
	if n := h.reg.Sweep(); n != 1 {
		t.Fatalf("Sweep: %d", n)
	}
	held, err := h.fleet.Open("a")
	if err != nil {
		t.Fatal(err)
	}
	opens := h.opens.Load()
	if _, _, err := h.reg.Get(context.Background(), "a"); !errors.Is(err, journal.ErrInUse) {
		t.Fatalf("Get with the store held elsewhere: %v, want ErrInUse", err)
	}
	if h.opens.Load() != opens {
		t.Fatal("Config.Open was called without a store")
	}
	if s := h.reg.Stats(); s.Active != 0 {
		t.Fatalf("Stats: %+v", s)
	}
	held.Close()
	if got := h.notes("a"); len(got) != 1 {
		t.Fatalf("notes %v", got)
	}
}

// TestHostilePanickingOpenDoesNotWedgeTheID: a Config.Open that panics (a
// bug of the program's, which an HTTP server recovers from per request)
// must not leave the id's activation forever under way, every later Get
// of it waiting, and its store open.
func TestHostilePanickingOpenDoesNotWedgeTheID(t *testing.T) {
	h := newHostile(t, registry.Config[state, input]{})
	h.create("a", "o")
	h.openPanic.Store(true)
	func() {
		defer func() { recover() }()
		if _, _, err := h.reg.Get(context.Background(), "a"); err == nil {
			t.Error("Get succeeded with a panicking Config.Open")
		}
	}()
	h.openPanic.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, release, err := h.reg.Get(ctx, "a")
	if err != nil {
		t.Fatalf("Get after Config.Open panicked once: %v", err)
	}
	release()
}

// TestHostileFailStopReactivates: an agent whose transition panicked
// (fail-stop) is taken out at the next Get — by one of many concurrent
// ones — and activated again from its journal, once; its old store is
// closed.
func TestHostileFailStopReactivates(t *testing.T) {
	h := newHostile(t, registry.Config[state, input]{})
	h.create("a", "o")
	old, release, err := h.reg.Get(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Machine().DispatchSeq(context.Background(), input{Note: "1"}); err != nil {
		t.Fatal(err)
	}
	h.explode.Store(true)
	_, err = old.Machine().DispatchSeq(context.Background(), input{Note: "boom"})
	if !errors.As(err, new(*automata.FailError)) {
		t.Fatalf("dispatching the panicking input: %v", err)
	}
	h.explode.Store(false)
	release()
	opens := h.opens.Load()
	var wg sync.WaitGroup
	got := make([]*registry.Agent[state, input], 16)
	for i := range got {
		wg.Go(func() {
			a, release, err := h.reg.Get(context.Background(), "a")
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = a
			release()
		})
	}
	wg.Wait()
	if n := h.opens.Load() - opens; n != 1 {
		t.Fatalf("the failed agent was opened %d times again, want 1", n)
	}
	for _, a := range got {
		if a == old || a != got[0] {
			t.Fatal("a Get returned the failed activation, or another one")
		}
	}
	<-old.Deactivated()
	if err := got[0].Machine().Err(); err != nil {
		t.Fatal(err)
	}
	// The input whose transition panicked was not journaled (the
	// transition runs before the commit): the state is what the journal
	// holds.
	if notes := h.notes("a"); strings.Join(notes, ",") != "1" {
		t.Fatalf("notes after re-activation: %v, want [1]", notes)
	}
	if _, err := h.reg.Dispatch(context.Background(), "a", input{Note: "2"}); err != nil {
		t.Fatalf("dispatch after re-activation: %v", err)
	}
}

// TestHostileCloseAgainFinishes: a Close whose ctx ends while an
// activation is under way returns ctx's error; the activation then ends,
// and a second Close must deactivate what is left, not return nil with the
// agent's store still open (the fleet could not be closed then).
func TestHostileCloseAgainFinishes(t *testing.T) {
	h := newHostile(t, registry.Config[state, input]{})
	h.create("a", "o")
	gate := make(chan struct{})
	h.openGate.Store(&gate)
	got := make(chan error, 1)
	go func() {
		_, release, err := h.reg.Get(context.Background(), "a")
		if err == nil {
			release()
		}
		got <- err
	}()
	<-h.opening
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := h.reg.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with an activation held: %v, want DeadlineExceeded", err)
	}
	close(gate)
	<-got
	if err := h.reg.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.released("a", "after the second Close")
	if _, _, err := h.reg.Get(context.Background(), "a"); !errors.Is(err, registry.ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
}

// TestHostileCloseWaitsForDeletes: Close while Deletes are under way
// returns only once they are done with the fleet, so that the caller can
// close the fleet after it, as the doc says.
func TestHostileCloseWaitsForDeletes(t *testing.T) {
	for round := range 20 {
		h := newHostile(t, registry.Config[state, input]{})
		var ids []string
		for i := range 8 {
			id := fmt.Sprint("d", i)
			h.create(id, "o")
			if _, err := h.reg.Dispatch(context.Background(), id, input{Note: "x"}); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Go(func() {
				if err := h.reg.Delete(context.Background(), id); err != nil && !errors.Is(err, registry.ErrClosed) {
					t.Errorf("Delete(%s): %v", id, err)
				}
			})
		}
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		if err := h.reg.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := h.fleet.Close(); err != nil {
			t.Fatalf("round %d: closing the fleet after the registry's Close: %v", round, err)
		}
		wg.Wait()
	}
}

// TestHostileDeleteRecreateRace: one id is created, used and deleted over
// and over, each time by a new owner, while dispatchers Get it and
// dispatch, a sweeper deactivates it, and MaxActive is 1 with another agent
// contending. An activation serves one incarnation only: every note in
// the state of the agent a Get returns was written for that agent's owner,
// and the inputs acknowledged to the last incarnation are all in it.
func TestHostileDeleteRecreateRace(t *testing.T) {
	h := newHostile(t, registry.Config[state, input]{MaxActive: 1, IdleTimeout: time.Minute})
	h.create("other", "o")
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			h.now.Add(int64(time.Minute))
			h.reg.Sweep()
			time.Sleep(100 * time.Microsecond)
		}
	})
	var mu sync.Mutex
	acked := map[string][]string{} // owner: notes acknowledged
	for w := range 6 {
		bg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				id := "x"
				if n%4 == 3 {
					id = "other"
				}
				a, release, err := h.reg.Get(context.Background(), id)
				if err != nil {
					if !errors.Is(err, journal.ErrNoAgent) && !errors.Is(err, registry.ErrTooManyActive) {
						t.Errorf("Get: %v", err)
					}
					runtimeYield()
					continue
				}
				owner := a.Info().Owner
				note := fmt.Sprintf("%s-w%d-%d", owner, w, n)
				if _, err := a.Machine().DispatchSeq(context.Background(), input{Note: note}); err == nil {
					mu.Lock()
					acked[owner] = append(acked[owner], note)
					mu.Unlock()
				} else if !errors.Is(err, automata.ErrClosed) {
					t.Errorf("Dispatch: %v", err)
				}
				for _, got := range a.Machine().Current().Notes {
					if !strings.HasPrefix(got, owner+"-") {
						t.Errorf("the agent %s of owner %s holds %s", id, owner, got)
					}
				}
				release()
			}
		})
	}
	const gens = 40
	for g := range gens {
		h.create("x", fmt.Sprint("g", g))
		time.Sleep(time.Duration(g%4) * time.Millisecond)
		if g == gens-1 {
			break
		}
		if err := h.reg.Delete(context.Background(), "x"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	close(stop)
	bg.Wait()
	last := fmt.Sprint("g", gens-1)
	notes := h.notes("x")
	want := map[string]bool{}
	for _, n := range acked[last] {
		want[n] = true
	}
	for _, n := range notes {
		if !strings.HasPrefix(n, last+"-") {
			t.Errorf("the last incarnation holds %s", n)
		}
		delete(want, n)
	}
	if len(want) != 0 {
		t.Errorf("the last incarnation lost %d acknowledged inputs", len(want))
	}
	t.Logf("last incarnation: %d notes; stats %+v", len(notes), h.reg.Stats())
}

func runtimeYield() { time.Sleep(50 * time.Microsecond) }

// TestHostileDeleteOwned: DeleteOwned deletes an agent for its owner or an
// operator, and for anyone else answers as for no agent, deleting nothing.
func TestHostileDeleteOwned(t *testing.T) {
	h := newHostile(t, registry.Config[state, input]{})
	h.create("a", "ann")
	h.create("b", "ann")
	if _, err := h.reg.Dispatch(context.Background(), "a", input{Note: "1"}); err != nil {
		t.Fatal(err)
	}
	for _, who := range []registry.Identity{{Name: "bob"}, {}, {Name: "ANN"}} {
		if err := h.reg.DeleteOwned(context.Background(), who, "a"); !errors.Is(err, journal.ErrNoAgent) {
			t.Fatalf("DeleteOwned by %+v: %v, want ErrNoAgent", who, err)
		}
	}
	if got := h.notes("a"); len(got) != 1 {
		t.Fatalf("a after refused deletes: %v", got)
	}
	if err := h.reg.DeleteOwned(context.Background(), registry.Identity{Name: "ann"}, "a"); err != nil {
		t.Fatal(err)
	}
	if err := h.reg.DeleteOwned(context.Background(), registry.Identity{Name: "op", Operator: true}, "b"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "../a", ""} {
		if err := h.reg.DeleteOwned(context.Background(), registry.Identity{Name: "ann"}, id); !errors.Is(err, journal.ErrNoAgent) {
			t.Fatalf("DeleteOwned(%q) after the delete: %v", id, err)
		}
	}
}

// TestHostileCloseAmidChaos: Close while goroutines Get, dispatch, delete,
// create and sweep, and MaxActive is 2: it returns with no store left open
// (the fleet closes after it), and every call after it says ErrClosed.
func TestHostileCloseAmidChaos(t *testing.T) {
	for round := range 15 {
		h := newHostile(t, registry.Config[state, input]{MaxActive: 2, IdleTimeout: time.Minute})
		for i := range 5 {
			h.create(fmt.Sprint("c", i), "o")
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				for {
					select {
					case <-stop:
						return
					default:
					}
					id := fmt.Sprint("c", rng.IntN(5))
					switch rng.IntN(10) {
					case 0:
						h.reg.Delete(context.Background(), id)
					case 1:
						h.reg.Create(id, "o")
					case 2:
						h.now.Add(int64(time.Minute))
						h.reg.Sweep()
					default:
						h.reg.Dispatch(context.Background(), id, input{Note: "n"})
					}
				}
			})
		}
		time.Sleep(time.Duration(5+round) * time.Millisecond)
		if err := h.reg.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := h.fleet.Close(); err != nil {
			t.Fatalf("round %d: the fleet after Close: %v", round, err)
		}
		close(stop)
		wg.Wait()
		if _, err := h.reg.Dispatch(context.Background(), "c0", input{Note: "late"}); !errors.Is(err, registry.ErrClosed) {
			t.Fatalf("Dispatch after Close: %v", err)
		}
	}
}
