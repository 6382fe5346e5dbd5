package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/internal/frame"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/moora-go/moora/automata/journal/jetstream/embedded"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

func inputRecord(seq uint64) []journal.Record {
	return []journal.Record{{Seq: seq, Data: frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: seq, Payload: []byte(`{}`)})}}
}

// TestClaimFencesTheEarlierOwnerByWriting: a lease alone does not stop an
// owner that believes it still holds one. The earlier owner's lease is
// removed under it (as when it expires while the owner is paused) and
// another claims the agent; the earlier owner's lease is still fresh by its
// own clock, so its append goes to the server, which refuses it: the
// owner-epoch record moved the journal on.
func TestClaimFencesTheEarlierOwnerByWriting(t *testing.T) {
	_, nc := startServer(t, false)
	ctx := context.Background()
	cfg := jetstream.Config{TTL: 30 * time.Second}
	a, err := jetstream.Claim(ctx, nc, cfg, "agent", "owner-a")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Append(inputRecord(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := jetstream.Claim(ctx, nc, cfg, "agent", "owner-b"); !errors.As(err, new(*jetstream.NotOwnerError)) || err.Error() != "jetstream: agent agent is owned by owner-a, not here" {
		t.Fatalf("Claim of a held agent = %v, want a *NotOwnerError naming owner-a", err)
	}
	j, _ := js.New(nc)
	kv, err := j.KeyValue(ctx, "MOORA_LEASES")
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "agent"); err != nil { // as if it had expired
		t.Fatal(err)
	}
	b, err := jetstream.Claim(ctx, nc, cfg, "agent", "owner-b")
	if err != nil {
		t.Fatalf("Claim after the lease is gone: %v", err)
	}
	defer b.Close()
	err = a.Append(inputRecord(2))
	var apiErr *js.APIError
	if !errors.Is(err, jetstream.ErrFenced) || !errors.As(err, &apiErr) || apiErr.ErrorCode != js.JSErrCodeStreamWrongLastSequence {
		t.Fatalf("the earlier owner's append = %v, want ErrFenced from JetStream's wrong last sequence", err)
	}
	if err := b.Append(inputRecord(2)); err != nil {
		t.Fatalf("the new owner's append: %v", err)
	}
}

// TestTakeoverFencesALiveHolder: Takeover takes a held lease without
// waiting; a holder that was alive after all is fenced by the owner-epoch
// record, and its next append fails.
func TestTakeoverFencesALiveHolder(t *testing.T) {
	_, nc := startServer(t, false)
	ctx := context.Background()
	cfg := jetstream.Config{TTL: 30 * time.Second}
	a, err := jetstream.Claim(ctx, nc, cfg, "agent", "owner-a")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Append(inputRecord(1)); err != nil {
		t.Fatal(err)
	}
	b, err := jetstream.Takeover(ctx, nc, cfg, "agent", "owner-b")
	if err != nil {
		t.Fatalf("Takeover of a held agent: %v", err)
	}
	defer b.Close()
	if err := a.Append(inputRecord(2)); !errors.Is(err, jetstream.ErrFenced) {
		t.Fatalf("the earlier holder's append after the takeover = %v, want ErrFenced", err)
	}
	if err := b.Append(inputRecord(2)); err != nil {
		t.Fatalf("the new owner's append: %v", err)
	}
}

// TestExpiredLeaseIsClaimable: a lease that is not renewed expires after
// the bucket's TTL, and the expiry leaves a delete marker (the KV TTL
// marker pitfall: Create must treat it as absent, and a watcher must see
// it); the holder's store fences itself before that, on its own clock.
func TestExpiredLeaseIsClaimable(t *testing.T) {
	_, nc := startServer(t, false)
	ctx := context.Background()
	cfg := jetstream.Config{TTL: time.Second}
	j, _ := js.New(nc)
	a, err := jetstream.Claim(ctx, nc, cfg, "agent", "owner-a")
	if err != nil {
		t.Fatal(err)
	}
	// Stop renewing without releasing, as a crashed owner does: claim
	// again on a second connection, and close it.
	nc2, err := nats.Connect("", nats.InProcessServer(serverOf(t, nc)))
	if err != nil {
		t.Fatal(err)
	}
	a.Close() // releases the first lease
	a, err = jetstream.Claim(ctx, nc2, cfg, "agent", "owner-a")
	if err != nil {
		t.Fatal(err)
	}
	kv, err := j.KeyValue(ctx, "MOORA_LEASES")
	if err != nil {
		t.Fatal(err)
	}
	w, err := kv.Watch(ctx, "agent", js.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	nc2.Close()
	select {
	case <-a.Fenced():
	case <-time.After(30 * time.Second):
		t.Fatal("an owner that cannot renew did not fence itself")
	}
	// The watcher sees the expiry as a marker, not a value.
	deadline := time.After(30 * time.Second)
	for seen := false; !seen; {
		select {
		case e := <-w.Updates():
			if e != nil && e.Key() == "agent" && e.Operation() != js.KeyValuePut {
				seen = true
			}
		case <-deadline:
			t.Fatal("no delete marker for the expired lease")
		}
	}
	b, err := jetstream.Claim(ctx, nc, cfg, "agent", "owner-b")
	if err != nil {
		t.Fatalf("Claim after the lease expired: %v", err)
	}
	b.Close()
}

// servers maps a connection to its embedded server, for tests that need a
// second connection.
var servers sync.Map

func serverOf(t *testing.T, nc *nats.Conn) *embedded.Server {
	s, ok := servers.Load(nc)
	if !ok {
		t.Fatal("no server for the connection")
	}
	return s.(*embedded.Server)
}

// startCluster starts three embedded servers in a cluster, each with
// JetStream, and connects to the first. FreePorts gives ports that were
// free a moment ago, which another process (the packages of go test ./...
// run side by side) may take before a node binds them: a node that does not
// come up is a reason to start the cluster again on other ports, three
// times at most.
func startCluster(t *testing.T) *nats.Conn {
	t.Helper()
	nc, _ := startClusterServers(t)
	return nc
}

// startClusterServers is startCluster, which also returns the nodes' client
// URLs, comma separated, for other processes to connect to.
func startClusterServers(t *testing.T) (*nats.Conn, string) {
	t.Helper()
	var srvs []*embedded.Server
	var errs []error
	for attempt := 0; attempt < 3 && (attempt == 0 || len(errs) > 0); attempt++ {
		srvs, errs = tryCluster(t)
	}
	if len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	nc, err := srvs[0].Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	// Wait until JetStream has a meta leader: the first request that
	// creates a stream succeeds.
	j, _ := js.New(nc)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := j.AccountInfo(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster has no JetStream leader after 60s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var urls []string
	for _, s := range srvs {
		urls = append(urls, s.URL())
	}
	return nc, strings.Join(urls, ",")
}

// tryCluster starts the three nodes on free ports; on a failure it shuts
// down those that started and returns the errors.
func tryCluster(t *testing.T) ([]*embedded.Server, []error) {
	ports, err := embedded.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	var srvs []*embedded.Server
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, p := range ports {
		wg.Go(func() {
			s, err := embedded.Start(embedded.Options{Dir: t.TempDir(), Name: fmt.Sprintf("n%d", i), Listen: true, ClusterName: "moora", ClusterPort: p, Routes: routes})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			srvs = append(srvs, s)
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		for _, s := range srvs {
			s.Shutdown()
		}
		t.Logf("the cluster did not start (%v); starting it again on other ports", errors.Join(errs...))
		return nil, errs
	}
	for _, s := range srvs {
		t.Cleanup(s.Shutdown)
	}
	return srvs, nil
}

// TestConformanceR3 runs the conformance suite on a three-node cluster,
// every stream and bucket replicated three times.
func TestConformanceR3(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	nc := startCluster(t)
	storetest.Run(t, opener(nc, jetstream.Config{Replicas: 3}))
}

// TestClusteredExpectedSequence: on a replicated stream a conflicting
// append is refused with code 10164, not 10071 (a pitfall of clustered
// JetStream); concurrent appends with one expected sequence let exactly
// one through, and the others are fenced.
func TestClusteredExpectedSequence(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	nc := startCluster(t)
	ctx := context.Background()
	cfg := jetstream.Config{Replicas: 3}
	for round := range 10 {
		agent := fmt.Sprintf("race-%d", round)
		var stores []*jetstream.Store
		for range 4 {
			s, err := jetstream.Open(ctx, nc, cfg, agent)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			stores = append(stores, s)
		}
		errs := make([]error, len(stores))
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() { errs[i] = s.Append(inputRecord(1)) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, jetstream.ErrFenced):
				t.Fatalf("round %d: a losing append = %v, want ErrFenced", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d of 4 concurrent appends with one expected sequence succeeded, want 1", round, won)
		}
	}
}

// TestQuarantineAfterAnEpochRecord: the damaged last record is followed by
// the new owner's epoch record; moved to quarantine, the journal goes on
// from the record before it.
func TestQuarantineAfterAnEpochRecord(t *testing.T) {
	_, nc := startServer(t, false)
	ctx := context.Background()
	a, err := jetstream.Claim(ctx, nc, jetstream.Config{}, "agent", "owner-a")
	if err != nil {
		t.Fatal(err)
	}
	var recs []journal.Record
	for seq := uint64(1); seq <= 3; seq++ {
		recs = append(recs, journal.Record{Seq: seq, Data: frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: seq, Payload: []byte(fmt.Sprintf(`{"text":"n%d"}`, seq))})})
	}
	recs[2].Data = recs[2].Data[:len(recs[2].Data)-2] // torn
	if err := a.Append(recs); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b, err := jetstream.Claim(ctx, nc, jetstream.Config{}, "agent", "owner-b")
	if err != nil {
		t.Fatal(err)
	}
	opts := journal.Options[int, note]{Codec: journal.JSON[int, note](nil), QuarantineCorruptTail: true}
	m, err := journal.Open(b, notesModel, opts)
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	if err := m.Dispatch(ctx, note{Text: "again"}); err != nil {
		t.Fatalf("Dispatch after the quarantine: %v", err)
	}
	if m.Seq() != 3 || m.Current() != 3 {
		t.Fatalf("seq %d, state %d, want 3 and 3", m.Seq(), m.Current())
	}
	m.Close(ctx)
}

// TestScanFromBetweenEpochRecords: Scan(from) finds its start by bisection
// over records and owner-epoch records; from every point it returns
// exactly the records from there on.
func TestScanFromBetweenEpochRecords(t *testing.T) {
	_, nc := startServer(t, false)
	ctx := context.Background()
	next := uint64(1)
	for owner := range 4 {
		s, err := jetstream.Claim(ctx, nc, jetstream.Config{}, "agent", fmt.Sprintf("owner-%d", owner))
		if err != nil {
			t.Fatal(err)
		}
		for range owner + 2 {
			if err := s.Append(inputRecord(next)); err != nil {
				t.Fatal(err)
			}
			next++
		}
		s.Close()
	}
	s, err := jetstream.Open(ctx, nc, jetstream.Config{}, "agent")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for from := uint64(0); from <= next; from++ {
		var got []uint64
		if err := s.Scan(from, func(r journal.Record) error { got = append(got, r.Seq); return nil }); err != nil {
			t.Fatal(err)
		}
		want := uint64(max(from, 1))
		if len(got) != int(next-want) || (len(got) > 0 && got[0] != want) {
			t.Fatalf("Scan(%d) = %v, want %d..%d", from, got, want, next-1)
		}
	}
}
