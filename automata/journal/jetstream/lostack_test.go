package jetstream_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/moora-go/moora/automata/journal/jetstream/embedded"
)

// stallProxy forwards TCP connections on loopback to a NATS server, and
// can hold back what the server sends (stall) until it is let go (resume):
// a request reaches the server and is done there, and its answer is late,
// as over a network that drops a while.
type stallProxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	held   chan struct{} // closed when the server's bytes may flow
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{l: l, target: target, held: make(chan struct{})}
	close(p.held)
	t.Cleanup(func() { l.Close() })
	go p.serve()
	return p
}

func (p *stallProxy) url() string { return "nats://" + p.l.Addr().String() }

func (p *stallProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *stallProxy) handle(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	go func() {
		io.Copy(s, c)
		s.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			p.mu.Lock()
			held := p.held
			p.mu.Unlock()
			<-held
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// stall holds back the server's bytes from now on; the func returned lets
// them go.
func (p *stallProxy) stall() (resume func()) {
	ch := make(chan struct{})
	p.mu.Lock()
	p.held = ch
	p.mu.Unlock()
	return func() { close(ch) }
}

// TestLostAcknowledgement: an append that the server stored, but whose
// acknowledgement came too late for the request, is sent again with the
// same message id; the server refuses the copy, since the subject has moved
// past the last sequence it expects, and the store finds its own message
// at the end of the subject: the Append succeeds, the record is in the
// journal once, and the store goes on writing. Before, the refusal fenced
// the store as if another owner had written. For one record, and for an
// append of several (one message). And where another writer did go on
// after the stored message, before the answer came, the store is fenced.
func TestLostAcknowledgement(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{Dir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	p := newStallProxy(t, strings.TrimPrefix(srv.URL(), "nats://"))
	nc, err := nats.Connect(p.url())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	const timeout = time.Second
	for _, tc := range []struct {
		name    string
		records int  // in the append whose answer is late
		other   bool // another writer appends while the answer is held
	}{{"one record", 1, false}, {"three records", 3, false}, {"another writer after it", 1, true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			agent := strings.ReplaceAll(tc.name, " ", "-")
			s, err := jetstream.Open(ctx, nc, jetstream.Config{Timeout: timeout}, agent)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			rec := func(seq int) journal.Record {
				return journal.Record{Seq: uint64(seq), Data: []byte{byte('a' + seq)}}
			}
			if err := s.Append([]journal.Record{rec(1)}); err != nil {
				t.Fatal(err)
			}
			var late []journal.Record
			for i := range tc.records {
				late = append(late, rec(2+i))
			}
			resume := p.stall()
			done := make(chan error, 1)
			go func() { done <- s.Append(late) }()
			// The server stores the append; its first request times out,
			// and the one sent again is under way, its answer held too,
			// when the answers flow.
			endsWith(t, srv, agent, late, 10*time.Second)
			if tc.other {
				otherWrites(t, srv, agent, rec(3))
			}
			time.Sleep(timeout + timeout/4)
			select {
			case err := <-done:
				t.Fatalf("the append returned while its answers were held: %v", err)
			default:
			}
			resume()
			if tc.other {
				if err := <-done; !errors.Is(err, jetstream.ErrFenced) {
					t.Fatalf("the append whose answer was late, after another writer's: %v, want fenced", err)
				}
				return
			}
			if err := <-done; err != nil {
				t.Fatalf("the append whose answer was late: %v (fenced: %v)", err, errors.Is(err, jetstream.ErrFenced))
			}
			next := 2 + tc.records
			if err := s.Append([]journal.Record{rec(next)}); err != nil {
				t.Fatalf("the append after: %v", err)
			}
			var got []uint64
			if err := s.Scan(1, func(r journal.Record) error {
				if want := rec(int(r.Seq)).Data; string(r.Data) != string(want) {
					t.Errorf("record %d holds %q, want %q", r.Seq, r.Data, want)
				}
				got = append(got, r.Seq)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			var want []uint64
			for seq := 1; seq <= next; seq++ {
				want = append(want, uint64(seq))
			}
			if len(got) != len(want) {
				t.Fatalf("the journal holds %v, want %v", got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("the journal holds %v, want %v", got, want)
				}
			}
		})
	}
}

// openOther opens agent's journal on a connection of its own.
func openOther(t *testing.T, srv *embedded.Server, agent string) (*jetstream.Store, func()) {
	t.Helper()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := jetstream.Open(ctx, nc, jetstream.Config{}, agent)
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	return s, func() {
		s.Close()
		nc.Close()
	}
}

// endsWith waits, at most within, until agent's journal, read on a
// connection of its own, ends with the last of records.
func endsWith(t *testing.T, srv *embedded.Server, agent string, records []journal.Record, within time.Duration) {
	t.Helper()
	want := records[len(records)-1]
	var last journal.Record
	for start := time.Now(); time.Since(start) < within; time.Sleep(20 * time.Millisecond) {
		s, done := openOther(t, srv, agent)
		err := s.Scan(1, func(r journal.Record) error {
			last = journal.Record{Seq: r.Seq, Data: append([]byte(nil), r.Data...)}
			return nil
		})
		done()
		if err != nil {
			t.Fatal(err)
		}
		if last.Seq == want.Seq && string(last.Data) == string(want.Data) {
			return
		}
	}
	t.Fatalf("agent %s's journal ends with %d %q after %v, want %d %q", agent, last.Seq, last.Data, within, want.Seq, want.Data)
}

// otherWrites appends r to agent's journal on a connection of its own.
func otherWrites(t *testing.T, srv *embedded.Server, agent string, r journal.Record) {
	t.Helper()
	s, done := openOther(t, srv, agent)
	defer done()
	if err := s.Append([]journal.Record{r}); err != nil {
		t.Fatalf("the other writer's append: %v", err)
	}
}
