package persistent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/agents/persistent/decl"
)

// TestJournalOfVersion1GoesOn opens testdata/v1/agent.db — written before
// records carried a spec version, by the agent of version 1, and cut by
// kill -9 during a tool call — under the current version: version 2 added
// the required property channel to UserMessage, version 3 the optional
// property error to AssistantMessage. The snapshot and the inputs after it
// are migrated (impl/migrations), the tool call in flight is resumed, and
// the conversation goes on, its new records of the current version.
func TestJournalOfVersion1GoesOn(t *testing.T) {
	dir := t.TempDir()
	v1, err := os.ReadFile(filepath.Join("testdata", "v1", "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.db"), v1, 0o600); err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, Config{Store: openBolt(t, dir)})
	if r := a.Resumed(); len(r) != 1 || !strings.HasPrefix(r[0], "toolkit/tool-") {
		t.Fatalf("resumed %q, want the tool call that kill -9 cut", r)
	}
	wait(t, a)
	if err := a.Send(context.Background(), "terminal", "and these words"); err != nil {
		t.Fatal(err)
	}
	wait(t, a)
	s := a.State()
	var got []string
	for _, m := range Conversation(s.UserMessages, s.AssistantMessages, s.ToolMessages) {
		got = append(got, m.Role+": "+m.Content)
	}
	want := []string{
		// The history, from the snapshot of version 1: the first run was
		// typed both lines at once.
		"user: count these words please",
		"user: and these too",
		"assistant: Let me count the words of that.",
		"tool: 4",
		"assistant: Your message has 4 words. Let me count the words of your next message.",
		"tool: 3",
		"assistant: Your message has 3 words.",
		"user: three more words here", // after the snapshot: inputs of version 1
		"assistant: Let me count the words of that.",
		"tool: 4", // the call that kill -9 cut, resumed
		"assistant: Your message has 4 words.",
		"user: and these words", // the current version
		"assistant: Let me count the words of that.",
		"tool: 3",
		"assistant: Your message has 3 words.",
	}
	if !slices.Equal(got, want) {
		t.Errorf("conversation:\n%q\nwant\n%q", got, want)
	}
	for _, msg := range s.UserMessages {
		if msg.Channel != "terminal" {
			t.Errorf("message %q: channel %q, want the migration's terminal", msg.Content, msg.Channel)
		}
	}

	m := a.Machine()
	entries, err := m.Inputs(0, m.Seq())
	if err != nil {
		t.Fatal(err)
	}
	versions := map[int]int{}
	last := 0
	for _, e := range entries {
		versions[e.Version]++
		if e.Version < last {
			t.Fatalf("input %d is of version %d, after one of version %d", e.Seq, e.Version, last)
		}
		last = e.Version
		if in, ok := e.Input.(decl.SendUserMessage); ok && in.Message.Channel != "terminal" {
			t.Errorf("input %d: channel %q, want the migration's terminal", e.Seq, in.Message.Channel)
		}
	}
	if versions[1] == 0 || versions[decl.SpecVersion] == 0 || len(versions) != 2 {
		t.Fatalf("inputs by version: %v, want those of version 1 and then of version %d", versions, decl.SpecVersion)
	}
}
