package a2aserve_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/httpbridge/a2aserve"
)

// TestHostileRequests plays the hostile peer: each request a peer controls
// that is not a request, or is over a limit, gets a clear JSON-RPC error,
// and nothing is dispatched.
func TestHostileRequests(t *testing.T) {
	a := newSingle(t, func(c *a2aserve.Config[input, view], b *httpbridge.Config[state, input, view]) {
		c.MaxParts, c.MaxTextBytes, c.MaxIDBytes = 2, 100, 16
		b.MaxBody = 4096
	})
	url := a.srv.URL + "/a2a"
	msg := func(m string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + m + `}}`
	}
	for _, c := range []struct {
		name, body string
		code       int
		in         string // in the message
	}{
		{"not JSON", `{"jsonrpc":`, a2aserve.CodeParseError, "not JSON"},
		{"a batch", `[` + send("m", "x", "") + `]`, a2aserve.CodeInvalidRequest, "batches"},
		{"a notification", `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"self"}}`, a2aserve.CodeInvalidRequest, `"id" is required`},
		{"an id that is an object", `{"jsonrpc":"2.0","id":{},"method":"GetTask"}`, a2aserve.CodeInvalidRequest, "string or a number"},
		{"a long id", `{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 300) + `","method":"GetTask"}`, a2aserve.CodeInvalidRequest, "over 256"},
		{"JSON-RPC 1.0", `{"jsonrpc":"1.0","id":1,"method":"GetTask"}`, a2aserve.CodeInvalidRequest, `"2.0"`},
		{"no method", `{"jsonrpc":"2.0","id":1}`, a2aserve.CodeInvalidRequest, `"method" is required`},
		{"params an array", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}`, a2aserve.CodeInvalidParams, "object"},
		{"params of the wrong shape", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":3}}`, a2aserve.CodeInvalidParams, "invalid params"},
		{"no message", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`, a2aserve.CodeInvalidParams, `"message" is required`},
		{"the agent's role", msg(`{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]}`), a2aserve.CodeInvalidParams, "role"},
		{"no parts", msg(`{"messageId":"m","role":"ROLE_USER","parts":[]}`), a2aserve.CodeInvalidParams, "no parts"},
		{"too many parts", msg(`{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"},{"text":"b"},{"text":"c"}]}`), a2aserve.CodeInvalidParams, "3 parts, over 2"},
		{"too much text", msg(`{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("t", 101) + `"}]}`), a2aserve.CodeInvalidParams, "101 bytes, over 100"},
		{"a long message id", msg(`{"messageId":"` + strings.Repeat("m", 17) + `","role":"ROLE_USER","parts":[{"text":"x"}]}`), a2aserve.CodeInvalidParams, "messageId is 17 bytes, over 16"},
		{"a message id with a space", msg(`{"messageId":"a b","role":"ROLE_USER","parts":[{"text":"x"}]}`), a2aserve.CodeInvalidParams, "printable ASCII"},
		{"no message id", msg(`{"role":"ROLE_USER","parts":[{"text":"x"}]}`), a2aserve.CodeInvalidParams, "messageId is required"},
		{"a data part", msg(`{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"a":1}}]}`), a2aserve.CodeContentType, "not text"},
		{"an empty part", msg(`{"messageId":"m","role":"ROLE_USER","parts":[{}]}`), a2aserve.CodeInvalidParams, "no content"},
	} {
		ans := call(t, url, token, c.body)
		if ans.Error == nil || ans.Error.Code != c.code || !strings.Contains(ans.Error.Message, c.in) {
			t.Errorf("%s: %+v, want code %d saying %q", c.name, ans.Error, c.code, c.in)
		}
	}
	if n := len(a.m.Current().UserMessages); n != 0 {
		t.Fatalf("%d messages dispatched", n)
	}

	// HTTP's own: the body over the bridge's MaxBody, another content
	// type, another method.
	big := send("m", strings.Repeat("x", 5000), "")
	if ans := call(t, url, token, big); ans.status != http.StatusRequestEntityTooLarge || ans.Error == nil || !strings.Contains(ans.Error.Message, "over 4096 bytes") {
		t.Errorf("a body over MaxBody: %d %+v", ans.status, ans.Error)
	}
	do := func(method, ctype string) *http.Response {
		req, _ := http.NewRequest(method, url, strings.NewReader(send("m", "x", "")))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", ctype)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := do(http.MethodPost, "text/plain"); resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %s", resp.Status)
	}
	if resp := do(http.MethodGet, "application/json"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %s", resp.Status)
	}
	if ans := call(t, url, token, send("m", "x", "")); ans.Error != nil {
		t.Fatalf("a good message after them: %+v", ans.Error)
	}
}

// TestVersion: a client of another version of the protocol is told so.
func TestVersion(t *testing.T) {
	a := newSingle(t, nil)
	req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/a2a", strings.NewReader(send("m", "x", "")))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "0.3")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ans rpcAnswer
	decodeBody(t, resp, &ans)
	if ans.Error == nil || ans.Error.Code != a2aserve.CodeVersionNotSupported || len(a.m.Current().UserMessages) != 0 {
		t.Fatalf("A2A-Version 0.3: %+v", ans.Error)
	}
}

// working is a task that never stops working.
func working(view) a2aserve.Status { return a2aserve.Status{State: a2aserve.StateWorking} }

// TestStreamLimits: streams beyond MaxStreams are refused (503, Retry-After)
// while one is open; a stream ends at MaxStreamTime, and SendMessage
// answers at MaxWait, with the task still working.
func TestStreamLimits(t *testing.T) {
	a := newSingle(t, func(c *a2aserve.Config[input, view], _ *httpbridge.Config[state, input, view]) {
		c.Task, c.MaxStreams, c.MaxStreamTime, c.MaxWait = working, 1, time.Hour, 50*time.Millisecond
	})
	url := a.srv.URL + "/a2a"
	ans := call(t, url, token, send("m1", "hello", ""))
	var res a2aserve.StreamResponse
	if decodeRaw(ans.Result, &res); ans.Error != nil || res.Task == nil || res.Task.Status.State != a2aserve.StateWorking {
		t.Fatalf("SendMessage at MaxWait: %s %+v", ans.Result, ans.Error)
	}
	// One stream open: the next is refused.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(rpc("SubscribeToTask", `{"id":"self"}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	open, err := http.DefaultClient.Do(req)
	if err != nil || open.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("the first stream: %v %v", err, open.Header)
	}
	ans = call(t, url, token, rpc("SubscribeToTask", `{"id":"self"}`))
	if ans.status != http.StatusServiceUnavailable || ans.header.Get("Retry-After") == "" || ans.Error == nil || !strings.Contains(ans.Error.Message, "too many streams") {
		t.Fatalf("a second stream: %d %+v", ans.status, ans.Error)
	}
	open.Body.Close()
}

// TestStreamTime: a stream of a task that works on ends at MaxStreamTime.
func TestStreamTime(t *testing.T) {
	a := newSingle(t, func(c *a2aserve.Config[input, view], _ *httpbridge.Config[state, input, view]) {
		c.Task, c.MaxStreamTime = working, 20*time.Millisecond
	})
	_, events := stream(t, a.srv.URL+"/a2a", token, rpc("SubscribeToTask", `{"id":"self"}`))
	if len(events) != 1 || events[0].data.Result.Task == nil {
		t.Fatalf("events %+v: want the task, and the stream's end", events)
	}
}

// TestHistoryBound: a client's historyLength takes at most MaxHistory
// messages, however many it asks for.
func TestHistoryBound(t *testing.T) {
	a := newSingle(t, func(c *a2aserve.Config[input, view], _ *httpbridge.Config[state, input, view]) { c.MaxHistory = 1 })
	url := a.srv.URL + "/a2a"
	call(t, url, token, send("m1", "one", ""))
	call(t, url, token, send("m2", "two", ""))
	for _, params := range []string{`{"id":"self","historyLength":1000000}`, `{"id":"self"}`} {
		ans := call(t, url, token, rpc("GetTask", params))
		var task a2aserve.Task
		decodeRaw(ans.Result, &task)
		if ans.Error != nil || len(task.History) != 1 || task.History[0].Text() != "echo: two" {
			t.Fatalf("GetTask %s: %s %+v: want the newest message only", params, ans.Result, ans.Error)
		}
	}
}
