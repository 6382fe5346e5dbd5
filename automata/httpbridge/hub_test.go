package httpbridge

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/decl"
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
