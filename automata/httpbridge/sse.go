package httpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/moora-go/moora/automata/internal/jsonpatch"
	"github.com/moora-go/moora/automata/internal/wire"
)

// sse is one SSE response, of a stream of kind: writes with a deadline
// each, flushed, and counted in the bridge's metrics (tel, nil without).
type sse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	tel     *telemetry
	kind    streamKind
}

// startSSE writes the head of an SSE response; the caller calls end when
// the stream is over.
func startSSE(w http.ResponseWriter, timeout time.Duration, tel *telemetry, kind streamKind) *sse {
	setSSEHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	tel.streamOpened(kind)
	return &sse{w: w, rc: http.NewResponseController(w), timeout: timeout, tel: tel, kind: kind}
}

// end counts the stream out of the streams being served.
func (s *sse) end() { s.tel.streamClosed(s.kind) }

func setSSEHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
}

// write writes and flushes p, which holds events events (the rest of it
// comment lines and retry lines), within the write timeout: a client that
// does not take its bytes in time is dropped.
func (s *sse) write(events int, p ...[]byte) error {
	// Each write gets its own deadline, which replaces the server's
	// WriteTimeout: the stream lives as long as the client reads.
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	n := 0
	for _, b := range p {
		m, err := s.w.Write(b)
		n += m
		if err != nil {
			s.tel.sent(s.kind, n, 0)
			return err
		}
	}
	if err := s.rc.Flush(); err != nil {
		s.tel.sent(s.kind, n, 0)
		return err
	}
	s.tel.sent(s.kind, n, events)
	return nil
}

var (
	heartbeat  = []byte(": heartbeat\n\n")
	closeEvent = []byte("event: close\ndata: {}\n\n")
	retryLine  = []byte("retry: 1000\n\n")
)

// maxBatch bounds the deltas written at once.
const maxBatch = 256

// getState serves the state stream: a snapshot (or, on a reconnect, the
// missing deltas, or a resync), then the deltas as they come.
func (b *Bridge[S, I, V]) getState(w http.ResponseWriter, r *http.Request) {
	last := r.Header.Get("Last-Event-ID")
	if q := r.URL.Query().Get("lastEventId"); q != "" {
		last = q
	}
	var from eventID
	resume := last != ""
	if resume {
		var err error
		if from, err = parseEventID(last); err != nil {
			wire.WriteError(w, http.StatusBadRequest, "Last-Event-ID: %v", err)
			return
		}
	}
	if r.Method == http.MethodHead {
		setSSEHeaders(w.Header())
		w.WriteHeader(http.StatusOK)
		return
	}
	ctx := r.Context()
	free, ok := b.admitStream(w, r)
	if !ok {
		return
	}

	// Where to start: take the current view and seq in one go, so that
	// nothing falls between the first event and the deltas after it.
	b.mu.Lock()
	seq, view, floor := b.seq, b.view, b.floor
	b.mu.Unlock()
	var first []byte
	cursor := seq
	switch {
	case !resume:
		first = b.snapshotEvent("snapshot", seq, view)
	case from.epoch != b.epoch || from.seq > seq:
		first = b.snapshotEvent("resync", seq, view) // another history
	case b.earlierVersion(from.seq):
		first = b.snapshotEvent("resync", seq, view) // a view an earlier version may have made
	case from.seq >= floor:
		cursor = from.seq // the ring has every delta after it
	case b.durable != nil:
		first = b.catchUp(from.seq, seq, view)
	default:
		first = b.snapshotEvent("resync", seq, view)
	}
	if b.hijackState(w, r, first, cursor, free) {
		return // the hub serves it from here on
	}
	defer free()
	b.serveState(ctx, w, first, cursor)
}

// serveState serves a state stream that the hub cannot take over (HTTP/2,
// or a ResponseWriter without Hijack) from its handler's goroutine, until
// the client leaves or the bridge closes.
func (b *Bridge[S, I, V]) serveState(ctx context.Context, w http.ResponseWriter, first []byte, cursor uint64) {
	b.active.Add(1)
	defer b.active.Add(-1)
	out := startSSE(w, b.cfg.WriteTimeout, b.tel, stateStream)
	defer out.end()
	if err := out.write(1, retryLine, first); err != nil {
		return
	}
	tick := time.NewTicker(b.cfg.Heartbeat)
	defer tick.Stop()
	batch := make([][]byte, 0, 16)
	for {
		b.mu.Lock()
		batch = batch[:0]
		if cursor < b.floor {
			// The ring moved past this client (it read too slowly):
			// start it over.
			seq, view := b.seq, b.view
			b.mu.Unlock()
			if out.write(1, b.snapshotEvent("resync", seq, view)) != nil {
				return
			}
			cursor = seq
			continue
		}
		i := b.ringIndexLocked(cursor)
		for ; i < len(b.ring) && len(batch) < maxBatch; i++ {
			batch = append(batch, b.ring[i].event)
			cursor = b.ring[i].seq
		}
		if i == len(b.ring) && b.seq > cursor {
			cursor = b.seq // the inputs after the last delta left the view as it was
		}
		changed := b.changed
		b.mu.Unlock()
		if len(batch) > 0 {
			if out.write(len(batch), batch...) != nil {
				return
			}
			clear(batch)
			continue
		}
		if !b.await(ctx, out, changed, tick) {
			return
		}
	}
}

// ringIndexLocked returns the index of the first delta after seq.
func (b *Bridge[S, I, V]) ringIndexLocked(seq uint64) int {
	lo, hi := 0, len(b.ring)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if b.ring[m].seq <= seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// snapshotEvent is a "snapshot" or "resync" event of view, the view at
// seq. The events of the newest seq asked for are kept, so that a crowd of
// clients connecting, or falling behind, at once costs one encoding and
// shares its bytes, which no one writes to.
func (b *Bridge[S, I, V]) snapshotEvent(kind string, seq uint64, view V) []byte {
	b.snapMu.Lock()
	defer b.snapMu.Unlock()
	if b.snapEvents == nil || b.snapSeq != seq {
		data, err := json.Marshal(struct {
			Seq  uint64 `json:"seq"`
			View V      `json:"view"`
		}{seq, view})
		if err != nil {
			b.log.Error("httpbridge: encoding the view", "seq", seq, "err", err)
			data = []byte(`{"seq":` + strconv.FormatUint(seq, 10) + `,"view":null}`)
		}
		b.snapSeq, b.snapData, b.snapEvents = seq, data, map[string][]byte{}
	}
	event, ok := b.snapEvents[kind]
	if !ok {
		event = wire.AppendEvent(nil, b.id(seq), kind, b.snapData)
		event = event[:len(event):len(event)]
		b.snapEvents[kind] = event
	}
	return event
}

// earlierVersion says whether a client at seq may hold a view that a binary
// of an earlier version of the spec made: the input at seq was journaled
// under an earlier version than the agent's (or, for seq 0, the agent's
// spec has had more than one). Such a client is resynced: its view may have
// another shape than the one this binary makes of the migrated state.
func (b *Bridge[S, I, V]) earlierVersion(seq uint64) bool {
	if b.durable == nil || b.durable.Version() <= 1 {
		return false
	}
	if seq == 0 {
		return true
	}
	entries, err := b.durable.Inputs(seq, seq)
	return err != nil || len(entries) != 1 || entries[0].Version < b.durable.Version()
}

// catchUp brings a client at from, older than the ring, to seq, from the
// journal: one delta from the state at from to view; a resync if the
// journal no longer reaches back that far.
func (b *Bridge[S, I, V]) catchUp(from, seq uint64, view V) []byte {
	old, err := b.durable.StateAt(from)
	if err != nil {
		return b.snapshotEvent("resync", seq, view)
	}
	ops, err := jsonpatch.Diff(b.cfg.View(old), view)
	if err != nil {
		return b.snapshotEvent("resync", seq, view)
	}
	if ops == nil {
		ops = []jsonpatch.Op{}
	}
	data, _ := json.Marshal(struct {
		Base  uint64         `json:"base"`
		Seq   uint64         `json:"seq"`
		Patch []jsonpatch.Op `json:"patch"`
	}{from, seq, ops})
	return wire.AppendEvent(nil, b.id(seq), "delta", data)
}

// getStream serves a token stream: the text so far, the chunks as they
// come, then the end event with the whole text, or the error event with
// why it failed.
func (b *Bridge[S, I, V]) getStream(w http.ResponseWriter, r *http.Request) {
	if b.cfg.Streams == nil {
		wire.WriteError(w, http.StatusNotFound, "this bridge serves no token streams (Config.Streams)")
		return
	}
	name := r.PathValue("name")
	if err := checkStreamName(name); err != nil {
		wire.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	offset := 0
	last := r.Header.Get("Last-Event-ID")
	if q := r.URL.Query().Get("lastEventId"); q != "" {
		last = q
	}
	if last != "" {
		var err error
		if offset, err = parseOffset(last); err != nil {
			wire.WriteError(w, http.StatusBadRequest, "Last-Event-ID: %v", err)
			return
		}
	}
	free, ok := b.admitStream(w, r)
	if !ok {
		return
	}
	defer free()
	streams := b.cfg.Streams
	st, err := streams.open(name)
	if err != nil {
		wire.WriteError(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	defer streams.release(st)
	if _, _, _, ok := streams.read(st, offset); !ok {
		wire.WriteError(w, http.StatusBadRequest, "Last-Event-ID: offset %d is not a position of stream %q", offset, name)
		return
	}
	out := startSSE(w, b.cfg.WriteTimeout, b.tel, tokenStream)
	defer out.end()
	if out.write(0, retryLine) != nil {
		return
	}
	tick := time.NewTicker(b.cfg.Heartbeat)
	defer tick.Stop()
	ctx := r.Context()
	for {
		text, ended, changed, _ := streams.read(st, offset)
		if len(text) > 0 {
			offset += len(text)
			data, _ := json.Marshal(string(text))
			if out.write(1, wire.AppendEvent(nil, strconv.Itoa(offset), "chunk", data)) != nil {
				return
			}
			continue
		}
		if ended {
			if failure := streams.failure(st); failure != "" {
				data, _ := json.Marshal(failure)
				out.write(1, wire.AppendEvent(nil, strconv.Itoa(offset), "error", data))
				return
			}
			data, _ := json.Marshal(string(streams.whole(st)))
			out.write(1, wire.AppendEvent(nil, strconv.Itoa(offset), "end", data))
			return
		}
		if !b.await(ctx, out, changed, tick) {
			return
		}
	}
}

// await waits for changed, writing a heartbeat each tick; it reports false
// when the stream is over: the client left, a write failed, or the bridge
// is closing (the client is told so).
func (b *Bridge[S, I, V]) await(ctx context.Context, out *sse, changed <-chan struct{}, tick *time.Ticker) bool {
	for {
		select {
		case <-changed:
			return true
		case <-tick.C:
			if out.write(0, heartbeat) != nil {
				return false
			}
		case <-ctx.Done():
			return false
		case <-b.closing:
			out.write(1, closeEvent)
			return false
		}
	}
}
