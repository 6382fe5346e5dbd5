// Command reflexor is the Reflexor agent of seed 000: a chat with a brain (a
// language model) that streams its replies, calls tools (a calculator, a
// clock, a word counter), compresses the history when it grows long and
// loads old tool calls back when it needs their details. Every input is
// journaled, so a rerun after a crash continues where it stopped.
//
//	go run ./examples/reflexor -data /tmp/reflexor
//
// Type messages, one per line; the brain's replies stream as they are
// written. With no model named in the environment it uses a deterministic
// offline brain; with OPENAI_MODEL (and OPENAI_API_KEY, OPENAI_BASE_URL) set
// it uses that model (package automata/llm/openai).
//
// The model is examples/reflexor/agent.yaml, generated into decl/ and impl/
// by agentgen; the transitions in impl/transitions are written by hand, and
// the work each actor calls for is in work.go (Work.JobFns).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/llm/openai"
	"github.com/moora-go/moora/examples/reflexor/decl"
)

// defaultSystem is the brain's system prompt.
const defaultSystem = "You are Reflexor, a helpful assistant. Use the tools for arithmetic, the time and counting words."

func main() {
	err := run(os.Args[1:], os.Stdin, os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "reflexor:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	flags := flag.NewFlagSet("reflexor", flag.ContinueOnError)
	dataDir := flags.String("data", "reflexor-data", "directory that keeps the agent's journal and snapshots")
	compressAfter := flags.Int("compress-after", 8, "compress the history when more messages than this follow the summary (0: never)")
	delay := flags.Duration("delay", 30*time.Millisecond, "how long each word of the offline brain's replies takes to stream")
	if err := flags.Parse(args); err != nil {
		return err
	}
	model, err := openai.FromEnv(ScriptedBrain(*delay))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dataDir, 0o755); err != nil {
		return err
	}
	store, err := journal.OpenBolt(filepath.Join(*dataDir, "agent.db"))
	if err != nil {
		return err
	}
	out := &terminal{w: stdout, printed: map[string]bool{}}
	work := Work{Model: model, System: defaultSystem, Tools: Tools(time.Now), CompressAfter: *compressAfter, Streams: out}
	failed := make(chan error, 1)
	a, err := Open(store, work, time.Now, automata.WithEvents(func(e automata.Event[decl.AgentState, decl.AgentInput]) {
		if e.Kind == automata.EffectFailed {
			select {
			case failed <- fmt.Errorf("%s failed: %w", e.Key, e.Err):
			default:
			}
		}
	}))
	if err != nil {
		store.Close()
		return err
	}
	idle := make(chan struct{}, 1)
	a.Subscribe(func(s decl.AgentState) {
		out.print(s)
		if work.Idle(s) {
			select {
			case idle <- struct{}{}:
			default:
			}
		}
	})
	ctx := context.Background()
	lines := bufio.NewScanner(stdin)
	for n := len(a.Current().UserMessages); lines.Scan(); {
		text := strings.TrimSpace(lines.Text())
		if text == "" {
			continue
		}
		n++
		if err := a.Dispatch(ctx, decl.UserSendMessage{MessageID: fmt.Sprintf("u-%d", n), Content: text}); err != nil {
			return errors.Join(err, a.Close(ctx))
		}
	}
	// Stdin is done: finish the work the state calls for, then stop. A job
	// that failed is not retried until the state changes: stop then too.
	for !work.Idle(a.Current()) {
		select {
		case <-idle:
		case err := <-failed:
			return errors.Join(err, a.Close(ctx))
		}
	}
	return errors.Join(lines.Err(), a.Close(ctx))
}

// terminal shows the conversation on a terminal: each message once, and the
// brain's text as it streams.
type terminal struct {
	mu      sync.Mutex
	w       io.Writer
	printed map[string]bool
	open    string // the message whose text is streaming
}

func (t *terminal) Chunk(id, text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open != id {
		t.open = id
		t.printed[id] = true
		fmt.Fprint(t.w, "brain: ")
	}
	fmt.Fprint(t.w, text)
}

func (t *terminal) End(id, content string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open == id {
		fmt.Fprintln(t.w)
		t.open = ""
	}
}

func (t *terminal) print(s decl.AgentState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	line := func(key, format string, args ...any) {
		if !t.printed[key] {
			if t.open != "" { // a line while a message streams
				fmt.Fprintln(t.w)
				t.open = ""
			}
			t.printed[key] = true
			fmt.Fprintf(t.w, format+"\n", args...)
		}
	}
	for _, m := range s.UserMessages {
		line(m.ID, "you: %s", m.Content)
	}
	for _, m := range s.AssistantMessages {
		if !m.Streaming {
			line(m.ID, "brain: %s", m.Content)
		}
	}
	for _, c := range s.ToolCalls {
		line("call "+c.ID, "  [%s %s(%s)]", c.ID, c.Name, c.Arguments)
	}
	for _, r := range s.ToolResults {
		line("result "+r.ToolCallID, "  [%s → %s]", r.ToolCallID, r.Content)
	}
	if s.SummaryCutAt > 0 {
		line(fmt.Sprintf("summary %d", s.SummaryCutAt), "  [history compressed: %s]", s.ContextSummary)
	}
}
