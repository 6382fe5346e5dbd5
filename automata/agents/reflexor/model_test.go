package reflexor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/agents/reflexor/impl/agent"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm"
)

// apply folds inputs into the initial state.
func apply(inputs ...decl.AgentInput) decl.AgentState {
	s := agent.Definition().Initial()
	for _, in := range inputs {
		s = agent.Transition(s, in)
	}
	return s
}

// TestTimeNeverRunsBackwards: an input older than the state of the actor it
// would change is rejected and changes nothing; one at the same time or
// later applies.
func TestTimeNeverRunsBackwards(t *testing.T) {
	setup := []decl.AgentInput{
		decl.UserSendMessage{Timestamp: 10, MessageID: "u1", Content: "hi"},
		decl.BrainCallTools{Timestamp: 20, CalledBrainAt: 10, ToolCalls: map[string]decl.ToolCallRequest{"c1": {Name: "clock", Arguments: "{}"}}},
		decl.BrainSendMessageStart{Timestamp: 21, CalledBrainAt: 10, MessageID: "m1"},
		decl.ToolkitRespond{Timestamp: 30, ToolCallID: "c1", Result: "noon"},
	}
	before := apply(setup...)
	cases := []struct {
		name string
		in   func(ts int64) decl.AgentInput
		at   int64 // the time of the actor's newest input
	}{
		{"user-send-message", func(ts int64) decl.AgentInput {
			return decl.UserSendMessage{Timestamp: ts, MessageID: "u2", Content: "again"}
		}, 10},
		{"brain-compress-history", func(ts int64) decl.AgentInput {
			return decl.BrainCompressHistory{Timestamp: ts, CalledBrainAt: 10, Summary: "s", CutAt: 10}
		}, 21},
		{"brain-load-tool-call", func(ts int64) decl.AgentInput {
			return decl.BrainLoadToolCall{Timestamp: ts, CalledBrainAt: 10, ToolCallID: "c1"}
		}, 21},
		{"brain-call-tools", func(ts int64) decl.AgentInput {
			return decl.BrainCallTools{Timestamp: ts, CalledBrainAt: 30, ToolCalls: map[string]decl.ToolCallRequest{"c2": {Name: "clock", Arguments: "{}"}}}
		}, 21},
		{"brain-send-message-start", func(ts int64) decl.AgentInput {
			return decl.BrainSendMessageStart{Timestamp: ts, CalledBrainAt: 30, MessageID: "m2"}
		}, 21},
		{"brain-send-message-complete", func(ts int64) decl.AgentInput {
			return decl.BrainSendMessageComplete{Timestamp: ts, CalledBrainAt: 10, MessageID: "m1", Content: "done"}
		}, 21},
		{"toolkit-respond", func(ts int64) decl.AgentInput {
			return decl.ToolkitRespond{Timestamp: ts, ToolCallID: "c9", Result: "x"}
		}, 30},
		{"toolkit-error", func(ts int64) decl.AgentInput {
			return decl.ToolkitError{Timestamp: ts, ToolCallID: "c9", Error: "x"}
		}, 30},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := agent.Transition(before, c.in(c.at-1)); !reflect.DeepEqual(got, before) {
				t.Errorf("an input older than the actor's state changed it:\n%+v\nwant\n%+v", got, before)
			}
			if got := agent.Transition(before, c.in(c.at)); reflect.DeepEqual(got, before) {
				t.Errorf("an input at the time of the actor's newest was rejected")
			}
		})
	}
}

// TestSeedRules: what each input does, as seed 000 describes it.
func TestSeedRules(t *testing.T) {
	call := func(ts, called int64, ids ...string) decl.AgentInput {
		calls := map[string]decl.ToolCallRequest{}
		for _, id := range ids {
			calls[id] = decl.ToolCallRequest{Name: "clock", Arguments: "{}"}
		}
		return decl.BrainCallTools{Timestamp: ts, CalledBrainAt: called, ToolCalls: calls}
	}
	cases := []struct {
		name   string
		inputs []decl.AgentInput
		check  func(s decl.AgentState) string
	}{
		{"a user message is appended", []decl.AgentInput{
			decl.UserSendMessage{Timestamp: 5, MessageID: "u1", Content: "hi"},
		}, func(s decl.AgentState) string {
			want := []decl.UserMessage{{ID: "u1", Content: "hi", Timestamp: 5}}
			if !slices.Equal(s.UserMessages, want) || s.UserUpdatedAt != 5 {
				return fmt.Sprintf("messages %+v at %d", s.UserMessages, s.UserUpdatedAt)
			}
			return ""
		}},
		{"a message starts empty and streaming, and moves calledBrainAt forward", []decl.AgentInput{
			decl.BrainSendMessageStart{Timestamp: 7, CalledBrainAt: 5, MessageID: "m1"},
		}, func(s decl.AgentState) string {
			want := []decl.AssistantMessage{{ID: "m1", Streaming: true, Timestamp: 7, CalledBrainAt: 5}}
			if !slices.Equal(s.AssistantMessages, want) || s.CalledBrainAt != 5 {
				return fmt.Sprintf("messages %+v, calledBrainAt %d", s.AssistantMessages, s.CalledBrainAt)
			}
			return ""
		}},
		{"a message completes with its whole text", []decl.AgentInput{
			decl.BrainSendMessageStart{Timestamp: 7, CalledBrainAt: 5, MessageID: "m1"},
			decl.BrainSendMessageComplete{Timestamp: 9, CalledBrainAt: 5, MessageID: "m1", Content: "Hello there."},
		}, func(s decl.AgentState) string {
			want := []decl.AssistantMessage{{ID: "m1", Content: "Hello there.", Timestamp: 7, CalledBrainAt: 5}}
			if !slices.Equal(s.AssistantMessages, want) {
				return fmt.Sprintf("messages %+v", s.AssistantMessages)
			}
			return ""
		}},
		{"a message that never started is added whole", []decl.AgentInput{
			decl.BrainSendMessageComplete{Timestamp: 9, CalledBrainAt: 5, MessageID: "m1", Content: "Hi."},
		}, func(s decl.AgentState) string {
			if len(s.AssistantMessages) != 1 || s.AssistantMessages[0].Streaming || s.AssistantMessages[0].Content != "Hi." {
				return fmt.Sprintf("messages %+v", s.AssistantMessages)
			}
			return ""
		}},
		{"calledBrainAt never moves back", []decl.AgentInput{
			call(8, 6, "a"), call(9, 3, "b"),
		}, func(s decl.AgentState) string {
			if s.CalledBrainAt != 6 {
				return fmt.Sprintf("calledBrainAt %d, want 6", s.CalledBrainAt)
			}
			return ""
		}},
		{"tool calls are recorded by id, in id order, once", []decl.AgentInput{
			call(8, 6, "b", "a"), call(9, 6, "a"),
		}, func(s decl.AgentState) string {
			var ids []string
			for _, c := range s.ToolCalls {
				ids = append(ids, c.ID)
			}
			if fmt.Sprint(ids) != "[a b]" || s.ToolCalls[0].Timestamp != 8 {
				return fmt.Sprintf("tool calls %+v", s.ToolCalls)
			}
			return ""
		}},
		{"compression moves the summary forward, never back, and leaves calledBrainAt", []decl.AgentInput{
			call(8, 6, "a"),
			decl.BrainCompressHistory{Timestamp: 10, CalledBrainAt: 20, Summary: "new", CutAt: 9},
			decl.BrainCompressHistory{Timestamp: 11, CalledBrainAt: 20, Summary: "old", CutAt: 4},
		}, func(s decl.AgentState) string {
			if s.ContextSummary != "new" || s.SummaryCutAt != 9 || s.CalledBrainAt != 6 {
				return fmt.Sprintf("summary %q at %d, calledBrainAt %d", s.ContextSummary, s.SummaryCutAt, s.CalledBrainAt)
			}
			return ""
		}},
		{"loading a tool call marks it, an unknown id changes nothing", []decl.AgentInput{
			call(8, 6, "a"),
			decl.BrainLoadToolCall{Timestamp: 10, CalledBrainAt: 20, ToolCallID: "a"},
			decl.BrainLoadToolCall{Timestamp: 11, CalledBrainAt: 20, ToolCallID: "zz"},
		}, func(s decl.AgentState) string {
			if len(s.ToolCalls) != 1 || !s.ToolCalls[0].IsLoaded || s.CalledBrainAt != 6 {
				return fmt.Sprintf("tool calls %+v, calledBrainAt %d", s.ToolCalls, s.CalledBrainAt)
			}
			return ""
		}},
		{"a tool call is answered once, by a result or an error", []decl.AgentInput{
			decl.ToolkitError{Timestamp: 10, ToolCallID: "a", Error: "boom"},
			decl.ToolkitRespond{Timestamp: 11, ToolCallID: "a", Result: "late"},
			decl.ToolkitRespond{Timestamp: 12, ToolCallID: "b", Result: "ok"},
		}, func(s decl.AgentState) string {
			want := []decl.ToolResult{{ToolCallID: "a", IsError: true, Content: "boom", Timestamp: 10}, {ToolCallID: "b", Content: "ok", Timestamp: 12}}
			if !slices.Equal(s.ToolResults, want) {
				return fmt.Sprintf("results %+v", s.ToolResults)
			}
			return ""
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if problem := c.check(apply(c.inputs...)); problem != "" {
				t.Error(problem)
			}
		})
	}
}

// keys returns the sorted keys of jobs.
func keys[J any](jobs map[string]J) []string {
	ks := make([]string, 0, len(jobs))
	for k := range jobs {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestJobsTheStateCallsFor: the seed's AskBrain and RequestToolkit, as keys.
func TestJobsTheStateCallsFor(t *testing.T) {
	w := work{model: testBrain(0), tools: testKit(t)}
	cases := []struct {
		name           string
		inputs         []decl.AgentInput
		brain, toolkit string
	}{
		{"idle at first", nil, "[]", "[]"},
		{"a user message asks the brain", []decl.AgentInput{
			decl.UserSendMessage{Timestamp: 5, MessageID: "u1", Content: "hi"},
		}, "[ask-brain-5]", "[]"},
		{"an answered message asks nothing", []decl.AgentInput{
			decl.UserSendMessage{Timestamp: 5, MessageID: "u1", Content: "hi"},
			decl.BrainSendMessageComplete{Timestamp: 6, CalledBrainAt: 5, MessageID: "m-5", Content: "Hello."},
		}, "[]", "[]"},
		{"a message streaming keeps its ask, and a newer message asks again", []decl.AgentInput{
			decl.UserSendMessage{Timestamp: 5, MessageID: "u1", Content: "hi"},
			decl.BrainSendMessageStart{Timestamp: 6, CalledBrainAt: 5, MessageID: "m-5"},
			decl.UserSendMessage{Timestamp: 7, MessageID: "u2", Content: "and?"},
		}, "[ask-brain-5 ask-brain-7]", "[]"},
		{"a tool call without a result asks the toolkit, and the brain waits", []decl.AgentInput{
			decl.UserSendMessage{Timestamp: 5, MessageID: "u1", Content: "time?"},
			decl.BrainCallTools{Timestamp: 6, CalledBrainAt: 5, ToolCalls: map[string]decl.ToolCallRequest{"c1": {Name: "clock", Arguments: "{}"}, "c2": {Name: "clock", Arguments: "{}"}}},
			decl.UserSendMessage{Timestamp: 7, MessageID: "u2", Content: "and?"},
		}, "[]", "[request-toolkit-c1 request-toolkit-c2]"},
		{"a tool result asks the brain again", []decl.AgentInput{
			decl.UserSendMessage{Timestamp: 5, MessageID: "u1", Content: "time?"},
			decl.BrainCallTools{Timestamp: 6, CalledBrainAt: 5, ToolCalls: map[string]decl.ToolCallRequest{"c1": {Name: "clock", Arguments: "{}"}}},
			decl.ToolkitRespond{Timestamp: 8, ToolCallID: "c1", Result: "noon"},
		}, "[ask-brain-8]", "[]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := apply(c.inputs...)
			if got := fmt.Sprint(keys(w.brainJobs(s.ContextOfBrain()))); got != c.brain {
				t.Errorf("brain jobs %s, want %s", got, c.brain)
			}
			if got := fmt.Sprint(keys(w.toolkitJobs(s.ContextOfToolkit()))); got != c.toolkit {
				t.Errorf("toolkit jobs %s, want %s", got, c.toolkit)
			}
		})
	}
}

// TestWhatTheBrainIsSent: the seed's context management. The summary, the
// messages after its cut, tool calls after the cut (or loaded back) in full
// with their results right after them, and only the ids of older ones.
func TestWhatTheBrainIsSent(t *testing.T) {
	w := work{system: "Be brief.", tools: testKit(t)}
	s := apply(
		decl.UserSendMessage{Timestamp: 10, MessageID: "u1", Content: "old question"},
		decl.BrainCallTools{Timestamp: 11, CalledBrainAt: 10, ToolCalls: map[string]decl.ToolCallRequest{"old": {Name: "clock", Arguments: "{}"}, "kept": {Name: "clock", Arguments: "{}"}}},
		decl.ToolkitRespond{Timestamp: 12, ToolCallID: "old", Result: "9:00"},
		decl.ToolkitRespond{Timestamp: 13, ToolCallID: "kept", Result: "9:01"},
		decl.BrainSendMessageComplete{Timestamp: 14, CalledBrainAt: 13, MessageID: "m1", Content: "It is nine."},
		decl.BrainCompressHistory{Timestamp: 15, CalledBrainAt: 13, Summary: "They talked about the time.", CutAt: 14},
		decl.BrainLoadToolCall{Timestamp: 16, CalledBrainAt: 13, ToolCallID: "kept"},
		decl.UserSendMessage{Timestamp: 20, MessageID: "u2", Content: "count: a b c"},
		decl.BrainCallTools{Timestamp: 21, CalledBrainAt: 20, ToolCalls: map[string]decl.ToolCallRequest{"new": {Name: "word_count", Arguments: `{"text":"a b c"}`}}},
		decl.UserSendMessage{Timestamp: 22, MessageID: "u3", Content: "typed while it ran"},
		decl.ToolkitRespond{Timestamp: 23, ToolCallID: "new", Result: "3"},
		decl.UserSendMessage{Timestamp: 30, MessageID: "u4", Content: "after the cut of this ask"},
	)
	req := w.conversation(s.ContextOfBrain(), 23)
	if err := req.Validate(); err != nil {
		t.Fatalf("the request is invalid: %v", err)
	}
	wantSystem := "Be brief.\n\nSummary of the conversation so far:\nThey talked about the time.\n\nEarlier tool calls, whose details load_tool_call can load: old (clock)."
	if req.System != wantSystem {
		t.Errorf("system prompt:\n%s\nwant\n%s", req.System, wantSystem)
	}
	var got []string
	for _, m := range req.Messages {
		line := string(m.Role) + ":" + m.Content
		for _, c := range m.ToolCalls {
			line += fmt.Sprintf(" call %s %s%s", c.ID, c.Name, c.Arguments)
		}
		if m.ToolCallID != "" {
			line += " for " + m.ToolCallID
		}
		got = append(got, line)
	}
	want := []string{
		"assistant: call kept clock{}", // loaded back, at its place in time
		"tool:9:01 for kept",
		"user:count: a b c",
		`assistant: call new word_count{"text":"a b c"}`,
		"tool:3 for new", // right after its call, before what was typed meanwhile
		"user:typed while it ran",
	}
	if !slices.Equal(got, want) {
		t.Errorf("messages:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var tools []string
	for _, tool := range req.Tools {
		tools = append(tools, tool.Name)
	}
	if fmt.Sprint(tools) != "[word_count calculator clock load_tool_call]" {
		t.Errorf("tools %v", tools)
	}
}

// randomInputs is a long random conversation: every kind of input, stamped
// in order, with ids that sometimes repeat.
func randomInputs(r *rand.Rand, n int) []decl.AgentInput {
	var inputs []decl.AgentInput
	ts := int64(1)
	id := func(prefix string) string { return fmt.Sprintf("%s%d", prefix, r.IntN(n/4+1)) }
	for range n {
		ts += int64(r.IntN(3))
		called := ts - int64(r.IntN(5))
		var in decl.AgentInput
		switch r.IntN(8) {
		case 0:
			in = decl.UserSendMessage{Timestamp: ts, MessageID: id("u"), Content: "message"}
		case 1:
			in = decl.BrainCompressHistory{Timestamp: ts, CalledBrainAt: called, Summary: "summary", CutAt: ts - int64(r.IntN(10))}
		case 2:
			in = decl.BrainLoadToolCall{Timestamp: ts, CalledBrainAt: called, ToolCallID: id("c")}
		case 3:
			in = decl.BrainCallTools{Timestamp: ts, CalledBrainAt: called, ToolCalls: map[string]decl.ToolCallRequest{id("c"): {Name: "clock", Arguments: "{}"}, id("c"): {Name: "calculator", Arguments: `{"expression":"1+1"}`}}}
		case 4:
			in = decl.BrainSendMessageStart{Timestamp: ts, CalledBrainAt: called, MessageID: id("m")}
		case 5:
			in = decl.BrainSendMessageComplete{Timestamp: ts, CalledBrainAt: called, MessageID: id("m"), Content: "reply"}
		case 6:
			in = decl.ToolkitRespond{Timestamp: ts, ToolCallID: id("c"), Result: "result"}
		default:
			in = decl.ToolkitError{Timestamp: ts - int64(r.IntN(2)), ToolCallID: id("c"), Error: "error"}
		}
		inputs = append(inputs, in)
	}
	return inputs
}

// TestTransitionsArePure: CheckPure over a long random conversation: no
// transition writes into the state it is given, and each is deterministic.
func TestTransitionsArePure(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	if err := automata.CheckPure(agent.Definition(), randomInputs(r, 600)...); err != nil {
		t.Fatal(err)
	}
}

// TestStampKeepsTimeMovingForward: the admission step stamps the time of
// arrival, always after the newest input applied, whatever the clock or the
// input says.
func TestStampKeepsTimeMovingForward(t *testing.T) {
	clock := time.UnixMilli(1_000)
	stamp := stamp(func() time.Time { return clock })
	s := apply(decl.ToolkitRespond{Timestamp: 5_000, ToolCallID: "c", Result: "r"})
	in, err := stamp(s, decl.UserSendMessage{Timestamp: 99_999, MessageID: "u", Content: "hi"})
	if err != nil || in.(decl.UserSendMessage).Timestamp != 5_001 {
		t.Fatalf("stamped %+v, %v; want just after the newest input's time, 5001, over the clock's 1000 and the input's own", in, err)
	}
	// Two inputs in the same millisecond get two times.
	clock = time.UnixMilli(7_000)
	s = apply(decl.ToolkitRespond{Timestamp: 7_000, ToolCallID: "c", Result: "r"})
	in, _ = stamp(s, decl.UserSendMessage{MessageID: "u2", Content: "again"})
	if in.(decl.UserSendMessage).Timestamp != 7_001 {
		t.Fatalf("stamped %+v in the millisecond of the newest input; want 7001", in)
	}
	clock = time.UnixMilli(9_000)
	in, _ = stamp(s, decl.BrainCallTools{CalledBrainAt: 3})
	if in.(decl.BrainCallTools).Timestamp != 9_000 {
		t.Fatalf("stamped %+v; want the clock's 9000", in)
	}
}

// chatOn runs a conversation on a journal in dir with the test brain and
// kit: each message once the agent is idle again. It returns the final
// state.
func chatOn(t *testing.T, dir string, compressAfter int, messages ...string) decl.AgentState {
	t.Helper()
	return chatOnClock(t, dir, time.Now, compressAfter, messages...)
}

// chatOnClock is chatOn with now as the server's clock (stamp's).
func chatOnClock(t *testing.T, dir string, now func() time.Time, compressAfter int, messages ...string) decl.AgentState {
	t.Helper()
	store, err := bolt.Open(filepath.Join(dir, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 10)
	a, err := New(Config{
		Model:         testBrain(0),
		Tools:         testKit(t),
		Store:         store,
		CompressAfter: compressAfter,
		Now:           now,
		Options: []automata.Option[decl.AgentState, decl.AgentInput]{
			automata.WithPurityCheck[decl.AgentState, decl.AgentInput](),
			automata.WithEvents(func(e automata.Event[decl.AgentState, decl.AgentInput]) {
				if e.Kind == automata.EffectFailed || e.Kind == automata.InputRejected {
					failed <- fmt.Errorf("%v", e)
				}
			}),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := a.Machine()
	idle := make(chan struct{}, 1)
	m.Subscribe(func(s decl.AgentState) {
		if Idle(s) {
			select {
			case idle <- struct{}{}:
			default:
			}
		}
	})
	wait := func() {
		t.Helper()
		for !Idle(m.Current()) {
			select {
			case <-idle:
			case err := <-failed:
				t.Fatal(err)
			case <-time.After(hangGuard):
				t.Fatalf("hung: the agent never became idle; state %+v", m.Current())
			}
		}
	}
	ctx := context.Background()
	for i, msg := range messages {
		wait()
		if err := m.Dispatch(ctx, decl.UserSendMessage{MessageID: fmt.Sprintf("u%d", i), Content: msg}); err != nil {
			t.Fatal(err)
		}
	}
	wait()
	s := m.Current()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-failed:
		t.Fatal(err)
	default:
	}
	return s
}

// TestMessagesInOneMillisecondAreEachAnswered: on a clock that does not
// move, every input arrives in the same millisecond; each message is still
// a new signal, and the brain answers each.
func TestMessagesInOneMillisecondAreEachAnswered(t *testing.T) {
	frozen := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	s := chatOnClock(t, t.TempDir(), func() time.Time { return frozen }, 100, "hello", "thanks", "bye")
	var replies []string
	for _, m := range s.AssistantMessages {
		replies = append(replies, m.Content)
	}
	want := []string{"You said: hello.", "You said: thanks.", "You said: bye."}
	if !slices.Equal(replies, want) {
		t.Errorf("replies:\n%s\nwant\n%s", strings.Join(replies, "\n"), strings.Join(want, "\n"))
	}
}

// TestConversationWithToolsAndCompression: a whole conversation on a
// journal with the test brain: it calls each tool and reports the result,
// and compresses the history once it grows past the limit.
func TestConversationWithToolsAndCompression(t *testing.T) {
	s := chatOn(t, t.TempDir(), 6,
		"hello",
		"what is (2 + 3) * 4.5?",
		"what time is it?",
		"count the words of this sentence please",
		"thanks")
	var replies []string
	for _, m := range s.AssistantMessages {
		if m.Streaming {
			t.Errorf("message %s still streaming", m.ID)
		}
		replies = append(replies, m.Content)
	}
	want := []string{
		"You said: hello.",
		"Let me calculate that.",
		"The calculator tool says: 22.5.",
		"Let me look at the clock.",
		"The clock tool says: Mon, 23 Nov 2026 12:00:00 UTC.",
		"Let me count the words.",
		"The word_count tool says: 7.",
		"You said: thanks.",
	}
	if !slices.Equal(replies, want) {
		t.Errorf("replies:\n%s\nwant\n%s", strings.Join(replies, "\n"), strings.Join(want, "\n"))
	}
	if len(s.ToolCalls) != 3 || len(s.ToolResults) != 3 {
		t.Errorf("%d tool calls and %d results, want 3 of each", len(s.ToolCalls), len(s.ToolResults))
	}
	if s.SummaryCutAt == 0 || !strings.Contains(s.ContextSummary, `"hello"`) {
		t.Errorf("the history was not compressed: summary %q at %d", s.ContextSummary, s.SummaryCutAt)
	}
}

// TestLoadToolCallBringsDetailsBack: a brain that asks to load an old tool
// call gets its details in the next request of the same ask.
func TestLoadToolCallBringsDetailsBack(t *testing.T) {
	var requests []llm.Request
	model := llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		requests = append(requests, req)
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls {
				if c.ID == "old" {
					return llm.Response{Text: "Loaded."}, nil
				}
			}
		}
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "l1", Name: LoadTool, Arguments: json.RawMessage(`{"toolCallId":"old"}`)}}}, nil
	}}
	w := work{model: model, tools: testKit(t)}
	s := apply(
		decl.BrainCallTools{Timestamp: 11, CalledBrainAt: 10, ToolCalls: map[string]decl.ToolCallRequest{"old": {Name: "clock", Arguments: "{}"}}},
		decl.ToolkitRespond{Timestamp: 12, ToolCallID: "old", Result: "9:00"},
		decl.BrainCompressHistory{Timestamp: 15, CalledBrainAt: 12, Summary: "Earlier.", CutAt: 14},
		decl.UserSendMessage{Timestamp: 20, MessageID: "u1", Content: "what did the clock say?"},
	)
	var inputs []decl.AgentInput
	job := w.ask(s.ContextOfBrain(), 20)
	if err := job(context.Background(), func(in decl.AgentInput) { inputs = append(inputs, in) }); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, in := range inputs {
		types = append(types, in.InputType())
	}
	if got := strings.Join(types, " "); got != "brain-record-usage brain-load-tool-call brain-send-message-start brain-record-usage brain-send-message-complete" {
		t.Fatalf("the ask dispatched %s", got)
	}
	if len(requests) != 2 {
		t.Fatalf("%d requests, want 2: one that loads, one with the details", len(requests))
	}
}

// TestToolCallsEndInAResultOrAnError: the toolkit's job for a tool call
// hands in the tool's output, or the toolkit's error — arguments that do
// not match the tool's schema, a tool the kit does not have, a tool's own
// refusal — which the brain reads; a job cancelled before the call ends
// hands in nothing.
func TestToolCallsEndInAResultOrAnError(t *testing.T) {
	w := work{model: testBrain(0), tools: testKit(t)}
	s := apply(
		decl.UserSendMessage{Timestamp: 5, MessageID: "u1", Content: "hi"},
		decl.BrainCallTools{Timestamp: 6, CalledBrainAt: 5, ToolCalls: map[string]decl.ToolCallRequest{
			"ok":        {Name: "calculator", Arguments: `{"expression":"6*7"}`},
			"malformed": {Name: "calculator", Arguments: `{"expr":"6*7"}`},
			"not-json":  {Name: "word_count", Arguments: `{"text":`},
			"unknown":   {Name: "weather", Arguments: `{}`},
			"refused":   {Name: "calculator", Arguments: `{"expression":"six times seven"}`},
		}},
	)
	jobs := w.toolkitJobs(s.ContextOfToolkit())
	cases := []struct {
		id   string
		want string // the input the job hands in, as %+v
	}{
		{"ok", "{Timestamp:0 ToolCallID:ok Result:42}"},
		{"malformed", `{Timestamp:0 ToolCallID:malformed Error:invalid arguments: the arguments of calculator do not match its schema: /: additionalProperties 'expr' not allowed; /: missing properties: 'expression'}`},
		{"not-json", "{Timestamp:0 ToolCallID:not-json Error:invalid arguments: the arguments of word_count are not JSON: unexpected EOF}"},
		{"unknown", "{Timestamp:0 ToolCallID:unknown Error:there is no tool \"weather\"; the tools are word_count, calculator, clock}"},
		{"refused", "{Timestamp:0 ToolCallID:refused Error:invalid arguments: not an arithmetic expression: \"six times seven\"}"},
	}
	if len(jobs) != len(cases) {
		t.Fatalf("jobs %v, want one per call", keys(jobs))
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			job := jobs["request-toolkit-"+c.id]
			var got []decl.AgentInput
			if err := job(context.Background(), func(in decl.AgentInput) { got = append(got, in) }); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || fmt.Sprintf("%+v", got[0]) != c.want {
				t.Errorf("handed in %+v, want %s", got, c.want)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var got []decl.AgentInput
		err := jobs["request-toolkit-ok"](ctx, func(in decl.AgentInput) { got = append(got, in) })
		if !errors.Is(err, context.Canceled) || len(got) != 0 {
			t.Errorf("a cancelled job returned %v and handed in %+v, want context.Canceled and nothing", err, got)
		}
	})
}

// TestNewClosesTheStoreWhenItFails: the agent owns its store from New on,
// also when New fails (here for want of a model): the file is free to be
// opened again, and a store closed twice is not the caller's to fear.
func TestNewClosesTheStoreWhenItFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Store: store}); err == nil || !strings.Contains(err.Error(), "Config.Model is nil") {
		t.Fatalf("New without a model: %v, want an error naming Config.Model", err)
	}
	if _, _, err := store.Size(); err == nil {
		t.Error("the store still answers after New failed: it was not closed")
	}
	again, err := bolt.Open(path)
	if err != nil {
		t.Fatalf("opening the file again after New failed: %v", err)
	}
	again.Close()
}
