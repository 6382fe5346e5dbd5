package httpbridge

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// cutProxy is a TCP proxy on loopback that cuts every connection at a random
// point: after a random number of bytes from the server (and, for one
// connection in four, from the client), it closes both sides.
type cutProxy struct {
	ln     net.Listener
	target string
	max    int // bytes: a cut comes after 1 to max of them
	cuts   atomic.Int64
	mu     sync.Mutex
	rng    *rand.Rand
	wg     sync.WaitGroup
	conns  map[net.Conn]struct{} // open, under mu
	closed bool                  // under mu
}

func newCutProxy(t *testing.T, target string, max int, seed uint64) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, max: max, rng: rand.New(rand.NewPCG(seed, seed)), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		p.closed = true
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := 1 + p.rng.IntN(p.max)
		up := -1 // no limit
		if p.rng.IntN(4) == 0 {
			up = 1 + p.rng.IntN(p.max)
		}
		p.mu.Unlock()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.handle(c, up, down)
		}()
	}
}

func (p *cutProxy) handle(c net.Conn, up, down int) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[s] = struct{}{}, struct{}{}
	if p.closed {
		c.Close()
	}
	p.mu.Unlock()
	defer func() {
		c.Close()
		s.Close()
		p.mu.Lock()
		delete(p.conns, c)
		delete(p.conns, s)
		p.mu.Unlock()
	}()
	var once sync.Once
	cut := func() {
		once.Do(func() { p.cuts.Add(1) })
		c.Close()
		s.Close()
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn, limit int) {
		defer func() { done <- struct{}{} }()
		if limit < 0 {
			io.Copy(dst, src)
		} else if n, _ := io.CopyN(dst, src, int64(limit)); n == int64(limit) {
			cut()
			return
		}
		dst.Close()
		src.Close()
	}
	go pipe(s, c, up)
	go pipe(c, s, down)
	<-done
	<-done
}

// TestResumeThroughCuts runs a scripted conversation with streamed replies
// through a proxy that cuts every connection at a random point. The client
// retries its POSTs (same message id), resumes the token streams by offset
// and the state stream by Last-Event-ID. At the end, over 1,000 cuts later:
// the client's view equals the server's, every message is there once, the
// journal holds each input once, every reply streamed whole, and the client
// got one snapshot, no resync and no gap.
func TestResumeThroughCuts(t *testing.T) {
	if testing.Short() {
		t.Skip("a conversation through 1,000 cut connections: -short skips it")
	}
	f := newFixture(t, nil)
	p := newCutProxy(t, f.srv.Listener.Addr().String(), 500, 11)
	base := "http://" + p.ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	const messages = 300
	follower := newClient(base, testToken)
	follower.hc.Transport = &http.Transport{DisableCompression: true}
	followErr := make(chan error, 1)
	synced := make(chan struct{})
	var once sync.Once
	go func() {
		// Each message and its reply: the state ends at seq 2*messages.
		followErr <- follower.follow(ctx, func() bool {
			if follower.snapshots > 0 {
				once.Do(func() { close(synced) })
			}
			return follower.seq >= 2*messages
		})
	}()
	// The follower takes its snapshot before the conversation starts: a
	// snapshot of a long conversation is larger than the most a connection
	// through the proxy carries before it is cut (500 bytes), so a
	// follower that missed the small one would never get one through.
	select {
	case <-synced:
	case err := <-followErr:
		t.Fatalf("the follower stopped before its snapshot: %v", err)
	}

	c := newClient(base, testToken)
	streamReconnects := 0
	for i := range messages {
		id := fmt.Sprintf("u%d", i)
		content := fmt.Sprintf("message %d", i)
		status, body, err := c.post(ctx, userMessage(id, content))
		if err != nil || status != http.StatusOK {
			t.Fatalf("post %s: %d %s %v", id, status, body, err)
		}
		chunks, end, n, err := c.stream(ctx, "reply-"+id)
		if err != nil {
			t.Fatal(err)
		}
		streamReconnects += n
		want := fmt.Sprintf("echo: %s (%s)", content, id)
		if chunks != want || end != want {
			t.Fatalf("reply %s: chunks %q, end %q, want %q", id, chunks, end, want)
		}
	}
	waitFor(t, func() bool { return len(f.m.Current().AssiMessages) == messages })
	if err := <-followErr; err != nil {
		t.Fatal(err)
	}

	cuts := p.cuts.Load()
	t.Logf("%d cuts; state stream: %d connections, %d deltas, %d snapshots, %d resyncs, %d gaps; %d token stream reconnects",
		cuts, follower.connects, follower.deltas, follower.snapshots, follower.resyncs, follower.gaps, streamReconnects)
	if cuts <= 1000 {
		t.Errorf("%d cuts, want over 1,000", cuts)
	}
	if got := f.m.Seq(); got != 2*messages {
		t.Errorf("journal holds %d inputs, want %d: each message and its reply once", got, 2*messages)
	}
	if !reflect.DeepEqual(follower.view, f.serverView()) {
		t.Fatalf("client view differs from the server's:\n%v\n%v", follower.view, f.serverView())
	}
	v := follower.view.(map[string]any)
	for _, k := range []struct{ key, prefix string }{{"userMessages", "u"}, {"assiMessages", "re-u"}} {
		msgs, _ := v[k.key].([]any)
		seen := map[string]int{}
		for _, m := range msgs {
			seen[m.(map[string]any)["id"].(string)]++
		}
		for i := range messages {
			id := fmt.Sprintf("%s%d", k.prefix, i)
			if seen[id] != 1 {
				t.Errorf("%s: %s is there %d times, want once", k.key, id, seen[id])
			}
		}
		if len(msgs) != messages {
			t.Errorf("%s: %d messages, want %d", k.key, len(msgs), messages)
		}
	}
	if follower.snapshots != 1 || follower.resyncs != 0 || follower.gaps != 0 {
		t.Errorf("snapshots %d, resyncs %d, gaps %d: want 1, 0, 0", follower.snapshots, follower.resyncs, follower.gaps)
	}
}
