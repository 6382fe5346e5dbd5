package main

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/llm/openai"
	"github.com/moora-go/moora/internal/fakemodel"
)

// TestTerminalShowsAFailedReplyAndGoesOn: on the terminal, with a model
// server that answers HTTP 500, the failed reply is printed as it happens,
// while stdin is still open, and the next line is answered.
func TestTerminalShowsAFailedReplyAndGoesOn(t *testing.T) {
	fake := fakemodel.Start(t)
	t.Setenv(openai.EnvModel, "fake")
	t.Setenv(openai.EnvBaseURL, fake.URL)
	t.Setenv(openai.EnvAPIKey, "sk-test")
	stdin, typing := io.Pipe()
	var out lockedBuffer
	done := make(chan error, 1)
	go func() { done <- run([]string{"-terminal", "-data", t.TempDir()}, stdin, &out) }()

	// Written from goroutines: a command that fails to start reads
	// nothing, and the wait below says so.
	go io.WriteString(typing, fakemodel.Status+"\n")
	waitOutput(t, &out, "  [no reply: the model failed: the call of the model failed (HTTP 500)]")
	go io.WriteString(typing, "hello again\n")
	waitOutput(t, &out, "brain: "+fakemodel.Reply("hello again"))
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

// waitOutput waits until out holds want.
func waitOutput(t *testing.T, out *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q:\n%s", want, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lockedBuffer is a bytes.Buffer that the command writes while the test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
