package reflexor

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm"
)

// countedBrain is testBrain counting its calls.
func countedBrain(calls *atomic.Int64) llm.Scripted {
	brain := testBrain(0)
	reply := brain.Reply
	brain.Reply = func(req llm.Request) (llm.Response, error) {
		calls.Add(1)
		return reply(req)
	}
	return brain
}

// TestForkAnswersFromTheRecord: a fork of a conversation at a user's
// message, whose next inputs were the brain's reply (a tool call, its result,
// the answer), gets them from the record: the fork's brain and tools are
// called 0 times, and its state is the parent's. A new message of its own is
// answered by its brain. The parent is untouched.
func TestForkAnswersFromTheRecord(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	var parentCalls, forkCalls atomic.Int64
	open := func(name string, calls *atomic.Int64) *Agent {
		t.Helper()
		store, err := bolt.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		a, err := New(Config{Model: countedBrain(calls), Tools: testKit(t), Store: store})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	idle := func(a *Agent) decl.AgentState {
		t.Helper()
		deadline := time.Now().Add(hangGuard)
		for !Idle(a.Machine().Current()) || len(a.Machine().Current().AssistantMessages) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("hung: %+v", a.Machine().Current())
			}
			time.Sleep(time.Millisecond)
		}
		return a.Machine().Current()
	}
	say := func(a *Agent, id, text string) uint64 {
		t.Helper()
		seq, err := a.Machine().DispatchSeq(ctx, decl.UserSendMessage{MessageID: id, Content: text})
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	parent := open("parent.db", &parentCalls)
	say(parent, "u1", "hello")
	idle(parent)
	asked := say(parent, "u2", "what is (2 + 3) * 4.5?")
	want := idle(parent)
	say(parent, "u3", "thanks")
	idle(parent)
	before, err := parent.Machine().Inputs(0, parent.Machine().Seq())
	if err != nil {
		t.Fatal(err)
	}
	beforeState := parent.Machine().Current()

	store, err := bolt.Open(filepath.Join(dir, "fork.db"))
	if err != nil {
		t.Fatal(err)
	}
	stats, err := parent.Machine().Fork(asked, store)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Answers < 3 { // the tool call, its result, the answer
		t.Fatalf("the fork carries %d answers, want the brain's and the tool's of one ask", stats.Answers)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	fork := open("fork.db", &forkCalls)
	defer fork.Close(ctx)
	got := idle(fork)
	if n := forkCalls.Load(); n != 0 {
		for _, e := range before[asked-1:] {
			t.Logf("parent %d %T job %q", e.Seq, e.Input, e.Job)
		}
		es, _ := fork.Machine().Inputs(0, fork.Machine().Seq())
		for _, e := range es {
			t.Logf("fork %d %T job %q recorded %v", e.Seq, e.Input, e.Job, e.Recorded)
		}
		t.Fatalf("the fork called its brain %d times for the reply its record holds", n)
	}
	if texts(got.AssistantMessages) != texts(want.AssistantMessages) || len(got.ToolResults) != len(want.ToolResults) {
		t.Fatalf("the fork's replies: %s (%d tool results), want the parent's at that point: %s (%d)",
			texts(got.AssistantMessages), len(got.ToolResults), texts(want.AssistantMessages), len(want.ToolResults))
	}
	entries, err := fork.Machine().Inputs(0, fork.Machine().Seq())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Recorded || e.Job == "" {
			t.Fatalf("input %d of the fork (%T, job %q) was not answered from the record", e.Seq, e.Input, e.Job)
		}
	}
	if fork.Machine().Departed() {
		t.Fatal("the fork departed from its record with no input of its own")
	}

	say(fork, "f1", "count the words of this sentence please")
	got = idle(fork)
	if n := forkCalls.Load(); n == 0 || !fork.Machine().Departed() {
		t.Fatalf("after a message of its own the fork called its brain %d times (departed %v)", n, fork.Machine().Departed())
	}
	if last := got.AssistantMessages[len(got.AssistantMessages)-1].Content; last != "The word_count tool says: 7." {
		t.Fatalf("the fork's own answer is %q", last)
	}

	after, err := parent.Machine().Inputs(0, parent.Machine().Seq())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, before) || !reflect.DeepEqual(parent.Machine().Current(), beforeState) {
		t.Fatal("the parent changed with its fork")
	}
	if err := parent.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, e := range before {
		if e.Job != "" {
			return // the parent's job inputs carry their keys
		}
	}
	t.Fatal("no input of the parent carries a job key: Reflexor's journal has Options.JobKeys")
}

// texts is the contents of messages, one line.
func texts(ms []decl.AssistantMessage) string {
	var s string
	for _, m := range ms {
		s += fmt.Sprintf("%q ", m.Content)
	}
	return s
}
