package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/agents/persistent"
	"github.com/moora-go/moora/automata/agents/persistent/decl"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/examples/internal/longrun"
	"github.com/moora-go/moora/internal/allocs"
)

// longConversation is the persistent agent as main runs it (a bbolt
// journal, the offline llm and the word-count tool with no delay, the
// printer that prints each new message), that a test or a benchmark talks
// to as the terminal does.
type longConversation struct {
	dir   string
	store *bolt.Store
	agent *persistent.Agent
	idle  chan int // the number of user messages, each time the agent is idle
	stop  func()
}

// startLongConversation starts the agent with model as its llm; nil is the
// offline llm.
func startLongConversation(tb testing.TB, model llm.Model) *longConversation {
	tb.Helper()
	dir := tb.TempDir()
	store, err := bolt.Open(filepath.Join(dir, "agent.db"))
	if err != nil {
		tb.Fatal(err)
	}
	if model == nil {
		model = offlineLLM(0)
	}
	kit, err := Tools(0)
	if err != nil {
		store.Close()
		tb.Fatal(err)
	}
	a, err := persistent.New(persistent.Config{Model: model, Tools: kit, Store: store,
		System: "You are a helpful assistant. Count words with the word-count tool."})
	if err != nil {
		tb.Fatal(err)
	}
	c := &longConversation{dir: dir, store: store, agent: a, idle: make(chan int, 1)}
	out := newPrinter(io.Discard)
	a.Subscribe(func(s decl.AgentState) {
		out.print(s)
		if persistent.Idle(s) {
			select {
			case <-c.idle:
			default:
			}
			c.idle <- len(s.UserMessages)
		}
	})
	c.stop = sync.OnceFunc(func() { a.Close(context.Background()) })
	tb.Cleanup(c.stop)
	return c
}

// say sends the user's n-th message and waits until the agent is idle
// again, the message answered.
func (c *longConversation) say(tb testing.TB, n int, content string) {
	tb.Helper()
	if err := c.agent.Send(context.Background(), "terminal", content); err != nil {
		tb.Fatal(err)
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case users := <-c.idle:
			if users >= n {
				return
			}
		case <-timeout:
			tb.Fatalf("hung: message %d was never answered", n)
		}
	}
}

// TestCostFollowsTheMessage: what the llm is sent for a user message, and
// what the journal keeps of it, do not grow with the conversation, whether
// the messages are words or one long token. The llm was sent the whole
// conversation every time, which made each message cost more than the one
// before: the offline llm counts the words of its request, a real one
// reads it (issue 20: at 1,000 messages of 60 KB, the last 10 took 26
// times as long as the first 10, 74% of it counting words).
func TestCostFollowsTheMessage(t *testing.T) {
	const messages, size = 40, 20_000
	for _, words := range []bool{true, false} {
		t.Run(fmt.Sprintf("words=%v", words), func(t *testing.T) {
			model := &measured{Model: offlineLLM(0)}
			c := startLongConversation(t, model)
			sent := make([]int, messages+1)   // the bytes the llm was sent per message
			grew := make([]int64, messages+1) // the journal's growth per message
			last := int64(0)
			for n := 1; n <= messages; n++ {
				before := model.total()
				c.say(t, n, longrun.Message(n, size, words))
				sent[n] = model.total() - before
				j, _, err := c.store.Size()
				if err != nil {
					t.Fatal(err)
				}
				grew[n], last = j-last, j
			}
			var firstSent, finalSent int
			var first, final int64
			for n := 1; n <= 10; n++ {
				firstSent += sent[n]
				finalSent += sent[messages-10+n]
				first += grew[n]
				final += grew[messages-10+n]
			}
			t.Logf("the llm was sent %d bytes for messages 1-10, %d for %d-%d; the journal took %d and %d", firstSent, finalSent, messages-9, messages, first, final)
			if finalSent > firstSent*3/2 {
				t.Errorf("the llm was sent %d bytes for the last 10 messages, %d for the first 10: what a message costs grows with the conversation", finalSent, firstSent)
			}
			if final > first*3/2 {
				t.Errorf("the last 10 messages took %d bytes of journal, the first 10 %d", final, first)
			}
			if got := len(c.agent.State().AssistantMessages); got != 2*messages {
				t.Errorf("%d assistant messages, want %d: each message asks for the word count, then answers", got, 2*messages)
			}
		})
	}
}

// measured is a model that adds up the bytes of the requests it is sent:
// their text and tool calls.
type measured struct {
	llm.Model
	mu    sync.Mutex
	bytes int
}

func (m *measured) Complete(ctx context.Context, req llm.Request, onChunk func(string)) (llm.Response, error) {
	n := len(req.System)
	for _, msg := range req.Messages {
		n += len(msg.Content)
		for _, c := range msg.ToolCalls {
			n += len(c.Arguments)
		}
	}
	m.mu.Lock()
	m.bytes += n
	m.mu.Unlock()
	return m.Model.Complete(ctx, req, onChunk)
}

func (m *measured) total() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}

// TestPrintingCostsWhatAStateAdds: what the printer does on a state that
// adds a message (the bytes it allocates) is the same after 1,000
// exchanges as after 10. It sorted the whole conversation to find what it
// had not printed. (The agent's own jobs functions are measured so in
// package persistent.)
func TestPrintingCostsWhatAStateAdds(t *testing.T) {
	cost := func(exchanges int) uint64 {
		before := exchangesOf(exchanges)
		s := before
		s.UserMessages = append(slices.Clip(s.UserMessages), decl.UserMessage{
			ID: "new", Content: "one two three", Timestamp: int64(4*exchanges + 4), Channel: "terminal"})
		return allocs.Least(func() uint64 {
			p := newPrinter(io.Discard)
			p.print(before) // what the program has printed by then
			return allocs.Bytes(func() { p.print(s) })
		})
	}
	short, long := cost(10), cost(1000)
	t.Logf("bytes allocated to print a new message after 10 exchanges: %d; after 1,000: %d", short, long)
	if long > short+1<<10 {
		t.Errorf("printing a new message allocates %d bytes after 1,000 exchanges, %d after 10", long, short)
	}
}

// exchangesOf is the state after n exchanges: a user message of 1 KB, the
// llm's call of the word count on it, the count, the llm's answer.
func exchangesOf(n int) decl.AgentState {
	var s decl.AgentState
	for i := range n {
		at := int64(4 * i)
		s.UserMessages = append(s.UserMessages, decl.UserMessage{ID: fmt.Sprintf("user-%d", at), Content: longrun.Message(i, 1000, true), Timestamp: at, Channel: "terminal"})
		s.AssistantMessages = append(s.AssistantMessages,
			decl.AssistantMessage{ID: fmt.Sprintf("assistant-%d", at+1), Content: "Let me count the words of that.", Timestamp: at + 1,
				ToolCalls: []decl.ToolCall{{ID: fmt.Sprintf("call-%d", i), Name: "word-count", Input: `{"text":"…"}`}}},
			decl.AssistantMessage{ID: fmt.Sprintf("assistant-%d", at+3), Content: "Your message has 167 words.", Timestamp: at + 3})
		s.ToolMessages = append(s.ToolMessages, decl.ToolMessage{ID: fmt.Sprintf("tool-%d", i), CallID: fmt.Sprintf("call-%d", i), Content: "167", Timestamp: at + 2})
	}
	s.LastSentToLlmAt = int64(4*n - 2)
	return s
}

// BenchmarkLongConversation is a conversation of 1,000 user messages of
// 60 KB each, words or one long token: each is sent and waited for until
// the agent is idle again (the llm has asked for the word count, the tool
// has counted, the llm has answered). It reports the time of the last 10
// messages over that of messages 1 to 10 (the ratio the cost of an input
// grows by over the conversation), the resident memory and live heap at
// the end, and the journal's size.
//
//	go test -run XXX -bench LongConversation -benchtime 1x ./examples/persistent/
func BenchmarkLongConversation(b *testing.B) {
	const messages, size = 1000, 60_000
	for _, words := range []bool{true, false} {
		name := "one-token"
		if words {
			name = "words"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				c := startLongConversation(b, nil)
				startRSS := longrun.ProcStatus(b, "self", "VmRSS")
				took := make([]time.Duration, messages+1)
				for n := 1; n <= messages; n++ {
					msg := longrun.Message(n, size, words)
					start := time.Now()
					c.say(b, n, msg)
					took[n] = time.Since(start)
				}
				end := longrun.Measure(b)
				c.stop()
				longrun.Report(b, took[1:11], took[messages-9:], startRSS, end, filepath.Join(c.dir, "agent.db"))
			}
		})
	}
}
