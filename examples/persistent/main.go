// Command persistent is the persistent agent: a chat with an llm that calls
// tools, whose every input is journaled, so that a rerun after a crash (or a
// kill -9) continues the conversation where it stopped, redoing the llm or
// tool call that was in flight.
//
//	go run ./examples/persistent -data /tmp/chat
//
// With -nats URL the journal is on NATS JetStream instead of a bbolt file
// (-nats embedded runs a server inside the process, for a demo), and the
// process claims the agent (-agent) as its one owner.
//
// Type messages, one per line; the agent answers. By default the llm is a
// deterministic scripted model (llm.Scripted), offline, which asks for the
// word-count tool and then reports its result. Its data is in -data; run it
// again with the same directory to continue.
//
// With OPENAI_MODEL set, the llm is that model, through the OpenAI provider
// (package automata/llm/openai), at OPENAI_BASE_URL (default OpenAI's API)
// with the key in OPENAI_API_KEY; any server with OpenAI's chat completions
// API will do:
//
//	OPENAI_API_KEY=sk-… OPENAI_MODEL=gpt-4o-mini go run ./examples/persistent
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5:7b go run ./examples/persistent
//
// The llm call's idempotency key (its Idempotency-Key header) is the job's
// key, the same after a restart. A call that fails (a wrong key, no server,
// a rate limit) stops the run with the error; the next run makes it again.
// Each call is sent the newest part of the conversation, from a user
// message on, that takes up to -prompt-bytes (128 KiB by default: see
// Prompt), so that what a message costs follows the message, not the
// conversation (issue 20):
//
//	go test -run XXX -bench LongConversation -benchtime 1x ./examples/persistent/
//
// sends 1,000 user messages of 60 KB each, words or one long token, and
// waits after each until the agent is idle again, the words counted and
// the count reported (BenchmarkLongConversation: a bbolt journal, the
// offline llm, the printer). On a 2-core AMD EPYC with Go 1.26, the last 10
// messages took 0.82 times as long as the first 10 (one-token: 0.67),
// about 6 ms each, with a journal of 115 MiB (each message, and the word
// count's call that quotes it), 255 MiB of live heap at the end (the
// conversation the state holds, and a snapshot of it being written) and
// 378 MiB resident. It was 26 times (19), 232 ms a message at the end and
// 1.2 GiB resident, when the llm was sent the whole conversation (the
// offline llm counts the words of its request: 74% of the time), the
// llm's jobs function made the conversation into that request on every
// state, and the printer sorted the whole conversation on every state.
//
// The model is examples/persistent/agent.yaml, generated into decl/ and
// impl/ by agentgen. Its spec is at version 2 (agent.history.json): version
// 2 added the required property channel to UserMessage, and
// impl/migrations brings the journals of version 1 up to it as they are
// opened (testdata/v1 holds one, written before versions existed). The
// work each actor calls for, on its own context (Work.JobFns, given to
// agent.WithJobs): the toolkit, the earliest unfulfilled tool call of the
// newest assistant message; the llm, unless a tool call is pending, an llm
// call when user or tool messages are newer than lastSentToLLMAt. After a
// crash the same state calls for the same work, under the same keys
// (prefixed with the actor: toolkit/tool-…), and the agent says what it
// resumes.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/llm/openai"
	"github.com/moora-go/moora/examples/persistent/decl"
	"github.com/moora-go/moora/examples/persistent/impl/agent"
)

func main() {
	err := run(os.Args[1:], os.Stdin, os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "persistent:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	flags := flag.NewFlagSet("persistent", flag.ContinueOnError)
	dataDir := flags.String("data", "persistent-data", "directory that keeps the agent's journal and snapshots")
	system := flags.String("system", "You are a helpful assistant. Count words with the word-count tool.", "system prompt, set on the first run")
	llmDelay := flags.Duration("llm-delay", 0, "how long each word of the offline llm's replies takes")
	toolDelay := flags.Duration("tool-delay", 0, "how long the word-count tool takes")
	natsURL := flags.String("nats", "", `keep the journal on NATS JetStream at this URL ("embedded": a server in this process, its files in -data); default: a bbolt file in -data`)
	agentID := flags.String("agent", "persistent", "the agent's id on NATS JetStream")
	promptBytes := flags.Int("prompt-bytes", DefaultPromptBytes, "how much of the conversation each call of the llm is sent, in bytes: the newest messages that fit, from a user message on")
	if err := flags.Parse(args); err != nil {
		return err
	}
	model, err := openai.FromEnv(offlineLLM(*llmDelay))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dataDir, 0o755); err != nil {
		return err
	}
	store, release, err := openStore(*dataDir, *natsURL, *agentID, stdout)
	if err != nil {
		return err
	}
	defer release()
	work := Work{
		LLM:         model,
		Tools:       []Tool{WordCount(*toolDelay)},
		Now:         time.Now,
		PromptBytes: *promptBytes,
	}
	failed := make(chan error, 1)
	var recovering atomic.Bool // while Open restarts the work the restored state calls for
	recovering.Store(true)
	var resumed []string // jobs restarted by Open: said after the history
	// No job does its work until the history and the resumed jobs are
	// printed, so what a resumed job adds comes after both.
	printed := make(chan struct{})
	gate := automata.WithJobGate[decl.AgentState, decl.AgentInput](func(ctx context.Context) error {
		select {
		case <-printed:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	a, err := open(store, work, gate, func(e automata.Event[decl.AgentState, decl.AgentInput]) {
		if e.Kind == automata.EffectStarted && recovering.Load() {
			resumed = append(resumed, e.Key) // Open's goroutine, before it returns
		}
		if e.Kind == automata.EffectFailed {
			select {
			case failed <- fmt.Errorf("%s failed: %w", e.Key, e.Err):
			default:
			}
		}
	})
	recovering.Store(false)
	if err != nil {
		store.Close()
		return err
	}
	out := newPrinter(stdout)
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
	out.print(a.Current()) // the history, if Subscribe has not printed it yet
	out.resuming(resumed)
	close(printed)
	ctx := context.Background()
	if a.Current().SystemPrompt == "" {
		if err := a.Dispatch(ctx, decl.SetSystemPrompt{Content: *system}); err != nil {
			return err
		}
	}
	err = chat(ctx, a, work, stdin)
	// Stdin is done: finish the work the state calls for, then stop. A job
	// that failed is not retried until the state changes, so stop then too;
	// the next run starts it again.
	for !work.Idle(a.Current()) {
		select {
		case <-idle:
		case jobErr := <-failed:
			err = errors.Join(err, jobErr)
			return errors.Join(err, a.Close(ctx))
		}
	}
	return errors.Join(err, a.Close(ctx))
}

// open recovers the agent from store and starts the work its state calls
// for.
func open(store journal.Store, work Work, gate automata.Option[decl.AgentState, decl.AgentInput], events func(automata.Event[decl.AgentState, decl.AgentInput])) (*journal.Machine[decl.AgentState, decl.AgentInput], error) {
	return journal.Open(store, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
		Codec:         journal.JSONGob[decl.AgentState](decl.DecodeInput),
		SnapshotEvery: 1_000,
	}, automata.WithAdmission(work.Stamp), agent.WithJobs(work.JobFns()), gate, automata.WithEvents(events))
}

// chat dispatches each line of stdin as a user message.
func chat(ctx context.Context, a *journal.Machine[decl.AgentState, decl.AgentInput], work Work, stdin io.Reader) error {
	lines := bufio.NewScanner(stdin)
	for lines.Scan() {
		text := strings.TrimSpace(lines.Text())
		if text == "" {
			continue
		}
		// Work.Stamp gives the message its time and its id.
		if err := a.Dispatch(ctx, decl.SendUserMessage{Message: decl.UserMessage{Content: text, Channel: "terminal"}}); err != nil {
			return err
		}
	}
	return lines.Err()
}

// printer prints the messages of the conversation it has not printed yet.
// Those of a state are, as a rule, the messages added at the ends of its
// lists since the state it printed last (user, assistant and tool are its
// lists): it looks at those alone, and at the whole conversation only
// when a list has not just grown at its end (a message older than the
// newest; an older state), so that printing a state costs what it adds,
// not the conversation's length.
type printer struct {
	mu        sync.Mutex
	w         io.Writer
	printed   map[string]bool
	user      []decl.UserMessage
	assistant []decl.AssistantMessage
	tool      []decl.ToolMessage
}

func newPrinter(w io.Writer) *printer { return &printer{w: w, printed: map[string]bool{}} }

// resuming says which jobs the run restarted.
func (p *printer) resuming(keys []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, key := range keys {
		fmt.Fprintf(p.w, "  [resuming %s]\n", key)
	}
}

func (p *printer) print(s decl.AgentState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	user, assistant, tool := s.UserMessages, s.AssistantMessages, s.ToolMessages
	if grewAtEnd(p.user, user, func(m decl.UserMessage) (string, int64) { return m.ID, m.Timestamp }) &&
		grewAtEnd(p.assistant, assistant, func(m decl.AssistantMessage) (string, int64) { return m.ID, m.Timestamp }) &&
		grewAtEnd(p.tool, tool, func(m decl.ToolMessage) (string, int64) { return m.ID, m.Timestamp }) {
		user, assistant, tool = user[len(p.user):], assistant[len(p.assistant):], tool[len(p.tool):]
	}
	p.user, p.assistant, p.tool = s.UserMessages, s.AssistantMessages, s.ToolMessages
	for _, m := range Conversation(user, assistant, tool) {
		if p.printed[m.ID] {
			continue
		}
		p.printed[m.ID] = true
		switch m.Role {
		case "user":
			fmt.Fprintf(p.w, "you: %s\n", m.Content)
		case "assistant":
			fmt.Fprintf(p.w, "assistant: %s\n", m.Content)
			for _, c := range m.ToolCalls {
				fmt.Fprintf(p.w, "  [calls %s(%s)]\n", c.Name, c.Input)
			}
		case "tool":
			fmt.Fprintf(p.w, "  [%s → %s]\n", m.CallID, m.Content)
		}
	}
}

// grewAtEnd reports whether msgs is was with messages added at its end:
// whether its message where was ends is the same, by id and time. (A list
// is kept sorted by time: a message added before that one moves it.)
func grewAtEnd[M any](was, msgs []M, key func(M) (string, int64)) bool {
	if len(msgs) < len(was) {
		return false
	}
	if len(was) == 0 {
		return true
	}
	id, at := key(was[len(was)-1])
	id2, at2 := key(msgs[len(was)-1])
	return id == id2 && at == at2
}
