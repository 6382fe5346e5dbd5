// Package hostiletest is the hostile model server of the providers' tests
// (automata/llm/openai, anthropic, gemini): a server on loopback that
// answers every request with what a test writes — too much, too slowly,
// nothing — and counts it, and a bound on the heap a call may grow.
package hostiletest

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/llm"
)

// What a hostile server gives up at, so that code without limits fails a
// test (with another error than the one it wants) instead of running
// forever: EndlessCap bytes written, or GiveUp waited. Code with limits
// never gets there.
const (
	EndlessCap = 128 << 20
	GiveUp     = 30 * time.Second
)

// Server is a model server on loopback that answers every request with
// serve, which writes what it likes, and counts what it wrote.
type Server struct {
	*httptest.Server
	Requests atomic.Int64
	Written  atomic.Int64  // bytes of the bodies
	HungUp   chan struct{} // closed when the client hangs up on a request
	once     sync.Once
}

// Out is where serve writes one answer.
type Out struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	Ctx  context.Context // done when the client hangs up
	n    *atomic.Int64
	Gone bool // the client hung up
}

// Send writes b and flushes it; false once the client has hung up or the
// server has written EndlessCap bytes.
func (o *Out) Send(b []byte) bool {
	if o.Ctx.Err() != nil {
		o.Gone = true
		return false
	}
	if o.n.Load() >= EndlessCap {
		return false
	}
	n, err := o.w.Write(b)
	o.n.Add(int64(n))
	if err == nil {
		err = o.rc.Flush()
	}
	o.Gone = err != nil
	return !o.Gone
}

// Wait waits for the client to hang up, or GiveUp.
func (o *Out) Wait() {
	select {
	case <-o.Ctx.Done():
		o.Gone = true
	case <-time.After(GiveUp):
	}
}

// New starts a server whose answers have the status (an event stream when
// it is 200, JSON otherwise), and headers sent at once unless noHeaders. It
// is closed when the test ends.
func New(t *testing.T, status int, noHeaders bool, serve func(o *Out)) *Server {
	t.Helper()
	h := &Server{HungUp: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h.Requests.Add(1)
		o := &Out{w: w, rc: http.NewResponseController(w), Ctx: r.Context(), n: &h.Written}
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
		if o.Gone { // the server sees the connection closed (a write may fail first)
			select {
			case <-r.Context().Done():
				h.once.Do(func() { close(h.HungUp) })
			case <-time.After(GiveUp):
			}
		}
	}))
	t.Cleanup(h.Close)
	return h
}

// After sends first, then each(i) for i = 0, 1, 2 … until the client hangs
// up (or EndlessCap).
func After(first string, each func(i int) string) func(o *Out) {
	return func(o *Out) {
		if !o.Send([]byte(first)) {
			return
		}
		for i := 0; o.Send([]byte(each(i))); i++ {
		}
	}
}

// Same is each of After that sends s every time.
func Same(s string) func(int) string { return func(int) string { return s } }

// ErrHeap is the cause of the cancellation of a call whose heap grew past
// HeapBound's bound.
var ErrHeap = errors.New("the heap grew past the test's bound: the call was cancelled")

// HeapBound runs call, reading runtime.MemStats every millisecond or so,
// and returns the most the heap (HeapAlloc) grew over what it was before,
// and how many bytes were allocated meanwhile (TotalAlloc), by every
// goroutine, the test server's included. When the heap grows past bound,
// it cancels call's context with ErrHeap, so that code without limits,
// whose heap grows with what the server sends, fails the test instead of
// eating the machine.
func HeapBound(bound uint64, call func(ctx context.Context) error) (err error, peak, alloc uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, baseTotal := ms.HeapAlloc, ms.TotalAlloc
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sample := func(ms *runtime.MemStats) {
		runtime.ReadMemStats(ms)
		if ms.HeapAlloc > base {
			peak = max(peak, ms.HeapAlloc-base)
		}
		if peak > bound {
			cancel(ErrHeap)
		}
	}
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
				sample(&ms)
			}
		}
	}()
	err = call(ctx)
	close(done)
	<-sampled
	sample(&ms)
	return err, peak, ms.TotalAlloc - baseTotal
}

// RoundTrip is an http.RoundTripper of a function: a server in memory.
type RoundTrip func(*http.Request) (*http.Response, error)

func (f RoundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// StreamOverhead is the benchmark of a provider's cost per streamed token
// against reading the same bytes of server-sent events with no parsing at
// all, in one run: each iteration reads stream (a whole reply of tokens
// tokens, text totalling text bytes) once raw (io.Copy to io.Discard of
// the response body) and once through the model newModel makes over the
// client given (its SDK builds and sends the request, decodes each event,
// the provider puts the reply together and hands each token to onChunk),
// both from an http.RoundTripper that answers from memory, so that no
// network is measured. It reports ns/token of each and their ratio,
// provider/raw.
func StreamOverhead(b *testing.B, stream []byte, tokens, text int, newModel func(client *http.Client) (llm.Model, error), req llm.Request) {
	answer := func(r *http.Request) *http.Response {
		if r.Body != nil {
			io.Copy(io.Discard, r.Body)
		}
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: io.NopCloser(bytes.NewReader(stream)), Request: r}
	}
	client := &http.Client{Transport: RoundTrip(func(r *http.Request) (*http.Response, error) { return answer(r), nil })}
	m, err := newModel(client)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := http.NewRequest(http.MethodPost, "http://model.test/", nil)
	if err != nil {
		b.Fatal(err)
	}
	var rawTime, providerTime time.Duration
	chunks := 0
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		start := time.Now()
		res, err := client.Do(raw)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, res.Body); err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		mid := time.Now()
		resp, err := m.Complete(context.Background(), req, func(string) { chunks++ })
		if err != nil {
			b.Fatal(err)
		}
		providerTime += time.Since(mid)
		rawTime += mid.Sub(start)
		if len(resp.Text) != text {
			b.Fatalf("text of %d bytes, want %d", len(resp.Text), text)
		}
	}
	n := float64(b.N * tokens)
	b.ReportMetric(float64(rawTime.Nanoseconds())/n, "raw-ns/token")
	b.ReportMetric(float64(providerTime.Nanoseconds())/n, "provider-ns/token")
	b.ReportMetric(float64(providerTime)/float64(rawTime), "ratio")
	if chunks != b.N*tokens {
		b.Fatalf("%d chunks, want %d", chunks, b.N*tokens)
	}
}

// PNG is an image of w×h pixels, red on transparent, as image/png encodes
// it: real bytes for the tests of images in a request.
func PNG(w, h int) llm.Image {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		m.Set(x, x%max(h, 1), color.NRGBA{R: 255, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		panic(err)
	}
	return llm.Image{MediaType: "image/png", Data: b.Bytes()}
}
