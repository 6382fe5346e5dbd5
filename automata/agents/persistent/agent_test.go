package persistent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/agents/persistent/decl"
	"github.com/moora-go/moora/automata/agents/persistent/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/openai"
	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/internal/fakemodel"
	"github.com/moora-go/moora/internal/testbuf"
)

// wordCountArgs are the word-count tool's arguments.
type wordCountArgs struct {
	Text string `json:"text" jsonschema_description:"The text whose words to count."`
}

// wordCount is the tool the tests' llm asks for: it counts the words of a
// text.
var wordCount = toolkit.Func("word-count", "Counts the words of a text: the runs of characters between white space.",
	func(_ context.Context, a wordCountArgs) (string, error) {
		return strconv.Itoa(len(strings.Fields(a.Text))), nil
	})

// countingModel is the tests' llm: it answers a user message by asking for
// the word count of it, under a call id made of the request's idempotency
// key (the llm job's key, llm/llm-{messageId}), and a tool's result by
// reporting it.
func countingModel() llm.Scripted {
	return llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		if len(req.Messages) == 0 {
			return llm.Response{Text: "Hello."}, nil
		}
		last := req.Messages[len(req.Messages)-1]
		switch last.Role {
		case llm.RoleUser:
			args, err := json.Marshal(wordCountArgs{Text: last.Content})
			if err != nil {
				return llm.Response{}, err
			}
			id := "call-" + strings.TrimPrefix(req.IdempotencyKey, "llm/llm-")
			return llm.Response{Text: "Let me count the words of that.", ToolCalls: []llm.ToolCall{{ID: id, Name: "word-count", Arguments: args}}}, nil
		case llm.RoleTool:
			return llm.Response{Text: fmt.Sprintf("Your message has %s words.", last.Content)}, nil
		}
		return llm.Response{Text: "I have nothing to add."}, nil
	}}
}

// newKit is a kit of tools, or the test's end.
func newKit(t testing.TB, tools ...toolkit.Tool) *toolkit.Kit {
	t.Helper()
	kit, err := toolkit.New(toolkit.Config{}, tools...)
	if err != nil {
		t.Fatal(err)
	}
	return kit
}

// openBolt opens the bbolt journal agent.db in dir.
func openBolt(t testing.TB, dir string) journal.Store {
	t.Helper()
	store, err := bolt.Open(filepath.Join(dir, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// newAgent starts an agent over cfg, with the counting model and the
// word-count tool unless cfg says otherwise, on a new journal unless cfg
// has a store, and closes it when the test ends.
func newAgent(t testing.TB, cfg Config) *Agent {
	t.Helper()
	if cfg.Model == nil {
		cfg.Model = countingModel()
	}
	if cfg.Tools == nil {
		cfg.Tools = newKit(t, wordCount)
	}
	if cfg.Store == nil {
		cfg.Store = openBolt(t, t.TempDir())
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return a
}

// wait waits until a is idle, failing the test after a minute: a hang guard.
func wait(t testing.TB, a *Agent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.Wait(ctx); err != nil {
		t.Fatalf("waiting for the agent: %v\nits conversation: %s", err, conversation(a.State()))
	}
}

// conversation is s's conversation, a line a message.
func conversation(s decl.AgentState) string {
	var b strings.Builder
	for _, m := range Conversation(s.UserMessages, s.AssistantMessages, s.ToolMessages) {
		fmt.Fprintf(&b, "\n%s %s: %s", m.Role, m.ID, m.Content)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, " [calls %s %s(%s)]", c.ID, c.Name, c.Input)
		}
	}
	return b.String()
}

func TestConversationWithAToolCall(t *testing.T) {
	a := newAgent(t, Config{System: "Count words."})
	if err := a.Send(context.Background(), "terminal", "count these four words"); err != nil {
		t.Fatal(err)
	}
	wait(t, a)
	s := a.State()
	if s.SystemPrompt != "Count words." {
		t.Errorf("system prompt %q, want Count words.", s.SystemPrompt)
	}
	var got []string
	for _, m := range Conversation(s.UserMessages, s.AssistantMessages, s.ToolMessages) {
		got = append(got, m.Role+": "+m.Content)
	}
	want := []string{"user: count these four words", "assistant: Let me count the words of that.", "tool: 4", "assistant: Your message has 4 words."}
	if !slices.Equal(got, want) {
		t.Errorf("conversation %q\nwant         %q", got, want)
	}
	if u := s.UserMessages[0]; u.Channel != "terminal" || !strings.HasPrefix(u.ID, "user-") {
		t.Errorf("user message %+v: want the channel terminal and an id user-{time}", u)
	}
}

func TestTransitionsArePure(t *testing.T) {
	inputs := []decl.AgentInput{
		decl.SetSystemPrompt{Content: "be brief"},
		decl.SendUserMessage{Message: decl.UserMessage{ID: "u1", Content: "hi there", Timestamp: 10}},
		decl.SendAssistantMessage{Message: decl.AssistantMessage{ID: "a1", Content: "counting", Timestamp: 11,
			ToolCalls: []decl.ToolCall{{ID: "c1", Name: "word-count", Input: "hi there"}}}, AnsweredUpTo: 10},
		decl.SendToolMessage{Message: decl.ToolMessage{ID: "t1", CallID: "c1", Content: "2", Timestamp: 12}},
		decl.SendUserMessage{Message: decl.UserMessage{ID: "u0", Content: "late", Timestamp: 9}},
		decl.SendAssistantMessage{Message: decl.AssistantMessage{ID: "a2", Content: "2 words", Timestamp: 13}, AnsweredUpTo: 12},
	}
	if err := automata.CheckPure(agent.Definition(), inputs...); err != nil {
		t.Fatal(err)
	}
	s := agent.Definition().Initial()
	for _, in := range inputs {
		s = agent.Transition(s, in)
	}
	var ids []string
	for _, m := range Conversation(s.UserMessages, s.AssistantMessages, s.ToolMessages) {
		ids = append(ids, m.ID)
	}
	if got := strings.Join(ids, " "); got != "u0 u1 a1 t1 a2" {
		t.Errorf("conversation order = %s, want u0 u1 a1 t1 a2 (sorted by timestamp)", got)
	}
	if s.LastSentToLlmAt != 12 {
		t.Errorf("lastSentToLLMAt = %d, want 12", s.LastSentToLlmAt)
	}
	w := work{model: countingModel(), kit: newKit(t), now: time.Now}
	if !Idle(s) {
		t.Errorf("finished conversation still calls for %v and %v", w.llmJobs(s.ContextOfLlm()), w.toolkitJobs(s.ContextOfToolkit()))
	}
}

// TestMessagesInOneMillisecondAreEachAnswered: on a clock that does not
// move, two messages arrive in the same millisecond; each gets its own time
// and id (stamp), and the llm is called again for the second, not taken to
// have answered it with its answer to the first.
func TestMessagesInOneMillisecondAreEachAnswered(t *testing.T) {
	frozen := time.UnixMilli(1_800_000_000_000)
	a := newAgent(t, Config{Now: func() time.Time { return frozen }})
	for _, text := range []string{"one two", "three four five"} {
		if err := a.Send(context.Background(), "terminal", text); err != nil {
			t.Fatal(err)
		}
		wait(t, a)
	}
	s := a.State()
	if len(s.UserMessages) != 2 || s.UserMessages[0].ID == s.UserMessages[1].ID || s.UserMessages[0].Timestamp >= s.UserMessages[1].Timestamp {
		t.Fatalf("user messages %+v: want two, with their own ids and times", s.UserMessages)
	}
	var replies []string
	for _, m := range s.AssistantMessages {
		if m.Content != "Let me count the words of that." {
			replies = append(replies, m.Content)
		}
	}
	if want := []string{"Your message has 2 words.", "Your message has 3 words."}; !slices.Equal(replies, want) {
		t.Fatalf("replies %q, want %q", replies, want)
	}
}

// TestAUserMessageIDIsUsedOnce: a message whose id the conversation has
// already is refused by the admission step, before the journal.
func TestAUserMessageIDIsUsedOnce(t *testing.T) {
	a := newAgent(t, Config{})
	ctx := context.Background()
	msg := decl.SendUserMessage{Message: decl.UserMessage{ID: "m1", Content: "one", Channel: "api"}}
	if err := a.Machine().Dispatch(ctx, msg); err != nil {
		t.Fatal(err)
	}
	wait(t, a)
	seq := a.Machine().Seq()
	err := a.Machine().Dispatch(ctx, msg)
	if err == nil || !strings.Contains(err.Error(), `a user message with id "m1" is in the conversation already`) {
		t.Fatalf("the same id again: %v, want it refused", err)
	}
	if got := a.Machine().Seq(); got != seq {
		t.Errorf("the journal went from %d to %d inputs on a refused message", seq, got)
	}
}

// TestParallelToolCallsRunAtOnce: the llm asks for two tool calls in one
// reply, and each call blocks until both have started, so that the two
// finish only if they run at once. The first finishes after the second's
// result is in the state; the llm is called once, with both results, in
// the order of the calls, not of their results.
func TestParallelToolCallsRunAtOnce(t *testing.T) {
	type args struct {
		Label string `json:"label"`
	}
	var (
		started         atomic.Int32
		bothStarted     = make(chan struct{})
		secondAnswered  = make(chan struct{})
		closeSecondOnce sync.Once
	)
	barrier := toolkit.Func("barrier", "Waits for the other calls.", func(ctx context.Context, a args) (string, error) {
		if started.Add(1) == 2 {
			close(bothStarted)
		}
		select {
		case <-bothStarted:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if a.Label == "first" {
			select {
			case <-secondAnswered:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		return "ran " + a.Label, nil
	}).With(toolkit.Policy{Timeout: time.Hour}) // the test's hang guard bounds it

	var mu sync.Mutex
	var requests []llm.Request
	model := llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		mu.Lock()
		requests = append(requests, req)
		mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleUser {
			return llm.Response{Text: "Both at once.", ToolCalls: []llm.ToolCall{
				{ID: "c1", Name: "barrier", Arguments: json.RawMessage(`{"label":"first"}`)},
				{ID: "c2", Name: "barrier", Arguments: json.RawMessage(`{"label":"second"}`)},
			}}, nil
		}
		var results []string
		for _, m := range req.Messages {
			if m.Role == llm.RoleTool {
				results = append(results, m.ToolCallID+" "+m.Content)
			}
		}
		return llm.Response{Text: strings.Join(results, ", ")}, nil
	}}
	a := newAgent(t, Config{Model: model, Tools: newKit(t, barrier)})
	a.Subscribe(func(s decl.AgentState) {
		for _, m := range s.ToolMessages {
			if m.CallID == "c2" {
				closeSecondOnce.Do(func() { close(secondAnswered) })
			}
		}
	})
	if err := a.Send(context.Background(), "terminal", "run both"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	if err := a.Wait(ctx); err != nil {
		t.Fatalf("the calls did not both finish (%d started: one at a time?): %v%s", started.Load(), err, conversation(a.State()))
	}
	s := a.State()
	if got := []string{s.ToolMessages[0].CallID, s.ToolMessages[1].CallID}; !slices.Equal(got, []string{"c2", "c1"}) {
		t.Fatalf("results in the state in the order %v, want c2 c1 (the first waited for the second)", got)
	}
	if got, want := s.AssistantMessages[len(s.AssistantMessages)-1].Content, "c1 ran first, c2 ran second"; got != want {
		t.Errorf("the llm's answer %q, want %q: the results in the order of the calls", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(requests) != 2 {
		t.Errorf("the llm was called %d times, want 2: once for the message, once with both results", len(requests))
	}
}

// TestAFailedCallIsAFailedReply: the llm is the OpenAI provider over HTTP,
// talking to a fake model on loopback that fails in each way a real one
// does. The failed call is a failed reply in the state, at once, with the
// reason, and logged; Wait returns, the agent idle; the next message is
// answered, and the llm is not sent the failed reply. The next run does not
// make the failed call again.
func TestAFailedCallIsAFailedReply(t *testing.T) {
	for _, tc := range []struct {
		name    string
		message string // what the user says, which makes the fake fail
		says    string // in the reason
		config  openai.Config
	}{
		{"byte limit", fakemodel.Endless, "response too large", openai.Config{MaxResponseBytes: 64 << 10}},
		{"HTTP 500", fakemodel.Status, "HTTP 500", openai.Config{}},
		// The wait for the first byte is bounded by 2 s: the fake
		// answers the next message at once.
		{"timeout", fakemodel.Hang, "MaxFirstByteWait", openai.Config{MaxFirstByteWait: 2 * time.Second}},
		{"content filter", fakemodel.Filter, "content filter", openai.Config{}},
		{"connection dropped", fakemodel.Drop, "malformed stream", openai.Config{}},
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
			dir := t.TempDir()
			a, err := New(Config{Model: model, Store: openBolt(t, dir), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Send(context.Background(), "terminal", tc.message); err != nil {
				t.Fatal(err)
			}
			wait(t, a)
			s := a.State()
			if len(s.AssistantMessages) != 1 || s.AssistantMessages[0].Error == nil {
				t.Fatalf("assistant messages %+v, want one failed reply", s.AssistantMessages)
			}
			failed := s.AssistantMessages[0]
			reason := *failed.Error
			t.Logf("the reply failed: %s", reason)
			if !strings.Contains(reason, tc.says) || failed.Content != "" || len(failed.ToolCalls) != 0 {
				t.Errorf("the failed reply %+v, want no content and a reason that says %q", failed, tc.says)
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), tc.says) {
				t.Errorf("the log does not warn of the failure:\n%s", logs.String())
			}

			if err := a.Send(context.Background(), "terminal", "hello again"); err != nil {
				t.Fatal(err)
			}
			wait(t, a)
			s = a.State()
			if len(s.AssistantMessages) != 2 || s.AssistantMessages[1].Content != fakemodel.Reply("hello again") || s.AssistantMessages[1].Error != nil {
				t.Fatalf("assistant messages %+v, want the failed reply and %q", s.AssistantMessages, fakemodel.Reply("hello again"))
			}
			calls := fake.Requests()
			if err := a.Close(context.Background()); err != nil {
				t.Fatal(err)
			}

			b := newAgent(t, Config{Model: model, Store: openBolt(t, dir)})
			wait(t, b)
			if r := b.Resumed(); len(r) != 0 {
				t.Errorf("the next run resumed %q, want nothing", r)
			}
			if got := b.State().AssistantMessages; len(got) != 2 || got[0].Error == nil || *got[0].Error != reason {
				t.Errorf("after a restart the assistant messages are %+v, want the failed reply and the answer", got)
			}
			if fake.Requests() != calls {
				t.Errorf("the next run called the model %d more times, want none", fake.Requests()-calls)
			}
		})
	}
}

// TestTheLLMIsNotSentAFailedReply: the conversation after a failed reply is
// the messages that were written.
func TestTheLLMIsNotSentAFailedReply(t *testing.T) {
	failure := "llm: openai: HTTP 500"
	s := decl.AgentState{
		UserMessages: []decl.UserMessage{{ID: "u1", Content: "one", Timestamp: 10}, {ID: "u2", Content: "two", Timestamp: 12}},
		AssistantMessages: []decl.AssistantMessage{
			{ID: "a1", Timestamp: 11, Error: &failure},
		},
		LastSentToLlmAt: 10,
	}
	w := work{now: time.Now}
	req := w.request("", Prompt(s.ContextOfLlm(), 12, DefaultPromptBytes))
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range req.Messages {
		got = append(got, string(m.Role)+" "+m.Content)
	}
	if want := []string{"user one", "user two"}; !slices.Equal(got, want) {
		t.Fatalf("the llm is sent %q, want %q", got, want)
	}
}

// A user message typed while a tool ran is newer than the call and older
// than its result; the llm is sent the result right after the call, as chat
// APIs require, and the user message after it.
func TestToolResultsFollowTheirCalls(t *testing.T) {
	s := decl.AgentState{
		SystemPrompt: "count",
		UserMessages: []decl.UserMessage{{ID: "u1", Content: "one two", Timestamp: 10}, {ID: "u2", Content: "and three", Timestamp: 12}},
		AssistantMessages: []decl.AssistantMessage{{ID: "a1", Content: "Counting.", Timestamp: 11, ToolCalls: []decl.ToolCall{
			{ID: "c1", Name: "word-count", Input: `{"text":"one two"}`},
			{ID: "c2", Name: "word-count", Input: `{"text":"three"}`},
		}}},
		ToolMessages: []decl.ToolMessage{
			{ID: "t2", CallID: "c2", Content: "1", Timestamp: 13},
			{ID: "t1", CallID: "c1", Content: "2", Timestamp: 14},
		},
		LastSentToLlmAt: 10,
	}
	kit := newKit(t, wordCount)
	w := work{model: countingModel(), kit: kit, tools: kit.LLMTools(), now: time.Now}
	last, ok := pendingLLMCall(s.ContextOfLlm())
	if !ok || last.ID != "t1" {
		t.Fatalf("pending llm call = %v, last %q; want one, up to t1", ok, last.ID)
	}
	req := w.request(s.SystemPrompt, Prompt(s.ContextOfLlm(), last.Timestamp, DefaultPromptBytes))
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range req.Messages {
		got = append(got, string(m.Role)+":"+m.Content+m.ToolCallID)
	}
	want := []string{"user:one two", "assistant:Counting.", "tool:2c1", "tool:1c2", "user:and three"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("messages = %q\nwant       %q", got, want)
	}
	if len(req.Tools) != 1 || req.Tools[0].Name != "word-count" {
		t.Errorf("tools = %+v, want word-count", req.Tools)
	}
}

// TestToolJobsAreTheUnansweredCalls: the toolkit's jobs are the calls of
// the newest assistant message that have no result, each under its own
// key; the llm's job waits until there are none.
func TestToolJobsAreTheUnansweredCalls(t *testing.T) {
	calls := []decl.ToolCall{{ID: "c1", Name: "word-count"}, {ID: "c2", Name: "word-count"}, {ID: "c3", Name: "word-count"}}
	older := decl.AssistantMessage{ID: "a0", Timestamp: 5, ToolCalls: []decl.ToolCall{{ID: "c0", Name: "word-count"}}}
	tests := []struct {
		name    string
		results []decl.ToolMessage
		want    []string
	}{
		{"none answered", nil, []string{"tool-a1-c1", "tool-a1-c2", "tool-a1-c3"}},
		{"the second answered", []decl.ToolMessage{{CallID: "c2", Timestamp: 12}}, []string{"tool-a1-c1", "tool-a1-c3"}},
		{"all answered, in another order", []decl.ToolMessage{{CallID: "c3", Timestamp: 12}, {CallID: "c1", Timestamp: 13}, {CallID: "c2", Timestamp: 14}}, nil},
	}
	w := work{model: countingModel(), kit: newKit(t), now: time.Now}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := decl.AgentState{
				UserMessages:      []decl.UserMessage{{ID: "u1", Timestamp: 10}},
				AssistantMessages: []decl.AssistantMessage{older, {ID: "a1", Timestamp: 11, ToolCalls: calls}},
				ToolMessages:      tt.results,
				LastSentToLlmAt:   10,
			}
			var got []string
			for key := range w.toolkitJobs(s.ContextOfToolkit()) {
				got = append(got, key)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("toolkit jobs %q, want %q", got, tt.want)
			}
			if llmJobs := w.llmJobs(s.ContextOfLlm()); (len(llmJobs) > 0) != (tt.want == nil) {
				t.Errorf("llm jobs %v while %d calls are pending", llmJobs, len(tt.want))
			}
		})
	}
}
