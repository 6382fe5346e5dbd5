package httpbridge

import "sync"

// dedup remembers the ids of recently applied inputs, at most window of
// them (the oldest forgotten first), and the ones in flight.
type dedup struct {
	mu       sync.Mutex
	window   int
	seen     map[string]uint64
	order    []string // FIFO of seen's keys
	head     int
	inflight map[string]chan struct{}
}

func newDedup(window int) dedup {
	return dedup{window: window, seen: map[string]uint64{}, inflight: map[string]chan struct{}{}}
}

// begin claims key for one POST. It reports a key applied already (dup,
// with its seq), or in flight (wait: a channel closed when that one ends;
// claim again then); otherwise the caller holds key until end. An empty key
// is never deduplicated.
func (d *dedup) begin(key string) (seq uint64, dup bool, wait <-chan struct{}) {
	if key == "" {
		return 0, false, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.seen[key]; ok {
		return s, true, nil
	}
	if ch, ok := d.inflight[key]; ok {
		return 0, false, ch
	}
	d.inflight[key] = make(chan struct{})
	return 0, false, nil
}

// end releases key; applied records it as seen, at seq.
func (d *dedup) end(key string, seq uint64, applied bool) {
	if key == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	close(d.inflight[key])
	delete(d.inflight, key)
	if applied {
		d.rememberLocked(key, seq)
	}
}

func (d *dedup) remember(key string, seq uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rememberLocked(key, seq)
}

func (d *dedup) rememberLocked(key string, seq uint64) {
	if _, ok := d.seen[key]; ok {
		return
	}
	d.seen[key] = seq
	if len(d.order)-d.head < d.window {
		d.order = append(d.order, key)
	} else {
		delete(d.seen, d.order[d.head])
		d.order[d.head] = ""
		d.head++
		d.order = append(d.order, key)
	}
	if d.head > d.window { // move the live half to the front
		n := copy(d.order, d.order[d.head:])
		clear(d.order[n:])
		d.order, d.head = d.order[:n], 0
	}
}
