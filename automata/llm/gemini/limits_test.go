package gemini

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/llm/internal/hostiletest"

	"github.com/moora-go/moora/automata/llm"
)

// The chunks of the Gemini API that the hostile servers send.

// textChunk is a chunk of the reply's text s.
func textChunk(s string) string {
	return `data: {"candidates": [{"content": {"parts": [{"text": "` + s + `"}], "role": "model"}, "index": 0}], "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10}, "responseId": "r1"}` + "\n\n"
}

// callChunk is a chunk of one function call whose text argument is s.
func callChunk(s string) string {
	return `data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "word-count", "args": {"text": "` + s + `"}}}], "role": "model"}, "index": 0}], "responseId": "r1"}` + "\n\n"
}

// emptyChunk is a chunk with nothing in it, as a server could send
// forever.
const emptyChunk = `data: {"candidates": [{"content": {"parts": [], "role": "model"}, "index": 0}], "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10}}` + "\n\n"

// hostileCase is a hostile server and the limit its answer must meet.
type hostileCase struct {
	name      string
	status    int  // 200 unless set
	noHeaders bool // the server never sends its headers
	serve     func(o *hostiletest.Out)
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
	h := hostiletest.New(t, status, tc.noHeaders, tc.serve)
	c := patient
	c.MaxResponseBytes = cmpOr(tc.limits.MaxResponseBytes, c.MaxResponseBytes)
	c.MaxBodyBytes = cmpOr(tc.limits.MaxBodyBytes, c.MaxBodyBytes)
	c.MaxDuration = cmpOr(tc.limits.MaxDuration, c.MaxDuration)
	c.MaxFirstByteWait = cmpOr(tc.limits.MaxFirstByteWait, c.MaxFirstByteWait)
	c.MaxIdle = cmpOr(tc.limits.MaxIdle, c.MaxIdle)
	c.APIKey, c.BaseURL, c.Model = "AIza-test", h.URL, testModel
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	// The heap may hold what the call keeps, one event in the SDK's
	// scanner and decoded a few times over (a map, the map converted, its
	// JSON again, the struct), the garbage of the events before, and a few
	// MiB of the runtime's and the server's.
	bound := uint64(24*c.MaxResponseBytes) + 8<<20
	var chunks int
	err, peak, _ := hostiletest.HeapBound(bound, func(ctx context.Context) error {
		_, err := m.Complete(ctx, question, func(string) { chunks++ })
		return err
	})
	t.Logf("heap grew by %.1f MiB at most (bound %.1f MiB), server wrote %.1f MiB",
		float64(peak)/(1<<20), float64(bound)/(1<<20), float64(h.Written.Load())/(1<<20))
	if errors.Is(err, hostiletest.ErrHeap) {
		t.Fatalf("the heap grew by %d bytes, past %d: %v", peak, bound, err)
	}
	e := assertError(t, err, tc.kind, "gemini: "+tc.kind.Error()+" from "+h.URL+"/: "+tc.what)
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
	if n := h.Requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	if h.Written.Load() >= hostiletest.EndlessCap {
		t.Errorf("the server wrote all of its %d MiB", hostiletest.EndlessCap>>20)
	}
	select { // the client hung up: the server stops generating
	case <-h.HungUp:
	case <-time.After(hostiletest.GiveUp):
		t.Error("the server did not see the client hang up")
	}
}

// A server that never ends its stream is read up to a limit of size,
// whatever it sends, and the call ends with llm.ErrResponseTooLarge.
func TestEndlessStream(t *testing.T) {
	word := strings.Repeat("word ", 200) // 1,000 bytes of text
	tests := []hostileCase{
		{
			name:   "text",
			serve:  hostiletest.After("", hostiletest.Same(textChunk(word))),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 262,
			what: "the text and tool calls passed Config.MaxResponseBytes = 262144 bytes",
		},
		{
			name:   "function calls",
			serve:  hostiletest.After(textChunk("Counting."), hostiletest.Same(callChunk(strings.Repeat("x", 1000)))),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 1,
			what: "the text and tool calls passed Config.MaxResponseBytes = 262144 bytes",
		},
		{
			name:   "function calls with nothing in them",
			serve:  hostiletest.After("", hostiletest.Same(`data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f"}}]}}]}`+"\n\n")),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 0,
			what: "the text and tool calls passed Config.MaxResponseBytes = 262144 bytes",
		},
		{
			name:   "empty chunks",
			serve:  hostiletest.After(textChunk("Hi"), hostiletest.Same(emptyChunk)),
			limits: Config{MaxBodyBytes: 4 << 20},
			kind:   llm.ErrResponseTooLarge, limit: "MaxBodyBytes", chunks: 1,
			what: "the stream passed Config.MaxBodyBytes = 4194304 bytes",
		},
		{
			name:   "one event, its data lines without the empty line that ends it",
			serve:  hostiletest.After(textChunk("Hi"), hostiletest.Same("data: "+strings.Repeat("x", 1000)+"\n")),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 1,
			what: "one event of the stream passed 589824 bytes (twice Config.MaxResponseBytes = 262144, plus 64 KiB)",
		},
		{
			name:   "events that end with \\n\\r\\n, which the SDK does not take for an end",
			serve:  hostiletest.After(textChunk("Hi"), hostiletest.Same(strings.TrimSuffix(textChunk("word"), "\n")+"\r\n")),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 1,
			what: "one event of the stream passed 589824 bytes (twice Config.MaxResponseBytes = 262144, plus 64 KiB)",
		},
		{
			name:   "an error body without end (HTTP 400)",
			status: http.StatusBadRequest,
			serve:  hostiletest.After(`{"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "`, hostiletest.Same(strings.Repeat("x", 1000))),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 0,
			what: "the error body passed Config.MaxResponseBytes = 262144 bytes",
		},
		{
			name:   "an error body without end (HTTP 429, which is read for its RetryInfo)",
			status: http.StatusTooManyRequests,
			serve:  hostiletest.After(`{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "`, hostiletest.Same(strings.Repeat("x", 1000))),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 0,
			what: "the error body passed Config.MaxResponseBytes = 262144 bytes",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// A stream that never stalls and never ends, its chunks arriving well
// within the limit on silences, ends at the limit on the call's duration,
// although the caller's context has no deadline.
func TestSlowDrip(t *testing.T) {
	// The drip comes a thirtieth of idle apart: a loaded machine would have
	// to stall a server 30 times as long to make the call stall.
	const idle = 3 * time.Second
	drip := func(each string) func(o *hostiletest.Out) {
		return func(o *hostiletest.Out) {
			stop := time.After(hostiletest.GiveUp)
			for o.Send([]byte(each)) {
				select {
				case <-time.After(idle / 30):
				case <-o.Ctx.Done():
					o.Gone = true
					return
				case <-stop:
					return
				}
			}
		}
	}
	limits := Config{MaxDuration: time.Second, MaxIdle: idle, MaxFirstByteWait: idle}
	for _, tc := range []hostileCase{
		{name: "a word at a time", serve: drip(textChunk("word ")), limits: limits,
			kind: llm.ErrResponseTimeout, limit: "MaxDuration", chunks: -1, what: "the call passed Config.MaxDuration = 1s"},
		{name: "empty chunks", serve: drip(emptyChunk), limits: limits,
			kind: llm.ErrResponseTimeout, limit: "MaxDuration", chunks: 0, what: "the call passed Config.MaxDuration = 1s"},
	} {
		t.Run(tc.name, tc.run)
	}
}

// A server that stops sending, before its headers, after them, or in the
// middle of the stream, ends the call with llm.ErrStreamStalled, which is
// not retried.
func TestStalledStream(t *testing.T) {
	stall := func(first string) func(o *hostiletest.Out) {
		return func(o *hostiletest.Out) {
			if first != "" {
				o.Send([]byte(first))
			}
			o.Wait()
		}
	}
	limits := Config{MaxFirstByteWait: 300 * time.Millisecond, MaxIdle: 200 * time.Millisecond}
	call := callChunk("one two three")
	for _, tc := range []hostileCase{
		{name: "headers, then nothing", serve: stall(""), limits: limits,
			kind: llm.ErrStreamStalled, limit: "MaxFirstByteWait", what: "nothing came for Config.MaxFirstByteWait = 300ms after the request"},
		{name: "no headers", noHeaders: true, serve: stall(""), limits: limits,
			kind: llm.ErrStreamStalled, limit: "MaxFirstByteWait", what: "nothing came for Config.MaxFirstByteWait = 300ms after the request"},
		{name: "three words, then nothing", serve: stall(textChunk("Once") + textChunk(" upon") + textChunk(" a")), limits: limits,
			kind: llm.ErrStreamStalled, limit: "MaxIdle", chunks: 3, what: "nothing came for Config.MaxIdle = 200ms in the middle of the stream"},
		{name: "in the middle of the chunk of a function call", serve: stall(textChunk("Counting.") + call[:len(call)/2]), limits: limits,
			kind: llm.ErrStreamStalled, limit: "MaxIdle", chunks: 1, what: "nothing came for Config.MaxIdle = 200ms in the middle of the stream"},
	} {
		t.Run(tc.name, tc.run)
	}
}

// The limits leave an honest server alone: the wait before a retry is no
// silence of the server, nor is the time onChunk takes, and a reply of
// exactly MaxResponseBytes is whole.
func TestLimitsLeaveHonestServersAlone(t *testing.T) {
	const silence = 200 * time.Millisecond
	c := Config{MaxFirstByteWait: silence, MaxIdle: silence}
	t.Run("a retry after a wait longer than the limits on silences", func(t *testing.T) {
		limited := reply{status: 429, body: apiError(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).",
			retryInfoDetail(fmt.Sprintf("%gs", (3*silence).Seconds())))}
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
	// responseId, the text, and for each call callBytes, its ID, name and
	// arguments.
	text := int64(len("WEXbaMnpF7iPjMcP27mckQE") + len("Hello! How can I help you today?"))
	rid := "b9TxaJ2xOYS3nvgPkJ2TmAc"
	id0, id1 := derivedID(question, rid, 0, "word-count", `{"text":"one two"}`), derivedID(question, rid, 1, "word-count", `{"text":"three four five"}`)
	calls := int64(len(rid) + len("Counting both.") + 2*callBytes + len(id0) + len(id1) + 2*len("word-count") +
		len(`{"text":"one two"}`) + len(`{"text":"three four five"}`))
	for _, tt := range []struct {
		file string
		kept int64
	}{{"text.sse", text}, {"parallel_function_calls.sse", calls}} {
		t.Run(fmt.Sprintf("%s, MaxResponseBytes %d and one less", tt.file, tt.kept), func(t *testing.T) {
			srv := newServer(t, sse(t, tt.file))
			if _, err := srv.model(t, Config{MaxResponseBytes: tt.kept}).Complete(context.Background(), question, nil); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			_, err := srv.model(t, Config{MaxResponseBytes: tt.kept - 1}).Complete(context.Background(), question, nil)
			assertError(t, err, llm.ErrResponseTooLarge, fmt.Sprintf(
				"gemini: response too large from %s/: the text and tool calls passed Config.MaxResponseBytes = %d bytes", srv.URL, tt.kept-1))
		})
	}
}
