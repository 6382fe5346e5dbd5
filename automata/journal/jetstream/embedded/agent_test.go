package embedded_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/internal/frame"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/moora-go/moora/automata/journal/jetstream/embedded"
)

func record(seq uint64, payload string) []journal.Record {
	return []journal.Record{{Seq: seq, Data: frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: seq, Payload: []byte(payload)})}}
}

func payloads(t *testing.T, s journal.Store) []string {
	t.Helper()
	var got []string
	err := s.Scan(0, func(r journal.Record) error {
		f, err := frame.Decode(r.Data)
		if err != nil {
			return err
		}
		got = append(got, string(f.Payload))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// listening starts a server that listens on loopback, as a NATS server of
// another process would.
func listening(t *testing.T) *embedded.Server {
	t.Helper()
	srv, err := embedded.Start(embedded.Options{Dir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// A short TTL for a test that waits out a lease, and one that no test
// waits out.
var (
	shortTTL = jetstream.Config{TTL: time.Second}
	longTTL  = jetstream.Config{TTL: time.Minute}
)

// TestOpenAgentInProcessKeepsTheJournalInDir: the in-process server keeps
// its files in Dir; a second run on the same Dir finds the journal.
func TestOpenAgentInProcessKeepsTheJournalInDir(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	o := embedded.AgentOptions{URL: embedded.InProcess, Dir: dir, Agent: "demo"}
	s, release, err := embedded.OpenAgent(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(record(1, `"first run"`)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	release()
	s, release, err = embedded.OpenAgent(ctx, o)
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	defer release()
	defer s.Close()
	if got := payloads(t, s); len(got) != 1 || got[0] != `"first run"` {
		t.Fatalf("the second run's journal holds %q, want the first run's record", got)
	}
}

// TestOpenAgentWaitsForTheOwnerToRelease: a second process that opens a
// held agent waits, saying for whom, and gets the agent when the first
// releases it (the lease would last a minute more); it is then the one
// writer.
func TestOpenAgentWaitsForTheOwnerToRelease(t *testing.T) {
	srv := listening(t)
	ctx := context.Background()
	first, releaseFirst, err := embedded.OpenAgent(ctx, embedded.AgentOptions{URL: srv.URL(), Agent: "a", Owner: "first", Config: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	defer releaseFirst()
	if err := first.Append(record(1, `"by first"`)); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan string, 100)
	type opened struct {
		s       *jetstream.Store
		release func()
		err     error
	}
	done := make(chan opened, 1)
	go func() {
		s, release, err := embedded.OpenAgent(ctx, embedded.AgentOptions{
			URL: srv.URL(), Agent: "a", Owner: "second", Config: longTTL,
			Wait:    time.Hour, // only the release ends this wait
			Waiting: func(holder string) { waiting <- holder },
		})
		done <- opened{s, release, err}
	}()
	if holder := <-waiting; holder != "first" {
		t.Fatalf("the second claimant waits for %q, want first", holder)
	}
	if err := first.Close(); err != nil { // releases the lease
		t.Fatal(err)
	}
	second := <-done
	if second.err != nil {
		t.Fatalf("the second claimant after the release: %v", second.err)
	}
	defer second.release()
	defer second.s.Close()
	if err := second.s.Append(record(2, `"by second"`)); err != nil {
		t.Fatal(err)
	}
	if got := payloads(t, second.s); strings.Join(got, " ") != `"by first" "by second"` {
		t.Fatalf("the journal holds %q", got)
	}
}

// TestOpenAgentWaitsOutACrashedOwner: an owner that stops renewing (its
// connection is gone, as when its process is killed) loses the agent when
// its lease expires; the waiting claimant gets it, and the crashed owner's
// store is fenced.
func TestOpenAgentWaitsOutACrashedOwner(t *testing.T) {
	srv := listening(t)
	ctx := context.Background()
	crashed, releaseCrashed, err := embedded.OpenAgent(ctx, embedded.AgentOptions{URL: srv.URL(), Agent: "a", Owner: "crashed", Config: shortTTL})
	if err != nil {
		t.Fatal(err)
	}
	defer crashed.Close()
	releaseCrashed() // the connection closes; the lease is not released
	var holders []string
	s, release, err := embedded.OpenAgent(ctx, embedded.AgentOptions{
		URL: srv.URL(), Agent: "a", Owner: "next", Config: shortTTL,
		Wait:    time.Hour, // only the expiry ends this wait
		Waiting: func(holder string) { holders = append(holders, holder) },
	})
	if err != nil {
		t.Fatalf("claiming after the owner crashed: %v", err)
	}
	defer release()
	defer s.Close()
	if len(holders) == 0 || holders[0] != "crashed" {
		t.Fatalf("waited for %q, want the crashed owner first", holders)
	}
	<-crashed.Fenced() // on its own clock, not renewed
	if err := s.Append(record(1, `"by next"`)); err != nil {
		t.Fatal(err)
	}
}

// TestOpenAgentGivesUpOnALiveOwner: while a live owner renews its lease,
// the wait ends with the *NotOwnerError naming it.
func TestOpenAgentGivesUpOnALiveOwner(t *testing.T) {
	srv := listening(t)
	ctx := context.Background()
	live, release, err := embedded.OpenAgent(ctx, embedded.AgentOptions{URL: srv.URL(), Agent: "a", Owner: "live", Config: longTTL})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	defer live.Close()
	_, _, err = embedded.OpenAgent(ctx, embedded.AgentOptions{URL: srv.URL(), Agent: "a", Owner: "other", Config: longTTL, Wait: time.Millisecond})
	var notOwner *jetstream.NotOwnerError
	if !errors.As(err, &notOwner) || notOwner.Owner != "live" || !strings.Contains(err.Error(), "owned by live") {
		t.Fatalf("OpenAgent of a live owner's agent = %v, want a *NotOwnerError naming live", err)
	}
}

// TestOpenAgentBadURL: a URL where no NATS server listens, or that is not
// one, is an error that names it.
func TestOpenAgentBadURL(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "nats://" + l.Addr().String()
	l.Close()
	for _, url := range []string{nobody, "http://[::1"} {
		_, _, err := embedded.OpenAgent(context.Background(), embedded.AgentOptions{URL: url, Agent: "a"})
		if err == nil || !strings.Contains(err.Error(), "connecting to NATS at "+url+": ") {
			t.Errorf("OpenAgent at %s = %v, want an error naming the URL", url, err)
		}
		t.Logf("%s: %v", url, err)
	}
	if _, _, err := embedded.OpenAgent(context.Background(), embedded.AgentOptions{URL: embedded.InProcess, Agent: "a"}); err == nil || !strings.Contains(err.Error(), "Dir is required") {
		t.Errorf("OpenAgent in process without a Dir = %v, want an error saying Dir is required", err)
	}
}

// TestOneServerPerDir: a second server on the files of a running one fails
// to start, saying so; once the first has shut down, it starts.
func TestOneServerPerDir(t *testing.T) {
	dir := t.TempDir()
	first, err := embedded.Start(embedded.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if second, err := embedded.Start(embedded.Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), dir+" is in use") {
		if second != nil {
			second.Shutdown()
		}
		t.Fatalf("a second server on the same Dir: %v, want an error saying it is in use", err)
	}
	first.Shutdown()
	again, err := embedded.Start(embedded.Options{Dir: dir})
	if err != nil {
		t.Fatalf("after the first shut down: %v", err)
	}
	again.Shutdown()
}

// TestOpenAgentInProcessTakesOverACrashedRun: a run that died left its
// lease (ten seconds long) in the in-process server's files; the next run
// takes the agent over at once, without waiting for it (Wait is a
// nanosecond: waiting would fail), and the dead run's records are there.
func TestOpenAgentInProcessTakesOverACrashedRun(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	o := embedded.AgentOptions{URL: embedded.InProcess, Dir: dir, Agent: "demo", Owner: "first-run"}
	s, release, err := embedded.OpenAgent(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() }) // its lease goroutine; the release fails
	if err := s.Append(record(1, `"before the crash"`)); err != nil {
		t.Fatal(err)
	}
	release() // the server stops with the store still open: the lease stays
	o.Owner, o.Wait = "second-run", time.Nanosecond
	o.Waiting = func(holder string) { t.Errorf("the second run waited for %s", holder) }
	s2, release2, err := embedded.OpenAgent(ctx, o)
	if err != nil {
		t.Fatalf("the second run: %v", err)
	}
	defer release2()
	defer s2.Close()
	if got := payloads(t, s2); len(got) != 1 || got[0] != `"before the crash"` {
		t.Fatalf("the second run's journal holds %q, want the first run's record", got)
	}
	if err := s2.Append(record(2, `"after"`)); err != nil {
		t.Fatalf("the second run is not the writer: %v", err)
	}
}
