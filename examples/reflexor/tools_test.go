package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestToolsCheckTheirArguments: a tool called with arguments that are not
// what its schema says answers with an error, which the brain is told.
func TestToolsCheckTheirArguments(t *testing.T) {
	for _, tool := range Tools(time.Now) {
		if tool.Name == "clock" {
			continue // takes no arguments
		}
		for _, args := range []string{`{}`, `[1]`, `{"text": 3}`, `not json`} {
			if out, err := tool.Run(context.Background(), "k", json.RawMessage(args)); err == nil {
				t.Errorf("%s(%s) = %q, want an error", tool.Name, args, out)
			}
		}
	}
}

// TestTerminalChat: the command itself, on stdin and stdout, run twice on
// one data directory: the second run continues the conversation.
func TestTerminalChat(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run([]string{"-terminal", "-data", dir, "-delay", "0"}, strings.NewReader("what is 6*7?\n"), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "brain: The calculator tool says: 42.") {
		t.Fatalf("first run:\n%s", out.String())
	}
	out.Reset()
	if err := run([]string{"-terminal", "-data", dir, "-delay", "0"}, strings.NewReader("count these three\n"), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"you: what is 6*7?", "brain: The calculator tool says: 42.", "you: count these three", "brain: The word_count tool says: 3."} {
		if !strings.Contains(got, want) {
			t.Errorf("second run lacks %q:\n%s", want, got)
		}
	}
}
