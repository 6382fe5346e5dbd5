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
// must satisfy (see Satisfies).
type Planned struct {
	Tools      []string          `json:"tools"`
	Parameters map[string]string `json:"parameters"`
	Criteria   string            `json:"criteria"`
}

// Planner is the planning strategy (seed 002's Planner): it splits a goal
// into subtasks, and plans how to run one.
type Planner interface {
	// Decompose splits goal into the descriptions of its subtasks, in the
	// order to run them.
	Decompose(ctx context.Context, key, goal string) ([]string, error)
	// PlanTask plans how to run the task described so, with the toolkit's
	// tools (toolkit.Kit.LLMTools: each tool's name, description and the
	// JSON Schema of its arguments). The plan's parameters are the first
	// tool's arguments, a JSON object of strings.
	PlanTask(ctx context.Context, key, description string, tools []llm.Tool) (Planned, error)
}

// RulePlanner is the offline planner: a goal is split at "and", "then",
// commas and semicolons, and each part is planned by the first rule its
// words match:
//
//	compute|calculate|evaluate EXPR       calculator
//	count words in|of PATH                word_count
//	read PATH                             read_file
//	find|search|look up|grep TERM         search_index, then grep
//	wait N ms|s                           wait
//
// A part that matches no rule cannot be planned: PlanTask fails with
// ErrNoRule, and the run asks the user.
type RulePlanner struct{}

// ErrNoRule: the rule planner knows no tool for the task.
var ErrNoRule = errors.New("no rule plans it")

var (
	splitGoal = regexp.MustCompile(`(?i)\s*(?:;|,|\band then\b|\bthen\b|\band\b)\s*`)
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
func (RulePlanner) Decompose(_ context.Context, _, goal string) ([]string, error) {
	var parts []string
	for _, p := range splitGoal.Split(goal, -1) {
		if p = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(p), ".")); p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return nil, errors.New("the goal is empty")
	}
	return parts, nil
}

// PlanTask plans a part by the first rule it matches.
func (RulePlanner) PlanTask(_ context.Context, _, description string, _ []llm.Tool) (Planned, error) {
	d := strings.TrimSpace(description)
	for _, r := range rules {
		if m := r.re.FindStringSubmatch(d); m != nil {
			return r.plan(m), nil
		}
	}
	return Planned{}, fmt.Errorf("%q: %w", d, ErrNoRule)
}

// LLMPlanner plans with a language model (through package automata/llm):
// the model splits the goal, and chooses the tools and parameters of each
// task, by calling a planning tool whose arguments are the plan.
type LLMPlanner struct {
	Model llm.Model
}

const (
	decomposeTool = "plan_subtasks"
	planTaskTool  = "plan_task"
)

// Decompose asks the model for the subtasks.
func (p LLMPlanner) Decompose(ctx context.Context, key, goal string) ([]string, error) {
	resp, err := p.Model.Complete(ctx, llm.Request{
		System:   "You are the planner of an agent. Split the user's goal into a few subtasks, each one tool call, in the order to run them.",
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

// PlanTask asks the model for the tools and parameters of a task: the
// prompt lists each tool with the JSON Schema of its arguments.
func (p LLMPlanner) PlanTask(ctx context.Context, key, description string, tools []llm.Tool) (Planned, error) {
	var list strings.Builder
	for _, t := range tools {
		fmt.Fprintf(&list, "- %s: %s Arguments (JSON Schema): %s\n", t.Name, t.Description, t.Parameters)
	}
	resp, err := p.Model.Complete(ctx, llm.Request{
		System: "You are the planner of an agent. Choose the tool that does the task (and fallbacks that take the same arguments, if any), " +
			"its arguments as the parameters (each a string, as its schema says), " +
			"and what its result must satisfy: nonempty, number, or contains:TEXT. The tools:\n" + list.String(),
		Messages: []llm.Message{{Role: llm.RoleUser, Content: description}},
		Tools: []llm.Tool{{Name: planTaskTool, Description: "Records the plan of the task.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"tools":{"type":"array","items":{"type":"string"},"minItems":1},"parameters":{"type":"object","additionalProperties":{"type":"string"}},"criteria":{"type":"string"}},"required":["tools","parameters","criteria"],"additionalProperties":false}`)}},
		RequiredTool:   planTaskTool,
		IdempotencyKey: key,
	}, nil)
	if err != nil {
		return Planned{}, fmt.Errorf("asking the model for a plan: %w", err)
	}
	var plan Planned
	if len(resp.ToolCalls) != 1 || json.Unmarshal(resp.ToolCalls[0].Arguments, &plan) != nil || len(plan.Tools) == 0 {
		return Planned{}, fmt.Errorf("the model did not call %s with a plan", planTaskTool)
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
// a call's observation and chooses what comes next.
type Reflector interface {
	Reflect(ctx context.Context, key string, r Reflection) (decl.Strategy, string, error)
}

// Reflection is what a reflector decides on: the call, its observation,
// the step it ran, the task, and the run's calls for that task before it.
type Reflection struct {
	Call        decl.ToolCall
	Observation decl.Observation
	Step        decl.PlanStep
	Task        decl.TaskNode
	Earlier     []decl.ToolCall
}

// RuleReflector is the default reflector:
//
//   - a call that succeeded and met the step's criteria: advance, with
//     the output as the task's result;
//   - refused by the security check: ask the user;
//   - bad parameters: roll back to the parent task (give the subtask up);
//   - failed or timed out: retry the same tool until the step's retryLimit,
//     then substitute its next tool candidate, then roll back.
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
		return decl.StrategyAskUser, fmt.Sprintf("%s was refused (%s). Reply with another way to do %q, or abort.", c.Tool, c.Error, r.Task.Description), nil
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
	if tries < r.Step.RetryLimit {
		return decl.StrategyRetry, fmt.Sprintf("%s (try %d of %d)", c.Error, tries+2, r.Step.RetryLimit+1), nil
	}
	if i := indexOf(r.Step.ToolCandidates, c.Tool); i >= 0 && i+1 < len(r.Step.ToolCandidates) {
		return decl.StrategySubstitute, fmt.Sprintf("%s; %s instead", c.Error, r.Step.ToolCandidates[i+1]), nil
	}
	if r.Task.ParentID == "" {
		return decl.StrategyAbort, c.Error, nil
	}
	return decl.StrategyRollback, c.Error, nil
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

// clip returns s cut to n bytes at most, on a rune boundary, with an
// ellipsis when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
