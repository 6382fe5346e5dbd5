package automata_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
)

type tagged struct{ producer, seq int }

// recorder is a subscriber that keeps what it saw.
type recorder[O any] struct {
	mu   sync.Mutex
	seen []O
}

func (r *recorder[O]) add(o O) {
	r.mu.Lock()
	r.seen = append(r.seen, o)
	r.mu.Unlock()
}

func (r *recorder[O]) get() []O {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

func closeOrFail(t testing.TB, c interface{ Close(context.Context) error }) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestConcurrentDispatchKeepsOrderAndCount(t *testing.T) {
	const producers, perProducer, subscribers = 8, 10_000, 3
	def := automata.Definition[int, tagged]{
		Initial:    func() int { return 0 },
		Transition: func(n int, _ tagged) int { return n + 1 },
	}
	m := automata.NewMealy(def, func(_ int, in tagged) tagged { return in })
	recs := make([]*recorder[tagged], subscribers)
	for i := range recs {
		recs[i] = &recorder[tagged]{}
		m.Subscribe(recs[i].add)
	}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for seq := range perProducer {
				m.Dispatch(tagged{p, seq})
			}
		})
	}
	wg.Wait()
	closeOrFail(t, m) // applies whatever is still queued

	if got, want := m.Current(), producers*perProducer; got != want {
		t.Fatalf("count = %d, want %d", got, want)
	}
	first := recs[0].get()
	if len(first) != producers*perProducer {
		t.Fatalf("subscriber 0 saw %d updates, want %d", len(first), producers*perProducer)
	}
	next := make([]int, producers)
	for i, in := range first {
		if in.seq != next[in.producer] {
			t.Fatalf("update %d: producer %d seq %d, want seq %d (per-producer order broken)", i, in.producer, in.seq, next[in.producer])
		}
		next[in.producer]++
	}
	for i, r := range recs[1:] {
		if !slices.Equal(r.get(), first) {
			t.Fatalf("subscriber %d saw a different sequence from subscriber 0", i+1)
		}
	}
}

func TestDispatchFromSubscriberIsAppliedAfterTheUpdate(t *testing.T) {
	m := automata.NewMoore(counter, func(n int) int { return n })
	a, b := &recorder[int]{}, &recorder[int]{}
	m.Subscribe(func(n int) {
		a.add(n)
		if n == 1 {
			m.Dispatch(10) // re-entrant: queued, applied after every subscriber saw 1
			m.Dispatch(100)
		}
	})
	m.Subscribe(b.add)
	m.Dispatch(1)
	// Dispatch returned on the goroutine that applied all three inputs.
	if got := m.Current(); got != 111 {
		t.Fatalf("Current() = %d, want 111", got)
	}
	want := []int{0, 1, 11, 111}
	if got := a.get(); !slices.Equal(got, want) {
		t.Errorf("first subscriber saw %v, want %v", got, want)
	}
	if got := b.get(); !slices.Equal(got, want) {
		t.Errorf("second subscriber saw %v, want %v", got, want)
	}
}

func TestEffectSeesLatestStateAndMayDispatch(t *testing.T) {
	var views []int
	effect := func(n int, dispatch automata.Dispatch[int]) {
		views = append(views, n)
		if n == 4 {
			dispatch(100) // re-entrant dispatch from an effect
		}
	}
	m := automata.NewMoore(counter, func(n int) int { return n }, automata.WithEffect(effect))
	subs := &recorder[int]{}
	m.Subscribe(func(n int) {
		subs.add(n)
		if n == 1 {
			for range 3 {
				m.Dispatch(1)
			}
		}
	})
	m.Dispatch(1)
	// The three inputs queued by the subscriber are applied before the
	// effect runs: it sees 0 (at start), then 4, then 104.
	if want := []int{0, 4, 104}; !slices.Equal(views, want) {
		t.Errorf("effect saw %v, want %v", views, want)
	}
	if want := []int{0, 1, 2, 3, 4, 104}; !slices.Equal(subs.get(), want) {
		t.Errorf("subscriber saw %v, want %v", subs.get(), want)
	}
}

func TestUnsubscribeStopsDelivery(t *testing.T) {
	m := automata.NewMoore(counter, func(n int) int { return n })
	r := &recorder[int]{}
	var unsubscribe func()
	unsubscribe = m.Subscribe(func(n int) {
		r.add(n)
		if n == 2 {
			unsubscribe() // from inside the subscriber itself
		}
	})
	for range 4 {
		m.Dispatch(1)
	}
	unsubscribe() // twice is fine
	if want := []int{0, 1, 2}; !slices.Equal(r.get(), want) {
		t.Errorf("saw %v, want %v", r.get(), want)
	}
}

func TestSubscribeFromSubscriberGetsReplayThenLaterUpdates(t *testing.T) {
	m := automata.NewMoore(counter, func(n int) int { return n })
	late := &recorder[int]{}
	m.Subscribe(func(n int) {
		if n == 2 {
			m.Subscribe(late.add)
		}
	})
	for range 4 {
		m.Dispatch(1)
	}
	if want := []int{2, 3, 4}; !slices.Equal(late.get(), want) {
		t.Errorf("late subscriber saw %v, want %v", late.get(), want)
	}
}

// A Dispatch call that becomes the goroutine applying inputs does not stay
// busy forever when others keep queueing: after a bounded number of inputs it
// hands the queue to a new goroutine and returns.
func TestDispatchHandsOffALongQueue(t *testing.T) {
	const queuedBySubscriber = 3000
	release := make(chan struct{})
	m := automata.NewMoore(counter, func(n int) int { return n })
	r := &recorder[int]{}
	m.Subscribe(func(n int) {
		r.add(n)
		if n == 1 {
			for range queuedBySubscriber {
				m.Dispatch(1)
			}
		}
		if n == queuedBySubscriber { // near the end of the queue
			<-release
		}
	})
	returned := make(chan struct{})
	go func() {
		m.Dispatch(1)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("Dispatch kept applying other inputs instead of handing them off")
	}
	close(release)
	closeOrFail(t, m)
	if got := m.Current(); got != queuedBySubscriber+1 {
		t.Fatalf("Current() = %d, want %d", got, queuedBySubscriber+1)
	}
	seen := r.get()
	for i, n := range seen {
		if n != i {
			t.Fatalf("update %d delivered as %d: order broken across the hand-off", i, n)
		}
	}
}

func TestCloseAppliesQueuedInputsThenDropsLaterOnes(t *testing.T) {
	m := automata.NewMoore(counter, func(n int) int { return n })
	r := &recorder[int]{}
	m.Subscribe(func(n int) {
		r.add(n)
		if n == 1 {
			m.Dispatch(1) // queued before Close below: applied
		}
	})
	m.Dispatch(1)
	closeOrFail(t, m)
	m.Dispatch(1000) // after Close: dropped
	unsubscribe := m.Subscribe(r.add)
	unsubscribe()
	if got := m.Current(); got != 2 {
		t.Errorf("Current() = %d, want 2", got)
	}
	if want := []int{0, 1, 2}; !slices.Equal(r.get(), want) {
		t.Errorf("saw %v, want %v", r.get(), want)
	}
	closeOrFail(t, m) // a second Close is harmless
}

func TestNewPanicsOnIncompleteDefinition(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New with a nil Transition did not panic")
		}
	}()
	automata.NewMoore(automata.Definition[int, int]{Initial: func() int { return 0 }}, func(n int) int { return n })
}
