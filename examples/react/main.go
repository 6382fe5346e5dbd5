// Command react is the ReAct agent of seed 002: a finite-state agent that
// plans a task as a tree of subtasks and runs each through Plan, Act,
// Observe and Reflect until it finishes, or a guard trips (too many tool
// calls, too long, too many failures in a row) and it stops in Error. When
// a tool call fails, the reflector heals the run: it retries, substitutes a
// fallback tool, rolls back to the parent task, asks the user, or aborts.
//
//	go run ./examples/react
//
// serves it on http://127.0.0.1:8081 and prints the URL of its devpanel
// (package automata/devpanel), with the token that lets a client in: open
// it in a browser. The panel shows the run (its phase and iteration, with
// alert badges), the task tree, the tool monitor, and the timeline of every
// input with the seed's events (user.input, tool.request, tool.result,
// agent.transition, agent.log, system.alert, agent.finished); it travels
// back in time, sends inputs, and holds the jobs. GET /events is the panel's
// event stream. The other routes are the seed's bridge: POST /run runs a
// task ({"goal": "compute 2*21 and find plans"}; tasks run one at a time,
// in order) and answers its result when it ends (with "Prefer:
// respond-async", at once), POST /reply answers the agent's question ({"runId": "...",
// "content": "..."}), GET /runs/{runId} says how a run is doing, GET /health
// says the server is up, and CORS preflights are answered for the origins of
// -allow-origin. -addr sets the address, -token the token.
//
//	go run ./examples/react -terminal
//
// runs the tasks of stdin instead, one per line, and prints each run's
// transitions and answer; nobody answers the agent's questions there, so a
// run that asks one waits until its time is up. Offline (the default) the planner is rule-based (RulePlanner:
// "compute 2*21 and count words in notes.txt then find plans"), and the
// tools are real and local: a calculator, and tools that read the files of
// the workspace directory (-workspace), of which search_index fails now and
// then, deterministically, so that its fallback, grep, shows. With
// OPENAI_MODEL (or -model) and OPENAI_API_KEY, and OPENAI_BASE_URL for any
// OpenAI-compatible server, the planner is that model (LLMPlanner, package
// automata/llm/openai).
//
// The model is examples/react/agent.yaml, generated into decl/ and impl/ by
// agentgen; the transitions in impl/transitions are written by hand, and the
// work each actor calls for is in work.go (Work.JobFns). Every input is
// journaled in -data, so a rerun continues where it stopped.
//
// What a run costs follows the run, not the agent's history (issue 20):
//
//	go test -run XXX -bench 'LongRuns/panel=false' -benchtime 1x ./examples/react/
//
// runs 1,000 tasks one after another on a bbolt journal, each a goal of
// 2,000 bytes (the most a goal may be) that reads a file of 60 KB and
// counts its words, then computes a sum of many terms (words) or looks up
// a term that is one long token (one-token), and waits until the agent is
// idle again (BenchmarkLongRuns). On a 2-core AMD EPYC with Go 1.26, the
// last 10 runs took 0.89 times as long as the first 10 (one-token: 0.97),
// 11 to 13 ms each, with 75 MiB of live heap at the end (the observations
// of every run: the state keeps them), 605 MiB resident (the journal's
// snapshots of that state allocate the most) and a journal of 74 MiB. It
// was 2.5 times (3.5) before NextRequest passed over the runs that ended
// in one step each: it looked for each request among every run, on every
// state.
//
// Served with the devpanel, as the command serves it:
//
//	go test -run XXX -bench 'LongRuns/panel=true' -benchtime 1x ./examples/react/
//
// runs the same 1,000 tasks, each waited for until a page following the
// panel's event stream has been shown its every input: the last 10 took
// 1.20 times as long as the first 10 (one-token: 0.72), 14 to 20 ms each.
// It was 22 times at 200 runs (2.2 s each), when the panel's timeline
// diffed the whole state before and after every input as JSON; it now
// walks the Go values, at the cost of what the input changed. Resident
// memory at the end was 851 MiB (one-token: 518), for a live heap of
// 185 MiB (the state, which keeps every run's observations of 60 KB, and
// the panel's log of its latest 8 × History events, which carry them too)
// and a journal of 74 MiB.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/llm/openai"
	"github.com/moora-go/moora/examples/react/decl"
)

func main() {
	err := run(os.Args[1:], os.Stdin, os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "react:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	dataDir, workspace, model string
	addr, token, origins      string
	terminal                  bool
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	flags := flag.NewFlagSet("react", flag.ContinueOnError)
	var cfg config
	flags.StringVar(&cfg.dataDir, "data", "react-data", "directory that keeps the agent's journal and snapshots")
	flags.StringVar(&cfg.workspace, "workspace", "", "directory of the files the tools read (default: workspace in -data, with demo files)")
	flags.StringVar(&cfg.model, "model", "", "the model that plans, at OPENAI_BASE_URL with OPENAI_API_KEY (default: OPENAI_MODEL, else the rule-based planner)")
	flags.BoolVar(&cfg.terminal, "terminal", false, "run the tasks of stdin, one per line, instead of serving")
	flags.StringVar(&cfg.addr, "addr", "127.0.0.1:8081", "address to serve on (Reflexor's is 8080: both can run at once)")
	flags.StringVar(&cfg.token, "token", "", "the token a client must present (default: the one kept in -data/token, made on the first run)")
	flags.StringVar(&cfg.origins, "allow-origin", "", "comma-separated origins (scheme://host:port) whose pages may call the server")
	if err := flags.Parse(args); err != nil {
		return err
	}
	work, err := newWork(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.dataDir, 0o755); err != nil {
		return err
	}
	store, err := journal.OpenBolt(filepath.Join(cfg.dataDir, "agent.db"))
	if err != nil {
		return err
	}
	if cfg.terminal {
		return runTerminal(store, work, stdin, stdout)
	}
	return serve(cfg, store, work, stdout)
}

// serve serves the agent until interrupted.
func serve(cfg config, store journal.Store, work Work, stdout io.Writer) error {
	if cfg.token == "" {
		var err error
		if cfg.token, err = httpbridge.TokenFile(filepath.Join(cfg.dataDir, "token")); err != nil {
			store.Close()
			return err
		}
	}
	auth := httpbridge.Bearer(cfg.token)
	panelCfg, views, err := panelConfig(work, auth)
	if err != nil {
		store.Close()
		return err
	}
	jopts, opts := agentOptions(work, time.Now)
	a, panel, err := devpanel.Open(store, panelCfg, jopts, opts...)
	if err != nil {
		return err
	}
	var origins []string
	if cfg.origins != "" {
		origins = strings.Split(cfg.origins, ",")
	}
	srv := newServer(a, auth, origins)
	srv.mount("/devpanel/", panel, panel.Close)
	srv.mux.Handle("GET /events", panel) // the seed's GET /events: the panel's stream
	srv.mux.Handle("GET /react/", views)
	srv.mux.Handle("GET /{$}", redirect("/devpanel/"))
	l, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return errors.Join(err, a.Close(context.Background()))
	}
	fmt.Fprintf(stdout, "ReAct: http://%s/devpanel/?token=%s\n", l.Addr(), cfg.token)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = srv.serve(ctx, l)
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(err, a.Close(closeCtx))
}

// newWork makes the planner, the reflector and the toolkit the flags and
// the environment ask for.
func newWork(cfg config) (Work, error) {
	if cfg.model != "" {
		os.Setenv("OPENAI_MODEL", cfg.model)
	}
	dir := cfg.workspace
	if dir == "" {
		dir = filepath.Join(cfg.dataDir, "workspace")
	}
	ws, err := Workspace(dir)
	if err != nil {
		return Work{}, err
	}
	work := Work{
		Planner:    RulePlanner{},
		Reflector:  RuleReflector{},
		Toolkit:    &Toolkit{Tools: Tools(ws), Allow: Allow, Filter: Filter},
		RetryLimit: 1,
	}
	model, err := openai.FromEnv(nil)
	if err != nil {
		return Work{}, err
	}
	if model != nil {
		work.Planner = LLMPlanner{Model: model}
	}
	return work, nil
}

// runTerminal runs each line of stdin as a task, prints what the runs do,
// and once stdin ends and the runs are over, stops.
func runTerminal(store journal.Store, work Work, stdin io.Reader, stdout io.Writer) error {
	out := &printer{w: stdout, seen: map[string]bool{}}
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
		if Idle(s) {
			select {
			case idle <- struct{}{}:
			default:
			}
		}
	})
	ctx := context.Background()
	lines := bufio.NewScanner(stdin)
	for n := len(a.Current().Requests); lines.Scan(); {
		goal := strings.TrimSpace(lines.Text())
		if goal == "" {
			continue
		}
		n++
		if err := a.Dispatch(ctx, decl.UserRunTask{RunID: fmt.Sprintf("run-%d", n), Goal: goal}); err != nil {
			return errors.Join(err, a.Close(ctx))
		}
	}
	for !Idle(a.Current()) {
		select {
		case <-idle:
		case err := <-failed:
			return errors.Join(err, a.Close(ctx))
		}
	}
	return errors.Join(lines.Err(), a.Close(ctx))
}

// printer shows the runs on a terminal: each transition, alert and answer
// once.
type printer struct {
	mu   sync.Mutex
	w    io.Writer
	seen map[string]bool
}

func (p *printer) print(s decl.AgentState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	line := func(key, format string, args ...any) {
		if !p.seen[key] {
			p.seen[key] = true
			fmt.Fprintf(p.w, format+"\n", args...)
		}
	}
	for i, t := range s.Transitions {
		line(fmt.Sprintf("%s t%d", s.RunID, i), "%s  %-8s → %-8s %s", s.RunID, t.From, t.To, t.Reason)
	}
	for i, a := range s.Alerts {
		line(fmt.Sprintf("%s a%d", s.RunID, i), "%s  alert %s: %s", s.RunID, a.Guard, a.Message)
	}
	for _, r := range s.Runs {
		if r.Outcome == decl.RunRecordOutcomeFinished {
			line("run "+r.RunID, "%s  finished after %s:\n%s", r.RunID, toolCalls(r.Iterations), indent(r.Answer))
		} else {
			line("run "+r.RunID, "%s  error after %s: %s", r.RunID, toolCalls(r.Iterations), r.Error)
		}
	}
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

// toolCalls says how many tool calls n is.
func toolCalls(n int64) string {
	if n == 1 {
		return "1 tool call"
	}
	return fmt.Sprintf("%d tool calls", n)
}
