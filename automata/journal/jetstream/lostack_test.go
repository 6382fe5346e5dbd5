package jetstream

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/moora-go/moora/automata/journal"
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
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// listeningServer starts a single server on a loopback port.
func listeningServer(t *testing.T) *server.Server {
	return runServer(t, &server.Options{Host: "127.0.0.1", Port: -1})
}

// TestLostAcknowledgement: an append that the server stored, but whose
// acknowledgement came too late for the request, is sent again with the
// same message id; the server refuses the copy, since the subject has moved
// past the last sequence it expects, and the store finds its own message
// at the end of the subject: the Append succeeds, the record is in the
// journal once, and the store goes on writing. Before, the refusal fenced
// the store as if another owner had written. For one record, and for an
// append of several (one message). Where the subject ends with a message
// that is not this call's (another writer went on after it; an earlier
// call of this store stored the seq's record and failed), the store is
// fenced, and the journal keeps what it holds.
func TestLostAcknowledgement(t *testing.T) {
	srv := listeningServer(t)
	p := newStallProxy(t, srv.Addr().String())
	nc, err := nats.Connect(p.url())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	direct, err := nats.Connect("", nats.InProcessServer(srv)) // not through the proxy
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.Close)
	const timeout = time.Second
	rec := func(seq int, what string) journal.Record {
		return journal.Record{Seq: uint64(seq), Data: []byte(what)}
	}
	for _, tc := range []struct {
		name    string
		agent   string
		records int    // in the append whose answer is late, from seq 2
		before  string // "earlier": an earlier call stored seq 2 and failed
		after   string // "other": another writer appends once the late append is stored
	}{
		{name: "one record", agent: "one", records: 1},
		{name: "three records", agent: "three", records: 3},
		{name: "another writer after it", agent: "other", records: 1, after: "other"},
		{name: "an earlier call's record at the seq", agent: "earlier", records: 1, before: "earlier"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			agent := tc.agent
			s, err := Open(ctx, nc, Config{Timeout: timeout}, agent)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Append([]journal.Record{rec(1, "first")}); err != nil {
				t.Fatal(err)
			}
			var late []journal.Record
			for i := range tc.records {
				late = append(late, rec(2+i, "late"))
			}
			wantEnd := late[len(late)-1]
			if tc.before == "earlier" {
				// What an Append of seq 2 that the server stored, and that
				// returned an error all the same, leaves: its message at
				// the subject's end, the store's last where it was.
				s.mu.Lock()
				s.appends++
				m := s.batchMessages([]journal.Record{rec(2, "earlier")})[0]
				m.Header.Set(js.ExpectedLastSubjSeqHeader, strconv.FormatUint(s.last, 10))
				s.mu.Unlock()
				if _, err := publishMsg(direct, m, timeout); err != nil {
					t.Fatal(err)
				}
				wantEnd = rec(2, "earlier")
			}
			resume := p.stall()
			defer resume() // if the test ends before it lets them go
			done := make(chan error, 1)
			go func() { done <- s.Append(late) }()
			// The server takes the append (stores it, or refuses it); its
			// first request, sent before that, times out, and the one
			// sent again is under way, its answer held too, when the
			// answers flow, well before the third timeout.
			time.Sleep(timeout / 4)
			endsWith(t, direct, s.subj, wantEnd, 10*time.Second)
			if tc.after == "other" {
				other, err := Open(ctx, direct, Config{}, agent)
				if err != nil {
					t.Fatal(err)
				}
				if err := other.Append([]journal.Record{rec(3, "other")}); err != nil {
					t.Fatalf("the other writer: %v", err)
				}
				other.Close()
				wantEnd = rec(3, "other")
			}
			time.Sleep(timeout + timeout/2)
			select {
			case err := <-done:
				t.Fatalf("the append returned while its answers were held: %v", err)
			default:
			}
			resume()
			err = <-done
			if tc.before != "" || tc.after != "" {
				if !errors.Is(err, ErrFenced) {
					t.Fatalf("the append whose answer was late: %v, want fenced", err)
				}
				endsWith(t, direct, s.subj, wantEnd, 0)
				return
			}
			if err != nil {
				t.Fatalf("the append whose answer was late: %v (fenced: %v)", err, errors.Is(err, ErrFenced))
			}
			next := 2 + tc.records
			if err := s.Append([]journal.Record{rec(next, "after")}); err != nil {
				t.Fatalf("the append after: %v", err)
			}
			var got []journal.Record
			if err := s.Scan(1, func(r journal.Record) error {
				got = append(got, journal.Record{Seq: r.Seq, Data: append([]byte(nil), r.Data...)})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			want := append(append([]journal.Record{rec(1, "first")}, late...), rec(next, "after"))
			if len(got) != len(want) {
				t.Fatalf("the journal holds %d records, want %d: %v", len(got), len(want), got)
			}
			for i := range got {
				if got[i].Seq != want[i].Seq || string(got[i].Data) != string(want[i].Data) {
					t.Fatalf("record %d is %d %q, want %d %q", i, got[i].Seq, got[i].Data, want[i].Seq, want[i].Data)
				}
			}
		})
	}
}

// endsWith waits, at most within (once if 0), until the last record on
// subj, read on nc, is r.
func endsWith(t *testing.T, nc *nats.Conn, subj string, r journal.Record, within time.Duration) {
	t.Helper()
	j, err := js.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	str, err := j.Stream(ctx, Config{}.withDefaults().Stream)
	if err != nil {
		t.Fatal(err)
	}
	var seq uint64
	var data []byte
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		raw, err := str.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			t.Fatal(err)
		}
		m, err := parseMessage(raw.Header)
		if err != nil {
			t.Fatal(err)
		}
		seq, data = m.lastSeq(), raw.Data
		if seq == r.Seq && (m.count > 1 || string(data) == string(r.Data)) {
			return
		}
		if time.Since(start) >= within {
			break
		}
	}
	t.Fatalf("%s ends with record %d (%q), want %d %q", subj, seq, data, r.Seq, r.Data)
}
