// Command react is the ReAct agent of seed 002: a finite-state agent that
// plans a task as a tree of subtasks and runs each through Plan, Act,
// Observe and Reflect until it finishes, or a guard trips (too many tool
// calls, too long, too many failures in a row) and it stops in Error. When
// a tool call fails, the reflector heals the run: it retries, substitutes a
// fallback tool, rolls back to the parent task, asks the user, or aborts.
//
// Each run is an agent of its own, with its journal, its state and its
// devpanel. The agents are kept in one bbolt file, -data/agents.db (a
// bolt.Fleet), each under its run's id (a run id with a '.', which
// may not name an agent, gives "run_" and a hash of it), owned by the
// operator, whose token the command has; package automata/registry runs
// them: a run's agent is activated when the run is asked for or someone
// opens it, and deactivated once it has been idle for five minutes (its run
// over, nobody holding it). Its journal stays: opening it again activates it
// from there. Runs proceed in parallel, at most -max-runs (default 8) at
// once: a run asked for while that many are in progress waits for its turn
// (GET /runs/{runId} says "queued"), and a run waiting for the user's reply
// keeps its turn; -max-runs 1 runs the tasks one at a time, in turn. When
// the command starts, it activates each run's agent once, so that the runs
// a stop interrupted go on; the others are deactivated again when idle.
//
//	go run ./examples/react
//
// serves it on http://127.0.0.1:8081 and prints the URL of its start page,
// with the token that lets a client in: open it in a browser, type a task,
// and the devpanel of its run opens (package automata/devpanel). The
// devpanel is a fleet of panels: its root, /devpanel/, lists the runs, and
// opens any one at /devpanel/agents/{id}/, which shows the run (its phase
// and iteration, with alert badges), the task tree, the tool monitor, and
// the timeline of the run's every input with the seed's events (user.input,
// tool.request, tool.result, agent.transition, agent.log, system.alert,
// agent.finished); it travels back in time, sends inputs, and holds the
// jobs. A task typed in a run's panel is a new run, whose panel opens. The
// other routes are the seed's bridge, each addressing a run's agent: POST
// /run runs a task ({"goal": "compute 2*21 and find plans"}) as a new agent
// and answers its result when it ends (with "Prefer: respond-async", at
// once), naming its agent; POST /reply answers the run's question
// ({"runId": "...", "content": "..."}); GET /runs/{runId} says how a run is
// doing; GET /events?runId=... is the event stream of the run's panel; GET
// /health says the server is up; and CORS preflights are answered for the
// origins of -allow-origin. -addr sets the address, -token the token.
//
//	go run ./examples/react -terminal
//
// runs the tasks of stdin instead, one per line, each a run of its own
// (run-1, run-2, ... after the runs the fleet has), in parallel as above,
// and prints each run's transitions and answer; nobody answers the agent's
// questions there, so a run that asks one waits until its time is up.
// Offline (the default) the planner is rule-based (RulePlanner: "compute
// 2*21 and count words in notes.txt then find plans"), and the tools are
// real and local: a calculator, and tools that read the files of the
// workspace directory (-workspace), of which search_index fails now and
// then, deterministically, so that its fallback, grep, shows. With
// OPENAI_MODEL (or -model) and OPENAI_API_KEY, and OPENAI_BASE_URL for any
// OpenAI-compatible server, the planner is that model (LLMPlanner, package
// automata/llm/openai), shown each tool with the JSON Schema of its
// arguments; with LLM_PROVIDER=anthropic, ANTHROPIC_MODEL (or -model) and
// ANTHROPIC_API_KEY, it is that Claude model (package
// automata/llm/anthropic); with LLM_PROVIDER=gemini, GEMINI_MODEL (or
// -model) and GEMINI_API_KEY, that Gemini model (package
// automata/llm/gemini; automata/llm/llmenv chooses).
//
// Each plan hands in the tokens (and the cost, by Work.Prices) of the calls
// of the model it made (agent-plan's usage), and the run's state keeps the
// totals, which the page and the devpanel show. -budget-tokens and
// -budget-cost (Work.Budget) bound them: the agent's jobs check the totals
// before each ask of the planner, and once they have reached the budget
// the agent asks no more (agent-stop-for-budget): the run ends in error
// with a budget alert, and its state says budgetExhausted, with the
// limits, which a restart keeps. The plan that crosses the budget is made
// (the totals were under it) and counted.
//
// A task is a tree of any depth: the planner plans the first pending task,
// depth first, as a tool call or as subtasks of its own, while it is above
// the run's maxDepth (the rule planner splits a part written LABEL (GOAL)
// into the parts of GOAL: "compute 2*21 and notes (read notes.txt and find
// plans)" is a tree of three levels). A rollback gives a subtask up and goes
// back to its parent, whose next subtask runs; a task with subtasks ends
// once they have, done when they all are. A run that enters error (a guard
// tripped, the planner or the reflector gave up) waits there for the
// reflector, which recovers it (Reflector.Recover: replan the task it was
// at, or ask the user), at most maxRecoveries times, or gives it up.
//
// The operator's configuration, react.yaml (built in; -config FILE loads a
// file and reloads it whenever it changes; -config-schema prints its JSON
// Schema, config.schema.json), says which tools are enabled with their
// timeouts and retry limits, the reflector's strategies after a failed
// call and out of error, in order, the guards (maxIterations,
// maxDurationMs, maxFailures, maxRecoveries, maxDepth; a run's request may
// ask for less), and the prompt templates (decompose and plan, the model's
// instructions; question and recover, what the agent asks the user; answer,
// each line of the answer). A configuration put in force is an input of
// every run in progress or not started yet (agent-configure): journaled, so
// that replay and time travel see the configuration each step saw, and in
// force from the run's next step. A file that is not valid is refused with
// its file:line:col, and the configuration in force stays; GET /config
// says which is in force and what was refused.
//
// The tools run in a kit of package automata/toolkit (NewKit), the one
// every agent of the project shares; the example has the tools (Tools),
// not a runner. Each tool is a Go function over a struct of its arguments,
// whose schema is derived from the struct. A plan step's parameters, a
// map of strings in the spec, are the call's arguments as a JSON object of
// strings (an argument meant as a number, wait's ms, is a string of
// digits by its pattern), checked against the schema before the tool
// runs: a parameter missing, unknown or malformed is an invalid call
// (decl.ErrorKindInvalid), which the reflector does not retry. Before the
// call, the allow-list (Allow) may refuse it (permission, and the
// reflector asks the user); each try is bounded by the step's timeoutMs
// (timeout); after it, lines that look like secrets are redacted from the
// output (Filter). A tool that fails, or whose circuit breaker is open
// after five failures in a row (search_index has none: see SearchIndex),
// is a failure, which the reflector retries and then replaces by the
// step's fallback. The kit tries each call once, as the tools' policies
// have no Retries: retrying is the reflector's, each retry a call of its
// own in the journal (a tool given toolkit.Policy.Retries has its tries
// after the first counted in the observation's retries). The call's
// idempotency key is its job's, the same after a restart. Observation
// makes the kit's result the observation the agent journals; a call whose
// job was cancelled reports nothing.
//
// The model is examples/react/agent.yaml, generated into decl/ and impl/ by
// agentgen; the transitions in impl/transitions are written by hand, and the
// work each actor calls for is in work.go (Work.JobFns). The model's state
// keeps any number of runs, one after the other; a run's agent keeps one,
// its admission step refusing the inputs of any other run (runs.go). Every
// input is journaled in its run's agent, so a rerun continues where it
// stopped. (A -data directory of the earlier design, where one agent ran
// every task, keeps that agent in agent.db, which the command no longer
// reads.)
//
// What a run costs follows the run, not the runs before it (issue 20):
//
//	go test -run XXX -bench 'LongRuns/panel=false' -benchtime 1x ./examples/react/
//
// runs 1,000 tasks one after another, each a run of its own in one bbolt
// fleet and a goal of 2,000 bytes (the most a goal may be) that reads a file
// of 60 KB and counts its words, then computes a sum of many terms (words)
// or looks up a term that is one long token (one-token), and waits until
// the run's agent is idle (BenchmarkLongRuns). On a 2-core AMD EPYC with Go
// 1.26, shared with other work, two runs of it found the last 10 runs 0.43
// and 1.24 times as long as the first 10 (one-token: 0.77 and 0.85), 11 to
// 25 ms each: no growth beyond the machine's noise. At the end there were
// 163 MiB of live heap (the 1,000 agents are all active still, none having
// been idle for five minutes, and each state keeps its run's observations
// of 60 KB), 365 to 381 MiB resident, and a fleet file of 195 MiB (each
// run's inputs, and the snapshot its agent took when the runs were closed).
// When one agent ran every task, its state kept every run's observations:
// the last 10 runs took 0.89 times as long as the first 10 (0.97), with
// 75 MiB of live heap and 605 MiB resident (the journal's snapshots of that
// state allocated the most); and 2.5 times (3.5) before NextRequest passed
// over the runs that ended in one step each, when it looked for each
// request among every run, on every state.
//
// Served with the devpanel, as the command serves it:
//
//	go test -run XXX -bench 'LongRuns/panel=true' -benchtime 1x ./examples/react/
//
// runs the same 1,000 tasks, each waited for until a page following its
// run's panel's event stream has been shown its every input: the last 10
// took 0.71 and 0.72 times as long as the first 10 (one-token: 1.06 and
// 0.83), 11 to 20 ms each, with 471 MiB of live heap (each active agent's
// panel keeps its timeline, whose events carry the observations too) and
// 914 to 964 MiB resident. With one agent for every task it was 1.20 times
// (0.72), 14 to 20 ms each, for 185 MiB of live heap and 851 MiB resident;
// and 22 times at 200 runs (2.2 s each), when the panel's timeline diffed
// the whole state before and after every input as JSON, where it now walks
// the Go values, at the cost of what the input changed.
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
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/llmenv"
	"github.com/moora-go/moora/automata/registry"
	"github.com/moora-go/moora/examples/internal/otelenv"
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

// defaultMaxRuns is -max-runs by default: how many runs may be in progress
// at once.
const defaultMaxRuns = 8

// config is what the flags say.
type config struct {
	dataDir, workspace, model string
	addr, token, origins      string
	configFile                string
	maxRuns                   int
	terminal, configSchema    bool
	budget                    llm.Budget
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	flags := flag.NewFlagSet("react", flag.ContinueOnError)
	var cfg config
	flags.StringVar(&cfg.dataDir, "data", "react-data", "directory that keeps the runs' journals (agents.db) and the token")
	flags.StringVar(&cfg.workspace, "workspace", "", "directory of the files the tools read (default: workspace in -data, with demo files)")
	flags.StringVar(&cfg.model, "model", "", "the model that plans, at OPENAI_BASE_URL with OPENAI_API_KEY, or Anthropic's with LLM_PROVIDER=anthropic, or Gemini's with LLM_PROVIDER=gemini (default: OPENAI_MODEL, ANTHROPIC_MODEL or GEMINI_MODEL, else the rule-based planner)")
	flags.BoolVar(&cfg.terminal, "terminal", false, "run the tasks of stdin, one per line, instead of serving")
	flags.IntVar(&cfg.maxRuns, "max-runs", defaultMaxRuns, "how many runs may be in progress at once; the others wait their turn (0: no bound)")
	flags.StringVar(&cfg.addr, "addr", "127.0.0.1:8081", "address to serve on (Reflexor's is 8080: both can run at once)")
	flags.StringVar(&cfg.token, "token", "", "the token a client must present (default: the one kept in -data/token, made on the first run)")
	flags.StringVar(&cfg.origins, "allow-origin", "", "comma-separated origins (scheme://host:port) whose pages may call the server")
	flags.StringVar(&cfg.configFile, "config", "", "the configuration file (YAML; see react.yaml), reloaded when it changes (default: react.yaml as built in)")
	flags.BoolVar(&cfg.configSchema, "config-schema", false, "print the JSON Schema of the configuration file, and exit")
	flags.Int64Var(&cfg.budget.Tokens, "budget-tokens", 0, "the most tokens (input and output) a run's plans may spend on the planner's model; reached, the run stops in error and its state says budgetExhausted (0: no limit)")
	flags.Float64Var(&cfg.budget.Cost, "budget-cost", 0, "the most US dollars a run's plans may spend on the planner's model, priced by Work.Prices (0: no limit)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if cfg.budget.Tokens < 0 || cfg.budget.Cost < 0 {
		return fmt.Errorf("react: -budget-tokens %d and -budget-cost %v: a budget is not negative (0: no limit)", cfg.budget.Tokens, cfg.budget.Cost)
	}
	if cfg.configSchema {
		_, err := stdout.Write(ConfigSchema())
		return err
	}
	// The devpanel's trace view shows the spans of the runs: they are
	// recorded in memory (the latest devpanel.DefaultMaxSpans), and
	// exported too when the environment asks.
	traces := devpanel.NewTraces(0)
	telemetry, err := otelenv.Setup(context.Background(), "react", traces)
	if err != nil {
		return fmt.Errorf("setting up OpenTelemetry: %w", err)
	}
	defer telemetry.Flush(os.Stderr)
	work, err := newWork(cfg, telemetry)
	if err != nil {
		return err
	}
	work.Traces = traces
	configs, err := loadConfigs(cfg.configFile, toolNames(work))
	if err != nil {
		return err
	}
	if cfg.configFile != "" {
		c := configs.current()
		fmt.Fprintf(os.Stderr, "react: configuration %s (sha256 %.12s) in force\n", c.Source, c.Digest)
	}
	if err := os.MkdirAll(cfg.dataDir, 0o755); err != nil {
		return err
	}
	fleet, err := bolt.OpenFleet(filepath.Join(cfg.dataDir, "agents.db"))
	if err != nil {
		return err
	}
	if cfg.terminal {
		return runTerminal(fleet, work, configs, cfg.maxRuns, stdin, stdout)
	}
	return serve(cfg, fleet, work, configs, stdout)
}

// serve serves the runs until interrupted, then closes them (each run's
// agent takes a snapshot) and the fleet.
func serve(cfg config, fleet *bolt.Fleet, work Work, configs *configs, stdout io.Writer) error {
	if cfg.token == "" {
		var err error
		if cfg.token, err = httpbridge.TokenFile(filepath.Join(cfg.dataDir, "token")); err != nil {
			return errors.Join(err, fleet.Close())
		}
	}
	var origins []string
	if cfg.origins != "" {
		origins = strings.Split(cfg.origins, ",")
	}
	srv, err := openServer(runsConfig{Fleet: fleet, Work: work, MaxRuns: cfg.maxRuns, Config: configs.current}, cfg.token, origins)
	if err != nil {
		return errors.Join(err, fleet.Close())
	}
	l, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return errors.Join(err, srv.runs.close(context.Background()), fleet.Close())
	}
	fmt.Fprintf(stdout, "ReAct: http://%s/#token=%s\n", l.Addr(), cfg.token)
	fmt.Fprintf(stdout, "runs:  http://%s/devpanel/#token=%s\n", l.Addr(), cfg.token)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv.configs = configs
	go configs.watch(ctx, srv.runs, os.Stderr)
	resumed := make(chan struct{})
	go func() { // the runs a stop interrupted go on
		defer close(resumed)
		if _, err := srv.runs.resume(ctx, nil); err != nil && !errors.Is(err, registry.ErrClosed) && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "react: resuming the runs:", err)
		}
	}()
	err = srv.serve(ctx, l)
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = errors.Join(err, srv.runs.close(closeCtx))
	<-resumed
	return errors.Join(err, fleet.Close())
}

// newWork makes the planner, the reflector and the toolkit the flags and
// the environment ask for.
func newWork(cfg config, telemetry otelenv.Providers) (Work, error) {
	if cfg.model != "" {
		os.Setenv(llmenv.ModelVariable(), cfg.model)
	}
	dir := cfg.workspace
	if dir == "" {
		dir = filepath.Join(cfg.dataDir, "workspace")
	}
	ws, err := Workspace(dir)
	if err != nil {
		return Work{}, err
	}
	kit, err := newKit(telemetry, Tools(ws)...)
	if err != nil {
		return Work{}, err
	}
	work := Work{
		Planner:    RulePlanner{},
		Reflector:  RuleReflector{},
		Toolkit:    kit,
		RetryLimit: 1,
		Telemetry:  telemetry,
		Budget:     cfg.budget,
	}
	model, err := llmenv.FromEnv(nil)
	if err != nil {
		return Work{}, err
	}
	if model != nil {
		work.Planner = LLMPlanner{Model: Metered(llm.Traced(model, telemetry.Tracer, telemetry.Meter), work.Prices)}
	}
	return work, nil
}

// runTerminal runs each line of stdin as a task, a run of its own (run-1,
// run-2, ... after the runs the fleet has), prints what the runs do, and
// once stdin ends and the runs are over, stops. The runs a stop interrupted
// go on, and are waited for too.
func runTerminal(fleet journal.Fleet, work Work, configs *configs, maxRuns int, stdin io.Reader, stdout io.Writer) error {
	out := &printer{w: stdout, seen: map[string]bool{}}
	failed := make(chan error, 1)
	rs, err := openRuns(runsConfig{Fleet: fleet, Work: work, MaxRuns: maxRuns, Config: configs.current,
		Options: func(string) []automata.Option[decl.AgentState, decl.AgentInput] {
			return []automata.Option[decl.AgentState, decl.AgentInput]{automata.WithEvents(func(e automata.Event[decl.AgentState, decl.AgentInput]) {
				if e.Kind == automata.EffectFailed {
					select {
					case failed <- fmt.Errorf("%s failed: %w", e.Key, e.Err):
					default:
					}
				}
			})}
		}})
	if err != nil {
		return errors.Join(err, fleet.Close())
	}
	ctx := context.Background()
	watching, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	go configs.watch(watching, rs, os.Stderr)
	// Each run watched is held active until it is over.
	type watched struct {
		a       *Agent
		release func()
		over    chan struct{}
	}
	var runs []watched
	watch := func(a *Agent, release func()) {
		w := watched{a, release, make(chan struct{})}
		var once sync.Once
		a.Machine().Subscribe(func(s decl.AgentState) {
			out.print(s)
			if len(s.Requests) > 0 && Idle(s) {
				once.Do(func() { close(w.over) })
			}
		})
		runs = append(runs, w)
	}
	stop := func(err error) error {
		for _, w := range runs {
			w.release()
		}
		return errors.Join(err, rs.close(ctx), fleet.Close())
	}
	n, err := rs.resume(ctx, watch)
	if err != nil {
		return stop(err)
	}
	lines := bufio.NewScanner(stdin)
	for lines.Scan() {
		goal := strings.TrimSpace(lines.Text())
		if goal == "" {
			continue
		}
		var runID string
		for {
			n++
			runID = fmt.Sprintf("run-%d", n)
			_, err := rs.reg.Create(agentID(runID), httpbridge.OperatorName)
			if err == nil {
				break
			}
			if !errors.Is(err, journal.ErrAgentExists) {
				return stop(err)
			}
		}
		a, release, err := rs.get(ctx, runID)
		if err != nil {
			return stop(err)
		}
		watch(a, release)
		if err := a.Machine().Dispatch(ctx, decl.UserRunTask{RunID: runID, Goal: goal}); err != nil {
			return stop(err)
		}
	}
	for _, w := range runs {
		select {
		case <-w.over:
		case <-w.a.Machine().Done():
			return stop(fmt.Errorf("run %s: %w", w.a.ID(), w.a.Machine().Err()))
		case err := <-failed:
			return stop(err)
		}
	}
	return stop(lines.Err())
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
