package devpanel_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// hangGuard bounds waits for what must happen; only a hang reaches it.
const hangGuard = 20 * time.Second

// The panel is tested on the chat test agent (automata/internal/chattest):
// the llm's job reply-{id} answers each user message that has no reply.

type fixture struct {
	t      *testing.T
	agent  *journal.Machine[decl.AgentState, decl.AgentInput]
	panel  *devpanel.Panel[decl.AgentState, decl.AgentInput]
	srv    *httptest.Server
	replay atomic.Int32 // how many reply jobs have run
	// notes: each reply job first hands in a note ("note-{id}"), which
	// leaves its key wanted, then the reply.
	notes bool
}

const token = "panel-token"

func replies(f *fixture) decl.JobsFnOfLlm {
	return func(c decl.ContextOfLlm) map[string]automata.Job[decl.AgentInput] {
		jobs := map[string]automata.Job[decl.AgentInput]{}
		for _, m := range c.UserMessages {
			if !slices.ContainsFunc(c.AssiMessages, func(a decl.AssiMessage) bool { return a.ID == "re-"+m.ID }) {
				jobs["reply-"+m.ID] = func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
					f.replay.Add(1)
					if f.notes {
						dispatch(decl.SendAssiMessage{ID: "note-" + m.ID, Content: "thinking", Timestamp: m.Timestamp + 1})
					}
					dispatch(decl.SendAssiMessage{ID: "re-" + m.ID, Content: "you said " + m.Content, Timestamp: m.Timestamp + 1})
					return nil
				}
			}
		}
		return jobs
	}
}

func newFixture(t *testing.T) *fixture { return newFixtureWith(t, false) }

// newFixtureWith wires the panel into the chat test agent with devpanel.Open,
// on a real journal.
func newFixtureWith(t *testing.T, notes bool) *fixture {
	t.Helper()
	f := &fixture{t: t, notes: notes}
	f.open(decl.JobFns{Llm: replies(f)}, nil)
	return f
}

// testConfig is the panel's Config of the chat test agent, whose jobs are
// jobFns.
func testConfig(jobFns decl.JobFns) devpanel.Config[decl.AgentState, decl.AgentInput] {
	return devpanel.Config[decl.AgentState, decl.AgentInput]{
		Definition:  agent.Definition(),
		Decode:      decl.DecodeInput,
		InputSchema: decl.InputSchema(),
		Jobs: func(s decl.AgentState) []string {
			var keys []string
			for k := range jobFns.Llm(s.ContextOfLlm()) {
				keys = append(keys, "llm/"+k)
			}
			return keys
		},
		Actor: func(in decl.AgentInput) string {
			if _, ok := in.(decl.InputFromUser); ok {
				return "user"
			}
			return "llm"
		},
	}
}

// open opens the chat test agent with jobFns and its panel, whose Config
// config changes when it is not nil, with the agent's options.
func (f *fixture) open(jobFns decl.JobFns, config func(*devpanel.Config[decl.AgentState, decl.AgentInput]), options ...automata.Option[decl.AgentState, decl.AgentInput]) {
	t := f.t
	t.Helper()
	store, err := bolt.Open(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(jobFns)
	cfg.Auth = httpbridge.Bearer(token)
	if config != nil {
		config(&cfg)
	}
	options = append(options, agent.WithJobs(jobFns))
	f.agent, f.panel, err = devpanel.Open(store, cfg, journal.Options[decl.AgentState, decl.AgentInput]{
		Codec: journal.JSON[decl.AgentState](decl.DecodeInput),
	}, options...)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(f.panel)
	t.Cleanup(func() {
		f.panel.Close()
		f.srv.Close()
		if err := f.agent.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
}

func (f *fixture) do(method, path, body string, header map[string]string) (int, map[string]any) {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (f *fixture) send(id, content string) {
	f.t.Helper()
	in := `{"type":"send-user-message","id":"` + id + `","content":"` + content + `","timestamp":1}`
	if code, out := f.do("POST", "/inputs", in, nil); code != 200 {
		f.t.Fatalf("POST /inputs = %d %v", code, out)
	}
}

// sseEvent is one event of the stream.
type sseEvent struct {
	id, event string
	data      map[string]any
}

// stream follows GET /events (from lastID when not empty).
func (f *fixture) stream(lastID string) (<-chan sseEvent, func()) {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		f.t.Fatalf("GET /events = %d %s", resp.StatusCode, body)
	}
	ch := make(chan sseEvent, 1000)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				e.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				json.Unmarshal([]byte(line[6:]), &e.data)
			case line == "" && e.event != "":
				ch <- e
				e = sseEvent{}
			}
		}
	}()
	return ch, cancel
}

// next returns the next event that satisfies ok, skipping others.
func next(t *testing.T, ch <-chan sseEvent, what string, ok func(sseEvent) bool) sseEvent {
	t.Helper()
	deadline := time.After(hangGuard)
	for {
		select {
		case e, open := <-ch:
			if !open {
				t.Fatalf("the stream ended before %s", what)
			}
			if ok(e) {
				return e
			}
		case <-deadline:
			t.Fatalf("hung waiting for %s", what)
		}
	}
}

func isJob(key, kind string) func(sseEvent) bool {
	return func(e sseEvent) bool { return e.event == "job" && e.data["key"] == key && e.data["kind"] == kind }
}

func isInput(seq int) func(sseEvent) bool {
	return func(e sseEvent) bool { return e.event == "input" && e.data["seq"] == float64(seq) }
}

// TestTimelineLiveAndResumed: an input shows in the stream with its seq,
// time, state diff and the jobs it started; the job's start and end follow
// with a duration; a reconnect with Last-Event-ID gets exactly what came
// after; history is sent on connect.
func TestTimelineLiveAndResumed(t *testing.T) {
	f := newFixture(t)
	ch, stop := f.stream("")
	next(t, ch, "the snapshot", func(e sseEvent) bool { return e.event == "snapshot" && e.data["seq"] == float64(0) })
	f.send("m1", "hello")
	row := next(t, ch, "input 1", isInput(1))
	if row.id != "1" || row.data["type"] != "send-user-message" || row.data["actor"] != "user" || row.data["time"].(float64) <= 0 {
		t.Errorf("row %s %v", row.id, row.data)
	}
	diff, _ := json.Marshal(row.data["diff"])
	if want := `[{"op":"add","path":"/userMessages/-","value":{"content":"hello","id":"m1","timestamp":1}}]`; string(diff) != want {
		t.Errorf("diff %s, want %s", diff, want)
	}
	if started, _ := json.Marshal(row.data["started"]); string(started) != `["llm/reply-m1"]` {
		t.Errorf("started %s", started)
	}
	next(t, ch, "the job's start", isJob("llm/reply-m1", "started"))
	reply := next(t, ch, "input 2", isInput(2))
	if c, _ := json.Marshal(reply.data["cancelled"]); string(c) != `["llm/reply-m1"]` || reply.data["actor"] != "llm" {
		t.Errorf("the reply's row: %v", reply.data)
	}
	done := next(t, ch, "the job's end", isJob("llm/reply-m1", "completed"))
	if _, ok := done.data["durationMs"].(float64); !ok {
		t.Errorf("no duration: %v", done.data)
	}
	stop()

	// Resume after input 1: input 2 comes again, not input 1.
	ch, stop = f.stream("1")
	defer stop()
	first := next(t, ch, "the first event", func(sseEvent) bool { return true })
	if !(first.event == "job" && strings.HasPrefix(first.id, "1.")) && first.id != "2" {
		t.Errorf("the resumed stream began with %s %s", first.id, first.event)
	}
	next(t, ch, "input 2", isInput(2))
	snap := next(t, ch, "the snapshot", func(e sseEvent) bool { return e.event == "snapshot" })
	if snap.data["seq"] != float64(2) {
		t.Errorf("snapshot at %v", snap.data["seq"])
	}

	// A new client gets the history.
	ch2, stop2 := f.stream("")
	defer stop2()
	next(t, ch2, "input 1 in the history", isInput(1))
	next(t, ch2, "input 2 in the history", isInput(2))
}

// TestTimeTravelRunsNothing: the state after an earlier input, rebuilt from
// the journal, and the jobs it calls for, which do not run.
func TestTimeTravelRunsNothing(t *testing.T) {
	f := newFixture(t)
	ch, stop := f.stream("")
	defer stop()
	f.send("m1", "one")
	next(t, ch, "the reply", isInput(2))
	ran := f.replay.Load()
	code, out := f.do("GET", "/state?seq=1", "", nil)
	if code != 200 || out["seq"] != float64(1) {
		t.Fatalf("GET /state?seq=1 = %d %v", code, out)
	}
	if jobs, _ := json.Marshal(out["jobs"]); string(jobs) != `["llm/reply-m1"]` {
		t.Errorf("jobs %s", jobs)
	}
	if msgs, _ := out["state"].(map[string]any)["assiMessages"].([]any); len(msgs) != 0 {
		t.Errorf("the past state has replies: %v", msgs)
	}
	if f.replay.Load() != ran {
		t.Errorf("time travel ran a job")
	}
	if code, out := f.do("GET", "/state?seq=0", "", nil); code != 200 || len(out["jobs"].([]any)) != 0 {
		t.Errorf("the initial state: %d %v", code, out)
	}
	for _, c := range []struct {
		q    string
		code int
		says string
	}{{"seq=x", 400, "not a sequence number"}, {"seq=99", 404, "no input 99 yet"}} {
		if code, out := f.do("GET", "/state?"+c.q, "", nil); code != c.code || !strings.Contains(out["error"].(string), c.says) {
			t.Errorf("%s: %d %v", c.q, code, out)
		}
	}
}

// TestHoldStepRelease: held, inputs from outside are applied but jobs
// wait at the gate; release lets them go and holds no more.
func TestHoldStepRelease(t *testing.T) {
	f := newFixture(t)
	ch, stop := f.stream("")
	defer stop()
	if code, out := f.do("POST", "/step", "", nil); code != 409 || !strings.Contains(out["error"].(string), "not held") {
		t.Errorf("a step before the hold: %d %v", code, out)
	}
	if code, out := f.do("POST", "/hold", "", nil); code != 200 || out["held"] != true {
		t.Fatalf("POST /hold = %d %v", code, out)
	}
	f.send("a", "first")
	f.send("b", "second")
	next(t, ch, "a held", isJob("llm/reply-a", "held"))
	next(t, ch, "b held", isJob("llm/reply-b", "held"))
	if n := len(f.agent.Current().UserMessages); n != 2 {
		t.Fatalf("held inputs: %d user messages applied", n)
	}
	if f.replay.Load() != 0 || len(f.agent.Current().AssiMessages) != 0 {
		t.Fatalf("a held job ran")
	}
	if _, out := f.do("GET", "/hold", "", nil); !slices.Equal(waitingKeys(out), []string{"job llm/reply-a", "job llm/reply-b"}) {
		t.Errorf("waiting %v", out["waiting"])
	}
	if _, out := f.do("POST", "/release", "", nil); out["held"] != false || len(waitingKeys(out)) != 0 {
		t.Errorf("after release: %v", out)
	}
	done := map[string]bool{}
	for len(done) < 2 {
		e := next(t, ch, "a's and b's replies", func(e sseEvent) bool { return e.event == "job" && e.data["kind"] == "completed" })
		done[e.data["key"].(string)] = true
	}
	if !done["llm/reply-a"] || !done["llm/reply-b"] {
		t.Errorf("completed after the release: %v", done)
	}
	f.send("c", "third")
	next(t, ch, "c runs at once", isJob("llm/reply-c", "completed"))
	if code, out := f.do("POST", "/step", "", nil); code != 409 {
		t.Errorf("a step after the release: %d %v", code, out)
	}
}

// TestStepAppliesOneInput: on a real journal with real jobs, each of which
// hands in two inputs (a note, then its reply), every step applies exactly
// one input, and no job runs but those a step lets through. After each
// step the test waits until nothing runs (every job waits at a door or has
// ended): then nothing can move the journal but a step, and it must have
// moved by one.
func TestStepAppliesOneInput(t *testing.T) {
	f := newFixtureWith(t, true)
	ch, stop := f.stream("")
	defer stop()
	f.do("POST", "/hold", "", nil)
	f.send("a", "first")
	f.send("b", "second")
	next(t, ch, "a held", isJob("llm/reply-a", "held"))
	next(t, ch, "b held", isJob("llm/reply-b", "held"))
	if f.replay.Load() != 0 {
		t.Fatal("a held job ran")
	}
	seq := f.agent.Seq() // 2
	var applied []string
	for steps := 1; ; steps++ {
		code, out := f.do("POST", "/step", "", nil)
		if code == 409 {
			if !strings.Contains(out["error"].(string), "nothing to step") {
				t.Fatalf("step %d: %v", steps, out)
			}
			if steps != 5 {
				t.Errorf("%d steps, want 4 (each job hands in 2 inputs)", steps-1)
			}
			break
		}
		st, _ := out["step"].(map[string]any)
		if code != 200 || st["applied"] != true || st["type"] != "send-assi-message" {
			t.Fatalf("step %d = %d %v", steps, code, out)
		}
		f.quiet(ch)
		if steps == 1 && f.replay.Load() != 2 {
			// The first step let both jobs at the gate run: the
			// first input either dispatched took the step.
			t.Errorf("the first step ran %d jobs, want both", f.replay.Load())
		}
		seq++
		if got := f.agent.Seq(); got != seq {
			t.Fatalf("after step %d the journal is at %d, want %d: a step applied %d inputs", steps, got, seq, int(got)-int(seq)+1)
		}
		if st["seq"] != float64(seq) {
			t.Errorf("step %d says it applied input %v, want %d", steps, st["seq"], seq)
		}
		msgs := f.agent.Current().AssiMessages
		applied = append(applied, msgs[len(msgs)-1].ID)
	}
	slices.Sort(applied)
	if want := []string{"note-a", "note-b", "re-a", "re-b"}; !slices.Equal(applied, want) {
		t.Errorf("the steps applied %v, want %v", applied, want)
	}
	if f.replay.Load() != 2 {
		t.Errorf("%d jobs ran, want 2", f.replay.Load())
	}
}

// quiet waits until no job runs and no step is in progress: every job waits
// at the gate or the route, or has ended. Each change of that shows in the
// stream, so the hold is read again after each event.
func (f *fixture) quiet(ch <-chan sseEvent) {
	f.t.Helper()
	for {
		_, h := f.do("GET", "/hold", "", nil)
		if len(h["running"].([]any)) == 0 && h["stepping"] == false {
			return
		}
		next(f.t, ch, "a change of the hold", func(e sseEvent) bool { return e.event == "job" || e.event == "lifecycle" })
	}
}

// waitingKeys lists a hold's waiting as "kind key".
func waitingKeys(h map[string]any) []string {
	var out []string
	for _, x := range h["waiting"].([]any) {
		w := x.(map[string]any)
		out = append(out, w["kind"].(string)+" "+w["key"].(string))
	}
	return out
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestGuards: auth, validation of inputs, and bad event ids.
func TestGuards(t *testing.T) {
	f := newFixture(t)
	req, _ := http.NewRequest("GET", f.srv.URL+"/health", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("GET /health without the token = %d", resp.StatusCode)
	}
	if code, out := f.do("GET", "/health", "", nil); code != 200 || out["status"] != "ok" {
		t.Errorf("GET /health = %d %v", code, out)
	}
	resp, err = http.Get(f.srv.URL + "/app.js")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the page's script = %d", resp.StatusCode)
	}
	if code, out := f.do("POST", "/inputs", `{"type":"send-user-message","id":"x","content":5,"timestamp":1}`, nil); code != 400 || !strings.Contains(out["error"].(string), "/content") {
		t.Errorf("an invalid input: %d %v", code, out)
	}
	for _, id := range []string{"x", "01", "1.0", "1.", "-1", "1.2.3"} {
		if code, out := f.do("GET", "/events", "", map[string]string{"Last-Event-ID": id}); code != 400 || !strings.Contains(out["error"].(string), "Last-Event-ID") {
			t.Errorf("Last-Event-ID %q: %d %v", id, code, out)
		}
	}
	if f.agent.Seq() != 0 {
		t.Errorf("a refused input was journaled")
	}
}

// TestResumeAfterRestart: a panel on the reopened journal rebuilds the
// timeline, and a client that resumes with an id of the old process gets
// what followed it.
func TestResumeAfterRestart(t *testing.T) {
	f := newFixture(t)
	ch, stop := f.stream("")
	f.send("m1", "before")
	next(t, ch, "the reply", isInput(2))
	last := next(t, ch, "the job's end", isJob("llm/reply-m1", "completed")).id
	stop()
	// Wait for the reply to m2 through the agent, not the panel.
	replied := make(chan struct{})
	var once sync.Once
	unsub := f.agent.Subscribe(func(s decl.AgentState) {
		if len(s.AssiMessages) >= 2 {
			once.Do(func() { close(replied) })
		}
	})
	defer unsub()
	f.send("m2", "while away")
	select {
	case <-replied:
	case <-time.After(hangGuard):
		t.Fatal("no reply to m2")
	}

	// A second panel on the same agent stands for the restarted process:
	// its timeline comes from the journal alone.
	p2, err := devpanel.New(devpanel.Config[decl.AgentState, decl.AgentInput]{
		Definition: agent.Definition(), Decode: decl.DecodeInput, InputSchema: decl.InputSchema(), Auth: httpbridge.Bearer(token),
		Jobs: func(s decl.AgentState) []string {
			var keys []string
			for k := range replies(f)(s.ContextOfLlm()) {
				keys = append(keys, "llm/"+k)
			}
			return keys
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Attach(f.agent); err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	srv := httptest.NewServer(p2)
	defer srv.Close()
	old := f.srv
	f.srv = srv
	defer func() { f.srv = old }()
	ch, stop = f.stream(last)
	defer stop()
	first := next(t, ch, "the first event", func(sseEvent) bool { return true })
	if first.id != "3" || first.data["type"] != "send-user-message" {
		t.Errorf("resumed after %s with %s %v, want input 3", last, first.id, first.data)
	}
	next(t, ch, "input 4", isInput(4))

	// What the journal determines is rebuilt: the jobs each input started
	// and cancelled; the jobs' own events of before are gone.
	ch, stop = f.stream("")
	defer stop()
	var jobEvents, rebuilt int
	for e := range ch {
		if e.event == "snapshot" {
			break
		}
		if e.event == "job" {
			jobEvents++
		}
		if e.event == "input" && e.data["seq"] == float64(1) {
			rebuilt++
			if started, _ := json.Marshal(e.data["started"]); string(started) != `["llm/reply-m1"]` {
				t.Errorf("rebuilt row 1 started %s", started)
			}
		}
		if e.event == "input" && e.data["seq"] == float64(2) {
			rebuilt++
			if c, _ := json.Marshal(e.data["cancelled"]); string(c) != `["llm/reply-m1"]` {
				t.Errorf("rebuilt row 2 cancelled %s", c)
			}
		}
	}
	if rebuilt != 2 {
		t.Errorf("rows 1 and 2 were not rebuilt (%d)", rebuilt)
	}
	if jobEvents != 0 {
		t.Errorf("%d job events of before the restart", jobEvents)
	}
}
