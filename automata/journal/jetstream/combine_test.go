package jetstream

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/moora-go/moora/automata/journal"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// startSyncServer starts a single server that fsyncs every write, as
// package embedded's does (which this package's own tests cannot import),
// and connects to it.
func startSyncServer(t *testing.T) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(syncServer(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// slotsOf returns the turns of nc's atomic batches.
func slotsOf(nc *nats.Conn) chan struct{} { return sharedOf(nc).slots }

// combinerOf returns the combiner of stream on nc.
func combinerOf(nc *nats.Conn, stream string, timeout time.Duration) *combiner {
	return sharedOf(nc).combiner(stream, timeout)
}

// syncServer starts a single server that fsyncs every write.
func syncServer(t *testing.T) *server.Server {
	return runServer(t, &server.Options{SyncAlways: true, DontListen: true})
}

// runServer starts a single JetStream server of o, in a directory of the
// test's, until the test ends.
func runServer(t *testing.T, o *server.Options) *server.Server {
	t.Helper()
	o.JetStream, o.StoreDir, o.NoSigs, o.NoLog = true, t.TempDir(), true, true
	srv, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("the server did not get ready")
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	return srv
}

// appendTogether appends a record to each store, from a goroutine each,
// while the connection's turns of atomic batches are all taken, so that
// the appends wait together in the combiner; then gives the turns back
// and returns each Append's error.
func appendTogether(t *testing.T, nc *nats.Conn, stores []*Store, seq uint64) []error {
	t.Helper()
	slots := slotsOf(nc)
	for range cap(slots) {
		slots <- struct{}{}
	}
	c := combinerOf(nc, stores[0].cfg.Stream, stores[0].cfg.Timeout)
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			errs[i] = s.Append([]journal.Record{{Seq: seq, Data: fmt.Appendf(nil, "%s record %d", s.agent, seq)}})
		})
	}
	for {
		c.mu.Lock()
		n := len(c.queue)
		c.mu.Unlock()
		if n == len(stores) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for range cap(slots) {
		<-slots
	}
	wg.Wait()
	return errs
}

func openStores(t *testing.T, nc *nats.Conn, cfg Config, n int) []*Store {
	t.Helper()
	stores := make([]*Store, n)
	for i := range stores {
		s, err := Open(context.Background(), nc, cfg, fmt.Sprintf("c%d", i))
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	return stores
}

// TestCombinedAppends: with CombineAppends, the appends of agents that
// wait together are stored by one atomic batch, and each store knows the
// stream sequence of its message: its next append, which expects it as
// its subject's last, is stored, and every record reads back.
func TestCombinedAppends(t *testing.T) {
	nc := startSyncServer(t)
	cfg := Config{CombineAppends: true}
	stores := openStores(t, nc, cfg, 8)
	for i, err := range appendTogether(t, nc, stores, 1) {
		if err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
	}
	c := combinerOf(nc, stores[0].cfg.Stream, stores[0].cfg.Timeout)
	if batches, messages := c.stats(); batches != 1 || messages != len(stores) {
		t.Fatalf("%d combined batches of %d messages in all, want 1 of %d", batches, messages, len(stores))
	}
	for i, err := range appendTogether(t, nc, stores, 2) {
		if err != nil {
			t.Fatalf("store %d, its second append: %v", i, err)
		}
	}
	if batches, messages := c.stats(); batches != 2 || messages != 2*len(stores) {
		t.Fatalf("%d combined batches of %d messages in all, want 2 of %d", batches, messages, 2*len(stores))
	}
	for _, s := range stores {
		if err := s.Append([]journal.Record{{Seq: 3, Data: fmt.Appendf(nil, "%s record 3", s.agent)}}); err != nil {
			t.Fatalf("%s, an append alone after the combined ones: %v", s.agent, err)
		}
		r, err := Open(context.Background(), nc, Config{}, s.agent)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		if err := r.Scan(1, func(rec journal.Record) error {
			got = append(got, fmt.Sprintf("%d:%s", rec.Seq, rec.Data))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("[1:%[1]s record 1 2:%[1]s record 2 3:%[1]s record 3]", s.agent)
		if fmt.Sprint(got) != want {
			t.Errorf("%s holds %v, want %s", s.agent, got, want)
		}
	}
}

// TestCombinedBatchWithAFencedAgent: a combined batch holding the append
// of a store that another has fenced is refused whole; each append is then
// sent alone, and only the fenced store's fails, with ErrFenced.
func TestCombinedBatchWithAFencedAgent(t *testing.T) {
	nc := startSyncServer(t)
	cfg := Config{CombineAppends: true}
	stores := openStores(t, nc, cfg, 6)
	other, err := Open(context.Background(), nc, cfg, "c0")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Append([]journal.Record{{Seq: 1, Data: []byte("the other writer's")}}); err != nil {
		t.Fatal(err)
	}
	errs := appendTogether(t, nc, stores, 1)
	if !errors.Is(errs[0], ErrFenced) {
		t.Errorf("the fenced store's append: %v, want ErrFenced", errs[0])
	}
	for i, err := range errs[1:] {
		if err != nil {
			t.Errorf("store %d: %v", i+1, err)
		}
	}
	c := combinerOf(nc, stores[0].cfg.Stream, stores[0].cfg.Timeout)
	if batches, _ := c.stats(); batches != 0 {
		t.Errorf("%d combined batches stored, want 0 (the one refused)", batches)
	}
	for _, s := range stores[1:] {
		if err := s.Append([]journal.Record{{Seq: 2, Data: []byte("after")}}); err != nil {
			t.Errorf("%s, the append after: %v", s.agent, err)
		}
	}
	if err := other.Append([]journal.Record{{Seq: 2, Data: []byte("the other writer's second")}}); err != nil {
		t.Errorf("the other writer: %v", err)
	}
}

// TestStoredAlready: an append whose combined batch's answer was lost is
// found by its message id as the last message of its subject, and only
// then.
func TestStoredAlready(t *testing.T) {
	nc := startSyncServer(t)
	s := openStores(t, nc, Config{CombineAppends: true}, 1)[0]
	m := nats.NewMsg(s.subj)
	m.Header.Set(hdrSeq, "1")
	m.Header.Set("Nats-Msg-Id", "c0.1.0.the-nonce")
	if _, ok := s.storedAlready(m); ok {
		t.Fatal("found before it was sent")
	}
	seq, err := publishMsg(nc, m, s.cfg.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.storedAlready(m); !ok || got != seq {
		t.Fatalf("storedAlready = %d, %v; want %d, true", got, ok, seq)
	}
	other := nats.NewMsg(s.subj)
	other.Header.Set(hdrSeq, "2")
	other.Header.Set("Nats-Msg-Id", "c0.2.1.the-nonce")
	if _, ok := s.storedAlready(other); ok {
		t.Fatal("another append's message id was found")
	}
	if _, err := publishMsg(nc, other, s.cfg.Timeout); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.storedAlready(m); ok {
		t.Fatal("found once it is no longer the subject's last message")
	}
}

// TestConnectionsAreLetGo: what the package keeps for a connection (the
// turns of its atomic batches, its combiners) goes once the connection is
// garbage, so that a process that opens, uses and drops connections keeps
// neither them nor their entries.
func TestConnectionsAreLetGo(t *testing.T) {
	srv := syncServer(t)
	const dropped = 20
	var keys []weak.Pointer[nats.Conn] // the entries' keys, which hold nothing
	for i := range dropped {
		func() {
			nc, err := nats.Connect("", nats.InProcessServer(srv))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			stores := openStores(t, nc, Config{CombineAppends: true}, 3)
			for j, err := range appendTogether(t, nc, stores, uint64(i+1)) {
				if err != nil {
					t.Fatalf("connection %d, store %d: %v", i, j, err)
				}
			}
			for _, s := range stores {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			k := weak.Make(nc)
			if _, ok := conns.Load(k); !ok {
				t.Fatalf("connection %d, used, has no entry", i)
			}
			keys = append(keys, k)
		}()
	}
	kept := func() int {
		n := 0
		for _, k := range keys {
			if _, ok := conns.Load(k); ok {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(20 * time.Second)
	for kept() > 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	if n := kept(); n > 0 {
		t.Fatalf("%d of the %d dropped connections still have their entries after 20 s of collections", n, dropped)
	}
}
