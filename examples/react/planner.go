package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/examples/react/decl"
)

// Planned is how a planner would run one task: the tools to try, in order
// (the first, then its fallbacks), their parameters, and what the result
// must satisfy (see Satisfies); or, for a task that takes more than one
// tool call, the descriptions of its subtasks, in the order to run them.
type Planned struct {
	Tools      []string          `json:"tools,omitempty"`
	Parameters map[string]string `json:"parameters,omitempty"`
	Criteria   string            `json:"criteria,omitempty"`
	Subtasks   []string          `json:"subtasks,omitempty"`
}

// Task is a task to plan: its description, the tools enabled (the toolkit's
// that the configuration enables: each tool's name, description and the
// JSON Schema of its arguments, toolkit.Kit.LLMTools), whether it may be
// split into subtasks (it is above the run's maxDepth), and the planner's
// instructions (the configuration's plan template, rendered).
type Task struct {
	Description string
	Tools       []llm.Tool
	MaySplit    bool
	Prompt      string
}

// Planner is the planning strategy (seed 002's Planner): it splits a goal
// into subtasks, and plans how to run a task, or splits it in turn.
type Planner interface {
	// Decompose splits goal into the descriptions of its subtasks, in the
	// order to run them; prompt is the configuration's decompose template,
	// rendered.
	Decompose(ctx context.Context, key, goal, prompt string) ([]string, error)
	// PlanTask plans how to run t: the plan's parameters are the first
	// tool's arguments, a JSON object of strings. When t.MaySplit, the plan
	// may be subtasks instead.
	PlanTask(ctx context.Context, key string, t Task) (Planned, error)
}

// RulePlanner is the offline planner: a goal is split at "and", "then",
// commas and semicolons outside parentheses. A part written LABEL (GOAL) is
// a task of its own, split in turn into the parts of GOAL, to any depth:
//
//	compute 2*21 and notes (count words in notes.txt and find plans)
//
// is a tree of three levels: the goal; "compute 2*21" and "notes (...)";
// and the latter's two subtasks. Any other part is planned by the first
// rule its words match:
//
//	compute|calculate|evaluate EXPR       calculator
//	count words in|of PATH                word_count
//	read PATH                             read_file
//	find|search|look up|grep TERM         search_index, then grep
//	wait N ms|s                           wait
//
// A part that matches no rule cannot be planned: PlanTask fails with
// ErrNoRule, the planner gives up the run, and the reflector may recover it
// by asking the user (the configuration's recovery).
type RulePlanner struct{}

// ErrNoRule: the rule planner knows no tool for the task.
var ErrNoRule = errors.New("no rule plans it")

var (
	splitGoal = regexp.MustCompile(`(?i)\s*(?:;|,|\band then\b|\bthen\b|\band\b)\s*`)
	composite = regexp.MustCompile(`^(?s)([^()]*?)\s*\((.*)\)$`)
	rules     = []struct {
		re   *regexp.Regexp
		plan func(m []string) Planned
	}{
		{regexp.MustCompile(`(?i)^(?:compute|calculate|evaluate|what is)\s+(.+?)\??$`), func(m []string) Planned {
			return Planned{Tools: []string{"calculator"}, Parameters: map[string]string{"expression": m[1]}, Criteria: "number"}
		}},
		{regexp.MustCompile(`(?i)^count (?:the )?words (?:in|of)\s+(\S+)$`), func(m []string) Planned {
			return Planned{Tools: []string{"word_count"}, Parameters: map[string]string{"path": m[1]}, Criteria: "number"}
		}},
		{regexp.MustCompile(`(?i)^read\s+(\S+)$`), func(m []string) Planned {
			return Planned{Tools: []string{"read_file"}, Parameters: map[string]string{"path": m[1]}, Criteria: "nonempty"}
		}},
		{regexp.MustCompile(`(?i)^(?:find|search(?: for)?|look up|grep)\s+(.+)$`), func(m []string) Planned {
			return Planned{Tools: []string{"search_index", "grep"}, Parameters: map[string]string{"term": strings.Trim(m[1], `"'`)}, Criteria: "nonempty"}
		}},
		{regexp.MustCompile(`(?i)^wait\s+(\d+)\s*(ms|s)$`), func(m []string) Planned {
			ms := m[1]
			if strings.EqualFold(m[2], "s") {
				ms += "000"
			}
			return Planned{Tools: []string{"wait"}, Parameters: map[string]string{"ms": ms}, Criteria: "nonempty"}
		}},
	}
)

// Decompose splits goal into its parts.
func (RulePlanner) Decompose(_ context.Context, _, goal, _ string) ([]string, error) {
	parts := splitParts(goal)
	if len(parts) == 0 {
		return nil, errors.New("the goal is empty")
	}
	return parts, nil
}

// splitParts splits goal at the separators outside parentheses.
func splitParts(goal string) []string {
	depth := make([]int, len(goal)+1) // the parentheses open before each byte
	for i := 0; i < len(goal); i++ {
		depth[i+1] = depth[i]
		switch goal[i] {
		case '(':
			depth[i+1]++
		case ')':
			depth[i+1]--
		}
	}
	var parts []string
	add := func(p string) {
		if p = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(p), ".")); p != "" {
			parts = append(parts, p)
		}
	}
	from := 0
	for _, m := range splitGoal.FindAllStringIndex(goal, -1) {
		if depth[m[0]] == 0 {
			add(goal[from:m[0]])
			from = m[1]
		}
	}
	add(goal[from:])
	return parts
}

// PlanTask splits a part written LABEL (GOAL) into the parts of GOAL (or a
// part with separators outside parentheses into those parts), when it may;
// else it plans the part by the first rule it matches.
func (RulePlanner) PlanTask(_ context.Context, _ string, t Task) (Planned, error) {
	d := strings.TrimSpace(t.Description)
	if t.MaySplit {
		if m := composite.FindStringSubmatch(d); m != nil {
			if parts := splitParts(m[2]); len(parts) > 0 {
				return Planned{Subtasks: parts}, nil
			}
		}
		if parts := splitParts(d); len(parts) > 1 {
			return Planned{Subtasks: parts}, nil
		}
	}
	for _, r := range rules {
		if m := r.re.FindStringSubmatch(d); m != nil {
			return r.plan(m), nil
		}
	}
	return Planned{}, fmt.Errorf("%q: %w", d, ErrNoRule)
}

// LLMPlanner plans with a language model (through package automata/llm):
// the model splits the goal, and chooses the tools and parameters of each
// task (or splits it too), by calling a planning tool whose arguments are
// the plan. Its instructions are the configuration's prompt templates.
type LLMPlanner struct {
	Model llm.Model
}

const (
	decomposeTool = "plan_subtasks"
	planTaskTool  = "plan_task"
)

// Decompose asks the model for the subtasks.
func (p LLMPlanner) Decompose(ctx context.Context, key, goal, prompt string) ([]string, error) {
	resp, err := p.Model.Complete(ctx, llm.Request{
		System:   prompt,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: goal}},
		Tools: []llm.Tool{{Name: decomposeTool, Description: "Records the subtasks of the goal.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"subtasks":{"type":"array","items":{"type":"string"},"minItems":1}},"required":["subtasks"],"additionalProperties":false}`)}},
		RequiredTool:   decomposeTool,
		IdempotencyKey: key,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("asking the model for subtasks: %w", err)
	}
	var args struct {
		Subtasks []string `json:"subtasks"`
	}
	if len(resp.ToolCalls) != 1 || json.Unmarshal(resp.ToolCalls[0].Arguments, &args) != nil || len(args.Subtasks) == 0 {
		return nil, fmt.Errorf("the model did not call %s with subtasks", decomposeTool)
	}
	return args.Subtasks, nil
}

// The arguments of the planning tool: a plan of tools, or (when the task
// may be split) subtasks.
const (
	planArgs        = `{"type":"object","properties":{"tools":{"type":"array","items":{"type":"string"},"minItems":1},"parameters":{"type":"object","additionalProperties":{"type":"string"}},"criteria":{"type":"string"}},"required":["tools","parameters","criteria"],"additionalProperties":false}`
	planOrSplitArgs = `{"type":"object","properties":{"tools":{"type":"array","items":{"type":"string"},"minItems":1},"parameters":{"type":"object","additionalProperties":{"type":"string"}},"criteria":{"type":"string"},"subtasks":{"type":"array","items":{"type":"string"},"minItems":2,"description":"Instead of tools: the subtasks of a task that takes more than one tool call."}},"additionalProperties":false}`
)

// PlanTask asks the model for the tools and parameters of a task, or its
// subtasks: the prompt (the plan template) lists each tool with the JSON
// Schema of its arguments.
func (p LLMPlanner) PlanTask(ctx context.Context, key string, t Task) (Planned, error) {
	args := planArgs
	if t.MaySplit {
		args = planOrSplitArgs
	}
	resp, err := p.Model.Complete(ctx, llm.Request{
		System:         t.Prompt,
		Messages:       []llm.Message{{Role: llm.RoleUser, Content: t.Description}},
		Tools:          []llm.Tool{{Name: planTaskTool, Description: "Records the plan of the task.", Parameters: json.RawMessage(args)}},
		RequiredTool:   planTaskTool,
		IdempotencyKey: key,
	}, nil)
	if err != nil {
		return Planned{}, fmt.Errorf("asking the model for a plan: %w", err)
	}
	var plan Planned
	if len(resp.ToolCalls) != 1 || json.Unmarshal(resp.ToolCalls[0].Arguments, &plan) != nil ||
		len(plan.Tools) == 0 && (len(plan.Subtasks) == 0 || !t.MaySplit) || len(plan.Tools) > 0 && len(plan.Subtasks) > 0 {
		return Planned{}, fmt.Errorf("the model did not call %s with a plan of tools, or of subtasks", planTaskTool)
	}
	return plan, nil
}

// Satisfies reports whether a tool's output meets a step's success
// criteria: "nonempty", "number" (a decimal or a fraction), "contains:TEXT",
// or "" (anything).
func Satisfies(criteria, output string) bool {
	out := strings.TrimSpace(output)
	switch {
	case criteria == "":
		return true
	case criteria == "nonempty":
		return out != ""
	case criteria == "number":
		return number.MatchString(out)
	case strings.HasPrefix(criteria, "contains:"):
		return strings.Contains(out, strings.TrimPrefix(criteria, "contains:"))
	}
	return false
}

var number = regexp.MustCompile(`^-?\d+(\.\d+)?(/\d+)?$`)

// Reflector is the reflecting strategy (seed 002's Reflector): it checks
// a call's observation and chooses what comes next, and chooses how a run
// in error recovers.
type Reflector interface {
	Reflect(ctx context.Context, key string, r Reflection) (decl.Strategy, string, error)
	// Recover chooses for a run in error that may recover: a strategy, its
	// reason, and for ask-user the question.
	Recover(ctx context.Context, key string, r Trouble) (strategy decl.RecoveryStrategy, reason, question string, err error)
}

// Reflection is what a reflector decides on: the call, its observation,
// the step it ran, the task, the calls of the step before it, and
// the configuration in force (its strategies and their order, the tools'
// retry limits, the question template).
type Reflection struct {
	Call        decl.ToolCall
	Observation decl.Observation
	Step        decl.PlanStep
	Task        decl.TaskNode
	Earlier     []decl.ToolCall
	Config      decl.Config
}

// Trouble is what sent a run to error, for a reflector to recover from: the
// error, the guard that tripped ("" when none did), the phase the run was
// in (plan or waiting: the planner gave up; reflect: the reflector aborted;
// act: maxFailures or time), the task it was at, and the configuration in
// force (its recovery strategies and their order, the recover template).
type Trouble struct {
	Error  string
	Guard  decl.AlertGuard
	From   decl.Phase
	Task   decl.TaskNode
	Config decl.Config
	// UserAborted says that the user's reply was abort: the run is the
	// user's to give up.
	UserAborted bool
}

// RuleReflector is the default reflector. After a call:
//
//   - a call that succeeded and met the step's criteria: advance, with
//     the output as the task's result;
//   - refused by the security check: ask the user (the question template);
//   - bad parameters: roll back to the parent task (give the subtask up);
//   - failed or timed out: the first of the configuration's strategies that
//     applies (by default retry, substitute, rollback): retry while the
//     tool's retryLimit allows, substitute while the step has a next tool,
//     roll back below the root, ask the user, abort; abort when none does.
//
// Out of error (unless the user aborted the run: give up), the first of
// the configuration's recovery strategies that applies: replan, unless the planner itself gave up or a limit of tool
// calls, time or depth was reached (replanning would meet it again); ask
// the user, unless the run is out of tool calls or time; give up. Give up
// when none does.
type RuleReflector struct{}

// Reflect chooses by the rules above; the reason is the result, the
// question for the user, or why.
func (RuleReflector) Reflect(_ context.Context, _ string, r Reflection) (decl.Strategy, string, error) {
	c := r.Call
	if c.Success {
		return decl.StrategyAdvance, clip(r.Observation.Payload, 500), nil
	}
	switch c.ErrorKind {
	case decl.ErrorKindPermission:
		return decl.StrategyAskUser, render(r.Config, PromptQuestion, QuestionPrompt{Tool: c.Tool, Error: c.Error, Task: r.Task.Description}), nil
	case decl.ErrorKindInvalid:
		if r.Task.ParentID == "" {
			return decl.StrategyAbort, c.Error, nil
		}
		return decl.StrategyRollback, c.Error, nil
	}
	tries := int64(0)
	for _, e := range r.Earlier {
		if e.Tool == c.Tool {
			tries++
		}
	}
	limit := r.Step.RetryLimit
	if t, ok := r.Config.Tools[c.Tool]; ok {
		limit = t.RetryLimit
	}
	for _, s := range failureStrategies(r.Config) {
		switch s {
		case decl.StrategyRetry:
			if tries < limit {
				return s, fmt.Sprintf("%s (try %d of %d)", c.Error, tries+2, limit+1), nil
			}
		case decl.StrategySubstitute:
			if i := indexOf(r.Step.ToolCandidates, c.Tool); i >= 0 && i+1 < len(r.Step.ToolCandidates) {
				return s, fmt.Sprintf("%s; %s instead", c.Error, r.Step.ToolCandidates[i+1]), nil
			}
		case decl.StrategyRollback:
			if r.Task.ParentID != "" {
				return s, c.Error, nil
			}
		case decl.StrategyAskUser:
			return s, render(r.Config, PromptQuestion, QuestionPrompt{Tool: c.Tool, Error: c.Error, Task: r.Task.Description}), nil
		case decl.StrategyAbort:
			return s, c.Error, nil
		}
	}
	return decl.StrategyAbort, c.Error, nil
}

// Recover chooses by the rules above.
func (RuleReflector) Recover(_ context.Context, _ string, r Trouble) (decl.RecoveryStrategy, string, string, error) {
	if r.UserAborted {
		return decl.RecoveryStrategyGiveUp, "the user aborted the run", "", nil
	}
	spent := r.Guard == decl.AlertGuardMaxIterations || r.Guard == decl.AlertGuardMaxDurationMs
	for _, s := range recoveryStrategies(r.Config) {
		switch s {
		case decl.RecoveryStrategyReplan:
			if !spent && r.Guard != decl.AlertGuardMaxDepth && r.From != decl.PhasePlan && r.From != decl.PhaseWaiting {
				return s, fmt.Sprintf("plan %s again after: %s", r.Task.TaskID, r.Error), "", nil
			}
		case decl.RecoveryStrategyAskUser:
			if !spent {
				q := render(r.Config, PromptRecover, RecoverPrompt{Error: r.Error, Task: r.Task.Description})
				return s, "ask the user after: " + r.Error, q, nil
			}
		case decl.RecoveryStrategyGiveUp:
			return s, "the configuration gives up on: " + r.Error, "", nil
		}
	}
	return decl.RecoveryStrategyGiveUp, "no recovery applies to: " + r.Error, "", nil
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

// clip returns s cut to n bytes at most (and so n characters at most), on
// a rune boundary, ending in an ellipsis when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	n = max(n-len(ellipsis), 0)
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
