package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/moora-go/moora/automata/llm"
)

// The limits a Config leaves at zero: see "Limits" in the documentation of
// package automata/llm/openai, whose constants are these.
const (
	DefaultMaxResponseBytes = 4 << 20
	DefaultMaxBodyBytes     = 64 << 20
	DefaultMaxDuration      = 10 * time.Minute
	DefaultMaxFirstByteWait = 5 * time.Minute
	DefaultMaxIdle          = time.Minute
)

// The names of the limits, as llm.LimitError.Limit gives them: the fields
// of each provider's Config.
const (
	LimitResponseBytes = "MaxResponseBytes"
	LimitBodyBytes     = "MaxBodyBytes"
	LimitDuration      = "MaxDuration"
	LimitFirstByteWait = "MaxFirstByteWait"
	LimitIdle          = "MaxIdle"
)

// EventSlack is what an event of the stream may have on top of twice
// MaxResponseBytes: its envelope.
const EventSlack = 64 << 10

// Config holds the limits of a provider's Config, zero for the default.
type Config struct {
	MaxResponseBytes int64
	MaxBodyBytes     int64
	MaxDuration      time.Duration
	MaxFirstByteWait time.Duration
	MaxIdle          time.Duration
}

// Kind is the llm.Error kind of e: llm.ErrResponseTimeout,
// llm.ErrStreamStalled or llm.ErrResponseTooLarge.
func Kind(e *llm.LimitError) error {
	switch e.Limit {
	case LimitDuration:
		return llm.ErrResponseTimeout
	case LimitFirstByteWait, LimitIdle:
		return llm.ErrStreamStalled
	default:
		return llm.ErrResponseTooLarge
	}
}

// Limits are a model's limits, its Config's or the defaults, with the
// error of each, made once.
type Limits struct {
	ResponseBytes int64
	BodyBytes     int64
	EventBytes    int64 // of one event of the stream
	Duration      time.Duration
	FirstByteWait time.Duration
	Idle          time.Duration

	// ResponseErr is the error of a reply past ResponseBytes, ErrorBodyErr
	// of an error body past it, EventErr of an event past EventBytes,
	// BodyErr of a stream past BodyBytes; DurationErr, FirstByteErr and
	// IdleErr those of the limits of time.
	ResponseErr, ErrorBodyErr, EventErr, BodyErr *llm.LimitError
	DurationErr, FirstByteErr, IdleErr           *llm.LimitError

	// Framing is how the provider's SDK splits the stream into events,
	// which EventBytes bounds: LineFraming (the zero value) or
	// BlankLineFraming.
	Framing Framing
}

// Framing is how an SDK splits a stream of server-sent events into the
// events it holds whole in memory.
type Framing int

const (
	// LineFraming: a bufio.Scanner of lines, an empty line (or "\r")
	// ending an event, as the OpenAI and Anthropic SDKs read (EventMeter).
	LineFraming Framing = iota
	// BlankLineFraming: a bufio.Scanner whose tokens end at "\n\n" or
	// "\r\n\r\n", as Google's genai SDK reads (BlankLineMeter).
	BlankLineFraming
)

// NewLimits reads c's limits: zero is the default, a negative value an
// error, which names the provider.
func NewLimits(provider string, c Config) (*Limits, error) {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{LimitResponseBytes, c.MaxResponseBytes}, {LimitBodyBytes, c.MaxBodyBytes}, {LimitDuration, int64(c.MaxDuration)},
		{LimitFirstByteWait, int64(c.MaxFirstByteWait)}, {LimitIdle, int64(c.MaxIdle)},
	} {
		if f.v < 0 {
			return nil, fmt.Errorf("%s: Config.%s is negative (%d): zero is the default, and no limit is not an option", provider, f.name, f.v)
		}
	}
	l := &Limits{
		ResponseBytes: orDefault(c.MaxResponseBytes, DefaultMaxResponseBytes),
		BodyBytes:     orDefault(c.MaxBodyBytes, DefaultMaxBodyBytes),
		Duration:      orDefault(c.MaxDuration, DefaultMaxDuration),
		FirstByteWait: orDefault(c.MaxFirstByteWait, DefaultMaxFirstByteWait),
		Idle:          orDefault(c.MaxIdle, DefaultMaxIdle),
	}
	l.EventBytes = math.MaxInt64
	if l.ResponseBytes <= (math.MaxInt64-EventSlack)/2 {
		l.EventBytes = 2*l.ResponseBytes + EventSlack
	}
	bytesErr := func(limit string, n int64, what string) *llm.LimitError {
		return &llm.LimitError{Limit: limit, Bytes: n, What: fmt.Sprintf("%s passed Config.%s = %d bytes", what, limit, n)}
	}
	l.ResponseErr = bytesErr(LimitResponseBytes, l.ResponseBytes, "the text and tool calls")
	l.ErrorBodyErr = bytesErr(LimitResponseBytes, l.ResponseBytes, "the error body")
	l.BodyErr = bytesErr(LimitBodyBytes, l.BodyBytes, "the stream")
	l.EventErr = &llm.LimitError{Limit: LimitResponseBytes, Bytes: l.EventBytes,
		What: fmt.Sprintf("one event of the stream passed %d bytes (twice Config.%s = %d, plus 64 KiB)", l.EventBytes, LimitResponseBytes, l.ResponseBytes)}
	timeErr := func(limit string, d time.Duration, what string) *llm.LimitError {
		return &llm.LimitError{Limit: limit, Duration: d, What: fmt.Sprintf(what, "Config."+limit+" = "+d.String())}
	}
	l.DurationErr = timeErr(LimitDuration, l.Duration, "the call passed %s")
	l.FirstByteErr = timeErr(LimitFirstByteWait, l.FirstByteWait, "nothing came for %s after the request")
	l.IdleErr = timeErr(LimitIdle, l.Idle, "nothing came for %s in the middle of the stream")
	return l, nil
}

func orDefault[T int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Watch enforces the limits on one call: it cancels the call's context
// with a *llm.LimitError as the cause when a limit of time passes, and its
// Middleware bounds what each attempt's response body gives.
type Watch struct {
	lim    *Limits
	ctx    context.Context
	cancel context.CancelCauseFunc

	end      time.Time // when duration fires
	duration *time.Timer
	silence  *time.Timer // runs while the call waits for the server
	// firstByte is whether an answer's first byte has come, after which
	// silences are MaxIdle's.
	firstByte atomic.Bool
}

// NewWatch returns the watch of a call on ctx, and the context the call
// runs on. Stop must be called when the call is over.
func NewWatch(ctx context.Context, lim *Limits) (context.Context, *Watch) {
	w := &Watch{lim: lim, end: time.Now().Add(lim.Duration)}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	w.duration = time.AfterFunc(lim.Duration, func() { w.cancel(lim.DurationErr) })
	w.silence = time.AfterFunc(math.MaxInt64, func() {
		if w.firstByte.Load() {
			w.cancel(lim.IdleErr)
		} else {
			w.cancel(lim.FirstByteErr)
		}
	})
	w.silence.Stop()
	return w.ctx, w
}

// Stop stops the timers and releases the call's context.
func (w *Watch) Stop() {
	w.duration.Stop()
	w.silence.Stop()
	w.cancel(nil)
}

// Deadline is when the call's limit on its duration ends it, or the
// deadline of its ctx if that is sooner: a wait past it is not worth
// starting.
func (w *Watch) Deadline() time.Time {
	if d, ok := w.ctx.Deadline(); ok && d.Before(w.end) {
		return d
	}
	return w.end
}

// Exceeded returns the limit that ended the call, or nil: err's, or the
// cause of the call's cancellation.
func (w *Watch) Exceeded(err error) *llm.LimitError {
	var e *llm.LimitError
	if errors.As(err, &e) {
		return e
	}
	if errors.As(context.Cause(w.ctx), &e) {
		return e
	}
	return nil
}

// Middleware watches one attempt of the call (the SDK may make several):
// the wait for the response, then its body, which it bounds. It is an SDK's
// middleware: both SDKs' have this signature.
func (w *Watch) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	w.firstByte.Store(false)
	w.silence.Reset(w.lim.FirstByteWait) // until the body's first byte
	res, err := next(req)
	if err != nil || res == nil || res.Body == nil {
		w.silence.Stop() // the SDK may wait, then try again
		if e := w.Exceeded(err); e != nil {
			return res, e
		}
		return res, err
	}
	b := &body{ReadCloser: res.Body, w: w, stream: res.StatusCode < 400}
	if w.lim.Framing == BlankLineFraming {
		b.events = new(BlankLineMeter)
	} else {
		b.events = new(EventMeter)
	}
	if b.stream {
		b.limit = w.lim.BodyBytes
	} else {
		b.limit = w.lim.ResponseBytes // an error body is read whole, and kept
	}
	res.Body = b
	return res, nil
}

// body is a response body that counts what it gives: an error if it goes
// past its limit, or, for a stream, if one of its events goes past
// Limits.EventBytes. The silence timer runs while Read waits for the
// server, never while the caller works between reads.
type body struct {
	io.ReadCloser
	w      *Watch
	stream bool // a stream of events, not an error body
	limit  int64
	read   int64
	events meter
	err    error // the limit passed, returned by every Read after
}

func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	first := b.w.firstByte.Load()
	if first {
		b.w.silence.Reset(b.w.lim.Idle)
	}
	n, err := b.ReadCloser.Read(p)
	if n > 0 || first {
		b.w.silence.Stop() // before the first byte, the wait goes on over reads that give nothing
	}
	if n > 0 {
		b.w.firstByte.Store(true)
		b.read += int64(n)
		switch {
		case b.read > b.limit && b.stream:
			b.err = b.w.lim.BodyErr
		case b.read > b.limit:
			b.err = b.w.lim.ErrorBodyErr
		case b.stream && b.events.Write(p[:n]) > b.w.lim.EventBytes:
			b.err = b.w.lim.EventErr
		}
		if b.err != nil {
			b.w.cancel(b.err) // closes the connection
			return 0, b.err
		}
	}
	if err != nil && err != io.EOF {
		if e := b.w.Exceeded(nil); e != nil {
			err = e // rather than the transport's error of the cancelled context
		}
	}
	return n, err
}

func (b *body) Close() error {
	b.w.silence.Stop()
	return b.ReadCloser.Close()
}

// meter measures the events of a stream: Write takes its next bytes and
// returns the size of its biggest event so far.
type meter interface{ Write(p []byte) int64 }

// EventMeter measures the events of a stream of server-sent events as the
// SDKs' decoders split them (both are a bufio.Scanner of lines): lines end
// with "\n", a line that is empty or "\r" ends an event, and the decoder
// holds an event's data until then.
type EventMeter struct {
	line    int64 // bytes of the current line, so far
	lastCR  bool  // whether the last byte of the current line is '\r'
	event   int64 // bytes of the current event, its lines and their ends, so far
	biggest int64 // of all events so far, the current one included
}

// Write measures p, the next bytes of the stream, and returns the size of
// its biggest event so far.
func (m *EventMeter) Write(p []byte) int64 {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			m.grow(int64(len(p)), false)
			m.lastCR = p[len(p)-1] == '\r'
			break
		}
		if i > 0 {
			m.lastCR = p[i-1] == '\r'
		}
		m.grow(int64(i), true)
		if m.line == 0 || m.line == 1 && m.lastCR { // an empty line: the event ends
			m.event = 0
		}
		m.line, m.lastCR = 0, false
		p = p[i+1:]
	}
	return m.biggest
}

// grow adds n bytes to the current line, and to the current event, with
// the line's end if ends.
func (m *EventMeter) grow(n int64, ends bool) {
	m.line = satAdd(m.line, n)
	if ends {
		n++
	}
	m.event = satAdd(m.event, n)
	m.biggest = max(m.biggest, m.event)
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// BlankLineMeter measures the events of a stream as Google's genai SDK
// splits them: its bufio.Scanner ends a token at "\n\n" or at
// "\r\n\r\n", and holds what comes before it until then. (It does not
// end one at "\n\r\n", which EventMeter counts as an end.) A stream whose
// events, so measured, are at most n bytes never makes the scanner hold
// much more than n bytes: every n bytes of it have an end.
type BlankLineMeter struct {
	tail    [3]byte // the last three bytes of the stream so far, oldest first
	event   int64   // bytes of the current event, its end included, so far
	biggest int64   // of all events so far, the current one included
}

// Write measures p, the next bytes of the stream, and returns the size of
// its biggest event so far.
func (m *BlankLineMeter) Write(p []byte) int64 {
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			m.event = satAdd(m.event, int64(len(rest)))
			break
		}
		m.event = satAdd(m.event, int64(i+1))
		m.biggest = max(m.biggest, m.event)
		at := len(p) - len(rest) + i // the '\n', in p
		// before(k) is the byte k places before it, in p or in the tail.
		before := func(k int) byte {
			if at-k >= 0 {
				return p[at-k]
			}
			return m.tail[3-(k-at)]
		}
		if before(1) == '\n' || before(1) == '\r' && before(2) == '\n' && before(3) == '\r' {
			m.event = 0
		}
		rest = rest[i+1:]
	}
	m.biggest = max(m.biggest, m.event)
	// Keep the last three bytes of the stream.
	if len(p) >= 3 {
		copy(m.tail[:], p[len(p)-3:])
	} else {
		m.tail = [3]byte(append(m.tail[len(p):], p...))
	}
	return m.biggest
}
