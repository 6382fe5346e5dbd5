package httpbridge

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/moora-go/moora/automata/internal/wire"
)

// Streams holds the token streams of an agent: named texts that effects and
// jobs write chunk by chunk (an LLM's reply as it is generated) and that
// browsers follow over SSE, outside the state. A Bridge serves the Streams
// of its Config at GET /streams/{name}.
//
// A stream exists from its first Write, or from the first reader that asks
// for it (a browser may ask before the job has started); it ends with End,
// or with Fail when what writes it failed (the LLM's call did).
// A stream that ended, or that a reader opened and nobody wrote to, is freed
// after StreamOptions.Keep; one that ended is freed sooner when a Write
// needs its room under StreamOptions.MaxTotalBytes. Its methods are safe for concurrent use.
type Streams struct {
	opts StreamOptions

	mu        sync.Mutex
	streams   map[string]*stream
	total     int // bytes of text held
	lastSweep time.Time
}

// StreamOptions configure Streams; the zero value gives the defaults.
type StreamOptions struct {
	// Keep is how long a stream is kept after End (for late joiners and
	// reconnects), and how long one that a reader opened waits for its
	// first Write. Default: one minute.
	Keep time.Duration
	// MaxStreams bounds the streams held at once; a Write or a reader that
	// would open one more gets ErrTooManyStreams. Default: 1024.
	MaxStreams int
	// MaxBytes bounds the text of one stream. Default: 1 MiB.
	MaxBytes int
	// MaxTotalBytes bounds the text of all the streams held. A Write that
	// would pass it frees the streams that have ended, the oldest first,
	// before their Keep is up; if that is not enough it fails. Default:
	// 64 MiB.
	MaxTotalBytes int
}

// ErrTooManyStreams is returned when StreamOptions.MaxStreams are held.
var ErrTooManyStreams = errors.New("httpbridge: too many streams")

// ErrStreamEnded is returned by Write and End on a stream that has ended.
var ErrStreamEnded = errors.New("httpbridge: the stream has ended")

// stream is one token stream. Its fields are guarded by Streams.mu; changed
// is closed and replaced each time text grows or the stream ends.
type stream struct {
	text    []byte
	ended   bool
	failure string    // why it failed, if it ended with Fail
	written bool      // a Write or End happened
	expires time.Time // when it may be freed: after End, or unwritten
	readers int
	changed chan struct{}
}

// NewStreams returns an empty set of token streams.
func NewStreams(opts StreamOptions) *Streams {
	if opts.Keep <= 0 {
		opts.Keep = time.Minute
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = 1024
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 1 << 20
	}
	if opts.MaxTotalBytes <= 0 {
		opts.MaxTotalBytes = 64 << 20
	}
	return &Streams{opts: opts, streams: map[string]*stream{}}
}

// Write appends chunk to the named stream, creating it if needed. A chunk
// must be valid UTF-8, so that every offset a reader resumes from is at a
// character boundary.
func (s *Streams) Write(name, chunk string) error {
	if err := checkStreamName(name); err != nil {
		return err
	}
	if !utf8.ValidString(chunk) {
		return fmt.Errorf("httpbridge: stream %q: the chunk is not valid UTF-8", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.getLocked(name, time.Now())
	if err != nil {
		return err
	}
	if st.ended {
		return fmt.Errorf("%w: %q", ErrStreamEnded, name)
	}
	if len(st.text)+len(chunk) > s.opts.MaxBytes {
		return fmt.Errorf("httpbridge: stream %q: over %d bytes (StreamOptions.MaxBytes)", name, s.opts.MaxBytes)
	}
	if s.total+len(chunk) > s.opts.MaxTotalBytes && !s.freeEndedLocked(len(chunk)) {
		return fmt.Errorf("httpbridge: stream %q: the streams would hold over %d bytes (StreamOptions.MaxTotalBytes)", name, s.opts.MaxTotalBytes)
	}
	st.written = true
	st.text = append(st.text, chunk...)
	s.total += len(chunk)
	close(st.changed)
	st.changed = make(chan struct{})
	return nil
}

// End ends the named stream: its readers get the end event with the whole
// text, and it is freed after StreamOptions.Keep.
func (s *Streams) End(name string) error {
	return s.end(name, "")
}

// Fail ends the named stream as failed, for reason (what a person reads:
// the LLM's call failed, and why): its readers get the error event with the
// reason instead of the end event, and it is freed after
// StreamOptions.Keep. A stream that nobody wrote to can fail, as one
// that is full can: a reader waiting for it learns that no text comes.
func (s *Streams) Fail(name, reason string) error {
	if reason == "" {
		reason = "failed"
	}
	return s.end(name, reason)
}

// end ends the named stream, as failed for failure if it is not "".
func (s *Streams) end(name, failure string) error {
	if err := checkStreamName(name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	st, err := s.getLocked(name, now)
	if err != nil {
		return err
	}
	if st.ended {
		return fmt.Errorf("%w: %q", ErrStreamEnded, name)
	}
	st.written, st.ended, st.failure = true, true, failure
	st.expires = now.Add(s.opts.Keep)
	close(st.changed)
	st.changed = make(chan struct{})
	return nil
}

// getLocked returns the named stream, creating it; s.mu must be held.
func (s *Streams) getLocked(name string, now time.Time) (*stream, error) {
	if st, ok := s.streams[name]; ok {
		return st, nil
	}
	// Free what has expired now and then, and always before refusing.
	if len(s.streams) >= s.opts.MaxStreams || now.Sub(s.lastSweep) > s.opts.Keep/4 {
		s.sweepLocked(now)
		if len(s.streams) >= s.opts.MaxStreams {
			return nil, ErrTooManyStreams
		}
	}
	st := &stream{changed: make(chan struct{}), expires: now.Add(s.opts.Keep)}
	s.streams[name] = st
	return st, nil
}

// sweepLocked frees the streams whose time is up: ended ones after Keep,
// and ones nobody wrote to and nobody reads after Keep.
func (s *Streams) sweepLocked(now time.Time) {
	s.lastSweep = now
	for name, st := range s.streams {
		if now.Before(st.expires) {
			continue
		}
		if st.ended || (!st.written && st.readers == 0) {
			s.deleteLocked(name, st)
		}
	}
}

func (s *Streams) deleteLocked(name string, st *stream) {
	delete(s.streams, name)
	s.total -= len(st.text)
}

// freeEndedLocked frees ended streams, those that ended first first, until
// n more bytes fit under MaxTotalBytes; it reports whether they do.
func (s *Streams) freeEndedLocked(n int) bool {
	type ended struct {
		name string
		st   *stream
	}
	var done []ended
	for name, st := range s.streams {
		if st.ended {
			done = append(done, ended{name, st})
		}
	}
	slices.SortFunc(done, func(a, b ended) int { return a.st.expires.Compare(b.st.expires) })
	for _, e := range done {
		if s.total+n <= s.opts.MaxTotalBytes {
			break
		}
		s.deleteLocked(e.name, e.st)
	}
	return s.total+n <= s.opts.MaxTotalBytes
}

// read returns the stream's text from offset on, whether it has ended, and
// a channel closed at its next change. ok is false if offset is past the
// text or not at a character boundary.
func (s *Streams) read(st *stream, offset int) (text []byte, ended bool, changed <-chan struct{}, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if offset > len(st.text) || (offset < len(st.text) && !utf8.RuneStart(st.text[offset])) {
		return nil, false, nil, false
	}
	return st.text[offset:len(st.text):len(st.text)], st.ended, st.changed, true
}

// failure returns why the stream failed, "" if it did not (or has not
// ended).
func (s *Streams) failure(st *stream) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return st.failure
}

// open registers a reader of the named stream, creating it if needed.
func (s *Streams) open(name string) (*stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.getLocked(name, time.Now())
	if err != nil {
		return nil, err
	}
	st.readers++
	return st, nil
}

// release unregisters a reader; an unwritten stream then expires after Keep.
func (s *Streams) release(st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.readers--
	if !st.written {
		st.expires = time.Now().Add(s.opts.Keep)
	}
}

// whole returns the stream's whole text.
func (s *Streams) whole(st *stream) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return st.text[:len(st.text):len(st.text)]
}

// checkStreamName accepts 1 to 128 characters of A-Z a-z 0-9 . _ ~ : -,
// which need no escaping in a URL path.
func checkStreamName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("httpbridge: stream name of %d bytes: want 1 to 128", len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '~' || c == ':' || c == '-') {
			return fmt.Errorf("httpbridge: stream name %q: byte %d is not one of A-Z a-z 0-9 . _ ~ : -", wire.Truncate(name, 40), i)
		}
	}
	return nil
}
