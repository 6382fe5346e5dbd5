package transitions

import (
	"fmt"

	"github.com/moora-go/moora/examples/react/decl"
)

// AgentPlan applies the planner's decision (Plan). A plan with start begins
// that run when none is in progress: the root task is the goal. Subtasks not
// in the tree yet are added under their parent (the root when they name
// none), which runs from then on: a task can be split to any depth up to
// maxDepth, and a tree has at most MaxTasks tasks. Then, in phase plan (or
// waiting, after the user replied): abort ends the run in error, a step
// calls its first tool (Act), an answer finishes the run (agent.finished).
// The plan's usage of the model is added to the agent's, whatever the plan
// does: its calls were made. They were allowed, so that a budgetExhausted
// the agent stopped at before (a budget since raised) is cleared.
func AgentPlan(state decl.StateOfAgent, input decl.AgentPlan) decl.StateOfAgent {
	if stale(input.Timestamp, state.AgentUpdatedAt) {
		return state
	}
	state = plan(state, input)
	if input.Usage != nil {
		state.Usage = addUsage(state.Usage, *input.Usage)
		state.BudgetExhausted = decl.BudgetExhausted{}
	}
	return state
}

// addUsage returns the totals with u, the usage of one plan's calls, added.
// An absent property stays absent while it is zero.
func addUsage(totals, u decl.Usage) decl.Usage {
	totals.InputTokens += u.InputTokens
	totals.OutputTokens += u.OutputTokens
	totals.Calls = added(totals.Calls, num(u.Calls))
	totals.CacheReadInputTokens = added(totals.CacheReadInputTokens, num(u.CacheReadInputTokens))
	totals.CacheCreationInputTokens = added(totals.CacheCreationInputTokens, num(u.CacheCreationInputTokens))
	totals.Cost = added(totals.Cost, num(u.Cost))
	return totals
}

// added returns a new pointer to *p + n; p itself when n is 0. The state
// given to a transition is never written into.
func added[N int64 | float64](p *N, n N) *N {
	if n == 0 {
		return p
	}
	sum := num(p) + n
	return &sum
}

func num[N int64 | float64](p *N) N {
	if p == nil {
		return 0
	}
	return *p
}

// plan is AgentPlan but the usage.
func plan(state decl.StateOfAgent, input decl.AgentPlan) decl.StateOfAgent {
	state.AgentUpdatedAt = input.Timestamp
	at := input.Timestamp
	if input.Start != nil && input.RunID != state.RunID && !running(state.Phase) && !Recovering(state.Phase, state.RunID, state.Runs) && input.Start.RunID == input.RunID {
		state = start(state, *input.Start, at)
	}
	if input.RunID != state.RunID || state.Phase != decl.PhasePlan && state.Phase != decl.PhaseWaiting {
		return state
	}
	state, over := overtime(state, at)
	if over {
		return state
	}
	for _, sub := range input.Subtasks {
		if task(state, sub.TaskID) >= 0 {
			continue
		}
		parentID := "root"
		if sub.ParentID != nil && *sub.ParentID != "" {
			parentID = *sub.ParentID
		}
		p := task(state, parentID)
		switch {
		case p < 0:
			return fail(state, at, fmt.Sprintf("the planner planned subtask %q under %q, which is not in the tree", sub.TaskID, parentID))
		case len(state.Tasks) >= MaxTasks:
			return fail(state, at, fmt.Sprintf("the plan has more than %d tasks", MaxTasks))
		case depth(state, p)+1 > maxDepth(state):
			return trip(state, decl.AlertGuardMaxDepth, at, fmt.Sprintf("subtask %s of %s would be at depth %d, deeper than maxDepth (%d)", sub.TaskID, parentID, depth(state, p)+1, maxDepth(state)))
		}
		parent := state.Tasks[p]
		parent.Children = append(parent.Children[:len(parent.Children):len(parent.Children)], sub.TaskID)
		if parent.Status == decl.TaskNodeStatusPending {
			parent.Status, parent.UpdatedAt = decl.TaskNodeStatusRunning, at
		}
		state.Tasks = replaced(state.Tasks, p, parent)
		state.Tasks = appended(state.Tasks, decl.TaskNode{
			TaskID: sub.TaskID, Description: sub.Description, Status: decl.TaskNodeStatusPending,
			ParentID: parentID, Children: []string{}, Metadata: map[string]string{}, CreatedAt: at, UpdatedAt: at,
		})
	}
	switch {
	case input.Abort != nil:
		return fail(state, at, "the planner gave up: "+*input.Abort)
	case input.Step != nil:
		step := *input.Step
		i := task(state, step.TaskID)
		if i < 0 || len(step.ToolCandidates) == 0 || len(state.Tasks[i].Children) > 0 {
			return fail(state, at, fmt.Sprintf("the planner planned a step for task %q, which is not in the tree, or has subtasks, or without a tool", step.TaskID))
		}
		state.Question = ""
		state.Steps = appended(state.Steps, step)
		state = setTask(state, i, decl.TaskNodeStatusRunning, at, "", "")
		return act(state, step, step.ToolCandidates[0], 1, at, fmt.Sprintf("%s: %s with %s", step.TaskID, step.Goal, step.ToolCandidates[0]))
	case input.Answer != nil:
		state.Answer = *input.Answer
		state = setTask(state, 0, decl.TaskNodeStatusDone, at, "answer", *input.Answer)
		state = move(state, decl.PhaseFinished, at, "finished")
		return record(state, decl.RunRecordOutcomeFinished, at)
	}
	return state
}

// start begins the run the user asked for with r, with its limits under
// the configuration in force (Resolve).
func start(s decl.StateOfAgent, r decl.TaskRequest, at int64) decl.StateOfAgent {
	s.RunID, s.Goal, s.Asked, s.Limits = r.RunID, r.Goal, r.Limits, Resolve(r.Limits, s.Config.Guards)
	s.StartedAt = at
	s.Iteration, s.Failures = 0, 0
	s.Steps, s.Calls, s.Alerts, s.Transitions, s.Recoveries = nil, nil, nil, nil, nil
	s.Question, s.AskedAt, s.Answer, s.Error = "", 0, "", ""
	s.Tasks = []decl.TaskNode{{
		TaskID: "root", Description: r.Goal, Status: decl.TaskNodeStatusRunning,
		Children: []string{}, Metadata: map[string]string{}, CreatedAt: at, UpdatedAt: at,
	}}
	return move(s, decl.PhasePlan, at, "run "+r.RunID+": "+r.Goal)
}
