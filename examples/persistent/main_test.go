package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/llm/openai"
	"github.com/moora-go/moora/examples/persistent/decl"
	"github.com/moora-go/moora/examples/persistent/impl/agent"
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
	var out bytes.Buffer
	if err := run([]string{"-data", t.TempDir()}, strings.NewReader("again\n"), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	assertInOrder(t, out.String(), []string{"you: again", "→ 1]", "assistant: Your message has 1 word.\n"})
}

func TestTransitionsArePure(t *testing.T) {
	inputs := []decl.AgentInput{
		decl.SetSystemPrompt{Content: "be brief"},
		decl.SendUserMessage{Message: decl.UserMessage{ID: "u1", Content: "hi there", Timestamp: 10}},
		decl.SendAssistantMessage{Message: decl.AssistantMessage{ID: "a1", Content: "counting", Timestamp: 11,
			ToolCalls: []decl.ToolCall{{ID: "c1", Name: "word-count", Input: "hi there"}}}, AnsweredUpTo: 10},
		decl.SendToolMessage{Message: decl.ToolMessage{ID: "t1", CallID: "c1", Content: "2", Timestamp: 12}},
		decl.SendUserMessage{Message: decl.UserMessage{ID: "u0", Content: "late", Timestamp: 9}},
		decl.SendAssistantMessage{Message: decl.AssistantMessage{ID: "a2", Content: "2 words", Timestamp: 13}, AnsweredUpTo: 12},
	}
	if err := automata.CheckPure(agent.Definition(), inputs...); err != nil {
		t.Fatal(err)
	}
	s := agent.Definition().Initial()
	for _, in := range inputs {
		s = agent.Transition(s, in)
	}
	var ids []string
	for _, m := range Conversation(s.UserMessages, s.AssistantMessages, s.ToolMessages) {
		ids = append(ids, m.ID)
	}
	if got := strings.Join(ids, " "); got != "u0 u1 a1 t1 a2" {
		t.Errorf("conversation order = %s, want u0 u1 a1 t1 a2 (sorted by timestamp)", got)
	}
	if s.LastSentToLlmAt != 12 {
		t.Errorf("lastSentToLLMAt = %d, want 12", s.LastSentToLlmAt)
	}
	w := Work{LLM: offlineLLM(0), Now: time.Now}
	if !w.Idle(s) {
		t.Errorf("finished conversation still calls for %v and %v", w.JobFns().Llm(s.ContextOfLlm()), w.JobFns().Toolkit(s.ContextOfToolkit()))
	}
}

// A kill -9 while the tool call is in flight; the next run redoes the call
// and finishes the answer.
func TestRerunAfterKillContinuesTheConversation(t *testing.T) {
	t.Setenv(openai.EnvModel, "") // the offline llm, in both runs
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

// TestMessagesInOneMillisecondAreEachAnswered: on a clock that does not
// move, two messages arrive in the same millisecond; each gets its own time
// and id (Work.Stamp), and the llm is called again for the second, not
// taken to have answered it with its answer to the first.
func TestMessagesInOneMillisecondAreEachAnswered(t *testing.T) {
	frozen := time.UnixMilli(1_800_000_000_000)
	work := Work{LLM: offlineLLM(0), Tools: []Tool{WordCount(0)}, Now: func() time.Time { return frozen }}
	store, err := journal.OpenBolt(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	noGate := automata.WithJobGate[decl.AgentState, decl.AgentInput](func(context.Context) error { return nil })
	a, err := open(store, work, noGate, func(automata.Event[decl.AgentState, decl.AgentInput]) {})
	if err != nil {
		t.Fatal(err)
	}
	idle := make(chan struct{}, 1)
	a.Subscribe(func(s decl.AgentState) {
		if work.Idle(s) {
			select {
			case idle <- struct{}{}:
			default:
			}
		}
	})
	ctx := context.Background()
	for _, text := range []string{"one two", "three four five"} {
		if err := a.Dispatch(ctx, decl.SendUserMessage{Message: decl.UserMessage{Content: text}}); err != nil {
			t.Fatal(err)
		}
		for !work.Idle(a.Current()) {
			<-idle
		}
	}
	s := a.Current()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if len(s.UserMessages) != 2 || s.UserMessages[0].ID == s.UserMessages[1].ID || s.UserMessages[0].Timestamp >= s.UserMessages[1].Timestamp {
		t.Fatalf("user messages %+v: want two, with their own ids and times", s.UserMessages)
	}
	var replies []string
	for _, m := range s.AssistantMessages {
		if m.Content != "Let me count the words of that." {
			replies = append(replies, m.Content)
		}
	}
	if want := []string{"Your message has 2 words.", "Your message has 3 words."}; !slices.Equal(replies, want) {
		t.Fatalf("replies %q, want %q", replies, want)
	}
}
