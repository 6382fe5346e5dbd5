package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/agents/persistent/decl"
	"github.com/moora-go/moora/automata/agents/persistent/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm/openai"
)

// The test binary doubles as the program: with this variable set it runs
// main, so that a test can start the agent as a real process and kill it.
const asProgram = "PERSISTENT_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asProgram) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestConversationWithAToolCall(t *testing.T) {
	t.Setenv(openai.EnvModel, "") // the offline llm
	t.Setenv("LLM_PROVIDER", "")  // OPENAI_MODEL chooses (see package automata/llm/llmenv)
	var out bytes.Buffer
	dir := t.TempDir()
	if err := run([]string{"-data", dir}, strings.NewReader("count these four words\n"), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	want := []string{
		"you: count these four words",
		"assistant: Let me count the words of that.",
		`  [calls word-count({"text":"count these four words"})]`,
		"  [call-",
		"→ 4]",
		"assistant: Your message has 4 words.",
	}
	assertInOrder(t, out.String(), want)
}

func TestOneWordIsSingular(t *testing.T) {
	t.Setenv(openai.EnvModel, "") // the offline llm
	t.Setenv("LLM_PROVIDER", "")  // OPENAI_MODEL chooses (see package automata/llm/llmenv)
	var out bytes.Buffer
	if err := run([]string{"-data", t.TempDir()}, strings.NewReader("again\n"), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	assertInOrder(t, out.String(), []string{"you: again", "→ 1]", "assistant: Your message has 1 word.\n"})
}

// A kill -9 while the tool call is in flight; the next run redoes the call
// and finishes the answer.
func TestRerunAfterKillContinuesTheConversation(t *testing.T) {
	t.Setenv(openai.EnvModel, "") // the offline llm, in both runs
	t.Setenv("LLM_PROVIDER", "")  // OPENAI_MODEL chooses (see package automata/llm/llmenv)
	dir := t.TempDir()
	first := exec.Command(os.Args[0], "-data", dir, "-tool-delay", "1h")
	first.Env = append(os.Environ(), asProgram+"=1")
	stdin, err := first.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := first.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	first.Stderr = os.Stderr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, "one two three four five\n")
	lines := bufio.NewScanner(stdout)
	deadline := time.AfterFunc(30*time.Second, func() { first.Process.Kill() })
	for lines.Scan() && !strings.Contains(lines.Text(), "[calls word-count") {
	}
	deadline.Stop()
	// The tool call is journaled and running: kill the agent now.
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()

	second := exec.Command(os.Args[0], "-data", dir)
	second.Env = append(os.Environ(), asProgram+"=1")
	second.Stdin = strings.NewReader("") // nothing new to say
	var out bytes.Buffer
	second.Stdout = &out
	second.Stderr = os.Stderr
	done := make(chan error, 1)
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("second run: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		second.Process.Kill()
		t.Fatalf("second run did not finish:\n%s", out.String())
	}
	assertInOrder(t, out.String(), []string{
		"you: one two three four five", // restored
		`  [calls word-count({"text":"one two three four five"})]`,
		"→ 5]", // the tool call, redone
		"assistant: Your message has 5 words.",
	})

	// Each input is in the journal once: the tool result exactly once,
	// though the call ran twice.
	store, err := bolt.Open(filepath.Join(dir, "agent.db"))
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
	var types []string
	for _, e := range entries {
		types = append(types, e.Input.InputType())
	}
	want := "set-system-prompt send-user-message send-assistant-message send-tool-message send-assistant-message"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("journal = %s\nwant      %s", got, want)
	}
}

func assertInOrder(t *testing.T, out string, want []string) {
	t.Helper()
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("output lacks %q after the earlier lines:\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}
}
