package httpbridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
)

// TestCatchUpFromJournal: a durable agent's client whose id is older than
// the ring gets the missing changes as one delta computed from the journal,
// not a snapshot.
func TestCatchUpFromJournal(t *testing.T) {
	f := newFixture(t, func(c *Config[state, input, view]) { c.Ring = 4 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newClient(f.srv.URL, testToken)
	if err := c.follow(ctx, func() bool { return c.id != "" }); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if status, body, err := c.post(ctx, userMessage(fmt.Sprint("u", i), "hi")); err != nil || status != 200 {
			t.Fatalf("%d %s %v", status, body, err)
		}
	}
	waitFor(t, func() bool { return f.m.Seq() == 20 })
	if err := c.follow(ctx, func() bool { return c.seq == 20 }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.view, f.serverView()) {
		t.Fatalf("client view %v\nserver view %v", c.view, f.serverView())
	}
	if c.snapshots != 1 || c.resyncs != 0 || c.deltas != 1 {
		t.Fatalf("snapshots %d, resyncs %d, deltas %d: want 1, 0, 1", c.snapshots, c.resyncs, c.deltas)
	}
}

// textState is a state that stays the same size: each input replaces its
// text. It makes the bridge's memory measurable apart from the state's.
type textState struct {
	N    int    `json:"n"`
	Text string `json:"text"`
}

func newTextAgent(t *testing.T) *automata.Machine[textState, string, textState] {
	m := automata.NewMoore(automata.Definition[textState, string]{
		Initial:    func() textState { return textState{} },
		Transition: func(s textState, in string) textState { return textState{N: s.N + 1, Text: in} },
	}, func(s textState) textState { return s })
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestSlowClient: a client that stops reading while 40 MB of deltas go by
// costs the server bounded memory (the ring's bytes, not a queue per
// client), is dropped, and resyncs when it comes back (an in-memory agent
// has no journal to catch up from).
func TestSlowClient(t *testing.T) {
	m := newTextAgent(t)
	const ringBytes = 1 << 20
	b, err := New[textState, string, textState](Memory(m), Config[textState, string, textState]{
		Decode:       func(data []byte) (string, error) { var s string; return s, json.Unmarshal(data, &s) },
		View:         func(s textState) textState { return s },
		Auth:         AllowAll,
		RingBytes:    ringBytes,
		WriteTimeout: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b)
	defer srv.Close()
	defer b.Close()

	// A client that reads the snapshot, then nothing.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /state HTTP/1.1\r\nHost: %s\r\n\r\n", srv.Listener.Addr())
	r := bufio.NewReader(conn)
	var firstID string
	for firstID == "" {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			firstID = strings.TrimSpace(id)
		}
	}
	before := heap()
	chunk := strings.Repeat("x", 20<<10)
	for i := range 2000 { // 40 MB of deltas
		if err := m.DispatchWait(context.Background(), fmt.Sprintf("%d%s", i, chunk)); err != nil {
			t.Fatal(err)
		}
	}
	after := heap()
	grew := int64(after) - int64(before)
	t.Logf("heap grew %d bytes over 40 MB of deltas with a client that stopped reading (ring bound %d)", grew, ringBytes)
	if grew > 2*ringBytes+512<<10 {
		t.Fatalf("heap grew %d bytes, over twice the ring's bound", grew)
	}
	// Dropped: a write stalled past WriteTimeout, and the handler returned.
	waitFor(t, func() bool { return b.active.Load() == 0 })
	// Back: a resync with the current state.
	c := newClient(srv.URL, "")
	c.id = firstID
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.follow(ctx, func() bool { return c.resyncs+c.snapshots > 0 }); err != nil {
		t.Fatal(err)
	}
	if c.resyncs != 1 || c.seq != 2000 || c.view.(map[string]any)["n"] != 2000.0 {
		t.Fatalf("resyncs %d, seq %d, n %v: want a resync at 2000", c.resyncs, c.seq, c.view.(map[string]any)["n"])
	}
}

// TestStreamLateJoinAndResume: a reader that joins late gets the text so
// far, then the chunks, then the end; one that resumes from an offset gets
// the rest; an ended stream is freed after Keep.
func TestStreamLateJoinAndResume(t *testing.T) {
	streams := NewStreams(StreamOptions{Keep: 20 * time.Millisecond})
	f := newFixture(t, func(c *Config[state, input, view]) { c.Streams = streams })
	c := newClient(f.srv.URL, testToken)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	streams.Write("s1", "héllo")
	streams.Write("s1", ", ")
	got := make(chan [2]string, 1)
	go func() {
		chunks, end, _, err := c.stream(ctx, "s1")
		if err != nil {
			t.Error(err)
		}
		got <- [2]string{chunks, end}
	}()
	streams.Write("s1", "world")
	streams.End("s1")
	if g := <-got; g[0] != "héllo, world" || g[1] != "héllo, world" {
		t.Fatalf("late joiner: %q", g)
	}
	// Resume from an offset: only the rest.
	req, _ := c.request(ctx, "GET", "/streams/s1", nil)
	req.Header.Set("Last-Event-ID", "6") // after "héllo" (é is two bytes)
	res, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	readEvents(res.Body, func(ev event) bool { events = append(events, ev.name+" "+ev.id+" "+string(ev.data)); return true })
	res.Body.Close()
	if want := []string{`chunk 13 ", world"`, `end 13 "héllo, world"`}; !reflect.DeepEqual(events, want) {
		t.Fatalf("resumed: %q, want %q", events, want)
	}
	// Inside a character, or past the end: refused.
	for _, off := range []string{"2", "14", "x"} {
		req, _ := c.request(ctx, "GET", "/streams/s1", nil)
		req.Header.Set("Last-Event-ID", off)
		res, err := c.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 400 {
			t.Fatalf("offset %s: %d, want 400", off, res.StatusCode)
		}
	}
	time.Sleep(40 * time.Millisecond) // past Keep
	streams.Write("s2", "x")          // a new stream sweeps the expired ones
	streams.mu.Lock()
	_, kept := streams.streams["s1"]
	streams.mu.Unlock()
	if kept {
		t.Fatal("an ended stream is still held after Keep")
	}
}

// TestStreamFail: a stream that fails ends with an error event carrying the
// reason, not an end event, for a reader that follows it, one that joins
// later and one that resumes; a stream that nobody wrote to fails the same
// way, and a failed stream takes no more text.
func TestStreamFail(t *testing.T) {
	streams := NewStreams(StreamOptions{})
	f := newFixture(t, func(c *Config[state, input, view]) { c.Streams = streams })
	c := newClient(f.srv.URL, testToken)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	read := func(name, last string) []string {
		t.Helper()
		req, _ := c.request(ctx, "GET", "/streams/"+name, nil)
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		res, err := c.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var events []string
		readEvents(res.Body, func(ev event) bool { events = append(events, ev.name+" "+ev.id+" "+string(ev.data)); return true })
		return events
	}
	streams.Write("s1", "partial")
	following := make(chan []string, 1)
	go func() { following <- read("s1", "") }()
	if err := streams.Fail("s1", `model: response too large "4 MiB"`); err != nil {
		t.Fatal(err)
	}
	want := []string{`chunk 7 "partial"`, `error 7 "model: response too large \"4 MiB\""`}
	if got := <-following; !reflect.DeepEqual(got, want) {
		t.Fatalf("follower: %q, want %q", got, want)
	}
	if got := read("s1", ""); !reflect.DeepEqual(got, want) {
		t.Fatalf("late joiner: %q, want %q", got, want)
	}
	if got, want := read("s1", "7"), []string{`error 7 "model: response too large \"4 MiB\""`}; !reflect.DeepEqual(got, want) {
		t.Fatalf("resumed: %q, want %q", got, want)
	}
	if err := streams.Write("s1", "more"); !errors.Is(err, ErrStreamEnded) {
		t.Fatalf("Write after Fail: %v, want ErrStreamEnded", err)
	}
	if err := streams.End("s1"); !errors.Is(err, ErrStreamEnded) {
		t.Fatalf("End after Fail: %v, want ErrStreamEnded", err)
	}
	if err := streams.Fail("s2", "HTTP 500"); err != nil {
		t.Fatal(err)
	}
	if got, want := read("s2", ""), []string{`error 0 "HTTP 500"`}; !reflect.DeepEqual(got, want) {
		t.Fatalf("unwritten stream: %q, want %q", got, want)
	}
}

// TestShutdown: Server.Shutdown with the bridge's Close registered ends
// the open streams with a close event, and returns.
func TestShutdown(t *testing.T) {
	f := newFixture(t, nil)
	c := newClient(f.srv.URL, testToken)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	events := make(chan string, 16)
	for _, path := range []string{"/state", "/streams/never-written"} {
		req, _ := c.request(ctx, "GET", path, nil)
		res, err := c.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer res.Body.Close()
			readEvents(res.Body, func(ev event) bool { events <- path + " " + ev.name; return true })
		}()
	}
	<-events // the snapshot: both streams are open by now, or about to be
	if err := f.srv.Config.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for len(got) < 2 {
		got[<-events] = true
	}
	if !got["/state close"] || !got["/streams/never-written close"] {
		t.Fatalf("events %v, want a close on each stream", got)
	}
}

// TestStreamOutlivesWriteTimeout: the server's WriteTimeout does not end a
// state stream that keeps receiving.
func TestStreamOutlivesWriteTimeout(t *testing.T) {
	m := newTextAgent(t)
	b, err := New[textState, string, textState](Memory(m), Config[textState, string, textState]{
		Decode: func(data []byte) (string, error) { var s string; return s, json.Unmarshal(data, &s) },
		View:   func(s textState) textState { return s },
		Auth:   AllowAll,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(b)
	srv.Config.WriteTimeout = 100 * time.Millisecond
	srv.Start()
	defer srv.Close()
	defer b.Close()
	res, err := http.Get(srv.URL + "/state")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got := make(chan int, 8)
	go readEvents(res.Body, func(ev event) bool {
		var d struct{ Seq int }
		json.Unmarshal(ev.data, &d)
		got <- d.Seq
		return true
	})
	<-got
	time.Sleep(300 * time.Millisecond) // three WriteTimeouts
	m.DispatchWait(context.Background(), "later")
	if seq := <-got; seq != 1 {
		t.Fatalf("seq %d, want 1", seq)
	}
}
