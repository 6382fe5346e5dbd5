// Command reflexor is the Reflexor agent of seed 000: a chat with a brain (a
// language model) that streams its replies, calls tools (a calculator, a
// clock, a word counter), compresses the history when it grows long and
// loads old tool calls back when it needs their details, served to a
// browser. Every input is journaled, so a rerun after a crash continues
// where it stopped.
//
//	go run ./examples/reflexor
//
// starts it on http://127.0.0.1:8080 and prints the page's URL, with the
// token that lets a page in: open it in a browser. The token is kept in
// -data/token (or given with -token), so that a page stays in across a
// restart. -addr sets the address,
// -data the directory that keeps the journal (default reflexor-data); run it
// again on the same directory to continue. -terminal chats on the terminal
// instead, one message per line of stdin.
//
// With -nats URL the journal is on NATS JetStream instead of a bbolt file
// (-nats embedded runs a server inside the process, its files in
// -data/nats, for a demo), and the process claims the agent (-agent) as its
// one owner: on a server at a URL it waits for the lease of a crashed
// earlier run to expire; on the embedded one, whose files it locks, it
// takes the agent over at once (package automata/journal/jetstream/embedded,
// OpenAgent).
//
// With no model named in the environment the brain is a deterministic
// offline one, which streams its replies word by word (-delay apart),
// calls the tools and compresses the history after -compress-after
// messages; with OPENAI_MODEL (or -model) and OPENAI_API_KEY, and
// OPENAI_BASE_URL for any OpenAI-compatible server, it is that model
// (package automata/llm/openai); with LLM_PROVIDER=anthropic,
// ANTHROPIC_MODEL (or -model) and ANTHROPIC_API_KEY, it is that Claude
// model (package automata/llm/anthropic); with LLM_PROVIDER=gemini,
// GEMINI_MODEL (or -model) and GEMINI_API_KEY, it is that Gemini model
// (package automata/llm/gemini; automata/llm/llmenv chooses). A call of it that fails (its byte limit,
// an HTTP error, a timeout, a dropped connection, its content filter) is a
// failed reply that the page shows with the reason (the terminal prints
// it), and a warning on stderr; the next message is answered.
//
// With -users it serves many people instead, each with conversations of
// their own, every conversation an agent by id in one bbolt file
// (-data/agents.db): see reflexor.Fleet. The URL it prints is the operator's;
// a page opened with it obtains an identity of its own (POST
// /api/sessions, with the operator's token as the bearer token), keeps it,
// and lists that person's conversations. The routes are httpbridge.Fleet's
// under /api/ (POST /api/agents, GET /api/agents, /api/agents/{id}/inputs,
// /api/agents/{id}/state, /api/agents/{id}/streams/{message id}, DELETE
// /api/agents/{id}); the operator's devpanel of every conversation is under
// /panel/, and the URL of it goes to stderr.
//
// With -users -cluster N (1, 2 or 3) the process is one of three on this
// machine that share the conversations: each runs node N of an embedded
// NATS JetStream cluster (its files in -data/nats-N; its ports
// -cluster-ports, default 4231-4233 for clients and 6231-6233 between the
// nodes), every journal replicated on the three, and serves on
// 127.0.0.1:808N unless -addr says otherwise. Give all three the same -data
// (or the same -token and session key): a person is then who they are on
// every one. A conversation is active in one process at a time, the one
// that used it first; the others route its requests there
// (httpbridge.FleetConfig.Peers), and take it over when that process dies
// (package automata/journal/jetstream, "Many processes behind one API").
// The operator's panels do not route: a conversation's panel opens on the
// process that has it.
//
// With -mcp the brain may call the tools of MCP servers too, each a command
// run over stdio (-mcp 'npx -y @modelcontextprotocol/server-everything') or
// the URL of a server over Streamable HTTP (-mcp https://…/mcp); repeat it
// for more (package automata/toolkit/mcp: a server that dies is started
// again, its calls failing meanwhile). A tool whose name the kit has
// already gets the server's name as a prefix. The offline brain calls any
// tool when told "call TOOL {arguments}".
//
// The agent, its page and the -users service are package
// automata/agents/reflexor, which any program can mount under a prefix of
// its own (go doc ./automata/agents/reflexor); this command is that
// package with the offline brain (scripted.go), the demo's tools
// (tools.go: a calculator, a clock and a word counter, toolkit.Func tools
// over typed arguments), the stores, a terminal and the flags.
//
// # Cost
//
// What an input costs does not grow with the conversation, nor does an
// idle page cost much. Measured with
//
//	go test -run XXX -bench LongConversation/words -benchtime 1x ./examples/reflexor/
//	go test -run XXX -bench LongConversation/one-token -benchtime 1x ./examples/reflexor/
//	go test -run XXX -bench IdleConnections -benchtime 1x ./examples/reflexor/
//
// on this project's 2-core machine (AMD EPYC, Go 1.26, shared):
//
//	LongConversation  1,000 user messages of 60 KB posted over HTTP, each
//	                  answered before the next, with one page reading the
//	                  state stream and 20 that never read it: the last 10
//	                  took 0.80 times as long as the first 10 (words), 0.63
//	                  (one 60,000-letter word each; before the offline brain
//	                  stopped quoting long words whole, 200 such messages
//	                  already made it 21 times); resident memory at the end
//	                  222 and 220 MiB, under 3 times the journal's 58 MiB of
//	                  inputs plus 48 MiB (the process at start, 26 MiB, and
//	                  the bridge's ring of recent deltas, up to 16 MiB)
//	IdleConnections   10,000 state streams held open, as pages that read
//	                  what comes and do nothing else, while 200 messages are
//	                  posted: POST p50 1.8 ms, p99 13.4 ms (600 ms when each
//	                  stream held a goroutine); 0.5 KiB of resident memory
//	                  per stream (1.5 KiB on a server's first burst, when
//	                  the Go runtime makes each socket's poll descriptor,
//	                  which it keeps for the sockets after); 121 s after they
//	                  close, resident memory is 0.93 times what it was
//	                  before them (1.41 times what it was before the first
//	                  burst: the descriptors, and the heap the runtime keeps)
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/agents/reflexor"
	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/llmenv"
	"github.com/moora-go/moora/examples/internal/httprun"
	"github.com/moora-go/moora/examples/internal/mcpflag"
	"github.com/moora-go/moora/examples/internal/otelenv"
	"github.com/moora-go/moora/examples/internal/store"
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
	addr := flags.String("addr", "127.0.0.1:8080", "address to serve the page on")
	dataDir := flags.String("data", "reflexor-data", "directory that keeps the agent's journal and snapshots")
	model := flags.String("model", "", "the model to use, at OPENAI_BASE_URL with OPENAI_API_KEY, or Anthropic's with LLM_PROVIDER=anthropic, or Gemini's with LLM_PROVIDER=gemini (default: OPENAI_MODEL, ANTHROPIC_MODEL or GEMINI_MODEL, else the offline brain)")
	compressAfter := flags.Int("compress-after", reflexor.DefaultCompressAfter, "compress the history when more messages than this follow the summary (0: never)")
	delay := flags.Duration("delay", 30*time.Millisecond, "how long each word of the offline brain's replies takes to stream")
	toolDelay := flags.Duration("tool-delay", 0, "how long each tool call takes (to watch one run)")
	terminal := flags.Bool("terminal", false, "chat on the terminal instead: one message per line of stdin")
	token := flags.String("token", "", "the token a page must present (default: the one kept in -data/token, made on the first run)")
	natsURL := flags.String("nats", "", `keep the journal on NATS JetStream at this URL ("embedded": a server in this process, its files in -data); default: a bbolt file in -data`)
	agentID := flags.String("agent", "reflexor", "the agent's id on NATS JetStream")
	users := flags.Bool("users", false, "serve many people, each with conversations of their own, kept in -data/agents.db (see reflexor.Fleet)")
	ports := flags.String("cluster-ports", fmt.Sprintf("%d,%d", clusterClientPort, clusterRoutePort), "with -cluster: the cluster's ports on 127.0.0.1, CLIENT,ROUTE: node N takes NATS clients on CLIENT+N and its peers' routes on ROUTE+N")
	var servers mcpflag.List
	flags.Var(&servers, "mcp", mcpflag.Usage)
	node := flags.Int("cluster", 0, "with -users: be process 1, 2 or 3 of three on this machine sharing the conversations, each running one node of an embedded JetStream cluster (its files in -data/nats-N; default -addr 127.0.0.1:808N)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *model != "" {
		os.Setenv(llmenv.ModelVariable(), *model)
	}
	telemetry, err := otelenv.Setup(context.Background(), "reflexor")
	if err != nil {
		return fmt.Errorf("setting up OpenTelemetry: %w", err)
	}
	defer telemetry.Flush(os.Stderr)
	brain, err := llmenv.FromEnv(ScriptedBrain(*delay))
	if err != nil {
		return err
	}
	tools, err := tracedTools(telemetry, time.Now, *toolDelay)
	if err != nil {
		return err
	}
	closeMCP, err := servers.Mount(tools, slog.Default(), 30*time.Second)
	if err != nil {
		return err
	}
	defer closeMCP()
	if err := os.MkdirAll(*dataDir, 0o755); err != nil {
		return err
	}
	cfg := reflexor.Config{Model: llm.Traced(brain, telemetry.Tracer, telemetry.Meter), System: defaultSystem, Tools: tools, CompressAfter: *compressAfter,
		TracerProvider: telemetry.Tracer, MeterProvider: telemetry.Meter}
	if *compressAfter == 0 {
		cfg.CompressAfter = -1 // never
	}
	if *node != 0 && !*users {
		return errors.New("-cluster shares the conversations of -users: give both")
	}
	if *users {
		if *natsURL != "" || *terminal {
			return errors.New("-users serves pages from a bbolt file: it takes neither -nats nor -terminal")
		}
		if *node != 0 && !addrSet(flags) {
			*addr = fmt.Sprintf("127.0.0.1:%d", 8080+*node)
		}
		var cp clusterPorts
		if _, err := fmt.Sscanf(*ports, "%d,%d", &cp.client, &cp.route); err != nil {
			return fmt.Errorf("-cluster-ports %q: want CLIENT,ROUTE, two port numbers", *ports)
		}
		return runUsers(*dataDir, *addr, *token, cfg, *node, cp, stdout)
	}
	store, release, err := openStore(*dataDir, *natsURL, *agentID)
	if err != nil {
		return err
	}
	defer release()
	if *terminal {
		return chat(store, cfg, stdin, stdout)
	}
	if *token == "" {
		if *token, err = httpbridge.TokenFile(filepath.Join(*dataDir, "token")); err != nil {
			return errors.Join(err, store.Close())
		}
	}
	cfg.Store, cfg.Token = store, *token
	a, err := reflexor.New(cfg) // closes the store when it fails
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return errors.Join(err, a.Close(context.Background()))
	}
	fmt.Fprintf(stdout, "Reflexor: http://%s/?token=%s\n", l.Addr(), *token)
	srv := newServer(a.Handler())
	srv.RegisterOnShutdown(a.CloseStreams)
	ctx, stop := signalContext()
	defer stop()
	err = httprun.Until(ctx, srv, l)
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(err, a.Close(closeCtx))
}

// newServer serves handler, with bounds on what a request may take: its
// streams (the handler's) have bounds of their own.
func newServer(handler http.Handler) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute,
	}
}

// signalContext ends on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// openStore opens the agent's journal (package store): the bbolt file in
// dataDir, or the agent's journal on NATS JetStream with -nats.
func openStore(dataDir, natsURL, agentID string) (journal.Store, func(), error) {
	return store.Open(dataDir, natsURL, agentID, func(holder string) {
		// Not on stdout, whose first line is the page's URL.
		fmt.Fprintf(os.Stderr, "reflexor: waiting for the lease of %s on agent %s to expire\n", holder, agentID)
	})
}

// chat is the terminal mode: each line of stdin is a user message, the
// conversation goes to stdout, and once stdin ends the agent finishes the
// work its state calls for and stops.
func chat(store journal.Store, cfg reflexor.Config, stdin io.Reader, stdout io.Writer) error {
	out := &terminal{w: stdout, printed: map[string]bool{}}
	failed := make(chan error, 1)
	cfg.Store, cfg.Streams = store, out
	cfg.Options = append(cfg.Options, automata.WithEvents(func(e automata.Event[decl.AgentState, decl.AgentInput]) {
		if e.Kind == automata.EffectFailed {
			select {
			case failed <- fmt.Errorf("%s failed: %w", e.Key, e.Err):
			default:
			}
		}
	}))
	a, err := reflexor.New(cfg) // closes the store when it fails
	if err != nil {
		return err
	}
	m := a.Machine()
	idle := make(chan struct{}, 1)
	m.Subscribe(func(s decl.AgentState) {
		out.print(s)
		if reflexor.Idle(s) {
			select {
			case idle <- struct{}{}:
			default:
			}
		}
	})
	ctx := context.Background()
	lines := bufio.NewScanner(stdin)
	for n := len(m.Current().UserMessages); lines.Scan(); {
		text := strings.TrimSpace(lines.Text())
		if text == "" {
			continue
		}
		n++
		if err := m.Dispatch(ctx, decl.UserSendMessage{MessageID: fmt.Sprintf("u-%d", n), Content: text}); err != nil {
			return errors.Join(err, a.Close(ctx))
		}
	}
	// Stdin is done: finish the work the state calls for, then stop. (A
	// failed call of the model is a failed reply, printed as it comes; a
	// job that failed otherwise is not retried until the state changes:
	// stop then too.)
	for !reflexor.Idle(m.Current()) {
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

func (t *terminal) Fail(id, reason string) {
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
		switch {
		case m.Error != nil:
			line("failed "+m.ID, "  [no reply: the model failed: %s]", *m.Error)
		case !m.Streaming:
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

// addrSet says whether -addr was given.
func addrSet(flags *flag.FlagSet) bool {
	set := false
	flags.Visit(func(f *flag.Flag) { set = set || f.Name == "addr" })
	return set
}
