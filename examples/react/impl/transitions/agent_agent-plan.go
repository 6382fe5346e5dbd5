package transitions

import (
	"fmt"

	"github.com/moora-go/moora/examples/react/decl"
)

// AgentPlan applies the planner's decision (Plan). A plan with start begins
// that run when none is in progress: the root task is the goal, the
// subtasks its children. Subtasks not in the tree yet are added under the
// root. Then, in phase plan (or waiting, after the user replied): abort
// ends the run in error, a step calls its first tool (Act), an answer
// finishes the run (agent.finished).
func AgentPlan(state decl.StateOfAgent, input decl.AgentPlan) decl.StateOfAgent {
	if stale(input.Timestamp, state.AgentUpdatedAt) {
		return state
	}
	state.AgentUpdatedAt = input.Timestamp
	at := input.Timestamp
	if input.Start != nil && input.RunID != state.RunID && !running(state.Phase) && input.Start.RunID == input.RunID {
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
		root := state.Tasks[0]
		root.Children = append(root.Children[:len(root.Children):len(root.Children)], sub.TaskID)
		state.Tasks = replaced(state.Tasks, 0, root)
		state.Tasks = appended(state.Tasks, decl.TaskNode{
			TaskID: sub.TaskID, Description: sub.Description, Status: decl.TaskNodeStatusPending,
			ParentID: root.TaskID, Children: []string{}, Metadata: map[string]string{}, CreatedAt: at, UpdatedAt: at,
		})
	}
	switch {
	case input.Abort != nil:
		return fail(state, at, "the planner gave up: "+*input.Abort)
	case input.Step != nil:
		step := *input.Step
		i := task(state, step.TaskID)
		if i < 0 || len(step.ToolCandidates) == 0 {
			return fail(state, at, fmt.Sprintf("the planner planned a step for task %q, which is not in the tree, or without a tool", step.TaskID))
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

// start begins the run the user asked for with r.
func start(s decl.StateOfAgent, r decl.TaskRequest, at int64) decl.StateOfAgent {
	s.RunID, s.Goal, s.Limits = r.RunID, r.Goal, r.Limits
	s.StartedAt = at
	s.Iteration, s.Failures = 0, 0
	s.Steps, s.Calls, s.Alerts, s.Transitions = nil, nil, nil, nil
	s.Question, s.AskedAt, s.Answer, s.Error = "", 0, "", ""
	s.Tasks = []decl.TaskNode{{
		TaskID: "root", Description: r.Goal, Status: decl.TaskNodeStatusRunning,
		Children: []string{}, Metadata: map[string]string{}, CreatedAt: at, UpdatedAt: at,
	}}
	return move(s, decl.PhasePlan, at, "run "+r.RunID+": "+r.Goal)
}
