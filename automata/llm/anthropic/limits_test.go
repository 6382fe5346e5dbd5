package anthropic

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
	err, peak, _ := hostiletest.HeapBound(bound, func(ctx context.Context) error {
		_, err := m.Complete(ctx, question, func(string) { chunks++ })
		return err
	})
	t.Logf("heap grew by %.1f MiB at most (bound %.1f MiB), server wrote %.1f MiB",
		float64(peak)/(1<<20), float64(bound)/(1<<20), float64(h.Written.Load())/(1<<20))
	if errors.Is(err, hostiletest.ErrHeap) {
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
			serve:  hostiletest.After(messageStart+textStart, hostiletest.Same(textDelta(word))),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 261,
			what: "the text and tool calls passed Config.MaxResponseBytes = 262144 bytes",
		},
		{
			name:   "the input of a tool call",
			serve:  hostiletest.After(messageStart+toolStart, hostiletest.Same(jsonDelta(strings.Repeat("x", 1000)))),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 0,
			what: "the text and tool calls passed Config.MaxResponseBytes = 262144 bytes",
		},
		{
			name: "content blocks with nothing in them",
			serve: hostiletest.After(messageStart, func(i int) string {
				return fmt.Sprintf("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":%d,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n", i)
			}),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 0,
			what: "the text and tool calls passed Config.MaxResponseBytes = 262144 bytes",
		},
		{
			name:   "pings",
			serve:  hostiletest.After(messageStart, hostiletest.Same(ping)),
			limits: Config{MaxBodyBytes: 4 << 20},
			kind:   llm.ErrResponseTooLarge, limit: "MaxBodyBytes", chunks: 0,
			what: "the stream passed Config.MaxBodyBytes = 4194304 bytes",
		},
		{
			name:   "events of a type the API may add",
			serve:  hostiletest.After(messageStart, hostiletest.Same("event: future\ndata: {\"type\":\"future\"}\n\n")),
			limits: Config{MaxBodyBytes: 4 << 20},
			kind:   llm.ErrResponseTooLarge, limit: "MaxBodyBytes", chunks: 0,
			what: "the stream passed Config.MaxBodyBytes = 4194304 bytes",
		},
		{
			name:   "one event, its data lines without the empty line that ends it",
			serve:  hostiletest.After(messageStart, hostiletest.Same("data: "+strings.Repeat("x", 1000)+"\n")),
			limits: Config{MaxResponseBytes: 256 << 10},
			kind:   llm.ErrResponseTooLarge, limit: "MaxResponseBytes", chunks: 0,
			what: "one event of the stream passed 589824 bytes (twice Config.MaxResponseBytes = 262144, plus 64 KiB)",
		},
		{
			name:   "an error body without end (HTTP 400)",
			status: http.StatusBadRequest,
			serve:  hostiletest.After(`{"type":"error","error":{"type":"invalid_request_error","message":"`, hostiletest.Same(strings.Repeat("x", 1000))),
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
	drip := func(first, each string) func(o *hostiletest.Out) {
		return func(o *hostiletest.Out) {
			if !o.Send([]byte(first)) {
				return
			}
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
	stall := func(first string) func(o *hostiletest.Out) {
		return func(o *hostiletest.Out) {
			if first != "" {
				o.Send([]byte(first))
			}
			o.Wait()
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
