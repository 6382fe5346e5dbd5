package toolkit_test

import (
	"context"
	"encoding/json"
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
	"unicode/utf8"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
)

// hang bounds the waits of these tests, so that a bug fails them instead
// of hanging them. No test asserts how long anything took.
const hang = 30 * time.Second

type Address struct {
	Street string `json:"street" jsonschema:"description=The street and number."`
	Zip    string `json:"zip,omitempty"`
}

type OrderArgs struct {
	Item     string   `json:"item" jsonschema:"description=What to order."`
	Quantity int      `json:"quantity" jsonschema:"minimum=1,maximum=10"`
	Size     string   `json:"size,omitempty" jsonschema:"enum=small,enum=large"`
	Ship     *Address `json:"ship,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	Priority int64    `json:"priority,omitempty"`
}

func TestSchemaFromStruct(t *testing.T) {
	got, err := toolkit.SchemaOf[OrderArgs]()
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Type                 string   `json:"type"`
		Required             []string `json:"required"`
		AdditionalProperties *bool    `json:"additionalProperties"`
		Schema               string   `json:"$schema"`
		Properties           map[string]struct {
			Type        string   `json:"type"`
			Description string   `json:"description"`
			Enum        []string `json:"enum"`
			Minimum     *float64 `json:"minimum"`
			Required    []string `json:"required"`
			Properties  map[string]struct {
				Type        string `json:"type"`
				Description string `json:"description"`
			} `json:"properties"`
			Items struct {
				Type string `json:"type"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(got, &s); err != nil {
		t.Fatal(err)
	}
	p := s.Properties
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"type", s.Type, "object"},
		{"no $schema", s.Schema, ""},
		{"required: the fields without omitempty", fmt.Sprint(s.Required), "[item quantity]"},
		{"no other properties", s.AdditionalProperties != nil && !*s.AdditionalProperties, true},
		{"description", p["item"].Description, "What to order."},
		{"integer", p["quantity"].Type, "integer"},
		{"minimum", p["quantity"].Minimum != nil && *p["quantity"].Minimum == 1, true},
		{"enum", fmt.Sprint(p["size"].Enum), "[small large]"},
		{"nested", p["ship"].Type, "object"},
		{"nested required", fmt.Sprint(p["ship"].Required), "[street]"},
		{"nested description", p["ship"].Properties["street"].Description, "The street and number."},
		{"array items", p["tags"].Items.Type, "string"},
	} {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %v, want %v (schema %s)", c.name, c.got, c.want, got)
		}
	}
	if _, err := toolkit.SchemaOf[string](); err == nil {
		t.Error("SchemaOf[string]: no error, but a tool's arguments are an object")
	}
}

func TestArgumentsAreValidatedBeforeTheCall(t *testing.T) {
	var got []OrderArgs
	order := toolkit.Func("order", "Orders an item.", func(_ context.Context, a OrderArgs) (string, error) {
		got = append(got, a)
		return "ordered " + a.Item, nil
	})
	kit := newKit(t, toolkit.Config{}, order)
	for _, c := range []struct {
		name, args, want string
	}{
		{"not JSON", `{"item": "tea",`, "are not JSON"},
		{"two values", `{} {}`, "are not JSON"},
		{"a string", `"tea"`, "/: expected object, but got string"},
		{"missing", `{"item": "tea"}`, "missing properties: 'quantity'"},
		{"wrong type", `{"item": "tea", "quantity": "two"}`, "/quantity: expected integer, but got string"},
		{"out of range", `{"item": "tea", "quantity": 11}`, "/quantity: must be <= 10"},
		{"enum", `{"item": "tea", "quantity": 1, "size": "huge"}`, "/size: value must be one of"},
		{"nested", `{"item": "tea", "quantity": 1, "ship": {"zip": "1"}}`, "/ship: missing properties: 'street'"},
		{"unknown property", `{"item": "tea", "quantity": 1, "colour": "red"}`, "additionalProperties 'colour' not allowed"},
		{"past int64", `{"item": "tea", "quantity": 1, "priority": 1e400}`, "cannot unmarshal number 1e400"},
	} {
		r := kit.Run(context.Background(), toolkit.Call{ID: "c", Name: "order", Arguments: json.RawMessage(c.args)})
		if r.Kind != toolkit.KindInvalid || !strings.Contains(r.Content(), c.want) || !errors.Is(r.Err, toolkit.ErrInvalid) || r.Tries != 0 {
			t.Errorf("%s: %s: got kind %q, %d tries, content %q; want invalid, 0 tries, with %q", c.name, c.args, r.Kind, r.Tries, r.Content(), c.want)
		}
	}
	if len(got) != 0 {
		t.Fatalf("the tool ran on invalid arguments: %v", got)
	}
	r := kit.Run(context.Background(), toolkit.Call{ID: "c", Name: "order", Arguments: json.RawMessage(`{"item": "tea", "quantity": 2, "ship": {"street": "Main 1"}}`)})
	if r.Kind != toolkit.KindNone || r.Output != "ordered tea" || r.Tries != 1 || got[0].Ship.Street != "Main 1" {
		t.Fatalf("valid arguments: %+v, the tool got %+v", r, got)
	}
	r = kit.Run(context.Background(), toolkit.Call{ID: "c", Name: "ordr"})
	if r.Kind != toolkit.KindInvalid || r.Content() != `error: there is no tool "ordr"; the tools are order` {
		t.Fatalf("an unknown tool: %+v", r)
	}
}

func TestModelSeesItsInvalidArgumentsAndCorrectsThem(t *testing.T) {
	calc := toolkit.Func("double", "Doubles a number.", func(_ context.Context, a struct {
		N int `json:"n"`
	}) (string, error) {
		return fmt.Sprint(2 * a.N), nil
	})
	kit := newKit(t, toolkit.Config{}, calc)
	// The model first writes the number as a word; told why that is wrong,
	// it writes it again as a number, then answers with the result.
	var seen []string
	model := llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == llm.RoleUser:
			return llm.Response{ToolCalls: []llm.ToolCall{{ID: "1", Name: "double", Arguments: json.RawMessage(`{"n": "twenty-one"}`)}}}, nil
		case strings.HasPrefix(last.Content, "error:"):
			seen = append(seen, last.Content)
			return llm.Response{ToolCalls: []llm.ToolCall{{ID: "2", Name: "double", Arguments: json.RawMessage(`{"n": 21}`)}}}, nil
		default:
			return llm.Response{Text: "It is " + last.Content + "."}, nil
		}
	}}
	req := llm.Request{Tools: kit.LLMTools(), Messages: []llm.Message{{Role: llm.RoleUser, Content: "Double 21."}}}
	var answer string
	for turn := 0; answer == "" && turn < 5; turn++ {
		resp, err := model.Complete(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
		for _, r := range kit.RunAll(context.Background(), toolkit.Calls("job", resp.ToolCalls)) {
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: r.CallID, Content: r.Content()})
		}
		if len(resp.ToolCalls) == 0 {
			answer = resp.Text
		}
	}
	if answer != "It is 42." {
		t.Fatalf("the conversation ended with %q", answer)
	}
	if len(seen) != 1 || !strings.Contains(seen[0], "/n: expected integer, but got string") {
		t.Fatalf("the model was told %q", seen)
	}
}

func TestTimeoutAndRetries(t *testing.T) {
	var tries, keys []string
	var mu sync.Mutex
	flaky := toolkit.Func("flaky", "Fails twice, then answers.", func(ctx context.Context, _ struct{}) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		tries = append(tries, fmt.Sprint(toolkit.Attempt(ctx)))
		keys = append(keys, toolkit.Key(ctx))
		if len(tries) < 3 {
			return "", errors.New("the backend is busy")
		}
		return "done", nil
	})
	slow := toolkit.Func("slow", "Never answers in time.", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	var invalids atomic.Int32
	picky := toolkit.Func("picky", "Refuses its arguments.", func(context.Context, struct{}) (string, error) {
		invalids.Add(1)
		return "", fmt.Errorf("%w: no such file", toolkit.ErrInvalid)
	})
	retry := toolkit.Policy{Retries: 2, Backoff: time.Millisecond}
	kit := newKit(t, toolkit.Config{},
		flaky.With(retry),
		slow.With(toolkit.Policy{Timeout: 5 * time.Millisecond, Retries: 1, Backoff: time.Millisecond}),
		picky.With(retry))

	r := kit.Run(context.Background(), toolkit.Call{ID: "a", Name: "flaky", Key: "job-1"})
	if r.Kind != toolkit.KindNone || r.Output != "done" || r.Tries != 3 {
		t.Fatalf("flaky: %+v", r)
	}
	if fmt.Sprint(tries) != "[1 2 3]" || fmt.Sprint(keys) != "[job-1 job-1 job-1]" {
		t.Fatalf("flaky's tries %v with keys %v; want [1 2 3], each job-1", tries, keys)
	}
	r = kit.Run(context.Background(), toolkit.Call{ID: "b", Name: "slow"})
	if r.Kind != toolkit.KindTimeout || r.Tries != 2 || r.Content() != "error: slow timed out after 5ms" {
		t.Fatalf("slow: %+v", r)
	}
	r = kit.Run(context.Background(), toolkit.Call{ID: "c", Name: "slow", Timeout: time.Millisecond})
	if r.Content() != "error: slow timed out after 1ms" {
		t.Fatalf("slow with the call's own timeout: %q", r.Content())
	}
	r = kit.Run(context.Background(), toolkit.Call{ID: "d", Name: "picky"})
	if r.Kind != toolkit.KindInvalid || r.Tries != 1 || invalids.Load() != 1 {
		t.Fatalf("picky (not tried again): %+v after %d calls", r, invalids.Load())
	}
}

func TestConcurrencyLimit(t *testing.T) {
	const limit, calls = 3, 12
	var running, most, done atomic.Int32
	release := make(chan struct{})
	work := func(context.Context, struct{}) (string, error) {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		running.Add(-1)
		done.Add(1)
		return "ok", nil
	}
	kit := newKit(t, toolkit.Config{}, toolkit.Func("work", "Works.", work).With(toolkit.Policy{MaxConcurrent: limit}))
	list := make([]toolkit.Call, calls)
	for i := range list {
		list[i] = toolkit.Call{ID: fmt.Sprint(i), Name: "work"}
	}
	results := make(chan []toolkit.Result, 1)
	go func() { results <- kit.RunAll(context.Background(), list) }()

	waitFor(t, func() bool { return running.Load() >= limit }, "the first calls to start")
	for range 1000 { // give a call over the limit every chance to start
		runtime.Gosched()
	}
	if n := running.Load(); n != limit {
		t.Fatalf("%d calls running, limit %d", n, limit)
	}
	// One at a time: each call that ends lets exactly one more in.
	for i := range calls - limit {
		release <- struct{}{}
		waitFor(t, func() bool { return done.Load() == int32(i+1) && running.Load() == limit }, "the next call to start")
	}
	close(release)
	rs := <-results
	if most.Load() != limit {
		t.Fatalf("at most %d calls ran at once, want %d", most.Load(), limit)
	}
	for i, r := range rs {
		if r.CallID != fmt.Sprint(i) || r.Output != "ok" {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
}

func TestKitConcurrencyLimitSpansTools(t *testing.T) {
	var running, most atomic.Int32
	release := make(chan struct{})
	work := func(context.Context, struct{}) (string, error) {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		running.Add(-1)
		return "ok", nil
	}
	kit := newKit(t, toolkit.Config{MaxConcurrent: 2}, toolkit.Func("a", "A.", work), toolkit.Func("b", "B.", work))
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() { kit.Run(context.Background(), toolkit.Call{Name: string(rune('a' + i%2))}) })
	}
	waitFor(t, func() bool { return running.Load() >= 2 }, "two calls to start")
	for range 1000 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	if most.Load() != 2 {
		t.Fatalf("at most %d calls of the kit ran at once, want 2", most.Load())
	}
}

func TestBreaker(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var calls atomic.Int32
	var failing atomic.Bool
	failing.Store(true)
	gate := make(chan struct{})
	api := toolkit.Func("api", "An API that goes down.", func(ctx context.Context, a struct {
		Wait bool `json:"wait,omitempty"`
	}) (string, error) {
		calls.Add(1)
		if a.Wait {
			<-gate
		}
		if failing.Load() {
			return "", errors.New("503 Service Unavailable")
		}
		return "up", nil
	})
	kit := newKit(t, toolkit.Config{Clock: clock}, api.With(toolkit.Policy{BreakerFailures: 3, BreakerCooldown: time.Minute}))
	run := func(args string) toolkit.Result {
		return kit.Run(context.Background(), toolkit.Call{Name: "api", Arguments: json.RawMessage(args)})
	}
	for i := range 3 {
		if kit.Breaker("api") != toolkit.Closed {
			t.Fatalf("after %d failures: %s", i, kit.Breaker("api"))
		}
		if r := run(`{}`); r.Kind != toolkit.KindFailure {
			t.Fatalf("call %d: %+v", i, r)
		}
	}
	if kit.Breaker("api") != toolkit.Open {
		t.Fatalf("after 3 failures: %s", kit.Breaker("api"))
	}
	r := run(`{}`)
	want := "error: api is unavailable: its circuit breaker opened after 3 failures in a row (the last: 503 Service Unavailable); it is tried again in 1m0s"
	if r.Kind != toolkit.KindUnavailable || r.Content() != want || r.Tries != 0 || calls.Load() != 3 {
		t.Fatalf("while open: %+v (%q), %d calls; want %q and no call", r, r.Content(), calls.Load(), want)
	}

	// Half-open: one trial; the calls meanwhile fail at once.
	now = now.Add(time.Minute)
	if kit.Breaker("api") != toolkit.HalfOpen {
		t.Fatalf("after the cooldown: %s", kit.Breaker("api"))
	}
	trial := make(chan toolkit.Result)
	go func() { trial <- run(`{"wait": true}`) }()
	waitFor(t, func() bool { return calls.Load() == 4 }, "the trial call")
	if r := run(`{}`); r.Kind != toolkit.KindUnavailable || !strings.Contains(r.Content(), "trial call is under way") {
		t.Fatalf("during the trial: %+v", r)
	}
	gate <- struct{}{}
	if r := <-trial; r.Kind != toolkit.KindFailure {
		t.Fatalf("the trial: %+v", r)
	}
	if kit.Breaker("api") != toolkit.Open {
		t.Fatalf("after a failed trial: %s", kit.Breaker("api"))
	}

	// The next trial succeeds: closed, and the count starts again.
	now = now.Add(time.Minute)
	failing.Store(false)
	if r := run(`{}`); r.Kind != toolkit.KindNone || r.Output != "up" {
		t.Fatalf("the second trial: %+v", r)
	}
	if kit.Breaker("api") != toolkit.Closed {
		t.Fatalf("after a trial that succeeded: %s", kit.Breaker("api"))
	}
	failing.Store(true)
	run(`{}`)
	run(`{}`)
	if kit.Breaker("api") != toolkit.Closed {
		t.Fatalf("2 failures after closing: %s", kit.Breaker("api"))
	}
}

func TestPermissionAndFilter(t *testing.T) {
	var ran []string
	read := toolkit.Func("read", "Reads a file.", func(_ context.Context, a struct {
		Path string `json:"path"`
	}) (string, error) {
		ran = append(ran, a.Path)
		if a.Path == "root.txt" {
			return "", fmt.Errorf("%w: root.txt is the administrator's", toolkit.ErrPermission)
		}
		return "user = demo\npassword = hunter2\n", nil
	})
	kit := newKit(t, toolkit.Config{
		Allow: func(_ context.Context, c toolkit.Call) error {
			if strings.Contains(string(c.Arguments), "..") {
				return errors.New("outside the workspace")
			}
			return nil
		},
		Filter: func(_ toolkit.Call, out string) string { return strings.ReplaceAll(out, "hunter2", "[redacted]") },
	}, read.With(toolkit.Policy{
		Allow: func(_ context.Context, c toolkit.Call) error {
			if c.Key == "" {
				return fmt.Errorf("%w: no key", toolkit.ErrPermission)
			}
			return nil
		},
		Filter: func(_ toolkit.Call, out string) string { return strings.ToUpper(out) },
	}))
	run := func(path, key string) toolkit.Result {
		return kit.Run(context.Background(), toolkit.Call{Name: "read", Key: key, Arguments: json.RawMessage(fmt.Sprintf(`{"path": %q}`, path))})
	}
	if r := run("../etc/passwd", "k"); r.Kind != toolkit.KindPermission || r.Content() != "error: permission denied: outside the workspace" || !errors.Is(r.Err, toolkit.ErrPermission) {
		t.Fatalf("the kit's check: %+v", r)
	}
	if r := run("notes.txt", ""); r.Kind != toolkit.KindPermission || r.Content() != "error: permission denied: no key" {
		t.Fatalf("the tool's check: %+v", r)
	}
	if len(ran) != 0 {
		t.Fatalf("refused calls ran: %v", ran)
	}
	if r := run("root.txt", "k"); r.Kind != toolkit.KindPermission || r.Tries != 1 {
		t.Fatalf("the tool's own refusal: %+v", r)
	}
	if r := run("notes.txt", "k"); r.Output != "USER = DEMO\nPASSWORD = [REDACTED]\n" {
		t.Fatalf("filtered by the kit, then the tool: %q", r.Output)
	}
}

func TestResultSizeLimit(t *testing.T) {
	big := strings.Repeat("é", 1000) // 2,000 bytes
	kit := newKit(t, toolkit.Config{}, toolkit.Func("big", "Says a lot.", func(context.Context, struct{}) (string, error) {
		return big, nil
	}).With(toolkit.Policy{MaxResultBytes: 101}))
	r := kit.Run(context.Background(), toolkit.Call{Name: "big"})
	// 101 bytes, the note's 49 included: 26 characters of 2 bytes fit
	// in the 52 left, and the cut is at a character boundary.
	kept, note, _ := strings.Cut(r.Output, "\n")
	if !r.Truncated || len(r.Output) > 101 || kept != strings.Repeat("é", 26) || note != "[truncated: the output is longer than 101 bytes]" || !utf8.ValidString(r.Output) {
		t.Fatalf("got %d bytes, truncated %v: %q", len(r.Output), r.Truncated, r.Output)
	}
}

func TestCancelAndPanic(t *testing.T) {
	started := make(chan struct{})
	kit := newKit(t, toolkit.Config{},
		toolkit.Func("wait", "Waits.", func(ctx context.Context, _ struct{}) (string, error) {
			close(started)
			<-ctx.Done()
			return "", ctx.Err()
		}).With(toolkit.Policy{Retries: 3}),
		toolkit.Func("bug", "Panics.", func(context.Context, struct{}) (string, error) {
			var m map[string]int
			m["x"] = 1
			return "", nil
		}))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if r := kit.Run(ctx, toolkit.Call{Name: "wait"}); r.Kind != toolkit.KindCancelled || !errors.Is(r.Err, context.Canceled) || r.Tries != 1 {
		t.Fatalf("cancelled: %+v", r)
	}
	if r := kit.Run(context.Background(), toolkit.Call{Name: "bug"}); r.Kind != toolkit.KindFailure || !strings.Contains(r.Content(), "bug panicked: assignment to entry in nil map") {
		t.Fatalf("a panic: %+v", r)
	}
}

func TestNewRefusesBadTools(t *testing.T) {
	ok := func(context.Context, struct{}) (string, error) { return "", nil }
	for _, c := range []struct {
		name  string
		tools []toolkit.Tool
		want  string
	}{
		{"name", []toolkit.Tool{toolkit.Func("two words", "", ok)}, `tool 0 ("two words"): name "two words" is not 1 to 64`},
		{"twice", []toolkit.Tool{toolkit.Func("a", "", ok), toolkit.Func("a", "", ok)}, `tool 1 ("a"): a second tool of that name`},
		{"not a struct", []toolkit.Tool{toolkit.Func("s", "", func(context.Context, string) (string, error) { return "", nil })}, "not a struct"},
		{"schema", []toolkit.Tool{toolkit.HTTP("h", "", json.RawMessage(`{"type": 7}`), "http://localhost/")}, `tool 0 ("h"): parameters:`},
		{"schema not an object", []toolkit.Tool{toolkit.HTTP("h", "", json.RawMessage(`[]`), "http://localhost/")}, "parameters are not a JSON object"},
		{"url", []toolkit.Tool{toolkit.HTTP("h", "", nil, "ftp://x/")}, `url "ftp://x/" is not an http or https URL`},
		{"policy", []toolkit.Tool{toolkit.Func("a", "", ok).With(toolkit.Policy{Retries: -1})}, "policy: Retries is negative"},
		{"zero", []toolkit.Tool{{}}, "not made by Func, HTTP or Remote"},
	} {
		_, err := toolkit.New(toolkit.Config{}, c.tools...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
}

func TestHTTPTool(t *testing.T) {
	type got struct {
		body, key, contentType string
	}
	var mu sync.Mutex
	var requests []got
	var failures atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		requests = append(requests, got{string(b), r.Header.Get("Idempotency-Key"), r.Header.Get("Content-Type")})
		mu.Unlock()
		switch r.URL.Path {
		case "/echo":
			fmt.Fprintf(w, "you sent %s", b)
		case "/flaky":
			if failures.Add(1) <= 2 {
				http.Error(w, "overloaded", http.StatusServiceUnavailable)
				return
			}
			io.WriteString(w, "recovered")
		case "/down":
			http.Error(w, "down for maintenance", http.StatusInternalServerError)
		case "/hang":
			<-r.Context().Done()
		case "/bad":
			http.Error(w, `{"error": "city unknown"}`, http.StatusUnprocessableEntity)
		case "/forbidden":
			http.Error(w, "no", http.StatusForbidden)
		case "/big":
			io.WriteString(w, strings.Repeat("x", 10_000))
		}
	}))
	defer srv.Close()
	params, err := toolkit.SchemaOf[struct {
		City string `json:"city"`
	}]()
	if err != nil {
		t.Fatal(err)
	}
	tool := func(path string, p toolkit.Policy) toolkit.Tool {
		return toolkit.HTTP(strings.TrimPrefix(path, "/"), "A remote tool.", params, srv.URL+path).With(p)
	}
	retry := toolkit.Policy{Retries: 2, Backoff: time.Millisecond}
	kit := newKit(t, toolkit.Config{},
		tool("/echo", toolkit.Policy{}), tool("/flaky", retry), tool("/down", retry),
		tool("/hang", toolkit.Policy{Timeout: 20 * time.Millisecond, Retries: 1, Backoff: time.Millisecond}),
		tool("/bad", retry), tool("/forbidden", retry), tool("/big", toolkit.Policy{MaxResultBytes: 100}))
	run := func(name string) toolkit.Result {
		mu.Lock()
		requests = nil
		mu.Unlock()
		return kit.Run(context.Background(), toolkit.Call{ID: "1", Name: name, Key: "job-7", Arguments: json.RawMessage(`{"city": "Paris"}`)})
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(requests) }

	if r := run("echo"); r.Output != `you sent {"city": "Paris"}` || requests[0] != (got{`{"city": "Paris"}`, "job-7", "application/json"}) {
		t.Fatalf("echo: %+v, the server got %+v", r, requests)
	}
	if r := run("flaky"); r.Output != "recovered" || r.Tries != 3 || count() != 3 {
		t.Fatalf("flaky: %+v after %d requests", r, count())
	}
	if r := run("down"); r.Kind != toolkit.KindFailure || r.Content() != "error: down answered 500 Internal Server Error: down for maintenance" || count() != 3 {
		t.Fatalf("down: %+v (%q) after %d requests", r, r.Content(), count())
	}
	if r := run("hang"); r.Kind != toolkit.KindTimeout || r.Tries != 2 || count() != 2 {
		t.Fatalf("hang: %+v after %d requests", r, count())
	}
	if r := run("bad"); r.Kind != toolkit.KindInvalid || !strings.Contains(r.Content(), `422 Unprocessable Entity: {"error": "city unknown"}`) || count() != 1 {
		t.Fatalf("bad: %+v after %d requests", r, count())
	}
	if r := run("forbidden"); r.Kind != toolkit.KindPermission || count() != 1 {
		t.Fatalf("forbidden: %+v after %d requests", r, count())
	}
	if r := run("big"); !r.Truncated || r.Output != strings.Repeat("x", 51)+"\n[truncated: the output is longer than 100 bytes]" {
		t.Fatalf("big: %+v", r)
	}
	// The model's invalid arguments never reach the server.
	mu.Lock()
	requests = nil
	mu.Unlock()
	r := kit.Run(context.Background(), toolkit.Call{Name: "echo", Arguments: json.RawMessage(`{"town": "Paris"}`)})
	if r.Kind != toolkit.KindInvalid || count() != 0 {
		t.Fatalf("invalid arguments: %+v, %d requests", r, count())
	}
}

func FuzzArguments(f *testing.F) {
	for _, s := range []string{`{"item": "tea", "quantity": 1}`, `{"item": "tea", "quantity": 1, "priority": 1e400}`, `{`, `[]`, `null`, `{"quantity": 1e400}`, `{"ship": {"street": 1}}`, "\xff"} {
		f.Add([]byte(s))
	}
	kit, err := toolkit.New(toolkit.Config{}, toolkit.Func("order", "Orders.", func(_ context.Context, a OrderArgs) (string, error) {
		// "item" is required, but the schema lets it be "".
		if a.Quantity < 1 || a.Quantity > 10 {
			return "", fmt.Errorf("the tool got arguments the schema refuses: %+v", a)
		}
		return "ok", nil
	}))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		r := kit.Run(context.Background(), toolkit.Call{Name: "order", Arguments: args})
		switch {
		case r.Kind == toolkit.KindNone && r.Output == "ok":
		case r.Kind == toolkit.KindInvalid && r.Tries == 0:
		default:
			t.Fatalf("%q: %+v", args, r)
		}
	})
}

func newKit(t *testing.T, cfg toolkit.Config, tools ...toolkit.Tool) *toolkit.Kit {
	t.Helper()
	kit, err := toolkit.New(cfg, tools...)
	if err != nil {
		t.Fatal(err)
	}
	return kit
}

// waitFor waits until cond holds, or fails the test after hang.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", hang, what)
		}
		time.Sleep(time.Millisecond)
	}
}
