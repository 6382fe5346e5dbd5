package main

import (
	"io"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/llm/openai"
	"github.com/moora-go/moora/internal/fakemodel"
	"github.com/moora-go/moora/internal/testbuf"
)

// TestTerminalShowsAFailedReplyAndGoesOn: on the terminal, with a model
// server that answers HTTP 500, the failed reply is printed as it happens,
// while stdin is still open, and the next line is answered.
func TestTerminalShowsAFailedReplyAndGoesOn(t *testing.T) {
	fake := fakemodel.Start(t)
	t.Setenv(openai.EnvModel, "fake")
	t.Setenv("LLM_PROVIDER", "") // OPENAI_MODEL chooses (see package automata/llm/llmenv)
	t.Setenv(openai.EnvBaseURL, fake.URL)
	t.Setenv(openai.EnvAPIKey, "sk-test")
	stdin, typing := io.Pipe()
	var out testbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- run([]string{"-terminal", "-data", t.TempDir()}, stdin, &out) }()

	// Written from goroutines: a command that fails to start reads
	// nothing, and the wait below says so.
	go io.WriteString(typing, fakemodel.Status+"\n")
	out.Wait(t, "  [no reply: the model failed: the call of the model failed (HTTP 500)]", hangGuard)
	go io.WriteString(typing, "hello again\n")
	out.Wait(t, "brain: "+fakemodel.Reply("hello again"), hangGuard)
	typing.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
	case <-time.After(hangGuard):
		t.Fatalf("run did not return once stdin closed:\n%s", out.String())
	}
}
