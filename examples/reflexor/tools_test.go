package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/toolkit"
)

// TestToolsCheckTheirArguments: a tool called with arguments that are not
// what its schema says, or that it cannot work with, answers with an error
// of the arguments (toolkit.KindInvalid), which the brain is told; no tool
// runs the wrong arguments.
func TestToolsCheckTheirArguments(t *testing.T) {
	kit, err := Tools(time.Now, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range kit.Names() {
		if name == "clock" {
			continue // takes no arguments
		}
		for _, args := range []string{`{}`, `[1]`, `{"text": 3, "expression": 3}`, `not json`} {
			r := kit.Run(context.Background(), toolkit.Call{ID: "c", Name: name, Arguments: json.RawMessage(args)})
			if r.Kind != toolkit.KindInvalid || !strings.HasPrefix(r.Content(), "error: ") {
				t.Errorf("%s(%s) = %s %q, want an error of its arguments", name, args, r.Kind, r.Content())
			}
		}
	}
	r := kit.Run(context.Background(), toolkit.Call{ID: "c", Name: "calculator", Arguments: json.RawMessage(`{"expression": "1/0"}`)})
	if r.Kind != toolkit.KindInvalid {
		t.Errorf("calculator(1/0) = %s %q, want an error of its arguments", r.Kind, r.Content())
	}
	r = kit.Run(context.Background(), toolkit.Call{ID: "c", Name: "calculator", Arguments: json.RawMessage(`{"expression": "(2 + 3) * 4.5"}`)})
	if r.Kind != toolkit.KindNone || r.Content() != "22.5" {
		t.Errorf("calculator((2 + 3) * 4.5) = %s %q, want 22.5", r.Kind, r.Content())
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
