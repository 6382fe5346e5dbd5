package openai

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

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/moora-go/moora/automata/llm"
)

// The limits a Config leaves at zero. See "Limits" in the package
// documentation.
const (
	// DefaultMaxResponseBytes bounds the reply's text and tool calls: 4 MiB,
	// some eight times the longest reply a model writes (128,000 tokens of
	// some 4 bytes).
	DefaultMaxResponseBytes = 4 << 20
	// DefaultMaxBodyBytes bounds the bytes of the stream, envelopes
	// included: 64 MiB, some 250,000 chunks of OpenAI's 250 bytes or so.
	DefaultMaxBodyBytes = 64 << 20
	// DefaultMaxDuration bounds a whole call: 10 minutes.
	DefaultMaxDuration = 10 * time.Minute
	// DefaultMaxFirstByteWait bounds the wait for the first byte of the
	// answer: 5 minutes, for a reasoning model, which OpenAI's API streams
	// nothing of while it thinks, or a long prompt on a slow local server.
	DefaultMaxFirstByteWait = 5 * time.Minute
	// DefaultMaxIdle bounds the silences of a stream that has begun:
	// 1 minute.
	DefaultMaxIdle = time.Minute
)

// The names of the limits, as LimitError.Limit gives them: the fields of
// Config.
const (
	limitResponseBytes = "MaxResponseBytes"
	limitBodyBytes     = "MaxBodyBytes"
	limitDuration      = "MaxDuration"
	limitFirstByteWait = "MaxFirstByteWait"
	limitIdle          = "MaxIdle"
)

// eventSlack is what an event of the stream may have on top of twice
// MaxResponseBytes: the envelope of its chunk.
const eventSlack = 64 << 10

// toolCallBytes is what each tool call of a reply counts on top of its
// bytes: the memory of its place in the SDK's accumulator and in the
// response (some 500 bytes), and a margin.
const toolCallBytes = 1 << 10

// maxToolCallGrowth bounds the new tool calls one chunk may open, as the
// SDK's accumulator does (128), with a margin: what a chunk that opens more
// counts is not computed, since AddChunk refuses it.
const maxToolCallGrowth = 1 << 10

// LimitError says which of Config's limits ended a call. It is the Err of
// the *llm.Error that Complete returns, whose Kind is
// llm.ErrResponseTooLarge, llm.ErrResponseTimeout or llm.ErrStreamStalled;
// errors.As reaches it.
type LimitError struct {
	// Limit is the field of Config: MaxResponseBytes, MaxBodyBytes,
	// MaxDuration, MaxFirstByteWait or MaxIdle.
	Limit string
	// Bytes is the number of bytes allowed, for MaxResponseBytes and
	// MaxBodyBytes. For one event of the stream, which MaxResponseBytes
	// bounds too, it is twice MaxResponseBytes plus 64 KiB.
	Bytes int64
	// Duration is the time allowed, for MaxDuration, MaxFirstByteWait and
	// MaxIdle.
	Duration time.Duration

	what string // what went past the limit, for the message
}

// Error says what went past which limit, such as "the text and tool calls
// passed Config.MaxResponseBytes = 4194304 bytes".
func (e *LimitError) Error() string { return e.what }

// kind is the llm.Error kind of e.
func (e *LimitError) kind() error {
	switch e.Limit {
	case limitDuration:
		return llm.ErrResponseTimeout
	case limitFirstByteWait, limitIdle:
		return llm.ErrStreamStalled
	default:
		return llm.ErrResponseTooLarge
	}
}

// limits are a Model's limits, the Config's or the defaults, with the
// error of each, made once.
type limits struct {
	responseBytes int64
	bodyBytes     int64
	eventBytes    int64 // of one event of the stream
	duration      time.Duration
	firstByteWait time.Duration
	idle          time.Duration

	responseErr, errorBodyErr, eventErr, bodyErr *LimitError
	durationErr, firstByteErr, idleErr           *LimitError
}

// newLimits reads c's limits: zero is the default, a negative value an
// error.
func newLimits(c Config) (*limits, error) {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{limitResponseBytes, c.MaxResponseBytes}, {limitBodyBytes, c.MaxBodyBytes}, {limitDuration, int64(c.MaxDuration)},
		{limitFirstByteWait, int64(c.MaxFirstByteWait)}, {limitIdle, int64(c.MaxIdle)},
	} {
		if f.v < 0 {
			return nil, fmt.Errorf("openai: Config.%s is negative (%d): zero is the default, and no limit is not an option", f.name, f.v)
		}
	}
	l := &limits{
		responseBytes: orDefault(c.MaxResponseBytes, DefaultMaxResponseBytes),
		bodyBytes:     orDefault(c.MaxBodyBytes, DefaultMaxBodyBytes),
		duration:      orDefault(c.MaxDuration, DefaultMaxDuration),
		firstByteWait: orDefault(c.MaxFirstByteWait, DefaultMaxFirstByteWait),
		idle:          orDefault(c.MaxIdle, DefaultMaxIdle),
	}
	l.eventBytes = math.MaxInt64
	if l.responseBytes <= (math.MaxInt64-eventSlack)/2 {
		l.eventBytes = 2*l.responseBytes + eventSlack
	}
	bytesErr := func(limit string, n int64, what string) *LimitError {
		return &LimitError{Limit: limit, Bytes: n, what: fmt.Sprintf("%s passed Config.%s = %d bytes", what, limit, n)}
	}
	l.responseErr = bytesErr(limitResponseBytes, l.responseBytes, "the text and tool calls")
	l.errorBodyErr = bytesErr(limitResponseBytes, l.responseBytes, "the error body")
	l.bodyErr = bytesErr(limitBodyBytes, l.bodyBytes, "the stream")
	l.eventErr = &LimitError{Limit: limitResponseBytes, Bytes: l.eventBytes,
		what: fmt.Sprintf("one event of the stream passed %d bytes (twice Config.%s = %d, plus 64 KiB)", l.eventBytes, limitResponseBytes, l.responseBytes)}
	timeErr := func(limit string, d time.Duration, what string) *LimitError {
		return &LimitError{Limit: limit, Duration: d, what: fmt.Sprintf(what, "Config."+limit+" = "+d.String())}
	}
	l.durationErr = timeErr(limitDuration, l.duration, "the call passed %s")
	l.firstByteErr = timeErr(limitFirstByteWait, l.firstByteWait, "nothing came for %s after the request")
	l.idleErr = timeErr(limitIdle, l.idle, "nothing came for %s in the middle of the stream")
	return l, nil
}

func orDefault[T int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// watch enforces the limits on one call: it cancels the call's context
// with a *LimitError as the cause when a limit of time passes, and its
// middleware bounds what each attempt's response body gives.
type watch struct {
	lim    *limits
	ctx    context.Context
	cancel context.CancelCauseFunc

	duration *time.Timer
	silence  *time.Timer // runs while the call waits for the server
	// firstByte is whether an answer's first byte has come, after which
	// silences are MaxIdle's.
	firstByte atomic.Bool
}

// newWatch returns the watch of a call on ctx, and the context the call
// runs on. stop must be called when the call is over.
func newWatch(ctx context.Context, lim *limits) (context.Context, *watch) {
	w := &watch{lim: lim}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	w.duration = time.AfterFunc(lim.duration, func() { w.cancel(lim.durationErr) })
	w.silence = time.AfterFunc(math.MaxInt64, func() {
		if w.firstByte.Load() {
			w.cancel(lim.idleErr)
		} else {
			w.cancel(lim.firstByteErr)
		}
	})
	w.silence.Stop()
	return w.ctx, w
}

// stop stops the timers and releases the call's context.
func (w *watch) stop() {
	w.duration.Stop()
	w.silence.Stop()
	w.cancel(nil)
}

// exceeded returns the limit that ended the call, or nil: err's, or the
// cause of the call's cancellation.
func (w *watch) exceeded(err error) *LimitError {
	var e *LimitError
	if errors.As(err, &e) {
		return e
	}
	if errors.As(context.Cause(w.ctx), &e) {
		return e
	}
	return nil
}

// middleware watches one attempt of the call (the SDK may make several):
// the wait for the response, then its body, which it bounds.
func (w *watch) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	w.firstByte.Store(false)
	w.silence.Reset(w.lim.firstByteWait) // until the body's first byte
	res, err := next(req)
	if err != nil || res == nil || res.Body == nil {
		w.silence.Stop() // the SDK may wait, then try again
		if e := w.exceeded(err); e != nil {
			return res, e
		}
		return res, err
	}
	b := &body{ReadCloser: res.Body, w: w, stream: res.StatusCode < 400}
	if b.stream {
		b.limit = w.lim.bodyBytes
	} else {
		b.limit = w.lim.responseBytes // an error body is read whole, and kept
	}
	res.Body = b
	return res, nil
}

// body is a response body that counts what it gives: an error if it goes
// past its limit, or, for a stream, if one of its events goes past
// limits.eventBytes. The silence timer runs while Read waits for the
// server, never while the caller works between reads.
type body struct {
	io.ReadCloser
	w      *watch
	stream bool // a stream of events, not an error body
	limit  int64
	read   int64
	events eventMeter
	err    error // the limit passed, returned by every Read after
}

func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	first := b.w.firstByte.Load()
	if first {
		b.w.silence.Reset(b.w.lim.idle)
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
			b.err = b.w.lim.bodyErr
		case b.read > b.limit:
			b.err = b.w.lim.errorBodyErr
		case b.stream && b.events.write(p[:n]) > b.w.lim.eventBytes:
			b.err = b.w.lim.eventErr
		}
		if b.err != nil {
			b.w.cancel(b.err) // closes the connection
			return 0, b.err
		}
	}
	if err != nil && err != io.EOF {
		if e := b.w.exceeded(nil); e != nil {
			err = e // rather than the transport's error of the cancelled context
		}
	}
	return n, err
}

func (b *body) Close() error {
	b.w.silence.Stop()
	return b.ReadCloser.Close()
}

// eventMeter measures the events of a stream of server-sent events as the
// SDK's decoder splits them: lines end with "\n", a line that is empty or
// "\r" ends an event, and the decoder holds an event's data until then.
type eventMeter struct {
	line    int64 // bytes of the current line, so far
	lastCR  bool  // whether the last byte of the current line is '\r'
	event   int64 // bytes of the current event, its lines and their ends, so far
	biggest int64 // of all events so far, the current one included
}

// write measures p, the next bytes of the stream, and returns the size of
// its biggest event so far.
func (m *eventMeter) write(p []byte) int64 {
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
func (m *eventMeter) grow(n int64, ends bool) {
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

// keptBytes returns what chunk adds to what Complete keeps of a reply: the
// bytes of its text and of its tool calls' IDs, types, names and
// arguments, and, for each tool call it opens, toolCallBytes and idBytes
// (the ID Complete makes of the completion's if the server gives none).
// calls is the number of tool calls before chunk; chunk holds the first
// choice only.
func keptBytes(chunk *sdk.ChatCompletionChunk, calls int64, idBytes int) int64 {
	var n int64
	for _, c := range chunk.Choices {
		n += int64(len(c.Delta.Content)) + int64(len(c.Delta.Refusal))
		for _, t := range c.Delta.ToolCalls {
			n += int64(len(t.ID)) + int64(len(t.Type)) + int64(len(t.Function.Name)) + int64(len(t.Function.Arguments))
			i := max(t.Index, 0) // -1 is the first call, for some servers (AWS Bedrock), as for the SDK
			if i >= calls {
				opened := min(i+1-calls, maxToolCallGrowth)
				n += opened * (toolCallBytes + int64(idBytes))
				calls = i + 1
			}
		}
	}
	return n
}
