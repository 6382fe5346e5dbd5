package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/llm"
)

// What a hostile server gives up at, so that code without limits fails a
// test (with another error than the one it wants) instead of running
// forever: endlessCap bytes written, or giveUp waited. Code with limits
// never gets there.
const (
	endlessCap = 128 << 20
	giveUp     = 30 * time.Second
)

// hostile is a server of the Messages API on loopback that answers every
// request with serve, which writes what it likes, and counts what it wrote.
type hostile struct {
	*httptest.Server
	requests atomic.Int64
	written  atomic.Int64  // bytes of the bodies
	hungUp   chan struct{} // closed when the client hangs up on a request
	once     sync.Once
}

// out is where serve writes one answer.
type out struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	ctx  context.Context // done when the client hangs up
	n    *atomic.Int64
	gone bool // the client hung up
}

// send writes b and flushes it; false once the client has hung up or the
// server has written endlessCap bytes.
func (o *out) send(b []byte) bool {
	if o.ctx.Err() != nil {
		o.gone = true
		return false
	}
	if o.n.Load() >= endlessCap {
		return false
	}
	n, err := o.w.Write(b)
	o.n.Add(int64(n))
	if err == nil {
		err = o.rc.Flush()
	}
	o.gone = err != nil
	return !o.gone
}

// wait waits for the client to hang up, or giveUp.
func (o *out) wait() {
	select {
	case <-o.ctx.Done():
		o.gone = true
	case <-time.After(giveUp):
	}
}

func newHostile(t *testing.T, status int, noHeaders bool, serve func(o *out)) *hostile {
	t.Helper()
	h := &hostile{hungUp: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h.requests.Add(1)
		o := &out{w: w, rc: http.NewResponseController(w), ctx: r.Context(), n: &h.written}
		if !noHeaders {
			if status == http.StatusOK {
				w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
			w.WriteHeader(status)
			o.rc.Flush()
		}
		serve(o)
		if o.gone {
			select {
			case <-r.Context().Done():
				h.once.Do(func() { close(h.hungUp) })
			case <-time.After(giveUp):
			}
		}
	}))
	t.Cleanup(h.Close)
	return h
}

// The events of the Messages API that the hostile servers send.
const (
	messageStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n"
	textStart    = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	toolStart    = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"word-count\",\"input\":{}}}\n\n"
	ping         = "event: ping\ndata: {\"type\":\"ping\"}\n\n"
)

func textDelta(s string) string {
	return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + s + "\"}}\n\n"
}

func jsonDelta(s string) string {
	return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"" + s + "\"}}\n\n"
}

// after sends first, then each again and again, until the client hangs up
// (or endlessCap).
func after(first string, each func(i int) string) func(o *out) {
	return func(o *out) {
		if !o.send([]byte(first)) {
			return
		}
		for i := 0; o.send([]byte(each(i))); i++ {
		}
	}
}

func same(s string) func(int) string { return func(int) string { return s } }

var errHeap = errors.New("the heap grew past the test's bound: the call was cancelled")

// heapBound runs call, reading runtime.MemStats every millisecond or so,
// and returns the most the heap grew over what it was before. When the
// heap grows past bound, it cancels call's context with errHeap, so that
// code without limits fails the test instead of eating the machine.
func heapBound(bound uint64, call func(ctx context.Context) error) (err error, peak uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > base {
					peak = max(peak, ms.HeapAlloc-base)
				}
				if peak > bound {
					cancel(errHeap)
				}
			}
		}
	}()
	err = call(ctx)
	close(done)
	<-sampled
	return err, peak
}

// hostileCase is a hostile server and the limit its answer must meet.
type hostileCase struct {
	name      string
	status    int  // 200 unless set
	noHeaders bool // the server never sends its headers
	serve     func(o *out)
	limits    Config // the limits, on top of patient ones
	kind      error
	limit     string
	what      string // the end of the message: what passed which limit
	chunks    int    // chunks of text before the error; -1: two or more
}

// patient are limits of time that tests of size never meet, and limits of
// size that tests of time never meet.
var patient = Config{MaxResponseBytes: 1 << 20, MaxBodyBytes: 64 << 20,
	MaxDuration: time.Minute, MaxFirstByteWait: time.Minute, MaxIdle: time.Minute}

func (tc hostileCase) run(t *testing.T) {
	status := cmpOr(tc.status, http.StatusOK)
	h := newHostile(t, status, tc.noHeaders, tc.serve)
	c := patient
	c.MaxResponseBytes = cmpOr(tc.limits.MaxResponseBytes, c.MaxResponseBytes)
	c.MaxBodyBytes = cmpOr(tc.limits.MaxBodyBytes, c.MaxBodyBytes)
	c.MaxDuration = cmpOr(tc.limits.MaxDuration, c.MaxDuration)
	c.MaxFirstByteWait = cmpOr(tc.limits.MaxFirstByteWait, c.MaxFirstByteWait)
	c.MaxIdle = cmpOr(tc.limits.MaxIdle, c.MaxIdle)
	c.APIKey, c.BaseURL, c.Model = "sk-ant-test", h.URL, "claude-test"
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	// The heap may hold what the call keeps, one event in the SDK's
	// decoder a few times over as its buffers grow, the garbage of the
	// events before, and a few MiB of the runtime's and the server's.
	bound := uint64(24*c.MaxResponseBytes) + 8<<20
	var chunks int
	err, peak := heapBound(bound, func(ctx context.Context) error {
		_, err := m.Complete(ctx, question, func(string) { chunks++ })
		return err
	})
	t.Logf("heap grew by %.1f MiB at most (bound %.1f MiB), server wrote %.1f MiB",
		float64(peak)/(1<<20), float64(bound)/(1<<20), float64(h.written.Load())/(1<<20))
	if errors.Is(err, errHeap) {
		t.Fatalf("the heap grew by %d bytes, past %d: %v", peak, bound, err)
	}
	e := assertError(t, err, tc.kind, "anthropic: "+tc.kind.Error()+" from "+h.URL+"/: "+tc.what)
	var le *llm.LimitError
	if !errors.As(err, &le) || le != e.Err {
		t.Fatalf("errors.As(%v, *LimitError) = false, or not the llm.Error's Err", err)
	}
	if le.Limit != tc.limit {
		t.Errorf("LimitError.Limit = %s, want %s", le.Limit, tc.limit)
	}
	if tc.chunks < 0 && chunks < 2 || tc.chunks >= 0 && chunks != tc.chunks {
		t.Errorf("%d chunks of text before the error, want %d (-1: two or more)", chunks, tc.chunks)
	}
	if n := h.requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	if h.written.Load() >= endlessCap {
		t.Errorf("the server wrote all of its %d MiB", endlessCap>>20)
	}
	select { // the client hung up: the server stops generating
	case <-h.hungUp:
	case <-time.After(giveUp):
		t.Error("the server did not see the client hang up")
	}
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// A server that never ends its stream is read up to a limit of size,
// whatever it sends, and the call ends with llm.ErrResponseTooLarge.
func TestEndlessStream(t *testing.T) {
	word := strings.Repeat("word ", 200) // 1,000 bytes of text
	tests := []hostileCase{
		{
			name:   "text",
			serve:  after(messageStart+textStart, same(textDelta(word))),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 261,
			what: "the text and tool calls passed Config.MaxResponseBytes = 262144 bytes",
		},
		{
			name:   "the input of a tool call",
			serve:  after(messageStart+toolStart, same(jsonDelta(strings.Repeat("x", 1000)))),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 0,
			what: "the text and tool calls passed Config.MaxResponseBytes = 262144 bytes",
		},
		{
			name: "content blocks with nothing in them",
			serve: after(messageStart, func(i int) string {
				return fmt.Sprintf("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":%d,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n", i)
			}),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 0,
			what: "the text and tool calls passed Config.MaxResponseBytes = 262144 bytes",
		},
		{
			name:   "pings",
			serve:  after(messageStart, same(ping)),
			limits: Config{MaxBodyBytes: 4 << 20},
			kind:   llm.ErrResponseTooLarge, limit: "MaxBodyBytes", chunks: 0,
			what: "the stream passed Config.MaxBodyBytes = 4194304 bytes",
		},
		{
			name:   "events of a type the API may add",
			serve:  after(messageStart, same("event: future\ndata: {\"type\":\"future\"}\n\n")),
			limits: Config{MaxBodyBytes: 4 << 20},
			kind:   llm.ErrResponseTooLarge, limit: "MaxBodyBytes", chunks: 0,
			what: "the stream passed Config.MaxBodyBytes = 4194304 bytes",
		},
		{
			name:   "one event, its data lines without the empty line that ends it",
			serve:  after(messageStart, same("data: "+strings.Repeat("x", 1000)+"\n")),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 0,
			what: "one event of the stream passed 589824 bytes (twice Config.MaxResponseBytes = 262144, plus 64 KiB)",
		},
		{
			name:   "an error body without end (HTTP 400)",
			status: http.StatusBadRequest,
			serve:  after(`{"type":"error","error":{"type":"invalid_request_error","message":"`, same(strings.Repeat("x", 1000))),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 0,
			what: "the error body passed Config.MaxResponseBytes = 262144 bytes",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// A stream that never stalls and never ends, its events arriving well
// within the limit on silences, ends at the limit on the call's duration,
// although the caller's context has no deadline.
func TestSlowDrip(t *testing.T) {
	// The drip comes a thirtieth of idle apart: a loaded machine would have
	// to stall a server 30 times as long to make the call stall.
	const idle = 3 * time.Second
	drip := func(first, each string) func(o *out) {
		return func(o *out) {
			if !o.send([]byte(first)) {
				return
			}
			stop := time.After(giveUp)
			for o.send([]byte(each)) {
				select {
				case <-time.After(idle / 30):
				case <-o.ctx.Done():
					o.gone = true
					return
				case <-stop:
					return
				}
			}
		}
	}
	limits := Config{MaxDuration: time.Second, MaxIdle: idle, MaxFirstByteWait: idle}
	for _, tc := range []hostileCase{
		{name: "a word at a time", serve: drip(messageStart+textStart, textDelta("word ")), limits: limits,
			kind: llm.ErrResponseTimeout, limit: "MaxDuration", chunks: -1, what: "the call passed Config.MaxDuration = 1s"},
		{name: "pings", serve: drip(messageStart, ping), limits: limits,
			kind: llm.ErrResponseTimeout, limit: "MaxDuration", chunks: 0, what: "the call passed Config.MaxDuration = 1s"},
	} {
		t.Run(tc.name, tc.run)
	}
}

// A server that stops sending, before its headers, after them, or in the
// middle of the stream, ends the call with llm.ErrStreamStalled, which the
// SDK does not retry.
func TestStalledStream(t *testing.T) {
	stall := func(first string) func(o *out) {
		return func(o *out) {
			if first != "" {
				o.send([]byte(first))
			}
			o.wait()
		}
	}
	limits := Config{MaxFirstByteWait: 300 * time.Millisecond, MaxIdle: 200 * time.Millisecond}
	for _, tc := range []hostileCase{
		{name: "headers, then nothing", serve: stall(""), limits: limits,
			kind: llm.ErrStreamStalled, limit: "MaxFirstByteWait", what: "nothing came for Config.MaxFirstByteWait = 300ms after the request"},
		{name: "no headers", noHeaders: true, serve: stall(""), limits: limits,
			kind: llm.ErrStreamStalled, limit: "MaxFirstByteWait", what: "nothing came for Config.MaxFirstByteWait = 300ms after the request"},
		{name: "three words, then nothing", serve: stall(messageStart + textStart + textDelta("Once") + textDelta(" upon") + textDelta(" a")), limits: limits,
			kind: llm.ErrStreamStalled, limit: "MaxIdle", chunks: 3, what: "nothing came for Config.MaxIdle = 200ms in the middle of the stream"},
		{name: "in the middle of a tool call's input", serve: stall(messageStart + toolStart + jsonDelta(`{\"text\": \"one`)), limits: limits,
			kind: llm.ErrStreamStalled, limit: "MaxIdle", what: "nothing came for Config.MaxIdle = 200ms in the middle of the stream"},
	} {
		t.Run(tc.name, tc.run)
	}
}

// The limits leave an honest server alone: the SDK's wait before a retry
// is no silence of the server, nor is the time onChunk takes, and a reply
// of exactly MaxResponseBytes is whole.
func TestLimitsLeaveHonestServersAlone(t *testing.T) {
	const silence = 200 * time.Millisecond
	c := Config{MaxFirstByteWait: silence, MaxIdle: silence}
	t.Run("a retry after a wait longer than the limits on silences", func(t *testing.T) {
		limited := reply{status: 429, header: map[string]string{"Retry-After-Ms": fmt.Sprint((3 * silence).Milliseconds())},
			body: apiError("rate_limit_error", "Rate limited")}
		srv := newServer(t, limited, sse(t, "text.sse"))
		resp, err := srv.model(t, c).Complete(context.Background(), question, nil)
		if err != nil || resp.Text != "Hello! How can I help you today?" {
			t.Fatalf("Complete = %+v, %v", resp, err)
		}
		if n := len(srv.received()); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
	t.Run("an onChunk slower than the limit on silences", func(t *testing.T) {
		srv := newServer(t, sse(t, "text.sse"))
		var chunks []string
		resp, err := srv.model(t, c).Complete(context.Background(), question, func(s string) {
			if len(chunks) == 0 {
				time.Sleep(3 * silence)
			}
			chunks = append(chunks, s)
		})
		if err != nil || strings.Join(chunks, "") != resp.Text {
			t.Fatalf("Complete = %+v, %v; chunks %q", resp, err, chunks)
		}
	})
	// What the replies of testdata keep, as MaxResponseBytes counts it: the
	// message's ID, each block's type and blockBytes, the text, a tool
	// call's ID, name, input as its start gave it ({}) and input.
	text := int64(len("msg_01XFDUDYJgAACzvnptvVoYEL") + blockBytes + len("text") + len("Hello! How can I help you today?"))
	tool := int64(len("msg_014p7gG3wDgGV9EUtLvnow3U") + 2*blockBytes + len("text") + len("Okay, let's count the words of that text.") +
		len("tool_use") + len("toolu_01T1x1fJ34qAmk2tNTrN7Up6") + len("word-count") + len("{}") + len(`{"text": "count these words"}`))
	for _, tt := range []struct {
		file string
		kept int64
	}{{"text.sse", text}, {"documented_tool_use.sse", tool}} {
		t.Run(fmt.Sprintf("%s, MaxResponseBytes %d and one less", tt.file, tt.kept), func(t *testing.T) {
			srv := newServer(t, sse(t, tt.file))
			if _, err := srv.model(t, Config{MaxResponseBytes: tt.kept}).Complete(context.Background(), question, nil); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			_, err := srv.model(t, Config{MaxResponseBytes: tt.kept - 1}).Complete(context.Background(), question, nil)
			assertError(t, err, llm.ErrResponseTooLarge, fmt.Sprintf(
				"anthropic: response too large from %s/: the text and tool calls passed Config.MaxResponseBytes = %d bytes", srv.URL, tt.kept-1))
		})
	}
}
