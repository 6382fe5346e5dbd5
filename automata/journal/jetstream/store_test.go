package jetstream_test

import (
	"context"
	"errors"
	"strings"
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

// startServer starts an embedded server under t.TempDir and connects to it.
func startServer(t testing.TB, listen bool) (*embedded.Server, *nats.Conn) {
	t.Helper()
	srv, err := embedded.Start(embedded.Options{Dir: t.TempDir(), Listen: listen})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	servers.Store(nc, srv)
	return srv, nc
}

func opener(nc *nats.Conn, cfg jetstream.Config) storetest.Opener {
	return func(t testing.TB, name string) journal.Store {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := jetstream.Open(ctx, nc, cfg, name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// TestConformance runs the store conformance suite on a single embedded
// server (R1).
func TestConformance(t *testing.T) {
	_, nc := startServer(t, false)
	storetest.Run(t, opener(nc, jetstream.Config{}))
}

// TestConformanceCombined runs the suite with Config.CombineAppends.
func TestConformanceCombined(t *testing.T) {
	_, nc := startServer(t, false)
	storetest.Run(t, opener(nc, jetstream.Config{CombineAppends: true}))
}

// TestGarbageOnTheSubjectIsCorrupt: a message on an agent's journal subject
// that is neither a record nor an epoch record stops Open with a
// *CorruptError naming the stream, the message and what is wrong.
func TestGarbageOnTheSubjectIsCorrupt(t *testing.T) {
	_, nc := startServer(t, false)
	ctx := context.Background()
	s, err := jetstream.Open(ctx, nc, jetstream.Config{}, "garbled")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append([]journal.Record{{Seq: 1, Data: frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 1, Payload: []byte(`{}`)})}}); err != nil {
		t.Fatal(err)
	}
	// A JetStream publish returns once the stream has stored the message;
	// a core publish would race the Scan below.
	jsc, err := js.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jsc.Publish(ctx, "moora.journal.in.garbled", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	var ce *journal.CorruptError
	err = s.Scan(0, func(journal.Record) error { return nil })
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "MOORA_JOURNAL, message 2 on moora.journal.in.garbled: neither a Moora-Seq nor a Moora-Epoch header") {
		t.Fatalf("Scan over garbage = %v, want a *CorruptError naming the message", err)
	}
}

// TestSecondWriterIsFenced: two stores of one agent (no leases): once one
// has appended, the other's append is refused, and it refuses every write
// after that with ErrFenced.
func TestSecondWriterIsFenced(t *testing.T) {
	_, nc := startServer(t, false)
	ctx := context.Background()
	a, err := jetstream.Open(ctx, nc, jetstream.Config{}, "shared")
	if err != nil {
		t.Fatal(err)
	}
	b, err := jetstream.Open(ctx, nc, jetstream.Config{}, "shared")
	if err != nil {
		t.Fatal(err)
	}
	rec := func(seq uint64) []journal.Record {
		return []journal.Record{{Seq: seq, Data: frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: seq, Payload: []byte(`{}`)})}}
	}
	if err := a.Append(rec(1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(rec(1)); !errors.Is(err, jetstream.ErrFenced) {
		t.Fatalf("the second writer's append = %v, want ErrFenced", err)
	}
	select {
	case <-b.Fenced():
	default:
		t.Fatal("Fenced is not closed")
	}
	if err := b.PutSnapshot(journal.Record{Seq: 1, Data: []byte("x")}); !errors.Is(err, jetstream.ErrFenced) {
		t.Fatalf("a fenced store's PutSnapshot = %v, want ErrFenced", err)
	}
	if err := a.Append(rec(2)); err != nil {
		t.Fatalf("the first writer goes on: %v", err)
	}
	a.Close()
	b.Close()
}
