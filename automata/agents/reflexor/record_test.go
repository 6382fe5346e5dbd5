package reflexor

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/openai"
	"github.com/moora-go/moora/automata/llm/record"
	"github.com/moora-go/moora/internal/fakemodel"
)

var updateRecording = flag.Bool("update-recording", false, "record testdata/recorded again: the OpenAI provider over HTTP, against internal/fakemodel")

// TestRecordedConversation runs a conversation that a real provider had
// (automata/llm/openai over HTTP, against internal/fakemodel's OpenAI-like
// server, recorded with -update-recording into testdata/recorded) offline,
// from the recording (package automata/llm/record): every call of the
// brain is answered, chunk for chunk, as it was, and the conversation ends
// as it did. The clock is fixed, so that each call has the key it was
// recorded under.
func TestRecordedConversation(t *testing.T) {
	dir := filepath.Join("testdata", "recorded")
	var model llm.Model = record.Player{Dir: dir}
	if *updateRecording {
		fake := fakemodel.Start(t)
		real, err := openai.New(openai.Config{BaseURL: fake.URL, APIKey: "sk-test", Model: "fake"})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		model = record.New(real, dir)
	}
	var tick atomic.Int64
	clock := func() time.Time { return testClock.Add(time.Duration(tick.Add(1)) * time.Second) }
	store, err := bolt.Open(filepath.Join(t.TempDir(), "recorded.db"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Model: model, Store: store, Now: clock, CompressAfter: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	m := a.Machine()
	idle := make(chan decl.AgentState, 1)
	m.Subscribe(func(s decl.AgentState) {
		if Idle(s) && len(s.AssistantMessages) == len(s.UserMessages) {
			select {
			case <-idle:
			default:
			}
			idle <- s
		}
	})
	said := []string{"hello", "tell me more about moore machines"}
	var s decl.AgentState
	for i, text := range said {
		if err := m.Dispatch(context.Background(), decl.UserSendMessage{MessageID: "u" + string(rune('1'+i)), Content: text}); err != nil {
			t.Fatal(err)
		}
		for s = <-idle; len(s.AssistantMessages) <= i; s = <-idle {
		}
	}
	for i, text := range said {
		got := s.AssistantMessages[i]
		if got.Error != nil || got.Content != fakemodel.Reply(text) {
			t.Errorf("reply %d: %q (error %v), want %q", i, got.Content, got.Error, fakemodel.Reply(text))
		}
	}
}
