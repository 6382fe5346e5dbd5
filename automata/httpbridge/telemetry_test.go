package httpbridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
)

// observed is what a telemetry test records: the spans and the metrics of a
// bridge and of its agent's machine, which share the providers.
type observed struct {
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newObserved() *observed {
	o := &observed{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	o.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(o.spans))
	o.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(o.reader))
	return o
}

// refuse is an admission step that rejects the user message "refuse", for
// a POST the agent answers with 422.
func refuse(_ state, in input) (input, error) {
	if m, ok := in.(decl.SendUserMessage); ok && m.Content == "refuse" {
		return nil, errors.New("refused by the test's admission step")
	}
	return in, nil
}

// newObservedFixture serves the chat test agent, its machine traced and
// measured (automata.WithTelemetry) with o's providers, as its bridge is.
func newObservedFixture(t *testing.T, o *observed, edit func(*Config[state, input, view])) *fixture {
	t.Helper()
	return newFixtureWith(t, func(c *Config[state, input, view]) {
		c.TracerProvider, c.MeterProvider = o.tp, o.mp
		if edit != nil {
			edit(c)
		}
	}, automata.WithTelemetry[state, input](o.tp, o.mp), automata.WithAdmission(refuse))
}

// span waits for the one ended span that match accepts, and returns it.
func (o *observed) span(t *testing.T, what string, match func(sdktrace.ReadOnlySpan) bool) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	deadline := time.Now().Add(time.Minute)
	for {
		found = found[:0]
		for _, s := range o.spans.Ended() {
			if match(s) {
				found = append(found, s)
			}
		}
		if len(found) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if len(found) != 1 {
		t.Fatalf("%d spans of %s, want 1", len(found), what)
	}
	return found[0]
}

func attrOf(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// wantAttrs checks attributes of span s: each of want, with its value, as
// a string ("" for absent).
func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]string) {
	t.Helper()
	for k, w := range want {
		v, ok := attrOf(s, k)
		got := ""
		if ok {
			got = v.Emit()
		}
		if got != w {
			t.Errorf("span %q: %s = %q, want %q", s.Name(), k, got, w)
		}
	}
}

// postRaw posts body to /inputs with the bearer token and the given headers,
// and returns the status and the answer; a header given as "" is removed.
func postRaw(t *testing.T, url, body string, header map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/inputs", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, data
}

// TestTelemetryContinuesTheCallersTrace: a POST that carries a W3C
// traceparent gets a server span whose parent is the caller's (remote)
// span, and the span the machine makes for the input is a child of it, in
// the caller's trace; so is the job the input calls for.
func TestTelemetryContinuesTheCallersTrace(t *testing.T) {
	o := newObserved()
	f := newObservedFixture(t, o, nil)

	// The caller's span, from a tracer of another provider, as another
	// service's would be; the header is what its instrumentation sends.
	caller := sdktrace.NewTracerProvider()
	ctx, callerSpan := caller.Tracer("caller").Start(context.Background(), "send a message")
	defer callerSpan.End()
	header := http.Header{}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(header))
	traceparent := header.Get("traceparent")
	if traceparent == "" {
		t.Fatal("the caller's propagator wrote no traceparent")
	}

	status, body := postRaw(t, f.srv.URL, `{"type":"send-user-message","id":"u1","content":"hi","timestamp":0}`,
		map[string]string{"traceparent": traceparent, "User-Agent": "telemetry-test"})
	if status != http.StatusOK {
		t.Fatalf("POST: %d %s", status, body)
	}
	var res struct{ Seq uint64 }
	json.Unmarshal(body, &res)

	req := o.span(t, "the POST", func(s sdktrace.ReadOnlySpan) bool { return s.Name() == "POST /inputs" })
	remote := callerSpan.SpanContext()
	if p := req.Parent(); !p.IsRemote() || p.TraceID() != remote.TraceID() || p.SpanID() != remote.SpanID() {
		t.Errorf("the request span's parent is %v (remote %t), want the caller's span %v", p.SpanID(), p.IsRemote(), remote.SpanID())
	}
	if req.SpanKind() != trace.SpanKindServer {
		t.Errorf("the request span's kind is %v, want server", req.SpanKind())
	}
	if req.Status().Code != codes.Unset {
		t.Errorf("the request span's status is %v, want unset", req.Status())
	}
	wantAttrs(t, req, map[string]string{
		"http.request.method":       "POST",
		"http.route":                "/inputs",
		"url.path":                  "/inputs",
		"url.scheme":                "http",
		"network.protocol.version":  "1.1",
		"user_agent.original":       "telemetry-test",
		"http.response.status_code": "200",
		"error.type":                "",
		"moora.input.type":          "send-user-message",
		"moora.journal.seq":         strconv.FormatUint(res.Seq, 10),
	})

	in := o.span(t, "the input", func(s sdktrace.ReadOnlySpan) bool { return s.Name() == "moora.input send-user-message" })
	if p := in.Parent(); p.SpanID() != req.SpanContext().SpanID() || in.SpanContext().TraceID() != remote.TraceID() {
		t.Errorf("the input span's parent is %v in trace %v, want the request span %v in the caller's trace %v",
			p.SpanID(), in.SpanContext().TraceID(), req.SpanContext().SpanID(), remote.TraceID())
	}
	job := o.span(t, "the reply's job", func(s sdktrace.ReadOnlySpan) bool {
		v, _ := attrOf(s, "moora.job.key")
		return s.Name() == "moora.job" && v.AsString() == "llm/u1"
	})
	if job.Parent().SpanID() != in.SpanContext().SpanID() || job.SpanContext().TraceID() != remote.TraceID() {
		t.Errorf("the job's span is not a child of the input's, in the caller's trace")
	}

	// A retry of the same input is answered from the window of recent ids:
	// its span says so, with the seq of the input applied.
	status, body = postRaw(t, f.srv.URL, `{"type":"send-user-message","id":"u1","content":"hi","timestamp":0}`, nil)
	if status != http.StatusOK {
		t.Fatalf("POST again: %d %s", status, body)
	}
	dup := o.span(t, "the retry", func(s sdktrace.ReadOnlySpan) bool {
		_, ok := attrOf(s, "moora.input.duplicate")
		return ok
	})
	if dup.Parent().IsValid() {
		t.Errorf("the retry, which named no trace, has a parent: %v", dup.Parent())
	}
	wantAttrs(t, dup, map[string]string{"moora.journal.seq": strconv.FormatUint(res.Seq, 10), "moora.input.duplicate": "true"})
}

// TestTelemetryRejectedPosts: a POST the bridge or the agent refuses has
// its status code and error.type (the code) on its span and in
// http.server.request.duration; the span's status is an error only for a
// 5xx, as the HTTP conventions say of server spans. Only an input that
// reached the agent has a span of the machine's, a child of the request's.
func TestTelemetryRejectedPosts(t *testing.T) {
	o := newObserved()
	f := newObservedFixture(t, o, nil)
	cases := []struct {
		name      string
		body      string
		header    map[string]string
		status    int
		inputType string // moora.input.type, once decoded
		input     bool   // the machine has a span for the input
	}{
		{name: "not JSON", body: `{"type":`, status: 400},
		{name: "no token", body: `{}`, header: map[string]string{"Authorization": ""}, status: 401},
		{name: "another actor's input", body: `{"type":"send-assi-message","id":"a1","content":"x","timestamp":0}`, status: 403, inputType: "send-assi-message"},
		{name: "not a JSON content type", body: `{}`, header: map[string]string{"Content-Type": "text/plain"}, status: 415},
		{name: "rejected by the agent's admission step", body: `{"type":"send-user-message","id":"r1","content":"refuse","timestamp":0}`, status: 422, inputType: "send-user-message", input: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Each POST is the only one of its trace.
			traceID := trace.TraceID{0x4b, byte(i + 1)}
			header := map[string]string{"traceparent": "00-" + traceID.String() + "-00f067aa0ba902b7-01"}
			for k, v := range tc.header {
				header[k] = v
			}
			status, body := postRaw(t, f.srv.URL, tc.body, header)
			if status != tc.status {
				t.Fatalf("POST: %d %s, want %d", status, body, tc.status)
			}
			inTrace := func(s sdktrace.ReadOnlySpan) bool { return s.SpanContext().TraceID() == traceID }
			req := o.span(t, "the POST", func(s sdktrace.ReadOnlySpan) bool { return inTrace(s) && s.Name() == "POST /inputs" })
			code := strconv.Itoa(tc.status)
			wantAttrs(t, req, map[string]string{"http.response.status_code": code, "error.type": code, "moora.input.type": tc.inputType})
			if req.Status().Code != codes.Unset {
				t.Errorf("the span's status is %v, want unset for a %d", req.Status(), tc.status)
			}
			if tc.input {
				in := o.span(t, "the input", func(s sdktrace.ReadOnlySpan) bool { return inTrace(s) && s.Name() != "POST /inputs" })
				if in.Parent().SpanID() != req.SpanContext().SpanID() || in.Status().Code != codes.Error {
					t.Errorf("the input's span %q (status %v) is not an error under the request's", in.Name(), in.Status())
				}
			} else {
				for _, s := range o.spans.Ended() {
					if inTrace(s) && s.Name() != "POST /inputs" {
						t.Errorf("span %q for an input that never reached the agent", s.Name())
					}
				}
			}
			if n := requestCount(t, o, tc.status, code); n != 1 {
				t.Errorf("http.server.request.duration: %d requests with status %d and error.type %q, want 1", n, tc.status, code)
			}
		})
	}

	// A closed agent answers 503: a server error, the span's status too.
	if err := f.m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	status, body := postRaw(t, f.srv.URL, `{"type":"send-user-message","id":"c1","content":"late","timestamp":0}`, nil)
	if status != http.StatusServiceUnavailable {
		t.Fatalf("POST to a closed agent: %d %s, want 503", status, body)
	}
	req := o.span(t, "the POST to a closed agent", func(s sdktrace.ReadOnlySpan) bool {
		v, _ := attrOf(s, "http.response.status_code")
		return v.AsInt64() == 503
	})
	wantAttrs(t, req, map[string]string{"error.type": "503"})
	if req.Status().Code != codes.Error {
		t.Errorf("the span's status is %v, want an error for a 503", req.Status())
	}
}

// collect reads the metrics recorded so far.
func (o *observed) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := o.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// requestCount is how many POSTs http.server.request.duration holds with
// the given status and error.type.
func requestCount(t *testing.T, o *observed, status int, errorType string) uint64 {
	t.Helper()
	rm := o.collect(t)
	n := uint64(0)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if m.Name != "http.server.request.duration" || !ok || m.Unit != "s" {
				continue
			}
			for _, dp := range h.DataPoints {
				s, _ := dp.Attributes.Value("http.response.status_code")
				e, _ := dp.Attributes.Value("error.type")
				r, _ := dp.Attributes.Value("http.route")
				if s.AsInt64() == int64(status) && e.AsString() == errorType && r.AsString() == "/inputs" {
					n += dp.Count
				}
			}
		}
	}
	return n
}

// sseCounts are the stream metrics of one kind of stream.
type sseCounts struct{ clients, bytes, events int64 }

func (o *observed) sse(t *testing.T, kind string) sseCounts {
	t.Helper()
	var c sseCounts
	for _, sm := range o.collect(t).ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				if v, _ := dp.Attributes.Value("moora.sse.stream"); v.AsString() != kind {
					continue
				}
				switch m.Name {
				case "moora.sse.clients":
					c.clients += dp.Value
				case "moora.sse.bytes":
					c.bytes += dp.Value
				case "moora.sse.events":
					c.events += dp.Value
				}
			}
		}
	}
	return c
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestTelemetryStreamMetrics follows a state stream, over HTTP/1 (which
// the hub takes over) and HTTP/2 (served by its handler), and a token
// stream: while a client is connected moora.sse.clients counts it, and
// once it leaves it is back to 0; moora.sse.bytes is the bytes the client
// read, and moora.sse.events the events.
func TestTelemetryStreamMetrics(t *testing.T) {
	for _, proto := range []string{"HTTP/1.1", "HTTP/2.0"} {
		t.Run("state stream over "+proto, func(t *testing.T) {
			o := newObserved()
			f := newObservedFixture(t, o, func(c *Config[state, input, view]) { c.Heartbeat = time.Hour })
			url, hc := f.srv.URL, http.DefaultClient
			if proto == "HTTP/2.0" {
				srv := httptest.NewUnstartedServer(f.b)
				srv.EnableHTTP2 = true
				srv.StartTLS()
				defer srv.Close()
				url, hc = srv.URL, srv.Client()
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", url+"/state", nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			res, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.Proto != proto || res.StatusCode != http.StatusOK {
				t.Fatalf("%s %d, want %s 200", res.Proto, res.StatusCode, proto)
			}
			body := &countingReader{r: res.Body}
			events := bufio.NewReader(body)
			var names []string
			next := func() { // reads up to the end of the next event
				t.Helper()
				inEvent := false
				for {
					line, err := events.ReadString('\n')
					if err != nil {
						t.Fatalf("the stream ended: %v", err)
					}
					if name, ok := strings.CutPrefix(line, "event: "); ok {
						names = append(names, strings.TrimSpace(name))
						inEvent = true
					}
					if line == "\n" && inEvent {
						return
					}
				}
			}
			next() // the snapshot
			if err := f.m.Dispatch(ctx, decl.SendAssiMessage{ID: "a1", Content: "hello", Timestamp: 1}); err != nil {
				t.Fatal(err)
			}
			next() // its delta
			if strings.Join(names, " ") != "snapshot delta" {
				t.Fatalf("events %q, want a snapshot and a delta", names)
			}
			// What the client read is what the bridge counted, once the
			// bridge has counted it (just after it is written).
			var got sseCounts
			waitFor(t, func() bool {
				got = o.sse(t, "state")
				return got.bytes == body.n
			})
			if want := (sseCounts{clients: 1, bytes: body.n, events: 2}); got != want {
				t.Errorf("while connected: %+v, want %+v", got, want)
			}
			cancel() // the client leaves
			res.Body.Close()
			waitFor(t, func() bool { return o.sse(t, "state").clients == 0 })
		})
	}

	t.Run("token stream", func(t *testing.T) {
		o := newObserved()
		f := newObservedFixture(t, o, nil)
		f.streams.Write("s1", "hello, ")
		f.streams.Write("s1", "world")
		f.streams.End("s1")
		c := newClient(f.srv.URL, testToken)
		req, _ := c.request(context.Background(), "GET", "/streams/s1", nil)
		res, err := c.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(res.Body) // the stream ends after its end event
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET: %d %v", res.StatusCode, err)
		}
		waitFor(t, func() bool { return o.sse(t, "token").clients == 0 })
		want := sseCounts{clients: 0, bytes: int64(len(data)), events: int64(strings.Count(string(data), "event: "))}
		if got := o.sse(t, "token"); got != want || want.events != 2 {
			t.Errorf("after the stream: %+v, want %+v (a chunk and the end)", got, want)
		}
	})
}

// TestTelemetryUntrustedCallers: a bridge whose propagator reads nothing
// starts a trace for each POST, whatever traceparent the client sends; a
// preflight of the default one allows the headers it reads.
func TestTelemetryUntrustedCallers(t *testing.T) {
	o := newObserved()
	f := newObservedFixture(t, o, func(c *Config[state, input, view]) {
		c.Propagator = propagation.NewCompositeTextMapPropagator()
	})
	status, body := postRaw(t, f.srv.URL, `{"type":"send-user-message","id":"u1","content":"hi","timestamp":0}`,
		map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	if status != http.StatusOK {
		t.Fatalf("POST: %d %s", status, body)
	}
	req := o.span(t, "the POST", func(s sdktrace.ReadOnlySpan) bool { return s.Name() == "POST /inputs" })
	if req.Parent().IsValid() || req.SpanContext().TraceID().String() == "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("the request span continues the client's trace: parent %v", req.Parent())
	}

	f2 := newObservedFixture(t, newObserved(), func(c *Config[state, input, view]) { c.AllowOrigins = []string{"https://app.example"} })
	pre, _ := http.NewRequest("OPTIONS", f2.srv.URL+"/inputs", nil)
	pre.Header.Set("Origin", "https://app.example")
	pre.Header.Set("Access-Control-Request-Headers", "traceparent")
	res, err := http.DefaultClient.Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if h := res.Header.Get("Access-Control-Allow-Headers"); !strings.Contains(h, "traceparent") || !strings.Contains(h, "tracestate") {
		t.Errorf("Access-Control-Allow-Headers %q: want traceparent and tracestate", h)
	}
}

// TestTelemetryFleetRoute: a POST to an agent of a Fleet is traced under
// the fleet's route, not the path with the agent's id.
func TestTelemetryFleetRoute(t *testing.T) {
	o := newObserved()
	f := newFleetFixture(t, func(c *FleetConfig[state, input, view]) { c.Bridge.TracerProvider = o.tp })
	id := f.create(operatorToken)
	if status, body := f.do("POST", "/agents/"+id+"/inputs", operatorToken, userMessage("u1", "hi")); status != http.StatusOK {
		t.Fatalf("POST: %d %s", status, body)
	}
	req := o.span(t, "the POST", func(s sdktrace.ReadOnlySpan) bool { return s.SpanKind() == trace.SpanKindServer })
	if req.Name() != "POST /agents/{id}/inputs" {
		t.Errorf("span %q, want POST /agents/{id}/inputs", req.Name())
	}
	wantAttrs(t, req, map[string]string{"http.route": "/agents/{id}/inputs", "url.path": "/agents/" + id + "/inputs"})
}
