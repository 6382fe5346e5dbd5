package reflexor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm/openai"
	"github.com/moora-go/moora/internal/fakemodel"
	"github.com/moora-go/moora/internal/testbuf"
)

// TestModelFailureIsAFailedReply: the brain is the OpenAI provider over
// HTTP, talking to a fake model on loopback that fails in each way a real
// one does. The failed call ends the reply's token stream with an error
// event, the reply is a failed message in the state with the reason, the
// failure is logged with it, and the next message is answered as any
// other.
func TestModelFailureIsAFailedReply(t *testing.T) {
	for _, tc := range []struct {
		name    string
		message string // what the user says, which makes the fake fail
		says    string // in the reason
		logs    string // in the logged error
		config  openai.Config
	}{
		{"byte limit", fakemodel.Endless, "response too large", "Config.MaxResponseBytes", openai.Config{}},
		{"HTTP 500", fakemodel.Status, "HTTP 500", "HTTP 500", openai.Config{}},
		// The wait for the first byte is bounded by 2 s: the fake
		// answers the next message at once.
		{"timeout", fakemodel.Hang, "stream stalled", "Config.MaxFirstByteWait", openai.Config{MaxFirstByteWait: 2 * time.Second}},
		{"content filter", fakemodel.Filter, "content filter", "content filter", openai.Config{}},
		{"connection dropped", fakemodel.Drop, "malformed stream", "malformed stream", openai.Config{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakemodel.Start(t)
			cfg := tc.config
			cfg.BaseURL, cfg.APIKey, cfg.Model = fake.URL, "sk-test", "fake"
			model, err := openai.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var logs testbuf.Buffer
			h := startHostOf(t, Config{Model: model, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})

			h.say(t, 1, tc.message)
			s := h.agent.Machine().Current()
			if len(s.AssistantMessages) != 1 {
				t.Fatalf("the state holds %d assistant messages, want the failed reply: %+v", len(s.AssistantMessages), s.AssistantMessages)
			}
			failed := s.AssistantMessages[0]
			if failed.Streaming || failed.Error == nil || failed.Content != "" {
				t.Fatalf("the reply is %+v, want a failed one: not streaming, no content, an error", failed)
			}
			reason := *failed.Error
			t.Logf("the reply failed: %s", reason)
			if !strings.Contains(reason, tc.says) {
				t.Errorf("the reply failed with %q, want it to say %q", reason, tc.says)
			}
			// Whoever reads the page does not learn where the model is.
			if host := strings.TrimPrefix(fake.URL, "http://"); strings.Contains(reason, host[:strings.IndexByte(host, ':')]) {
				t.Errorf("the reply's reason %q names the model's host (%s)", reason, fake.URL)
			}
			if s.CalledBrainAt != s.UserMessages[0].Timestamp {
				t.Errorf("calledBrainAt = %d, want the message answered (%d)", s.CalledBrainAt, s.UserMessages[0].Timestamp)
			}

			// The token stream ends with the error event, whose data is
			// the reason.
			events := h.stream(t, failed.ID)
			if n := len(events); n == 0 || events[n-1].name != "error" || events[n-1].data != reason {
				t.Errorf("the stream of %s: %v, want it to end with the error event %q", failed.ID, tail(events), reason)
			}
			for _, ev := range events {
				if ev.name == "end" {
					t.Errorf("the stream of the failed reply has an end event: %v", ev)
				}
			}

			// Logged, with the reason.
			var logged bool
			for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				var rec map[string]any
				if json.Unmarshal([]byte(line), &rec) == nil && rec["level"] == "WARN" &&
					strings.Contains(fmt.Sprint(rec["error"]), tc.logs) && rec["reflexor.message.id"] == failed.ID {
					logged = true
				}
			}
			if !logged {
				t.Errorf("no warning that names %s and says %q in the log:\n%s", failed.ID, tc.logs, logs.String())
			}

			// The conversation goes on.
			h.say(t, 2, "hello again")
			s = h.agent.Machine().Current()
			if len(s.AssistantMessages) != 2 {
				t.Fatalf("after a second message the state holds %d assistant messages, want 2: %+v", len(s.AssistantMessages), s.AssistantMessages)
			}
			next := s.AssistantMessages[1]
			if next.Error != nil || next.Streaming || next.Content != fakemodel.Reply("hello again") {
				t.Fatalf("the reply to the second message is %+v, want %q", next, fakemodel.Reply("hello again"))
			}
			if s.AssistantMessages[0].Error == nil || *s.AssistantMessages[0].Error != reason {
				t.Errorf("the failed reply changed: %+v", s.AssistantMessages[0])
			}
			if events := h.stream(t, next.ID); len(events) == 0 || events[len(events)-1].name != "end" {
				t.Errorf("the stream of the second reply: %v, want it to end with the end event", tail(events))
			}
		})
	}
}

// sseEvent is an event of a server-sent event stream.
type sseEvent struct {
	name string
	data string // decoded from its JSON string
}

// tail is the last few events, for a message.
func tail(events []sseEvent) []sseEvent { return events[max(len(events)-3, 0):] }

// stream reads the token stream of message id until the server ends it.
func (h *host) stream(t testing.TB, id string) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", h.base+"/streams/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the stream of %s: %s", id, resp.Status)
	}
	var events []sseEvent
	var ev sseEvent
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 8<<20)
	for lines.Scan() {
		line := lines.Text()
		switch {
		case line == "":
			if ev.name != "" {
				events = append(events, ev)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data); err != nil {
				t.Fatalf("the stream of %s: data %.80s: %v", id, line, err)
			}
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatalf("reading the stream of %s: %v", id, err)
	}
	return events
}

// TestJournalOfVersion1GoesOn opens testdata/v1/agent.db, written under
// version 1 of the spec, whose last reply a failed call of the model left
// streaming, under version 2, which added the failed reply: the snapshot
// and the inputs are migrated, the reply left streaming is asked for again
// (as one a crash cut is) and answered, and the conversation goes on.
func TestJournalOfVersion1GoesOn(t *testing.T) {
	dir := t.TempDir()
	v1, err := os.ReadFile(filepath.Join("testdata", "v1", "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.db"), v1, 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := bolt.Open(filepath.Join(dir, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	idle := make(chan struct{}, 1)
	a, err := New(Config{Model: testBrain(0), Tools: testKit(t), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	a.Machine().Subscribe(func(s decl.AgentState) {
		if Idle(s) {
			select {
			case idle <- struct{}{}:
			default:
			}
		}
	})
	waitIdle := func() {
		t.Helper()
		deadline := time.After(hangGuard)
		for !Idle(a.Machine().Current()) {
			select {
			case <-idle:
			case <-deadline:
				t.Fatalf("the agent never became idle: %+v", a.Machine().Current().AssistantMessages)
			}
		}
	}
	waitIdle()
	if err := a.Machine().Dispatch(context.Background(), decl.UserSendMessage{MessageID: "u-5", Content: "and now?"}); err != nil {
		t.Fatal(err)
	}
	waitIdle()
	s := a.Machine().Current()
	var replies []string
	for _, m := range s.AssistantMessages {
		if m.Streaming || m.Error != nil {
			t.Errorf("message %s: %+v, want it written", m.ID, m)
		}
		replies = append(replies, m.Content)
	}
	want := []string{"Let me calculate that.", "Let me count the words.", "The word_count tool says: 4.", "You said: endless.", "You said: and now?."}
	if !slices.Equal(replies, want) {
		t.Errorf("the brain's messages:\n%q\nwant\n%q", replies, want)
	}
	entries, err := a.Machine().Inputs(0, a.Machine().Seq())
	if err != nil {
		t.Fatal(err)
	}
	versions := map[int]int{}
	for _, e := range entries {
		versions[e.Version]++
	}
	if versions[1] == 0 || versions[decl.SpecVersion] == 0 || len(versions) != 2 {
		t.Fatalf("inputs by version: %v, want those of version 1 and then of version %d", versions, decl.SpecVersion)
	}
}
