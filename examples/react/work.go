package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/examples/react/decl"
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
//     plans the first subtask;
//   - plan-{runId}-{n} in phase plan (n counts the run's transitions): the
//     planner plans the next pending task, or writes the answer;
//   - replan-{runId}-{n} while waiting, once the user has replied (n counts
//     the replies): the planner plans the task again with the reply;
//   - observe-{callId} in phase act, once the toolkit has observed the call:
//     the observer checks the step's success criteria (Observe);
//   - reflect-{callId} in phase reflect: the reflector's strategy;
//   - deadline-{runId} while a run is in progress: the watchdog, which
//     hands in agent-check when the run's time is up;
//   - the toolkit's call-{callId} in phase act: the tool call.
func (w Work) JobFns() decl.JobFns {
	return decl.JobFns{Agent: w.agentJobs, Toolkit: w.toolkitJobs}
}

type jobs = map[string]automata.Job[decl.AgentInput]

func (w Work) agentJobs(c decl.ContextOfAgent) jobs {
	j := jobs{}
	switch c.Phase {
	case decl.PhaseIdle, decl.PhaseFinished, decl.PhaseError:
		if r, ok := NextRequest(c); ok {
			j["start-"+r.RunID] = w.start(r)
		}
		return j
	case decl.PhasePlan:
		j[fmt.Sprintf("plan-%s-%d", c.RunID, len(c.Transitions))] = w.plan(c)
	case decl.PhaseWaiting:
		if n, reply, ok := newReply(c); ok {
			j[fmt.Sprintf("replan-%s-%d", c.RunID, n)] = w.replan(c, reply)
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
	j["deadline-"+c.RunID] = w.deadline(c.RunID, c.StartedAt+c.Limits.MaxDurationMs+1)
	return j
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

// start splits the request's goal and plans its first subtask.
func (w Work) start(r decl.TaskRequest) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		if w.Begin != nil {
			if err := w.Begin(ctx); err != nil {
				return err
			}
		}
		key := automata.JobKey(ctx)
		in := decl.AgentPlan{RunID: r.RunID, Start: &r}
		parts, err := w.Planner.Decompose(ctx, key, r.Goal)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			in.Abort = ptr(err.Error())
			dispatch(in)
			return nil
		}
		for i, p := range parts {
			in.Subtasks = append(in.Subtasks, decl.Subtask{TaskID: "t" + strconv.Itoa(i+1), Description: p})
		}
		tasks := make([]decl.TaskNode, len(in.Subtasks))
		for i, s := range in.Subtasks {
			tasks[i] = decl.TaskNode{TaskID: s.TaskID, Description: s.Description, Status: decl.TaskNodeStatusPending, ParentID: "root"}
		}
		return w.planNext(ctx, key, in, tasks, dispatch)
	}
}

// plan plans the next pending task, or writes the answer when none is.
func (w Work) plan(c decl.ContextOfAgent) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		return w.planNext(ctx, automata.JobKey(ctx), decl.AgentPlan{RunID: c.RunID}, c.Tasks, dispatch)
	}
}

func (w Work) planNext(ctx context.Context, key string, in decl.AgentPlan, tasks []decl.TaskNode, dispatch automata.Dispatch[decl.AgentInput]) error {
	var pending []decl.TaskNode
	for _, t := range tasks {
		if t.ParentID != "" && t.Status == decl.TaskNodeStatusPending {
			pending = append(pending, t)
		}
	}
	if len(pending) == 0 {
		in.Answer = ptr(answer(tasks))
		dispatch(in)
		return nil
	}
	next := ""
	if len(pending) > 1 {
		next = pending[1].TaskID
	}
	p, err := w.Planner.PlanTask(ctx, key, pending[0].Description, w.Toolkit.LLMTools())
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		in.Abort = ptr(fmt.Sprintf("planning %s: %v", pending[0].TaskID, err))
		dispatch(in)
		return nil
	}
	in.Step = w.step(pending[0].TaskID, pending[0].Description, next, p)
	dispatch(in)
	return nil
}

// replan plans the task of the question again with the user's reply: as
// a task of its own when the planner can plan it, else as the new value of
// the step's first parameter. "abort" gives the run up.
func (w Work) replan(c decl.ContextOfAgent, reply decl.Reply) automata.Job[decl.AgentInput] {
	return func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		in := decl.AgentPlan{RunID: c.RunID}
		text := strings.TrimSpace(reply.Content)
		if strings.EqualFold(text, "abort") {
			in.Abort = ptr("the user aborted the run")
			dispatch(in)
			return nil
		}
		call := c.Calls[len(c.Calls)-1]
		old, _ := stepOf(c.Steps, call.TaskID)
		p, err := w.Planner.PlanTask(ctx, automata.JobKey(ctx), text, w.Toolkit.LLMTools())
		switch {
		case err == nil:
		case errors.Is(err, ErrNoRule) && len(old.ToolParameters) > 0:
			p = Planned{Tools: old.ToolCandidates, Criteria: old.SuccessCriteria, Parameters: map[string]string{}}
			first := slices.Sorted(func(yield func(string) bool) {
				for k := range old.ToolParameters {
					if !yield(k) {
						return
					}
				}
			})[0]
			for k, v := range old.ToolParameters {
				p.Parameters[k] = v
			}
			p.Parameters[first] = text
		default:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			in.Abort = ptr(fmt.Sprintf("planning %s again: %v", call.TaskID, err))
			dispatch(in)
			return nil
		}
		in.Step = w.step(call.TaskID, text, old.Next, p)
		dispatch(in)
		return nil
	}
}

func (w Work) step(taskID, goal, next string, p Planned) *decl.PlanStep {
	timeout, retries := w.TimeoutMs, w.RetryLimit
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
	return &decl.PlanStep{TaskID: taskID, Goal: goal, ToolCandidates: p.Tools, SuccessCriteria: p.Criteria,
		TimeoutMs: timeout, RetryLimit: retries, Next: next, ToolParameters: params}
}

func stepOf(steps []decl.PlanStep, taskID string) (decl.PlanStep, bool) {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].TaskID == taskID {
			return steps[i], true
		}
	}
	return decl.PlanStep{}, false
}

// answer is the run's answer: each subtask with its result, or why it
// failed.
func answer(tasks []decl.TaskNode) string {
	var b strings.Builder
	for _, t := range tasks {
		if t.ParentID == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch t.Status {
		case decl.TaskNodeStatusDone:
			fmt.Fprintf(&b, "%s: %s", t.Description, t.Metadata["result"])
		default:
			fmt.Fprintf(&b, "%s: not done (%s)", t.Description, t.Metadata["rollback"])
		}
	}
	if b.Len() == 0 {
		return "nothing to do"
	}
	return b.String()
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
		r := Reflection{Call: call}
		r.Observation, _ = observation(c.Observations, call.CallID)
		r.Step, _ = stepOf(c.Steps, call.TaskID)
		if i := slices.IndexFunc(c.Tasks, func(t decl.TaskNode) bool { return t.TaskID == call.TaskID }); i >= 0 {
			r.Task = c.Tasks[i]
		}
		for _, e := range c.Calls[:len(c.Calls)-1] {
			if e.TaskID == call.TaskID {
				r.Earlier = append(r.Earlier, e)
			}
		}
		strategy, reason, err := w.Reflector.Reflect(ctx, automata.JobKey(ctx), r)
		if err != nil {
			return fmt.Errorf("reflecting on %s: %w", call.CallID, err)
		}
		in := decl.AgentReflect{RunID: c.RunID, CallID: call.CallID, Strategy: strategy, Reason: reason}
		if strategy == decl.StrategyAskUser {
			in.Question = &reason
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
