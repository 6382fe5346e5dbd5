package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestConversationOnEmbeddedJetStream: with -nats embedded the journal is on
// a NATS server inside the process, its files in -data; a second run
// continues the conversation from there.
func TestConversationOnEmbeddedJetStream(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run([]string{"-data", dir, "-nats", "embedded"}, strings.NewReader("count these four words\n"), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	assertInOrder(t, out.String(), []string{"you: count these four words", "assistant: Your message has 4 words."})
	out.Reset()
	if err := run([]string{"-data", dir, "-nats", "embedded"}, strings.NewReader("and two\n"), &out); err != nil {
		t.Fatalf("second run: %v\n%s", err, out.String())
	}
	assertInOrder(t, out.String(), []string{
		"you: count these four words", // the history, from JetStream
		"assistant: Your message has 4 words.",
		"you: and two",
		"assistant: Your message has 2 words.",
	})
}
