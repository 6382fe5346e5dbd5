package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/devpanel"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/examples/internal/otelenv"
	"github.com/moora-go/moora/examples/react/decl"
	"github.com/moora-go/moora/examples/react/impl/transitions"
)

// Work is the injected side of the agent: the planning and reflecting
// strategies, the toolkit, and the clock of the watchdog.
type Work struct {
	Planner   Planner
	Reflector Reflector
	// Toolkit runs the tool calls; the planner is shown its tools
	// (Kit.LLMTools).
	Toolkit *toolkit.Kit
	// TimeoutMs is the timeout of each tool call the planner plans
	// (default 3000), RetryLimit how many times a failed call is retried
	// before its fallback (default 1).
	TimeoutMs, RetryLimit int64
	// Now is the watchdog's clock; nil is time.Now.
	Now func() time.Time
	// Prices is the price table of the planner's model (llm.Prices, in US
	// dollars per million tokens, by the name the model gives itself),
	// with which newWork's Metered prices each call; nil: every call costs
	// 0. The plan jobs hand each plan's tokens and cost in with it
	// (agent-plan's usage), and the state's usage is the totals.
	Prices llm.Prices
	// Budget bounds what an agent (in the command, a run) spends on calls
	// of the planner's model, in tokens and in US dollars (by Prices); the
	// zero value: no limit. The agent's jobs check the usage in its state
	// before each ask of the planner: once it has reached the budget, the
	// agent asks no more and hands in agent-stop-for-budget instead, which
	// ends the run in progress in error (a budget alert) and records
	// budgetExhausted, which the user sees, with the totals and the
	// limits, until a Budget raised lets a plan ask again. The plan that
	// crosses it is made (the totals were under it) and counted. (A plan
	// may ask more than once: to split the goal, then to plan a task.)
	Budget llm.Budget
	// Telemetry, when its providers are set, traces and measures each
	// run's agent (automata.WithTelemetry, with the agent's id on its
	// spans: see openRuns) and the registry of the runs; the toolkit and
	// the model are given them where they are made (newWork).
	Telemetry otelenv.Providers
	// Traces, if set, keeps the spans of Telemetry.Tracer for the
	// devpanel's trace view (the command always sets it: see run).
	Traces *devpanel.Traces
	// Begin, if set, is called by a run's start job before it plans: it
	// returns once the run may start (the command bounds the runs in
	// progress at once: see runs), or with the error that ends the job
	// when its context does.
	Begin func(ctx context.Context) error
}

// JobFns returns each actor's jobs, on its context (agent.WithJobs prefixes
// the keys with the actor's name). Each is a pure function of the context,
// so a restored agent calls for the same jobs under the same keys:
//
//   - the agent's start-{runId}: no run in progress and a task asked for
//     that has not run: once Begin lets it, the planner splits its goal and
//     plans the first subtask (splitting it in turn, while it may);
//   - plan-{runId}-{n} in phase plan (n counts the run's transitions): the
//     planner plans the next pending task, depth first, or writes the
//     answer;
//   - stop-for-budget-{runId}-{n} instead of a plan or a replan that would
//     ask the planner, once the usage has reached Work.Budget: it hands in
//     agent-stop-for-budget;
//   - recover-{runId}-{n} in error, while the run may recover (n counts its
//     recoveries): the reflector's way out (Reflector.Recover);
//   - replan-{runId}-{n} while waiting, once the user has replied (n counts
//     the replies): the planner plans the task again with the reply;
//   - observe-{callId} in phase act, once the toolkit has observed the call:
//     the observer checks the step's success criteria (Observe);
//   - reflect-{callId} in phase reflect: the reflector's strategy;
//   - deadline-{runId}-{at} while a run is in progress, not in error: the
//     watchdog, which hands in agent-check at the run's deadline at (a new
//     configuration may move it);
//   - the toolkit's call-{callId} in phase act: the tool call.
func (w Work) JobFns() decl.JobFns {
	return decl.JobFns{Agent: w.agentJobs, Toolkit: w.toolkitJobs}
}

type jobs = map[string]automata.Job[decl.AgentInput]

func (w Work) agentJobs(c decl.ContextOfAgent) jobs {
	j := jobs{}
	switch c.Phase {
	case decl.PhaseIdle, decl.PhaseFinished, decl.PhaseError:
		if transitions.Recovering(c.Phase, c.RunID, c.Runs) {
			j[fmt.Sprintf("recover-%s-%d", c.RunID, len(c.Recoveries))] = w.recover(c)
			return j
		}
		if r, ok := NextRequest(c); ok {
			j["start-"+r.RunID] = w.start(r)
		}
		return j
	case decl.PhasePlan:
		if w.spent(c) && asksToPlan(c) {
			j[fmt.Sprintf("stop-for-budget-%s-%d", c.RunID, len(c.Transitions))] = w.stopForBudget(c.RunID)
		} else {
			// Keyed by the tree too: a plan of subtasks alone plans again.
			j[fmt.Sprintf("plan-%s-%d-%d", c.RunID, len(c.Transitions), len(c.Tasks))] = metering(w.plan(c))
		}
	case decl.PhaseWaiting:
		if n, reply, ok := newReply(c); ok {
			if w.spent(c) && !strings.EqualFold(strings.TrimSpace(reply.Content), "abort") {
				j[fmt.Sprintf("stop-for-budget-%s-%d", c.RunID, len(c.Transitions))] = w.stopForBudget(c.RunID)
			} else {
				j[fmt.Sprintf("replan-%s-%d", c.RunID, n)] = metering(w.replan(c, reply))
			}
		}
	case decl.PhaseAct:
		call := c.Calls[len(c.Calls)-1]
		if o, ok := observation(c.Observations, call.CallID); ok {
			j["observe-"+call.CallID] = observe(c.RunID, call, o)
		}
	case decl.PhaseReflect:
		call := c.Calls[len(c.Calls)-1]
		j["reflect-"+call.CallID] = w.reflect(c, call)
	}
	// Keyed by the deadline, which a new configuration may move.
	at := c.StartedAt + c.Limits.MaxDurationMs + 1
	j[fmt.Sprintf("deadline-%s-%d", c.RunID, at)] = w.deadline(c.RunID, at)
	return j
}

// spent reports whether the agent's usage has reached w.Budget.
func (w Work) spent(c decl.ContextOfAgent) bool {
	cost := 0.0
	if c.Usage.Cost != nil {
		cost = *c.Usage.Cost
	}
	return w.Budget.Reached(c.Usage.InputTokens+c.Usage.OutputTokens, cost)
}

// asksToPlan reports whether the plan job of phase plan would ask the
// planner: to split the run's goal, or to plan a pending task. The one that
// writes the answer asks nothing, and runs whatever the budget.
func asksToPlan(c decl.ContextOfAgent) bool {
	_, _, _, pending := Pending(c.Tasks)
	return unsplit(c) || pending
}

// stopForBudget hands in agent-stop-for-budget for run runID, with the
// budget's limits.
func (w Work) stopForBudget(runID string) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		dispatch(decl.AgentStopForBudget{RunID: runID, MaxTokens: w.Budget.Tokens, MaxCost: w.Budget.Cost})
		return nil
	}
}

func (w Work) toolkitJobs(c decl.ContextOfToolkit) jobs {
	if c.Phase != decl.PhaseAct || len(c.Calls) == 0 {
		return nil
	}
	call := c.Calls[len(c.Calls)-1]
	if _, ok := observation(c.Observations, call.CallID); ok || call.Observed {
		return nil
	}
	return jobs{"call-" + call.CallID: w.call(call)}
}

// NextRequest returns the oldest task asked for that has not run yet: not
// the run in progress (or the last one), and not among the runs that
// ended.
func NextRequest(c decl.ContextOfAgent) (decl.TaskRequest, bool) {
	r, ok, _ := nextRequest(c)
	return r, ok
}

// nextRequest is NextRequest, with the number of run ids it compared or
// looked up: at most two for each request and one for each run, whatever
// their order. Tasks run in the order they were asked for, so the runs that ended are,
// as a rule, the first requests in the same order: each is passed over
// with one comparison, and the runs after the first one out of that order
// are looked up in a set. (Each request looked for among all the runs, as
// it was, made every state of the agent cost the square of its history:
// the agent's jobs and Idle call it on every state.) The requests' ids are
// unique (UserRunTask queues a runId once), so that a request after the
// runs passed over in order is none of them.
func nextRequest(c decl.ContextOfAgent) (next decl.TaskRequest, ok bool, compared int) {
	j := 0                  // c.Runs[:j] are requests passed over in order
	var ran map[string]bool // the ids of c.Runs[j:], once a request is out of that order
	for _, r := range c.Requests {
		if ran == nil && j < len(c.Runs) {
			compared++
			if c.Runs[j].RunID == r.RunID {
				j++
				continue
			}
		}
		if r.RunID == c.RunID {
			continue
		}
		if j < len(c.Runs) { // is r among the runs not passed over?
			if ran == nil {
				ran = make(map[string]bool, len(c.Runs)-j)
				for _, x := range c.Runs[j:] {
					ran[x.RunID] = true
				}
				compared += len(c.Runs) - j
			}
			compared++
			if ran[r.RunID] {
				continue
			}
		}
		return r, true, compared
	}
	return decl.TaskRequest{}, false, compared
}

// newReply returns the user's reply to the question, if any, with its
// number among the run's replies.
func newReply(c decl.ContextOfAgent) (int, decl.Reply, bool) {
	n := 0
	for _, r := range c.Replies {
		if r.RunID != c.RunID {
			continue
		}
		n++
		if r.Timestamp >= c.AskedAt {
			return n, r, true
		}
	}
	return 0, decl.Reply{}, false
}

// observation returns the observation of call callID. The observations
// are those of every run, the newest last: the current call's is looked
// for from the end.
func observation(os []decl.Observation, callID string) (decl.Observation, bool) {
	for i := len(os) - 1; i >= 0; i-- {
		if os[i].CallID == callID {
			return os[i], true
		}
	}
	return decl.Observation{}, false
}

// start starts the run of request r once Begin lets it: the plan job then
// splits its goal under the configuration in force when it does (a run
// waiting for its turn starts under a configuration put in force
// meanwhile).
func (w Work) start(r decl.TaskRequest) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		if w.Begin != nil {
			if err := w.Begin(ctx); err != nil {
				return err
			}
		}
		dispatch(decl.AgentPlan{RunID: r.RunID, Start: &r})
		return nil
	}
}

// split adds the subtasks of tasks[i], described by parts, to the tree
// (the root's are t1, t2, ...; tN's are tN.1, tN.2, ...), and returns the
// tree and the subtasks to plan.
func split(tasks []decl.TaskNode, i int, parts []string) ([]decl.TaskNode, []decl.Subtask) {
	parent := tasks[i]
	prefix := parent.TaskID + "."
	if parent.ParentID == "" {
		prefix = "t"
	}
	children := slices.Grow(slices.Clone(parent.Children), len(parts))
	subs := make([]decl.Subtask, len(parts))
	for k, p := range parts {
		id := prefix + strconv.Itoa(len(children)+1)
		children = append(children, id)
		subs[k] = decl.Subtask{TaskID: id, Description: p, ParentID: ptr(parent.TaskID)}
		tasks = append(tasks, decl.TaskNode{TaskID: id, Description: p, Status: decl.TaskNodeStatusPending, ParentID: parent.TaskID, Children: []string{}})
	}
	tasks[i].Children, tasks[i].Status = children, decl.TaskNodeStatusRunning
	return tasks, subs
}

// unsplit reports whether the run's goal is still to be split: the tree is
// the root alone, running, and no step was planned for it (the user's reply
// to a question about it makes the root a task of one tool call).
func unsplit(c decl.ContextOfAgent) bool {
	if len(c.Tasks) != 1 || len(c.Tasks[0].Children) > 0 || c.Tasks[0].Status != decl.TaskNodeStatusRunning {
		return false
	}
	_, stepped := stepOf(c.Steps, c.Tasks[0].TaskID)
	return !stepped
}

// checkParts says what is wrong with the subtasks a planner split a task
// into, which a plan cannot take: none, more than the tree may hold, or a
// description empty or over 2000 characters.
func checkParts(parts []string, tasks int) error {
	switch {
	case len(parts) == 0:
		return errors.New("no subtasks")
	case tasks+len(parts) > transitions.MaxTasks:
		return fmt.Errorf("%d subtasks, more than a tree of %d tasks holds", len(parts), transitions.MaxTasks)
	}
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); strings.TrimSpace(p) == "" || n > 2000 {
			return fmt.Errorf("subtask %d is empty or longer than 2000 characters (%d)", i+1, n)
		}
	}
	return nil
}

// plan plans the next pending task, or writes the answer when none is;
// first, for a run just started, the planner splits its goal.
func (w Work) plan(c decl.ContextOfAgent) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		key, in, tasks := automata.JobKey(ctx), decl.AgentPlan{RunID: c.RunID}, slices.Clone(c.Tasks)
		if unsplit(c) {
			parts, err := w.Planner.Decompose(ctx, key, c.Goal, render(c.Config, PromptDecompose, DecomposePrompt{Goal: c.Goal}))
			if err == nil {
				err = checkParts(parts, len(tasks))
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				in.Abort = ptr(fmt.Sprintf("splitting the goal: %v", err))
				dispatch(in)
				return nil
			}
			tasks, in.Subtasks = split(tasks, 0, parts)
		}
		return w.planNext(ctx, key, in, tasks, c.Limits, c.Config, dispatch)
	}
}

// Pending returns the task to plan next, the first pending task of the
// tree in depth-first order (a task's subtasks before its next sibling),
// with its depth, and the one after it.
func Pending(tasks []decl.TaskNode) (next decl.TaskNode, depth int64, after string, ok bool) {
	byID := make(map[string]int, len(tasks))
	for i, t := range tasks {
		byID[t.TaskID] = i
	}
	var walk func(i int, d int64) bool
	walk = func(i int, d int64) bool {
		t := tasks[i]
		if t.Status == decl.TaskNodeStatusPending && i > 0 {
			if ok {
				after = t.TaskID
				return true
			}
			next, depth, ok = t, d, true
		}
		for _, id := range t.Children {
			if j, found := byID[id]; found && d < transitions.MaxTasks && walk(j, d+1) {
				return true
			}
		}
		return false
	}
	if len(tasks) > 0 {
		walk(0, 0)
	}
	return next, depth, after, ok
}

// planNext plans the next pending task of tasks: the planner splits it
// into subtasks (while above maxDepth), and those in turn, until it plans
// a task's tool call (Act); with the tools the configuration enables, each
// with its timeout and retry limit. With no task pending, it writes the
// run's answer.
func (w Work) planNext(ctx context.Context, key string, in decl.AgentPlan, tasks []decl.TaskNode, limits decl.Limits, cfg decl.Config, dispatch automata.Dispatch[decl.AgentInput]) error {
	next, d, after, ok := Pending(tasks)
	if !ok {
		in.Answer = ptr(answer(tasks, cfg))
		dispatch(in)
		return nil
	}
	tools := w.tools(cfg)
	maxDepth := max(deref(limits.MaxDepth), 1)
	for {
		maySplit := d < maxDepth
		p, err := w.Planner.PlanTask(ctx, key, Task{Description: next.Description, Tools: tools, MaySplit: maySplit,
			Prompt: render(cfg, PromptPlan, PlanPrompt{Tools: tools, MaySplit: maySplit})})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			in.Abort = ptr(fmt.Sprintf("planning %s: %v", next.TaskID, err))
			dispatch(in)
			return nil
		}
		if len(p.Subtasks) == 0 {
			in.Step, in.Abort = w.step(next.TaskID, next.Description, after, p, cfg)
			dispatch(in)
			return nil
		}
		if err := checkParts(p.Subtasks, len(tasks)); err != nil {
			in.Abort = ptr(fmt.Sprintf("planning %s: %v", next.TaskID, err))
			dispatch(in)
			return nil
		}
		i := slices.IndexFunc(tasks, func(t decl.TaskNode) bool { return t.TaskID == next.TaskID })
		var subs []decl.Subtask
		tasks, subs = split(tasks, i, p.Subtasks)
		in.Subtasks = append(in.Subtasks, subs...)
		if !maySplit { // past maxDepth: the transition trips the guard
			dispatch(in)
			return nil
		}
		next, d, after, _ = Pending(tasks)
	}
}

// tools are the toolkit's tools that cfg enables, as the planner is shown
// them.
func (w Work) tools(cfg decl.Config) []llm.Tool {
	var tools []llm.Tool
	for _, t := range w.Toolkit.LLMTools() {
		if enabled(cfg, t.Name) {
			tools = append(tools, t)
		}
	}
	return tools
}

// replan plans the task in question again with the user's reply: as a
// task of its own when the planner can plan it as one call, else as the
// new value of the step's first parameter. "abort" gives the run up.
func (w Work) replan(c decl.ContextOfAgent, reply decl.Reply) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		in := decl.AgentPlan{RunID: c.RunID}
		text := strings.TrimSpace(reply.Content)
		if strings.EqualFold(text, "abort") {
			in.Abort = ptr("the user aborted the run")
			dispatch(in)
			return nil
		}
		focus, ok := Focus(c.Tasks, c.Calls)
		if !ok {
			in.Abort = ptr("no task to plan with the reply")
			dispatch(in)
			return nil
		}
		old, stepped := stepOf(c.Steps, focus.TaskID)
		tools := w.tools(c.Config)
		p, err := w.Planner.PlanTask(ctx, automata.JobKey(ctx), Task{Description: text, Tools: tools,
			Prompt: render(c.Config, PromptPlan, PlanPrompt{Tools: tools})})
		switch {
		case err == nil:
		case errors.Is(err, ErrNoRule) && stepped && len(old.ToolParameters) > 0:
			p = Planned{Tools: old.ToolCandidates, Criteria: old.SuccessCriteria, Parameters: maps.Clone(old.ToolParameters)}
			p.Parameters[slices.Sorted(maps.Keys(old.ToolParameters))[0]] = text
		default:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			in.Abort = ptr(fmt.Sprintf("planning %s again: %v", focus.TaskID, err))
			dispatch(in)
			return nil
		}
		_, _, after, _ := Pending(c.Tasks)
		if after == focus.TaskID || after == "" {
			after = old.Next
		}
		in.Step, in.Abort = w.step(focus.TaskID, text, after, p, c.Config)
		dispatch(in)
		return nil
	}
}

// Focus returns the task the run is at: the task of its last call while
// that task runs, else the next pending task, else the root while it has no
// subtasks.
func Focus(tasks []decl.TaskNode, calls []decl.ToolCall) (decl.TaskNode, bool) {
	if len(calls) > 0 {
		id := calls[len(calls)-1].TaskID
		if i := slices.IndexFunc(tasks, func(t decl.TaskNode) bool { return t.TaskID == id }); i >= 0 && tasks[i].Status == decl.TaskNodeStatusRunning {
			return tasks[i], true
		}
	}
	if t, _, _, ok := Pending(tasks); ok {
		return t, true
	}
	if len(tasks) > 0 && len(tasks[0].Children) == 0 && tasks[0].Status == decl.TaskNodeStatusRunning {
		return tasks[0], true // a goal not split (the planner could not)
	}
	return decl.TaskNode{}, false
}

// step is the plan step of task taskID that p plans, with the tools cfg
// enables (the others are left out); the step's timeout and retry limit are
// its first tool's in cfg, else Work's. With no tool enabled, it is the
// reason to abort instead.
func (w Work) step(taskID, goal, next string, p Planned, cfg decl.Config) (*decl.PlanStep, *string) {
	var candidates []string
	for _, t := range p.Tools {
		if enabled(cfg, t) {
			candidates = append(candidates, t)
		}
	}
	if len(candidates) == 0 {
		return nil, ptr(fmt.Sprintf("no tool of the plan of %s is enabled: %s", taskID, strings.Join(p.Tools, ", ")))
	}
	timeout, retries := w.TimeoutMs, w.RetryLimit
	if t, ok := cfg.Tools[candidates[0]]; ok {
		timeout, retries = t.TimeoutMs, t.RetryLimit
	}
	if timeout <= 0 {
		timeout = 3000
	}
	if retries < 0 {
		retries = 0
	}
	params := p.Parameters
	if params == nil {
		params = map[string]string{}
	}
	return &decl.PlanStep{TaskID: taskID, Goal: goal, ToolCandidates: candidates, SuccessCriteria: p.Criteria,
		TimeoutMs: timeout, RetryLimit: retries, Next: next, ToolParameters: params}, nil
}

func stepOf(steps []decl.PlanStep, taskID string) (decl.PlanStep, bool) {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].TaskID == taskID {
			return steps[i], true
		}
	}
	return decl.PlanStep{}, false
}

// answer is the run's answer: a line for each task without subtasks, in
// depth-first order (the root, when it was planned as one call), by the
// configuration's answer template.
func answer(tasks []decl.TaskNode, cfg decl.Config) string {
	byID := make(map[string]int, len(tasks))
	for i, t := range tasks {
		byID[t.TaskID] = i
	}
	var lines []string
	var walk func(i int, d int)
	walk = func(i int, d int) {
		t := tasks[i]
		if len(t.Children) == 0 && (i > 0 || len(tasks) == 1 && t.Status != decl.TaskNodeStatusRunning) {
			why := t.Metadata["rollback"]
			if why == "" {
				why = t.Metadata["error"]
			}
			lines = append(lines, render(cfg, PromptAnswer, AnswerPrompt{Task: t.Description, Done: t.Status == decl.TaskNodeStatusDone, Result: t.Metadata["result"], Why: why}))
		}
		for _, id := range t.Children {
			if j, ok := byID[id]; ok && d < transitions.MaxTasks {
				walk(j, d+1)
			}
		}
	}
	if len(tasks) > 0 {
		walk(0, 0)
	}
	if len(lines) == 0 {
		return "nothing to do"
	}
	return strings.Join(lines, "\n")
}

// observe takes the toolkit's observation of call in: the call succeeded
// when the tool did and its output meets the step's criteria.
func observe(runID string, call decl.ToolCall, o decl.Observation) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		in := decl.AgentObserve{RunID: runID, CallID: call.CallID, Success: o.Success, ErrorKind: o.ErrorKind, Error: o.Error}
		if o.Success && !Satisfies(call.SuccessCriteria, o.Payload) {
			in.Success, in.ErrorKind = false, decl.ErrorKindCriteria
			in.Error = fmt.Sprintf("the result %q is not %s", clip(o.Payload, 80), call.SuccessCriteria)
		}
		dispatch(in)
		return nil
	}
}

// reflect asks the reflector what to do after call.
func (w Work) reflect(c decl.ContextOfAgent, call decl.ToolCall) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		r := Reflection{Call: call, Config: c.Config}
		r.Observation, _ = observation(c.Observations, call.CallID)
		r.Step, _ = stepOf(c.Steps, call.TaskID)
		if i := slices.IndexFunc(c.Tasks, func(t decl.TaskNode) bool { return t.TaskID == call.TaskID }); i >= 0 {
			r.Task = c.Tasks[i]
		}
		// The step's calls: back to its first (attempt 1), as a step
		// planned again (after a reply, or a recovery) starts afresh.
		if call.Attempt > 1 {
			for i := len(c.Calls) - 2; i >= 0; i-- {
				if e := c.Calls[i]; e.TaskID == call.TaskID {
					r.Earlier = append(r.Earlier, e)
					if e.Attempt <= 1 {
						break
					}
				}
			}
			slices.Reverse(r.Earlier)
		}
		strategy, reason, err := w.Reflector.Reflect(ctx, automata.JobKey(ctx), r)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The run is not left waiting for a job that has ended.
			strategy, reason = decl.StrategyAbort, "the reflector failed: "+err.Error()
		}
		reason = clip(reason, 2000)
		in := decl.AgentReflect{RunID: c.RunID, CallID: call.CallID, Strategy: strategy, Reason: reason}
		if strategy == decl.StrategyAskUser {
			in.Question = &reason
		}
		dispatch(in)
		return nil
	}
}

// recover asks the reflector how the run in error recovers.
func (w Work) recover(c decl.ContextOfAgent) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		t := Trouble{Error: c.Error, Config: c.Config}
		if n := len(c.Transitions); n > 0 {
			last := c.Transitions[n-1]
			t.From = last.From
			if a := len(c.Alerts); a > 0 && c.Alerts[a-1].At == last.At {
				t.Guard = c.Alerts[a-1].Guard
			}
		}
		t.Task, _ = Focus(c.Tasks, c.Calls)
		if t.From == decl.PhaseWaiting {
			if _, reply, ok := newReply(c); ok && strings.EqualFold(strings.TrimSpace(reply.Content), "abort") {
				t.UserAborted = true
			}
		}
		strategy, reason, question, err := w.Reflector.Recover(ctx, automata.JobKey(ctx), t)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The run is not left in error with no job to take it out.
			strategy, reason, question = decl.RecoveryStrategyGiveUp, "the reflector failed: "+err.Error(), ""
		}
		in := decl.AgentRecover{RunID: c.RunID, Strategy: strategy, Reason: clip(reason, 2000)}
		if question != "" {
			in.Question = ptr(clip(question, 2000))
		}
		dispatch(in)
		return nil
	}
}

// deadline hands in agent-check at the run's deadline (Unix milliseconds),
// unless the run ends first (its key vanishes: the job is cancelled).
func (w Work) deadline(runID string, at int64) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		now := w.Now
		if now == nil {
			now = time.Now
		}
		t := time.NewTimer(time.UnixMilli(at).Sub(now()))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			dispatch(decl.AgentCheck{RunID: runID})
			return nil
		}
	}
}

// call runs the tool call through the toolkit and hands in its
// observation (tool.result): the step's parameters are the tool's
// arguments, the job's key the call's idempotency key, and the step's
// timeout bounds each try. A call whose job is cancelled reports nothing.
func (w Work) call(call decl.ToolCall) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		r := w.Toolkit.Run(ctx, toolkit.Call{ID: call.CallID, Name: call.Tool, Arguments: arguments(call.Parameters),
			Key: automata.JobKey(ctx), Timeout: time.Duration(call.TimeoutMs) * time.Millisecond})
		if r.Kind == toolkit.KindCancelled {
			return ctx.Err()
		}
		dispatch(decl.ToolkitObserve{Observation: Observation(call, r)})
		return nil
	}
}

// arguments are a plan's parameters as a tool's arguments: a JSON object
// of strings.
func arguments(parameters map[string]string) json.RawMessage {
	if parameters == nil {
		return json.RawMessage("{}")
	}
	b, _ := json.Marshal(parameters) // a map of strings always encodes
	return b
}

// Observation is the observation of call that the toolkit's result r
// makes: its output on success, else its error, of the kind the reflector
// chooses a strategy by. A circuit breaker that is open (the tool failed
// too often in a row) is a failure; Retries are the tries after the first,
// LatencyMs the call's duration, waits included. r is not of a cancelled
// call, which is not observed.
func Observation(call decl.ToolCall, r toolkit.Result) decl.Observation {
	o := decl.Observation{CallID: call.CallID, Source: call.Tool, RelatedTaskID: call.TaskID,
		LatencyMs: r.Duration.Milliseconds(), Retries: int64(max(r.Tries-1, 0)), ErrorKind: decl.ErrorKindNone}
	if r.Kind == toolkit.KindNone {
		o.Success, o.Payload = true, r.Output
		return o
	}
	o.Error = r.Err.Error()
	switch r.Kind {
	case toolkit.KindInvalid:
		o.ErrorKind = decl.ErrorKindInvalid
	case toolkit.KindPermission:
		o.ErrorKind = decl.ErrorKindPermission
	case toolkit.KindTimeout:
		o.ErrorKind = decl.ErrorKindTimeout
	default: // KindFailure, KindUnavailable
		o.ErrorKind = decl.ErrorKindFailure
	}
	return o
}

func ptr[T any](v T) *T { return &v }

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
