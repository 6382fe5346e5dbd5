package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/llm/openai"
	"github.com/moora-go/moora/examples/persistent/decl"
	"github.com/moora-go/moora/examples/persistent/impl/agent"
)

// TestJournalOfVersion1GoesOn opens testdata/v1/agent.db — written before
// records carried a spec version, by the agent of version 1, and cut by
// kill -9 during a tool call — under version 2, which added the required
// property channel to UserMessage. The snapshot and the inputs after it
// are migrated (impl/migrations), the tool call in flight is resumed, and
// the conversation goes on, its new records of version 2.
func TestJournalOfVersion1GoesOn(t *testing.T) {
	t.Setenv(openai.EnvModel, "") // the offline llm
	dir := t.TempDir()
	v1, err := os.ReadFile(filepath.Join("testdata", "v1", "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.db"), v1, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{"-data", dir}, strings.NewReader("and these words\n"), &out); err != nil {
		t.Fatalf("run on the journal of version 1: %v\n%s", err, out.String())
	}
	assertInOrder(t, out.String(), []string{
		"you: count these words please", // the history, from the snapshot of version 1
		"assistant: Your message has 3 words.",
		"you: three more words here", // after the snapshot: inputs of version 1
		`  [calls word-count({"text":"three more words here"})]`,
		"  [resuming toolkit/tool-", // the call that kill -9 cut
	})
	// The resumed call and the new message race; each goes on.
	_, after, _ := strings.Cut(out.String(), "[resuming toolkit/tool-")
	assertInOrder(t, after, []string{"→ 4]"})
	assertInOrder(t, after, []string{
		"you: and these words", // version 2
		`  [calls word-count({"text":"and these words"})]`,
		"→ 3]",
		"assistant: Your message has 3 words.",
	})

	store, err := journal.OpenBolt(filepath.Join(dir, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := journal.Open(store, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
		Codec: journal.JSONGob[decl.AgentState](decl.DecodeInput),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
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
	if versions[1] == 0 || versions[2] == 0 || len(versions) != 2 {
		t.Fatalf("inputs by version: %v, want those of version 1 and then of version 2", versions)
	}
	for _, msg := range m.Current().UserMessages {
		if msg.Channel != "terminal" {
			t.Errorf("message %q: channel %q, want terminal", msg.Content, msg.Channel)
		}
	}
}
