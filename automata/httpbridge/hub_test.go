package httpbridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
)

// rawStream is a state stream on a raw connection.
type rawStream struct {
	net.Conn
	r *bufio.Reader
}

// openState opens a state stream on a raw connection from address from
// (nil: any), reads its status line, and returns the stream with it.
func openState(t *testing.T, f *fixture, from net.IP) (rawStream, string) {
	t.Helper()
	d := net.Dialer{}
	if from != nil {
		d.LocalAddr = &net.TCPAddr{IP: from}
	}
	conn, err := d.Dial("tcp", f.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /state HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", f.srv.Listener.Addr(), testToken)
	r := bufio.NewReader(conn)
	status, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return rawStream{conn, r}, strings.TrimSpace(status)
}

// TestHubDropsClientsThatLeave: state streams whose clients close their
// end are dropped by the hub, though nothing is written to them.
func TestHubDropsClientsThatLeave(t *testing.T) {
	f := newFixture(t, nil)
	var conns []rawStream
	for range 50 {
		c, status := openState(t, f, nil)
		if status != "HTTP/1.1 200 OK" {
			t.Fatalf("status %q", status)
		}
		conns = append(conns, c)
	}
	waitFor(t, func() bool { return f.b.active.Load() == 50 })
	for _, c := range conns {
		c.Close()
	}
	waitFor(t, func() bool { return f.b.active.Load() == 0 })
}

// TestStreamLimits: a stream beyond Config.MaxStreamsPerClient (from one
// address) or Config.MaxStreams (in all) gets 503 naming the limit, and
// the place of one that closes is given back.
func TestStreamLimits(t *testing.T) {
	f := newFixture(t, func(c *Config[state, input, view]) {
		c.MaxStreams, c.MaxStreamsPerClient = 3, 2
	})
	one, two := net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2)
	first, status := openState(t, f, one)
	if status != "HTTP/1.1 200 OK" {
		t.Fatalf("first stream: %q", status)
	}
	if _, status := openState(t, f, one); status != "HTTP/1.1 200 OK" {
		t.Fatalf("second stream: %q", status)
	}
	c, status := openState(t, f, one)
	if status != "HTTP/1.1 503 Service Unavailable" {
		t.Fatalf("a third stream from one client: %q, want 503", status)
	}
	if body := readRest(t, c); !strings.Contains(body, "Config.MaxStreamsPerClient") || !strings.Contains(body, "Retry-After: 5") {
		t.Errorf("the 503 does not name the limit, or has no Retry-After:\n%s", body)
	}
	if _, status := openState(t, f, two); status != "HTTP/1.1 200 OK" {
		t.Fatalf("a stream from another client: %q", status)
	}
	c, status = openState(t, f, two)
	if status != "HTTP/1.1 503 Service Unavailable" {
		t.Fatalf("a fourth stream: %q, want 503", status)
	}
	if body := readRest(t, c); !strings.Contains(body, "Config.MaxStreams)") {
		t.Errorf("the 503 does not name the limit:\n%s", body)
	}
	// Token streams count too.
	req, _ := http.NewRequest("GET", f.srv.URL+"/streams/s1", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a token stream beyond the limit: %d, want 503", resp.StatusCode)
	}
	first.Close()
	waitFor(t, func() bool { return f.b.active.Load() == 2 })
	if _, status := openState(t, f, two); status != "HTTP/1.1 200 OK" {
		t.Fatalf("a stream once one closed: %q", status)
	}
}

// readRest reads what the server sends until it closes the connection.
func readRest(t *testing.T, c rawStream) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Minute)) // only if the server hangs
	rest, err := io.ReadAll(c.r)
	if err != nil {
		t.Fatal(err)
	}
	return string(rest)
}

// TestIdleStreamMemory: an idle state stream costs the process little
// memory: its socket and its place in the hub, with no goroutine and no
// buffers (a goroutine per stream, as net/http serves a handler, cost
// over 27 KiB each). Measured on runtime.MemStats with 1,000 streams, both
// ends in this process.
func TestIdleStreamMemory(t *testing.T) {
	const streams = 1000
	f := newFixture(t, nil)
	used := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc + ms.StackInuse
	}
	before := used()
	for i := range streams {
		// From several addresses: under the limit per client.
		openState(t, f, net.IPv4(127, 0, 1, byte(1+i%50)))
	}
	waitFor(t, func() bool { return f.b.active.Load() == streams })
	per := (int64(used()) - int64(before)) / streams
	t.Logf("%d bytes per idle stream, both ends", per)
	if per > 8<<10 {
		t.Errorf("an idle stream costs %d bytes, over 8 KiB", per)
	}
}

// TestStateStreamOverHTTP2: a stream the hub cannot take over (HTTP/2
// has no Hijack) is served by its handler, as before: the snapshot, then
// the deltas.
func TestStateStreamOverHTTP2(t *testing.T) {
	f := newFixture(t, nil)
	srv := httptest.NewUnstartedServer(f.b)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/state", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 {
		t.Fatalf("%s %d, want HTTP/2 200", resp.Proto, resp.StatusCode)
	}
	events := bufio.NewScanner(resp.Body)
	next := func() string {
		t.Helper()
		for events.Scan() {
			if event, ok := strings.CutPrefix(events.Text(), "event: "); ok {
				return event
			}
		}
		t.Fatalf("the stream ended: %v", events.Err())
		return ""
	}
	if e := next(); e != "snapshot" {
		t.Fatalf("first event %q, want snapshot", e)
	}
	if err := f.m.Dispatch(ctx, decl.SendUserMessage{ID: "h2", Content: "over HTTP/2"}); err != nil {
		t.Fatal(err)
	}
	if e := next(); e != "delta" {
		t.Fatalf("event %q, want delta", e)
	}
	if n := f.b.active.Load(); n != 1 {
		t.Errorf("%d streams served, want 1", n)
	}
}

// TestStreamsTotalBytes: the token streams held are bounded in bytes, all
// together: a Write beyond StreamOptions.MaxTotalBytes frees ended streams,
// the first ended first, and fails, naming the limit, when only streams
// still being written remain.
func TestStreamsTotalBytes(t *testing.T) {
	s := NewStreams(StreamOptions{MaxTotalBytes: 100, Keep: time.Hour})
	chunk := strings.Repeat("x", 40)
	for _, name := range []string{"a", "b"} {
		if err := s.Write(name, chunk); err != nil {
			t.Fatal(err)
		}
		if err := s.End(name); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Write("c", chunk); err != nil { // 120 bytes: a goes
		t.Fatal(err)
	}
	if _, ok := s.streams["a"]; ok {
		t.Error("a, the first to end, is still held")
	}
	if _, ok := s.streams["b"]; !ok {
		t.Error("b was freed, though freeing a was enough")
	}
	if err := s.Write("c", chunk); err != nil { // b goes
		t.Fatal(err)
	}
	err := s.Write("c", chunk) // c alone would hold 120
	if err == nil || !strings.Contains(err.Error(), "StreamOptions.MaxTotalBytes") {
		t.Fatalf("a Write past the limit with no ended stream to free: %v", err)
	}
	if s.total != 80 {
		t.Errorf("the streams hold %d bytes, want 80", s.total)
	}
}

// newTextBridge serves a textState agent on loopback with cfg.
func newTextBridge(t *testing.T, cfg Config[textState, string, textState]) (*automata.Machine[textState, string, textState], *Bridge[textState, string, textState], *httptest.Server) {
	t.Helper()
	m := newTextAgent(t)
	cfg.Decode = func(data []byte) (string, error) { var s string; return s, json.Unmarshal(data, &s) }
	cfg.View = func(s textState) textState { return s }
	cfg.Auth = AllowAll
	b, err := New[textState, string, textState](Memory(m), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b)
	t.Cleanup(func() { b.Close(); srv.Close() })
	return m, b, srv
}

// TestSlowClientsShareTheRing: clients that stop reading, each behind by
// a different number of large deltas, cost the server the ring's memory,
// which they share, not a copy of what each has still to take.
func TestSlowClientsShareTheRing(t *testing.T) {
	const deltas, size, clients = 300, 50 << 10, 30
	m, b, srv := newTextBridge(t, Config[textState, string, textState]{RingBytes: 32 << 20, WriteTimeout: time.Minute})
	chunk := strings.Repeat("x", size)
	for i := range deltas {
		if err := m.DispatchWait(context.Background(), fmt.Sprintf("%d%s", i, chunk)); err != nil {
			t.Fatal(err)
		}
	}
	before := heap()
	for i := range clients {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.(*net.TCPConn).SetReadBuffer(4096)
		fmt.Fprintf(conn, "GET /state HTTP/1.1\r\nHost: x\r\nLast-Event-ID: %d-%s\r\n\r\n", i, b.epoch)
	}
	// Each is behind by some 300 deltas, 15 MB, and takes no more.
	waitFor(t, func() bool {
		b.hub.mu.Lock()
		defer b.hub.mu.Unlock()
		busy := 0
		for c := range b.hub.clients {
			if c.busy.Load() {
				busy++
			}
		}
		return busy == clients
	})
	grew := int64(heap()) - int64(before)
	t.Logf("heap grew %d KiB for %d clients behind by %d deltas of %d KiB", grew>>10, clients, deltas, size>>10)
	if grew > 4<<20 {
		t.Errorf("heap grew %d MiB: the slow clients do not share the ring", grew>>20)
	}
}

// TestHubDropsClientsThatSentMore: a client that sent bytes after its
// request, which nothing reads, is found closed all the same.
func TestHubDropsClientsThatSentMore(t *testing.T) {
	_, b, srv := newTextBridge(t, Config[textState, string, textState]{Heartbeat: time.Hour})
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /state HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := bufio.NewReader(conn).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return b.active.Load() == 1 })
	io.WriteString(conn, "more than the request")
	conn.Close()
	waitFor(t, func() bool { return b.active.Load() == 0 })
}

// TestCloseEndsTheStreamsItTookOver: Close returns once every stream the
// hub holds has had its close event and is closed (Server.Shutdown knows
// nothing of them, and runs its hooks without waiting).
func TestCloseEndsTheStreamsItTookOver(t *testing.T) {
	const streams = 50
	_, b, srv := newTextBridge(t, Config[textState, string, textState]{})
	var readers []*bufio.Reader
	for range streams {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /state HTTP/1.1\r\nHost: x\r\n\r\n")
		conn.SetReadDeadline(time.Now().Add(time.Minute)) // only if it hangs
		readers = append(readers, bufio.NewReader(conn))
	}
	waitFor(t, func() bool { return b.active.Load() == streams })
	b.Close()
	if n := b.active.Load(); n != 0 {
		t.Fatalf("%d streams still open when Close returned", n)
	}
	for i, r := range readers {
		rest, err := io.ReadAll(r)
		if err != nil || !strings.HasSuffix(string(rest), string(closeEvent)) {
			t.Fatalf("stream %d ended with %q, %v; want the close event, then the end", i, rest[max(0, len(rest)-60):], err)
		}
	}
}

// TestHeadState: HEAD /state answers the stream's headers, with no body,
// and holds no stream.
func TestHeadState(t *testing.T) {
	_, b, srv := newTextBridge(t, Config[textState, string, textState]{})
	for range 2 { // on one connection: the first answer must not spill into the second
		resp, err := srv.Client().Head(srv.URL + "/state")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("HEAD: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	if n := b.active.Load(); n != 0 {
		t.Errorf("%d streams open after HEAD", n)
	}
}
