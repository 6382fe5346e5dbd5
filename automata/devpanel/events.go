package devpanel

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/moora-go/moora/automata/internal/wire"
)

// position is where an event stream's client is: after the event with this
// id (seq, and n events after that input).
type position struct {
	seq uint64
	n   int
}

// maxEventIDLen bounds a Last-Event-ID: 20 digits, a dot and 19 more.
const maxEventIDLen = 40

// parseEventID reads an event id as the panel writes it: the input's
// sequence number in decimal (no sign, no leading zero), then for an event
// that is not an input a dot and its number after that input (1 or more).
func parseEventID(s string) (position, error) {
	if len(s) > maxEventIDLen {
		return position{}, fmt.Errorf("event id of %d bytes, over %d", len(s), maxEventIDLen)
	}
	num, n, dotted := strings.Cut(s, ".")
	seq, err := decimal(num)
	if err != nil {
		return position{}, fmt.Errorf("event id %q: the sequence number %w", s, err)
	}
	if !dotted {
		return position{seq: seq}, nil
	}
	k, err := decimal(n)
	if err != nil || k == 0 || k > 1<<31 {
		return position{}, fmt.Errorf("event id %q: the number after the dot is not 1 to 2147483648", s)
	}
	return position{seq: seq, n: int(k)}, nil
}

func decimal(s string) (uint64, error) {
	switch {
	case s == "":
		return 0, errors.New("is missing")
	case len(s) > 1 && s[0] == '0':
		return 0, errors.New("has a leading zero")
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, errors.New("is not decimal digits")
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, errors.New("is out of range")
	}
	return v, nil
}

// snapshot is the state the stream's client starts from, after the history.
type snapshot struct {
	Seq   uint64    `json:"seq"`
	State any       `json:"state"`
	Hold  holdState `json:"hold"`
}

// events serves GET /events: the timeline so far (the latest History
// inputs, each with the jobs and other events after it), a snapshot of the
// state, then every event as it comes. A reconnect that names its last id
// (Last-Event-ID, or the lastEventId query parameter) gets what followed
// it: from the panel's memory, and inputs older than that from the journal.
func (p *Panel[S, I]) events(w http.ResponseWriter, r *http.Request) {
	last := r.Header.Get("Last-Event-ID")
	if q := r.URL.Query().Get("lastEventId"); q != "" {
		last = q
	}
	var pos position
	resume := last != ""
	if resume {
		var err error
		if pos, err = parseEventID(last); err != nil {
			wire.WriteError(w, http.StatusBadRequest, "Last-Event-ID: %v", err)
			return
		}
	}
	var out []byte
	p.mu.Lock()
	if resume && pos.seq > p.seq {
		resume = false // from the future (another journal): start over
		out = wire.AppendEvent(out, "", "reset", []byte("{}"))
	}
	if resume && pos.n > 0 && len(p.log) > 0 && p.log[0].seq <= pos.seq && !slices.ContainsFunc(p.log, func(e entry) bool { return e.seq == pos.seq && e.n == pos.n }) {
		// An event this panel never sent (another process numbered the
		// events after that input): resend what followed the input.
		pos.n = 0
	}
	var missing []entry
	if resume && (len(p.log) == 0 || p.log[0].seq > pos.seq+1) {
		// Inputs the panel no longer holds: rebuilt from the journal,
		// without the jobs of their time.
		to := p.seq
		if len(p.log) > 0 {
			to = p.log[0].seq - 1
		}
		from := pos.seq
		if to > uint64(p.cfg.History) && from < to-uint64(p.cfg.History) {
			from = to - uint64(p.cfg.History)
		}
		p.mu.Unlock()
		s, err := p.agent.StateAt(from)
		if err == nil {
			err = p.fold(from, s, to, func(e entry, _ S) { missing = append(missing, e) })
		}
		if err != nil {
			wire.WriteError(w, http.StatusInternalServerError, "reading the journal after input %d: %v", from, err)
			return
		}
		p.mu.Lock()
	}
	for _, e := range missing {
		out = wire.AppendEvent(out, e.id(), e.event, e.data)
	}
	i := 0
	if resume {
		i = p.next(pos)
	}
	for _, e := range p.log[i:] {
		out = wire.AppendEvent(out, e.id(), e.event, e.data)
		pos = position{e.seq, e.n}
	}
	if len(p.log) == 0 || !resume && i == len(p.log) {
		pos = position{p.seq, p.n}
	}
	snap, err := json.Marshal(snapshot{Seq: p.seq, State: p.state, Hold: p.holdStateLocked()})
	changed, closed := p.changed, p.closed
	p.mu.Unlock()
	if err != nil {
		wire.WriteError(w, http.StatusInternalServerError, "encoding the state: %v", err)
		return
	}
	out = wire.AppendEvent(out, "", "snapshot", snap)
	if closed {
		wire.WriteError(w, http.StatusServiceUnavailable, "the panel is closed")
		return
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(b []byte) error {
		if err := rc.SetWriteDeadline(time.Now().Add(p.cfg.WriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if write(append([]byte("retry: 1000\n\n"), out...)) != nil {
		return
	}
	heartbeat := time.NewTicker(p.cfg.Heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-p.done:
			write([]byte("event: close\ndata: {}\n\n"))
			return
		case <-heartbeat.C:
			if write([]byte(": heartbeat\n\n")) != nil {
				return
			}
			continue
		case <-changed:
		}
		p.mu.Lock()
		i := p.next(pos)
		lost := p.dropped != nil && p.dropped.after(pos.seq, pos.n)
		out = out[:0]
		for _, e := range p.log[i:] {
			out = wire.AppendEvent(out, e.id(), e.event, e.data)
			pos = position{e.seq, e.n}
		}
		changed = p.changed
		p.mu.Unlock()
		if lost {
			// Fell behind what the panel keeps: start over.
			write(wire.AppendEvent(nil, "", "reset", []byte("{}")))
			return
		}
		if len(out) > 0 && write(out) != nil {
			return
		}
	}
}

// next returns the index in the log of the first event after pos.
func (p *Panel[S, I]) next(pos position) int {
	return sort.Search(len(p.log), func(i int) bool { return p.log[i].after(pos.seq, pos.n) })
}
