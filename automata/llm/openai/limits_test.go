package openai

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
	"github.com/moora-go/moora/automata/llm/internal/provider"
)

// model returns the provider pointed at h, with c's limits.
func hostileModel(t *testing.T, h *hostiletest.Server, c Config) *Model {
	t.Helper()
	c.APIKey, c.BaseURL, c.Model = "sk-test", h.URL+"/v1", "gpt-test"
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// event is the server-sent event of a chunk of completion chatcmpl-1 whose
// first choice has delta, a JSON object.
func event(delta string) string {
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
}

// forever sends b again and again, until the client hangs up (or
// hostiletest.EndlessCap).
func forever(b string) func(o *hostiletest.Out) {
	return func(o *hostiletest.Out) {
		p := []byte(b)
		for o.Send(p) {
		}
	}
}

// hostileCase is a hostile server and the limit its answer must meet.
type hostileCase struct {
	name      string
	status    int  // 200 unless set
	noHeaders bool // the server never sends its headers
	serve     func(o *hostiletest.Out)
	limits    Config // the limits, on top of patient ones
	kind      error  // the llm.Error's kind
	limit     string // the LimitError's
	what      string // the end of the message: what passed which limit
	chunks    int    // how many chunks of text reach onChunk before the error
	// someChunks: the number of chunks depends on the machine; two or
	// more, so that silences were cut short more than once.
	someChunks bool
	requests   int64 // made by the SDK; 1 unless set
}

// patient are limits of time that hostile tests of size never meet, and
// limits of size that tests of time never meet: each test sets the ones it
// is about.
var patient = Config{MaxResponseBytes: 1 << 20, MaxBodyBytes: 64 << 20,
	MaxDuration: time.Minute, MaxFirstByteWait: time.Minute, MaxIdle: time.Minute}

func (tc hostileCase) run(t *testing.T) {
	status := tc.status
	if status == 0 {
		status = http.StatusOK
	}
	h := hostiletest.New(t, status, tc.noHeaders, tc.serve)
	c := patient
	if tc.limits.MaxResponseBytes != 0 {
		c.MaxResponseBytes = tc.limits.MaxResponseBytes
	}
	if tc.limits.MaxBodyBytes != 0 {
		c.MaxBodyBytes = tc.limits.MaxBodyBytes
	}
	if tc.limits.MaxDuration != 0 {
		c.MaxDuration = tc.limits.MaxDuration
	}
	if tc.limits.MaxFirstByteWait != 0 {
		c.MaxFirstByteWait = tc.limits.MaxFirstByteWait
	}
	if tc.limits.MaxIdle != 0 {
		c.MaxIdle = tc.limits.MaxIdle
	}
	m := hostileModel(t, h, c)

	// The heap may hold what the call keeps (twice: the text streamed and
	// the SDK's accumulation) and one event of the stream in the SDK's
	// decoder, a few times over as buffers grow and are copied, with the
	// garbage of the chunks before, which the collector has not freed yet;
	// and a few MiB of the runtime's and the server's. (The most measured
	// is some 12 times MaxResponseBytes, for 1 MiB pieces of a tool call's
	// arguments.) Code without limits keeps all the server sends: twice
	// 50 MiB for the large answers.
	bound := uint64(24*c.MaxResponseBytes) + 8<<20
	var chunks int
	err, peak, alloc := hostiletest.HeapBound(bound, func(ctx context.Context) error {
		_, err := m.Complete(ctx, question, func(string) { chunks++ })
		return err
	})
	t.Logf("heap grew by %.1f MiB at most (bound %.1f MiB), %.1f MiB allocated, server wrote %.1f MiB",
		mib(peak), mib(bound), mib(alloc), mib(uint64(h.Written.Load())))
	if errors.Is(err, hostiletest.ErrHeap) {
		t.Fatalf("the heap grew by %.1f MiB, past %.1f MiB: %v", mib(peak), mib(bound), err)
	}
	e := assertError(t, err, tc.kind, "openai: "+tc.kind.Error()+" from "+h.URL+"/v1/: "+tc.what)
	var le *LimitError
	if !errors.As(err, &le) || le != e.Err {
		t.Fatalf("errors.As(%v, *LimitError) = false, or not the llm.Error's Err", err)
	}
	if le.Limit != tc.limit {
		t.Errorf("LimitError.Limit = %s, want %s", le.Limit, tc.limit)
	}
	if peak > bound {
		t.Errorf("the heap grew by %.1f MiB, past %.1f MiB", mib(peak), mib(bound))
	}
	if tc.someChunks && chunks < 2 {
		t.Errorf("%d chunks of text before the error, want two or more", chunks)
	} else if !tc.someChunks && chunks != tc.chunks {
		t.Errorf("%d chunks of text before the error, want %d", chunks, tc.chunks)
	}
	want := max(tc.requests, 1)
	if n := h.Requests.Load(); n != want {
		t.Errorf("%d requests, want %d", n, want)
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

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// A server that never ends its stream is read up to a limit of size,
// whatever it sends, and the call ends with llm.ErrResponseTooLarge.
func TestEndlessStream(t *testing.T) {
	word := `{"content":"` + strings.Repeat("word ", 200) + `"}` // 1,000 bytes of text
	tests := []hostileCase{
		{
			name:   "text",
			serve:  forever(event(word)),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 262,
			what: "the text and tool calls passed Config.MaxResponseBytes = 262144 bytes",
		},
		{
			name: "the arguments of a tool call",
			serve: func(o *hostiletest.Out) {
				o.Send([]byte(event(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"word-count","arguments":""}}]}`)))
				forever(event(`{"tool_calls":[{"index":0,"function":{"arguments":"` + strings.Repeat("x", 1000) + `"}}]}`))(o)
			},
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes",
			what: "the text and tool calls passed Config.MaxResponseBytes = 262144 bytes",
		},
		{
			name: "tool calls, a hundred more in each chunk, with nothing in them",
			serve: func(o *hostiletest.Out) {
				for i := 0; ; i += 100 {
					if !o.Send([]byte(event(fmt.Sprintf(`{"tool_calls":[{"index":%d}]}`, i+99)))) {
						return
					}
				}
			},
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes",
			what: "the text and tool calls passed Config.MaxResponseBytes = 262144 bytes",
		},
		{
			name:   "keep-alive comments",
			serve:  forever(": keep-alive\n\n"),
			limits: Config{MaxBodyBytes: 4 << 20},
			kind:   llm.ErrResponseTooLarge, limit: "MaxBodyBytes",
			what: "the stream passed Config.MaxBodyBytes = 4194304 bytes",
		},
		{
			name:   "chunks with nothing in them",
			serve:  forever(event(`{"role":"assistant","content":""}`)),
			limits: Config{MaxBodyBytes: 4 << 20},
			kind:   llm.ErrResponseTooLarge, limit: "MaxBodyBytes",
			what: "the stream passed Config.MaxBodyBytes = 4194304 bytes",
		},
		{
			name:   "one event, its data lines without the empty line that ends it",
			serve:  forever("data: " + strings.Repeat("x", 1000) + "\n"),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes",
			what: "one event of the stream passed 589824 bytes (twice Config.MaxResponseBytes = 262144, plus 64 KiB)",
		},
		{
			name: "one line without end",
			serve: func(o *hostiletest.Out) {
				o.Send([]byte("data: "))
				forever(strings.Repeat("x", 1000))(o)
			},
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes",
			what: "one event of the stream passed 589824 bytes (twice Config.MaxResponseBytes = 262144, plus 64 KiB)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// A 50 MB answer in 1 MiB chunks is refused once it passes the limit, and
// so is a 50 MB answer in one piece, or a 50 MB error.
func TestLargeAnswer(t *testing.T) {
	const size, piece = 50 << 20, 1 << 20
	text := event(`{"content":"` + strings.Repeat("x", piece) + `"}`)
	args := event(`{"tool_calls":[{"index":0,"function":{"arguments":"` + strings.Repeat("x", piece) + `"}}]}`)
	inPieces := func(first, each string) func(o *hostiletest.Out) {
		return func(o *hostiletest.Out) {
			if first != "" && !o.Send([]byte(first)) {
				return
			}
			p := []byte(each)
			for range size / piece {
				if !o.Send(p) {
					return
				}
			}
			o.Send([]byte(event(`{},"finish_reason":"stop"`) + "data: [DONE]\n\n"))
		}
	}
	whole := func(prefix string) func(o *hostiletest.Out) {
		return func(o *hostiletest.Out) {
			o.Send([]byte(prefix))
			p := []byte(strings.Repeat("x", piece))
			for range size / piece {
				if !o.Send(p) {
					return
				}
			}
			o.Send([]byte(`"}`))
		}
	}
	limits := Config{MaxResponseBytes: 5 << 19} // 2.5 MiB: two pieces, not three
	tests := []hostileCase{
		{
			name:   "text",
			serve:  inPieces("", text),
			limits: limits, kind: llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 2,
			what: "the text and tool calls passed Config.MaxResponseBytes = 2621440 bytes",
		},
		{
			name:   "the arguments of a tool call",
			serve:  inPieces(event(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"word-count","arguments":""}}]}`), args),
			limits: limits, kind: llm.ErrResponseTooLarge, limit: "MaxResponseBytes",
			what: "the text and tool calls passed Config.MaxResponseBytes = 2621440 bytes",
		},
		{
			name:   "a whole completion instead of a stream",
			serve:  whole(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`),
			limits: limits, kind: llm.ErrResponseTooLarge, limit: "MaxResponseBytes",
			what: "one event of the stream passed 5308416 bytes (twice Config.MaxResponseBytes = 2621440, plus 64 KiB)",
		},
		{
			name:   "an error (HTTP 400)",
			status: http.StatusBadRequest,
			serve:  whole(`{"error":{"message":"`),
			limits: limits, kind: llm.ErrResponseTooLarge, limit: "MaxResponseBytes",
			what: "the error body passed Config.MaxResponseBytes = 2621440 bytes",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// A stream that never stalls and never ends, its chunks arriving well
// within the limit on silences, ends at the limit on the call's duration
// with llm.ErrResponseTimeout, although the caller's context has no
// deadline.
func TestSlowDrip(t *testing.T) {
	// The drip comes a thirtieth of idle apart: a loaded machine would have
	// to stall a server 30 times as long to make the call stall.
	const idle = 3 * time.Second
	drip := func(b string) func(o *hostiletest.Out) {
		return func(o *hostiletest.Out) {
			p := []byte(b)
			stop := time.After(hostiletest.GiveUp)
			for o.Send(p) {
				select {
				case <-time.After(idle / 30): // well within idle, even on a slow machine
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
	tests := []hostileCase{
		{
			name: "a word at a time", serve: drip(event(`{"content":"word "}`)), limits: limits,
			kind: llm.ErrResponseTimeout, limit: "MaxDuration", someChunks: true,
			what: "the call passed Config.MaxDuration = 1s",
		},
		{
			name: "keep-alive comments", serve: drip(": keep-alive\n\n"), limits: limits,
			kind: llm.ErrResponseTimeout, limit: "MaxDuration",
			what: "the call passed Config.MaxDuration = 1s",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// A server that stops sending, before its headers, after them, or in the
// middle of the stream, ends the call with llm.ErrStreamStalled, which the
// SDK does not retry.
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
	tests := []hostileCase{
		{
			name: "headers, then nothing", serve: stall(""), limits: limits,
			kind: llm.ErrStreamStalled, limit: "MaxFirstByteWait",
			what: "nothing came for Config.MaxFirstByteWait = 300ms after the request",
		},
		{
			name: "no headers", noHeaders: true, serve: stall(""), limits: limits,
			kind: llm.ErrStreamStalled, limit: "MaxFirstByteWait",
			what: "nothing came for Config.MaxFirstByteWait = 300ms after the request",
		},
		{
			name:   "three words, then nothing",
			serve:  stall(event(`{"role":"assistant","content":""}`) + event(`{"content":"Once"}`) + event(`{"content":" upon"}`) + event(`{"content":" a"}`)),
			limits: limits, kind: llm.ErrStreamStalled, limit: "MaxIdle", chunks: 3,
			what: "nothing came for Config.MaxIdle = 200ms in the middle of the stream",
		},
		{
			name: "a keep-alive comment, then nothing", serve: stall(": keep-alive\n\n"), limits: limits,
			kind: llm.ErrStreamStalled, limit: "MaxIdle",
			what: "nothing came for Config.MaxIdle = 200ms in the middle of the stream",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// The limits leave an honest server alone: the SDK's wait before a retry
// is no silence of the server, nor is the time the caller's onChunk takes,
// and a reply of exactly MaxResponseBytes is whole.
func TestLimitsLeaveHonestServersAlone(t *testing.T) {
	const silence = 200 * time.Millisecond
	c := Config{MaxFirstByteWait: silence, MaxIdle: silence}
	t.Run("a retry after a wait longer than the limits on silences", func(t *testing.T) {
		limited := reply{status: 429, header: map[string]string{"Retry-After-Ms": fmt.Sprint((3 * silence).Milliseconds())},
			body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`}
		srv := newServer(t, limited, sse(t, "text.sse"))
		m := srv.model(t)
		m.limits, _ = newLimits(c)
		resp, err := m.Complete(context.Background(), question, nil)
		if err != nil || resp.Text != "Hello! How can I help you today?" {
			t.Fatalf("Complete = %+v, %v", resp, err)
		}
		if n := len(srv.received()); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
	t.Run("an onChunk slower than the limit on silences", func(t *testing.T) {
		srv := newServer(t, sse(t, "text.sse"))
		m := srv.model(t)
		m.limits, _ = newLimits(c)
		var chunks []string
		resp, err := m.Complete(context.Background(), question, func(s string) {
			if len(chunks) == 0 {
				time.Sleep(3 * silence)
			}
			chunks = append(chunks, s)
		})
		if err != nil || resp.Text != "Hello! How can I help you today?" || strings.Join(chunks, "") != resp.Text {
			t.Fatalf("Complete = %+v, %v; chunks %q", resp, err, chunks)
		}
	})

	// The bytes the replies of testdata keep, as MaxResponseBytes counts
	// them: the text; a tool call's ID, type, name and arguments, with
	// toolCallBytes and the completion's ID.
	toolCall := int64(len("call_DdmO9pD3xa9XTPNJ32zg2hcA") + len("function") + len("word-count") +
		len(`{"text":"count these words"}`) + toolCallBytes + len("chatcmpl-C3Kx8Wm2RfYh0aN5pLd9uQe3tVb6c"))
	for _, tt := range []struct {
		file string
		kept int64
	}{
		{"text.sse", int64(len("Hello! How can I help you today?"))},
		{"refusal.sse", int64(len("I'm sorry, I can't help with that."))},
		{"tool_call.sse", toolCall},
	} {
		t.Run(fmt.Sprintf("%s, MaxResponseBytes %d and one less", tt.file, tt.kept), func(t *testing.T) {
			srv := newServer(t, sse(t, tt.file))
			m := srv.model(t)
			m.limits, _ = newLimits(Config{MaxResponseBytes: tt.kept})
			if _, err := m.Complete(context.Background(), question, nil); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			m.limits, _ = newLimits(Config{MaxResponseBytes: tt.kept - 1})
			_, err := m.Complete(context.Background(), question, nil)
			assertError(t, err, llm.ErrResponseTooLarge, fmt.Sprintf(
				"openai: response too large from %s/v1/: the text and tool calls passed Config.MaxResponseBytes = %d bytes", srv.URL, tt.kept-1))
		})
	}
}

func TestNewRefusesNegativeLimits(t *testing.T) {
	for _, c := range []Config{{MaxResponseBytes: -1}, {MaxBodyBytes: -1}, {MaxDuration: -1}, {MaxFirstByteWait: -1}, {MaxIdle: -time.Second}} {
		c.Model, c.BaseURL = "m", "http://localhost:11434/v1"
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), "is negative") {
			t.Errorf("New(%+v): %v, want an error", c, err)
		}
	}
	m, err := New(Config{Model: "m", BaseURL: "http://localhost:11434/v1"})
	if err != nil {
		t.Fatal(err)
	}
	want := provider.Limits{ResponseBytes: DefaultMaxResponseBytes, BodyBytes: DefaultMaxBodyBytes, EventBytes: 2*DefaultMaxResponseBytes + 64<<10,
		Duration: DefaultMaxDuration, FirstByteWait: DefaultMaxFirstByteWait, Idle: DefaultMaxIdle}
	got := *m.limits
	got.ResponseErr, got.ErrorBodyErr, got.EventErr, got.BodyErr, got.DurationErr, got.FirstByteErr, got.IdleErr = nil, nil, nil, nil, nil, nil, nil
	if got != want {
		t.Errorf("the limits of a zero Config are %+v, want the defaults %+v", got, want)
	}
}
