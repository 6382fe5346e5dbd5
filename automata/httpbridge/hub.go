package httpbridge

import (
	"bytes"
	"maps"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The state streams of HTTP/1 clients are served by the hub: once its
// first events are written, a stream's connection is taken over from
// net/http (hijacked) and held with no goroutine and no buffer of its own.
// One goroutine, the fan-out, writes each new delta to every client that
// is behind, with writes that never wait: a client whose socket is full is
// handed to a goroutine of its own that waits, up to Config.WriteTimeout,
// for it to take the rest, and that is dropped otherwise. The fan-out also
// writes the heartbeats, and looks every sweepEvery for clients that have
// closed their end, so that what they hold is freed within that time.
//
// An idle stream costs its socket and a hubClient; an update costs one
// write per client, from one goroutine, which leaves the other processors
// free for the inputs that make the updates. Streams that cannot be taken
// over (HTTP/2, a ResponseWriter without Hijack) are served as before, by
// their handler's goroutine (serveState).

// sweepEvery is how often the hub looks for clients that went away.
const sweepEvery = time.Second

// hubClient is one state stream held by the hub.
type hubClient struct {
	conn net.Conn
	raw  syscall.RawConn // nil when conn is not a socket the hub can write without waiting (TLS)
	// cursor is the seq of the client's view. The fan-out owns it, except
	// while busy, when the goroutine writing the client's backlog does.
	cursor uint64
	busy   atomic.Bool
	drop   sync.Once
	free   func() // gives back its place in the stream limits
}

// hub holds the clients of the fan-out.
type hub struct {
	mu      sync.Mutex
	clients map[*hubClient]struct{}
	list    []*hubClient // the clients, for a pass; rebuilt when they change
	stale   bool
	peak    int           // the most clients since the map was last made
	kick    chan struct{} // a client joined or caught up: run a pass
	done    chan struct{} // closed when the fan-out has ended every stream
	// joining counts the streams being taken over, not yet the hub's.
	joining sync.WaitGroup
}

func newHub() hub {
	return hub{clients: map[*hubClient]struct{}{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
}

func (h *hub) poke() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// snapshot returns the clients, for one pass of the fan-out; only the
// fan-out calls it (the list is rebuilt in place).
func (h *hub) snapshot() []*hubClient {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stale {
		// Clients that left must not stay reachable from the list's
		// spare room, nor the room stay when most of them have left.
		clear(h.list)
		if cap(h.list) > 64 && cap(h.list) > 4*len(h.clients) {
			h.list = nil
		}
		h.list = h.list[:0]
		for c := range h.clients {
			h.list = append(h.list, c)
		}
		h.stale = false
	}
	return h.list
}

// remove forgets client c; hub.mu must be held. A map keeps the room of
// its largest size: the hub's is made anew when most of its clients have
// left.
func (h *hub) remove(c *hubClient) {
	if _, ok := h.clients[c]; !ok {
		return
	}
	delete(h.clients, c)
	h.stale = true
	if h.peak > 64 && len(h.clients) < h.peak/4 {
		h.clients = maps.Clone(h.clients)
		h.peak = len(h.clients)
	}
}

// add registers client c; hub.mu must be held.
func (h *hub) add(c *hubClient) {
	h.clients[c] = struct{}{}
	h.stale = true
	h.peak = max(h.peak, len(h.clients))
}

// hijackState takes the state stream of w over, writes its response head
// and first events, and hands it to the hub. It reports false, having
// written nothing, when w cannot be taken over: the caller serves it.
func (b *Bridge[S, I, V]) hijackState(w http.ResponseWriter, r *http.Request, first []byte, cursor uint64, free func()) bool {
	if r.ProtoMajor != 1 {
		return false
	}
	// Close waits for the streams being taken over, as for those the hub
	// holds: counted here unless Close has begun, under the lock that
	// Close closes closing with.
	b.hub.mu.Lock()
	select {
	case <-b.closing:
		b.hub.mu.Unlock()
		return false // the caller serves it: a close event
	default:
		b.hub.joining.Add(1)
	}
	b.hub.mu.Unlock()
	defer b.hub.joining.Done()
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 200 OK\r\n")
	h := w.Header().Clone()
	setSSEHeaders(h)
	h.Set("Connection", "close") // the body ends when the connection does
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	h.Write(&head)
	head.WriteString("\r\n")
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	c := &hubClient{conn: conn, cursor: cursor, free: free}
	if sc, ok := conn.(syscall.Conn); ok && canWriteNow {
		if raw, err := sc.SyscallConn(); err == nil {
			c.raw = raw
		}
	}
	b.active.Add(1)
	b.tel.streamOpened(stateStream)
	// The server's deadlines are for requests, not for a stream: the head
	// and first events get the write timeout, and then none.
	conn.SetDeadline(time.Now().Add(b.cfg.WriteTimeout))
	headLen := head.Len()
	out := net.Buffers{head.Bytes(), retryLine, first}
	n, err := out.WriteTo(conn)
	if err != nil {
		b.tel.sent(stateStream, max(int(n)-headLen, 0), 0)
		b.dropClient(c)
		return true
	}
	b.tel.sent(stateStream, int(n)-headLen, 1)
	b.hub.mu.Lock()
	select {
	case <-b.closing:
		b.hub.mu.Unlock()
		m, _ := conn.Write(closeEvent) // within the write timeout
		b.tel.sent(stateStream, m, whole(m, closeEvent))
		b.dropClient(c)
		return true
	default:
	}
	conn.SetDeadline(time.Time{})
	b.hub.add(c)
	b.hub.mu.Unlock()
	b.hub.poke() // deltas may have come since first
	return true
}

// dropClient closes a client's connection and forgets it.
func (b *Bridge[S, I, V]) dropClient(c *hubClient) {
	c.drop.Do(func() {
		b.hub.mu.Lock()
		b.hub.remove(c)
		b.hub.mu.Unlock()
		c.conn.Close()
		c.free()
		b.active.Add(-1)
		b.tel.streamClosed(stateStream)
	})
}

// fanOut is the hub's goroutine: a pass over the clients after each
// change, and heartbeats and sweeps on their tickers, until Close.
func (b *Bridge[S, I, V]) fanOut() {
	defer close(b.hub.done)
	heartbeats := time.NewTicker(b.cfg.Heartbeat)
	defer heartbeats.Stop()
	sweeps := time.NewTicker(sweepEvery)
	defer sweeps.Stop()
	for {
		b.mu.Lock()
		changed := b.changed
		b.mu.Unlock()
		if b.pass() {
			continue // some client got a full batch: there is more
		}
		select {
		case <-changed:
		case <-b.hub.kick:
		case <-heartbeats.C:
			for _, c := range b.hub.snapshot() {
				if !c.busy.Load() {
					b.send(c, [][]byte{heartbeat}, 0, c.cursor)
				}
			}
		case <-sweeps.C:
			for _, c := range b.hub.snapshot() {
				if !c.busy.Load() && c.raw != nil && peerClosed(c.raw) {
					b.dropClient(c)
				}
			}
		case <-b.closing:
			var closing sync.WaitGroup
			for _, c := range b.hub.snapshot() {
				switch {
				case c.busy.Load():
					b.dropClient(c) // mid-batch: its writer fails, and gives up
				case c.raw != nil:
					n, _ := writeNow(c.raw, [][]byte{closeEvent})
					if n > 0 && n < len(closeEvent) {
						closing.Go(func() { // the rest of it, briefly
							c.conn.SetWriteDeadline(time.Now().Add(time.Second))
							m, _ := c.conn.Write(closeEvent[n:])
							b.tel.sent(stateStream, n+m, whole(n+m, closeEvent))
							b.dropClient(c)
						})
						continue
					}
					b.tel.sent(stateStream, n, whole(n, closeEvent))
					b.dropClient(c)
				default:
					closing.Go(func() {
						c.conn.SetWriteDeadline(time.Now().Add(time.Second))
						m, _ := c.conn.Write(closeEvent)
						b.tel.sent(stateStream, m, whole(m, closeEvent))
						b.dropClient(c)
					})
				}
			}
			closing.Wait()
			return
		}
	}
}

// hubBatch is what a client at some cursor is sent in one pass: the
// events after it, and the seq it is at once they are written.
type hubBatch struct {
	data [][]byte // events of the ring, or a resync, shared: never written to
	next uint64
	full bool // maxBatch deltas: more may follow
}

// pass sends every client that is behind what it misses; clients at the
// same cursor share one batch. It reports whether some client was sent a
// full batch, and so may still be behind.
func (b *Bridge[S, I, V]) pass() (more bool) {
	clients := b.hub.snapshot()
	if len(clients) == 0 {
		return false
	}
	b.mu.Lock()
	seq := b.seq
	b.mu.Unlock()
	batches := map[uint64]hubBatch{}
	for _, c := range clients {
		if c.busy.Load() || c.cursor >= seq {
			continue
		}
		bt, ok := batches[c.cursor]
		if !ok {
			bt = b.batchAfter(c.cursor)
			batches[c.cursor] = bt
		}
		more = more || bt.full
		b.send(c, bt.data, len(bt.data), bt.next)
	}
	return more
}

// batchAfter returns the events that bring a client at cursor up to date:
// the deltas after it from the ring, or a resync when the ring has moved
// past it.
func (b *Bridge[S, I, V]) batchAfter(cursor uint64) hubBatch {
	b.mu.Lock()
	if cursor < b.floor {
		seq, view := b.seq, b.view
		b.mu.Unlock()
		return hubBatch{data: [][]byte{b.snapshotEvent("resync", seq, view)}, next: seq}
	}
	defer b.mu.Unlock()
	bt := hubBatch{next: cursor}
	i, n := b.ringIndexLocked(cursor), 0
	for ; i < len(b.ring) && n < maxBatch; i, n = i+1, n+1 {
		bt.data = append(bt.data, b.ring[i].event)
		bt.next = b.ring[i].seq
	}
	bt.full = n == maxBatch
	if i == len(b.ring) && b.seq > bt.next {
		bt.next = b.seq // the inputs after the last delta left the view as it was
	}
	return bt
}

// send writes data, which holds events events (the rest of it heartbeats),
// to client c, which is then at next: at once if its socket takes it all,
// else by a goroutine that waits for it to take the rest, within the write
// timeout. The fan-out must own c (not busy).
func (b *Bridge[S, I, V]) send(c *hubClient, data [][]byte, events int, next uint64) {
	if len(data) == 0 {
		c.cursor = next
		return
	}
	n, err := writeNow(c.raw, data)
	if err != nil {
		b.tel.sent(stateStream, n, 0)
		b.dropClient(c)
		return
	}
	rest := after(data, n)
	if len(rest) == 0 {
		b.tel.sent(stateStream, n, events)
		c.cursor = next
		return
	}
	b.tel.sent(stateStream, n, 0) // the events are counted once written whole
	c.busy.Store(true)
	go b.drain(c, rest, events, next)
}

// after returns what of bufs follows its first n bytes: slices of the same
// memory, in a list of its own.
func after(bufs [][]byte, n int) net.Buffers {
	for len(bufs) > 0 && n >= len(bufs[0]) {
		n -= len(bufs[0])
		bufs = bufs[1:]
	}
	if len(bufs) == 0 {
		return nil
	}
	rest := make(net.Buffers, len(bufs))
	copy(rest, bufs)
	rest[0] = rest[0][n:]
	return rest
}

// drain writes the rest of a batch that a client's socket did not take at
// once, and gives the client back to the fan-out; a client that does not
// take it within the write timeout is dropped (and resumes when it
// reconnects).
func (b *Bridge[S, I, V]) drain(c *hubClient, rest net.Buffers, events int, next uint64) {
	c.conn.SetWriteDeadline(time.Now().Add(b.cfg.WriteTimeout))
	n, err := rest.WriteTo(c.conn)
	if err != nil {
		b.tel.sent(stateStream, int(n), 0)
		b.dropClient(c)
		return
	}
	b.tel.sent(stateStream, int(n), events)
	c.conn.SetWriteDeadline(time.Time{})
	c.cursor = next
	c.busy.Store(false)
	b.hub.poke()
}

// whole is 1 when n bytes are all of event, else 0: the events written
// whole, for moora.sse.events.
func whole(n int, event []byte) int {
	if n == len(event) {
		return 1
	}
	return 0
}
