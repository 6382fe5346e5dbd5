package toolkit_test

// What a hostile model, tool or server does, and what the kit does about
// it: the tests of the bugs a hostile tester found.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/moora-go/moora/automata/toolkit"
)

// A Func over a struct JSON cannot hold is an error of New naming the tool and the field, not a panic.
func TestFuncRejectsUnsupportedFieldTypes(t *testing.T) {
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("Func panicked: %v", p)
		}
	}()
	type inner struct {
		F func() `json:"f"`
	}
	for _, c := range []struct {
		tool toolkit.Tool
		want []string
	}{
		{toolkit.Func("c", "", func(context.Context, struct {
			C chan int `json:"c"`
		}) (string, error) {
			return "", nil
		}), []string{`tool 0 ("c")`, "field C is a chan int"}},
		{toolkit.Func("f", "", func(context.Context, struct {
			Items []inner `json:"items"`
		}) (string, error) {
			return "", nil
		}), []string{`tool 0 ("f")`, "field Items[].F is a func()"}},
		{toolkit.Func("z", "", func(context.Context, struct {
			Z *complex128 `json:"z"`
		}) (string, error) {
			return "", nil
		}), []string{`tool 0 ("z")`, "field Z is a complex128"}},
		{toolkit.Func("p", "", func(context.Context, struct {
			M map[string]unsafe.Pointer `json:"m"`
		}) (string, error) {
			return "", nil
		}), []string{`tool 0 ("p")`, "field M[] is a unsafe.Pointer"}},
	} {
		_, err := toolkit.New(toolkit.Config{}, c.tool)
		if err == nil {
			t.Errorf("%s: no error", c.tool.Name())
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to say %q", c.tool.Name(), err, w)
			}
		}
	}
	// A field left out of the JSON is no concern of the schema's.
	ignored := toolkit.Func("ok", "", func(context.Context, struct {
		N    int      `json:"n"`
		Done chan int `json:"-"`
	}) (string, error) {
		return "", nil
	})
	if _, err := toolkit.New(toolkit.Config{}, ignored); err != nil {
		t.Fatalf("a chan field tagged json:\"-\": %v", err)
	}
}

// Whatever the arguments, the name or the tool's error, what the model is told is bounded.
func TestErrorsAreBounded(t *testing.T) {
	kit := newKit(t, toolkit.Config{}, toolkit.Func("order", "", func(context.Context, OrderArgs) (string, error) { return "", nil }))
	tags := strings.Repeat("1,", 50000) + "1"
	r := kit.Run(context.Background(), toolkit.Call{Name: "order", Arguments: json.RawMessage(`{"item":"x","quantity":1,"tags":[` + tags + `]}`)})
	if n := len(r.Content()); n > toolkit.DefaultMaxResultBytes {
		t.Errorf("args of %d bytes: an error of %d bytes", len(tags), n)
	}
	if r.Kind != toolkit.KindInvalid || !errors.Is(r.Err, toolkit.ErrInvalid) || !strings.Contains(r.Content(), "/tags/0: expected string, but got number") || !strings.Contains(r.Content(), "more") {
		t.Errorf("args of %d bytes: %s %q", len(tags), r.Kind, r.Content()[:min(len(r.Content()), 500)])
	}
	r = kit.Run(context.Background(), toolkit.Call{Name: strings.Repeat("x", 1<<20)})
	if n := len(r.Content()); n > toolkit.DefaultMaxResultBytes {
		t.Errorf("unknown name: an error of %d bytes", n)
	}
	if r.Kind != toolkit.KindInvalid || strings.Contains(r.Content(), strings.Repeat("x", 65)) || !strings.Contains(r.Content(), "the tools are order") {
		t.Errorf("unknown name of 1 MiB: %s %q", r.Kind, r.Content()[:min(len(r.Content()), 500)])
	}
	big := toolkit.Func("big", "", func(context.Context, struct{}) (string, error) {
		return "", fmt.Errorf("%w: %s", toolkit.ErrPermission, strings.Repeat("é", 1<<19))
	}).With(toolkit.Policy{MaxResultBytes: 100})
	kit = newKit(t, toolkit.Config{}, big)
	r = kit.Run(context.Background(), toolkit.Call{Name: "big"})
	if n := len(r.Content()); n > 100 {
		t.Errorf("tool error: %d bytes with MaxResultBytes 100", n)
	}
	if r.Kind != toolkit.KindPermission || !errors.Is(r.Err, toolkit.ErrPermission) || !strings.HasPrefix(r.Content(), "error: permission denied: éé") || !strings.HasSuffix(r.Content(), "…") || !utf8.ValidString(r.Content()) {
		t.Errorf("tool error cut: %s %q", r.Kind, r.Content())
	}
}

// A call waiting for its busy tool holds no kit slot: a call of another tool runs.
func TestWaitingForAToolHoldsNoKitSlot(t *testing.T) {
	release := make(chan struct{})
	var slowRunning atomic.Int32
	slow := toolkit.Func("slow", "", func(ctx context.Context, _ struct{}) (string, error) {
		slowRunning.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "slow", nil
	}).With(toolkit.Policy{MaxConcurrent: 1})
	fast := toolkit.Func("fast", "", func(context.Context, struct{}) (string, error) { return "fast", nil })
	var allowed atomic.Int32
	kit := newKit(t, toolkit.Config{MaxConcurrent: 2, Allow: func(context.Context, toolkit.Call) error { allowed.Add(1); return nil }}, slow, fast)
	done := make(chan struct{})
	go func() { kit.Run(context.Background(), toolkit.Call{Name: "slow"}); done <- struct{}{} }()
	waitFor(t, func() bool { return slowRunning.Load() == 1 }, "slow")
	go func() { kit.Run(context.Background(), toolkit.Call{Name: "slow"}); done <- struct{}{} }()
	waitFor(t, func() bool { return allowed.Load() == 2 }, "second slow")
	for range 1000 {
		runtime.Gosched()
	}
	ctx, cancel := context.WithTimeout(context.Background(), hang) // hang guard
	defer cancel()
	r := kit.Run(ctx, toolkit.Call{Name: "fast"})
	close(release)
	<-done
	<-done
	if r.Kind != toolkit.KindNone {
		t.Fatalf("fast, with one call running and a kit limit of 2: %+v", r)
	}
}

// RunAll runs a call of a free tool while an earlier call waits for its busy one.
func TestRunAllIsNotHeadOfLineBlocked(t *testing.T) {
	fastDone := make(chan struct{})
	var timedOut atomic.Bool
	slow := toolkit.Func("slow", "", func(ctx context.Context, _ struct{}) (string, error) {
		select {
		case <-fastDone:
		case <-time.After(hang): // hang guard
			timedOut.Store(true)
		}
		return "slow", nil
	}).With(toolkit.Policy{MaxConcurrent: 1})
	fast := toolkit.Func("fast", "", func(context.Context, struct{}) (string, error) { close(fastDone); return "fast", nil })
	kit := newKit(t, toolkit.Config{MaxConcurrent: 2}, slow, fast)
	rs := kit.RunAll(context.Background(), []toolkit.Call{{ID: "0", Name: "slow"}, {ID: "1", Name: "slow"}, {ID: "2", Name: "fast"}})
	if timedOut.Load() {
		t.Fatal("fast did not run while one slow call ran, with a kit limit of 2")
	}
	for i, want := range []string{"slow", "slow", "fast"} {
		if rs[i].CallID != fmt.Sprint(i) || rs[i].Output != want {
			t.Fatalf("result %d: %+v", i, rs[i])
		}
	}
}

// A call that started before the breaker opened does not move it once a trial closed it.
func TestStaleCallDoesNotMoveTheBreaker(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	gate := make(chan struct{})
	var started atomic.Int32
	var failing atomic.Bool
	failing.Store(true)
	api := toolkit.Func("api", "", func(ctx context.Context, a struct {
		Wait bool `json:"wait,omitempty"`
	}) (string, error) {
		started.Add(1)
		if a.Wait {
			<-gate
			return "", errors.New("stale failure")
		}
		if failing.Load() {
			return "", errors.New("down")
		}
		return "up", nil
	}).With(toolkit.Policy{BreakerFailures: 1, BreakerCooldown: time.Minute})
	kit := newKit(t, toolkit.Config{Clock: func() time.Time { return *clock.Load() }}, api)
	stale := make(chan toolkit.Result)
	go func() {
		stale <- kit.Run(context.Background(), toolkit.Call{Name: "api", Arguments: json.RawMessage(`{"wait":true}`)})
	}()
	waitFor(t, func() bool { return started.Load() == 1 }, "stale call")
	kit.Run(context.Background(), toolkit.Call{Name: "api"})
	if kit.Breaker("api") != toolkit.Open {
		t.Fatal("not open")
	}
	later := now.Add(time.Minute)
	clock.Store(&later)
	failing.Store(false)
	if r := kit.Run(context.Background(), toolkit.Call{Name: "api"}); r.Kind != toolkit.KindNone {
		t.Fatalf("trial: %+v", r)
	}
	if kit.Breaker("api") != toolkit.Closed {
		t.Fatal("not closed")
	}
	close(gate)
	if r := <-stale; r.Kind != toolkit.KindFailure {
		t.Fatalf("the stale call: %+v", r)
	}
	if s := kit.Breaker("api"); s != toolkit.Closed {
		t.Fatalf("a call that started before the breaker opened moved it to %s", s)
	}
}

// Calls let through while the breaker was closed ask it again once they have their slot.
func TestQueuedCallsAskTheBreakerAgain(t *testing.T) {
	gate := make(chan struct{})
	var runs, allowed atomic.Int32
	api := toolkit.Func("api", "", func(ctx context.Context, _ struct{}) (string, error) {
		if runs.Add(1) == 1 {
			<-gate
		}
		return "", errors.New("down")
	}).With(toolkit.Policy{BreakerFailures: 1, MaxConcurrent: 1})
	kit := newKit(t, toolkit.Config{Allow: func(context.Context, toolkit.Call) error { allowed.Add(1); return nil }}, api)
	results := make(chan toolkit.Result, 5)
	go func() { results <- kit.Run(context.Background(), toolkit.Call{Name: "api"}) }()
	waitFor(t, func() bool { return runs.Load() == 1 }, "first")
	for range 4 {
		go func() { results <- kit.Run(context.Background(), toolkit.Call{Name: "api"}) }()
	}
	waitFor(t, func() bool { return allowed.Load() == 5 }, "queued")
	for range 1000 {
		runtime.Gosched()
	}
	close(gate)
	kinds := map[toolkit.Kind]int{}
	for range 5 {
		kinds[(<-results).Kind]++
	}
	if runs.Load() != 1 {
		t.Fatalf("the tool ran %d times with BreakerFailures 1 (kinds %v)", runs.Load(), kinds)
	}
	if kinds[toolkit.KindFailure] != 1 || kinds[toolkit.KindUnavailable] != 4 {
		t.Fatalf("kinds %v; want 1 failure and 4 unavailable", kinds)
	}
}

// A retry asks the breaker again: one that opened meanwhile stops it.
func TestRetryAsksTheBreakerAgain(t *testing.T) {
	gate := make(chan struct{})
	var runs atomic.Int32
	api := toolkit.Func("api", "", func(ctx context.Context, a struct {
		Wait bool `json:"wait,omitempty"`
	}) (string, error) {
		runs.Add(1)
		if a.Wait {
			<-gate
		}
		return "", errors.New("down")
	}).With(toolkit.Policy{BreakerFailures: 1, Retries: 1, Backoff: time.Millisecond})
	kit := newKit(t, toolkit.Config{}, api)
	first := make(chan toolkit.Result)
	go func() {
		first <- kit.Run(context.Background(), toolkit.Call{Name: "api", Arguments: json.RawMessage(`{"wait":true}`)})
	}()
	waitFor(t, func() bool { return runs.Load() == 1 }, "the first call")
	if r := kit.Run(context.Background(), toolkit.Call{Name: "api"}); r.Kind != toolkit.KindFailure || r.Tries != 2 {
		t.Fatalf("the second call: %+v", r)
	}
	if kit.Breaker("api") != toolkit.Open {
		t.Fatalf("after a failure with BreakerFailures 1: %s", kit.Breaker("api"))
	}
	close(gate)
	if r := <-first; r.Kind != toolkit.KindUnavailable || r.Tries != 1 || runs.Load() != 3 {
		t.Fatalf("the first call, whose retry met the open breaker: %+v, %d runs of the tool", r, runs.Load())
	}
}

// A call on a context already done ends KindCancelled and never runs the tool, whatever it says.
func TestCancelledCallNeverRunsTheTool(t *testing.T) {
	var runs atomic.Int32
	tool := toolkit.Func("t", "", func(ctx context.Context, _ struct{}) (string, error) {
		runs.Add(1)
		return "side effect done", nil
	})
	kit := newKit(t, toolkit.Config{}, tool)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 100 {
		if r := kit.Run(ctx, toolkit.Call{Name: "t"}); r.Kind != toolkit.KindCancelled || r.Tries != 0 || !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("%+v", r)
		}
	}
	if runs.Load() != 0 {
		t.Errorf("the tool ran %d times in 100 calls on a cancelled context", runs.Load())
	}
	if r := kit.Run(ctx, toolkit.Call{Name: "t", Arguments: json.RawMessage(`{"x":1}`)}); r.Kind != toolkit.KindCancelled {
		t.Errorf("cancelled context, invalid arguments: %s (%q): the agent would report it", r.Kind, r.Content())
	}
	if r := kit.Run(ctx, toolkit.Call{Name: "nope"}); r.Kind != toolkit.KindCancelled {
		t.Errorf("cancelled context, no such tool: %s (%q): the agent would report it", r.Kind, r.Content())
	}
	for _, r := range kit.RunAll(ctx, []toolkit.Call{{Name: "t"}, {Name: "t", Arguments: json.RawMessage(`{"x":1}`)}}) {
		if r.Kind != toolkit.KindCancelled {
			t.Errorf("RunAll on a cancelled context: %+v", r)
		}
	}
	if runs.Load() != 0 {
		t.Errorf("the tool ran %d times on a cancelled context", runs.Load())
	}
}

// An HTTP tool does not follow a redirect, with the kit's client or the user's, which is left as it was.
func TestHTTPToolDoesNotFollowRedirects(t *testing.T) {
	var elsewhere atomic.Int32
	var method atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		method.Store(r.Method)
		fmt.Fprint(w, "internal metadata")
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/latest/meta-data", http.StatusSeeOther)
	}))
	defer srv.Close()
	mine := &http.Client{}
	for _, cfg := range []toolkit.Config{{}, {HTTPClient: mine}} {
		kit := newKit(t, cfg, toolkit.HTTP("h", "", nil, srv.URL))
		r := kit.Run(context.Background(), toolkit.Call{Name: "h"})
		if elsewhere.Load() != 0 {
			t.Fatalf("followed a redirect to another host with %v: %+v", method.Load(), r)
		}
		if r.Kind != toolkit.KindFailure || r.Content() != "error: h answered 303 See Other, a redirect, which is not followed" {
			t.Fatalf("a redirect: %s %q", r.Kind, r.Content())
		}
	}
	if mine.CheckRedirect != nil {
		t.Fatal("New changed the HTTPClient it was given")
	}
}

// The error of an HTTP tool names the tool, not its URL, whose query may hold a secret.
func TestHTTPErrorsDoNotShowTheURL(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/x?api_key=SECRET"
	srv.Close()
	kit := newKit(t, toolkit.Config{}, toolkit.HTTP("h", "", nil, url))
	r := kit.Run(context.Background(), toolkit.Call{Name: "h"})
	if strings.Contains(r.Content(), "SECRET") {
		t.Fatalf("the model is told %q", r.Content())
	}
	if r.Kind != toolkit.KindFailure || !strings.HasPrefix(r.Content(), "error: h: ") || strings.Contains(r.Content(), "api_key") || strings.Contains(r.Content(), "/x") {
		t.Fatalf("a server that is gone: %s %q", r.Kind, r.Content())
	}
}

// A tool that calls runtime.Goexit fails its call and leaks neither its slots nor a breaker trial.
func TestToolThatCallsGoexitFails(t *testing.T) {
	var n atomic.Int32
	tool := toolkit.Func("t", "", func(ctx context.Context, _ struct{}) (string, error) {
		if n.Add(1) == 1 {
			runtime.Goexit()
		}
		return "ok", nil
	}).With(toolkit.Policy{MaxConcurrent: 1})
	kit := newKit(t, toolkit.Config{MaxConcurrent: 1}, tool)
	result := make(chan toolkit.Result, 1)
	exited := make(chan struct{})
	go func() { defer close(exited); result <- kit.Run(context.Background(), toolkit.Call{Name: "t"}) }()
	<-exited
	select {
	case r := <-result:
		if r.Kind != toolkit.KindFailure || r.Content() != "error: t called runtime.Goexit instead of returning" {
			t.Fatalf("a Goexit: %s %q", r.Kind, r.Content())
		}
	default:
		t.Error("the tool's Goexit ended the goroutine of Run: no result")
	}
	ctx, cancel := context.WithTimeout(context.Background(), hang) // hang guard
	defer cancel()
	if r := kit.Run(ctx, toolkit.Call{Name: "t"}); r.Kind != toolkit.KindNone {
		t.Fatalf("after a Goexit: %+v", r)
	}

	// The breaker's trial: a Goexit fails it, and the next trial is let through.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	var m atomic.Int32
	api := toolkit.Func("api", "", func(context.Context, struct{}) (string, error) {
		switch m.Add(1) {
		case 1:
			return "", errors.New("down")
		case 2:
			runtime.Goexit()
		}
		return "up", nil
	}).With(toolkit.Policy{BreakerFailures: 1, BreakerCooldown: time.Minute})
	kit = newKit(t, toolkit.Config{Clock: func() time.Time { return *clock.Load() }}, api)
	kit.Run(ctx, toolkit.Call{Name: "api"})
	for i, want := range []toolkit.Kind{toolkit.KindFailure, toolkit.KindNone} {
		later := clock.Load().Add(time.Minute)
		clock.Store(&later)
		if r := kit.Run(ctx, toolkit.Call{Name: "api"}); r.Kind != want {
			t.Fatalf("trial %d: %+v; want %q", i+1, r, want)
		}
	}
	if kit.Breaker("api") != toolkit.Closed {
		t.Fatalf("after a trial that succeeded: %s", kit.Breaker("api"))
	}
}

// Output is at most MaxResultBytes bytes, the truncation note included, cut on a character boundary.
func TestOutputFitsMaxResultBytes(t *testing.T) {
	kit := newKit(t, toolkit.Config{}, toolkit.Func("t", "", func(context.Context, struct{}) (string, error) {
		return "abcdef", nil
	}).With(toolkit.Policy{MaxResultBytes: 3}))
	r := kit.Run(context.Background(), toolkit.Call{Name: "t"})
	if len(r.Output) > 3 {
		t.Fatalf("MaxResultBytes 3: %d bytes: %q", len(r.Output), r.Output)
	}
	if r.Output != "abc" || !r.Truncated {
		t.Fatalf("MaxResultBytes 3: %+v", r)
	}
	text := strings.Repeat("a€é", 100) // 600 bytes
	for limit := 1; limit <= len(text); limit++ {
		kit := newKit(t, toolkit.Config{}, toolkit.Func("t", "", func(context.Context, struct{}) (string, error) {
			return text, nil
		}).With(toolkit.Policy{MaxResultBytes: limit}))
		r := kit.Run(context.Background(), toolkit.Call{Name: "t"})
		kept, _, _ := strings.Cut(r.Output, "\n")
		if len(r.Output) > limit || !utf8.ValidString(r.Output) || !strings.HasPrefix(text, kept) || r.Truncated != (limit < len(text)) {
			t.Fatalf("MaxResultBytes %d: %d bytes, truncated %v: %q", limit, len(r.Output), r.Truncated, r.Output)
		}
	}
}

// After a failed half-open trial, the calls are told the breaker opened again, why, and for how long.
func TestReopenedBreakerSaysSo(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	kit := newKit(t, toolkit.Config{Clock: func() time.Time { return *clock.Load() }}, toolkit.Func("api", "", func(context.Context, struct{}) (string, error) {
		return "", errors.New("down")
	}).With(toolkit.Policy{BreakerFailures: 3, BreakerCooldown: time.Minute}))
	for range 3 {
		kit.Run(context.Background(), toolkit.Call{Name: "api"})
	}
	later := now.Add(time.Minute)
	clock.Store(&later)
	if r := kit.Run(context.Background(), toolkit.Call{Name: "api"}); r.Kind != toolkit.KindFailure || r.Tries != 1 { // the failed trial
		t.Fatalf("the trial: %+v", r)
	}
	r := kit.Run(context.Background(), toolkit.Call{Name: "api"})
	want := "error: api is unavailable: its circuit breaker opened again when its trial call failed (down); it is tried again in 1m0s"
	if r.Kind != toolkit.KindUnavailable || r.Content() != want || r.Tries != 0 {
		t.Fatalf("after the failed trial: %s %q; want %q", r.Kind, r.Content(), want)
	}
}
