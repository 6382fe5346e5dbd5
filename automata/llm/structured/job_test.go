package structured_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/structured"
)

// The test binary doubles as an agent's program: with agentDir set it runs
// a durable agent whose job asks a model for a Triage of each user message
// and dispatches it, then exits once every message has its answer.
const (
	agentDir  = "STRUCTURED_AGENT_DIR"  // the agent's journal, and the model's count of calls
	agentSend = "STRUCTURED_AGENT_SEND" // a user message to send first
	agentDie  = "STRUCTURED_AGENT_DIE"  // stop dead after the model answered, before the dispatch
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(agentDir); dir != "" {
		if err := runAgent(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// counting is the model of the agent: it answers a Triage of the newest
// user message, and counts its calls in a file, one line each, so that the
// count outlives the process.
func counting(dir string) llm.Model {
	return llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		f, err := os.OpenFile(filepath.Join(dir, "calls"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return llm.Response{}, err
		}
		fmt.Fprintln(f, req.IdempotencyKey)
		if err := f.Close(); err != nil {
			return llm.Response{}, err
		}
		args, _ := json.Marshal(Triage{Severity: "high", Summary: req.Messages[len(req.Messages)-1].Content})
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: req.RequiredTool, Arguments: args}}}, nil
	}}
}

func runAgent(dir string) error {
	model := counting(dir)
	jobs := func(c decl.ContextOfLlm) map[string]automata.Job[decl.AgentInput] {
		answered := map[string]bool{}
		for _, a := range c.AssiMessages {
			answered[a.ID] = true
		}
		out := map[string]automata.Job[decl.AgentInput]{}
		for _, m := range c.UserMessages {
			if answered["re-"+m.ID] {
				continue
			}
			out["triage-"+m.ID] = func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
				t, _, err := structured.Ask[Triage](ctx, model, llm.Request{
					System:         "Triage the ticket.",
					Messages:       []llm.Message{{Role: llm.RoleUser, Content: m.Content}},
					IdempotencyKey: automata.JobKey(ctx),
				}, structured.Options{})
				if err != nil {
					return err
				}
				if os.Getenv(agentDie) != "" {
					fmt.Println("answered") // and wait to be killed
					select {}
				}
				dispatch(decl.SendAssiMessage{ID: "re-" + m.ID, Content: t.Severity + ": " + t.Summary, Timestamp: m.Timestamp + 1})
				return nil
			}
		}
		return out
	}
	store, err := bolt.Open(filepath.Join(dir, "agent.db"))
	if err != nil {
		return err
	}
	m, err := journal.Open(store, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{Codec: journal.JSON[decl.AgentState](decl.DecodeInput)},
		agent.WithJobs(decl.JobFns{Llm: jobs}))
	if err != nil {
		return err
	}
	ctx := context.Background()
	if msg := os.Getenv(agentSend); msg != "" {
		if err := m.Dispatch(ctx, decl.SendUserMessage{ID: "u1", Content: msg, Timestamp: 1}); err != nil {
			return err
		}
	}
	done := make(chan string, 1)
	m.Subscribe(func(s decl.AgentState) {
		if n := len(s.AssiMessages); n > 0 && n == len(s.UserMessages) {
			select {
			case done <- s.AssiMessages[n-1].Content:
			default:
			}
		}
	})
	select {
	case reply := <-done:
		fmt.Println("replied:", reply)
	case <-time.After(time.Minute):
		return fmt.Errorf("no reply within a minute")
	}
	return m.Close(ctx)
}

// TestAJobAsksAgainOnlyUntilTheValueIsJournaled: a job asks the model for
// a value and dispatches it. Killed (SIGKILL) after the model answered and
// before the dispatch, the agent's next run asks again, under the same
// key; once the value is journaled, a run asks no more: the model's calls,
// counted in a file the processes share, are 1, then 2, then still 2.
func TestAJobAsksAgainOnlyUntilTheValueIsJournaled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the agent as processes")
	}
	dir := t.TempDir()
	calls := func() []string {
		data, _ := os.ReadFile(filepath.Join(dir, "calls"))
		return strings.Fields(string(data))
	}
	start := func(env ...string) (*exec.Cmd, *bufio.Scanner) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), append([]string{agentDir + "=" + dir}, env...)...)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, bufio.NewScanner(out)
	}

	cmd, out := start(agentSend+"=the invoices page is down", agentDie+"=1")
	if !out.Scan() || out.Text() != "answered" {
		t.Fatalf("the first run said %q (%v)", out.Text(), out.Err())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if n := calls(); len(n) != 1 {
		t.Fatalf("after the first run the model was called %d times: %q", len(n), n)
	}

	for run, want := range []int{2, 2} {
		cmd, out := start()
		if !out.Scan() || out.Text() != "replied: high: the invoices page is down" {
			t.Fatalf("run %d said %q (%v)", run+2, out.Text(), out.Err())
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("run %d: %v", run+2, err)
		}
		if n := calls(); len(n) != want {
			t.Fatalf("after run %d the model was called %d times (%q), want %d", run+2, len(n), n, want)
		}
	}
	if n := calls(); n[0] != n[1] || n[0] != "llm/triage-u1" {
		t.Errorf("the calls' keys are %q: want the job's, the same after the restart", n)
	}
}
