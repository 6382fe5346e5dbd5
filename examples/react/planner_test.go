package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/examples/react/decl"
)

// TestRulePlanner: how goals are split, and each rule.
func TestRulePlanner(t *testing.T) {
	var p RulePlanner
	parts, err := p.Decompose(context.Background(), "k", "compute 1+2, count words in a.txt and then read b.txt; find x then wait 2s.", "")
	want := []string{"compute 1+2", "count words in a.txt", "read b.txt", "find x", "wait 2s"}
	if err != nil || !reflect.DeepEqual(parts, want) {
		t.Fatalf("parts %q, %v; want %q", parts, err, want)
	}
	cases := []struct {
		task string
		want Planned
	}{
		{"compute (1+2)*3", Planned{Tools: []string{"calculator"}, Parameters: map[string]string{"expression": "(1+2)*3"}, Criteria: "number"}},
		{"what is 7/2?", Planned{Tools: []string{"calculator"}, Parameters: map[string]string{"expression": "7/2"}, Criteria: "number"}},
		{"count words in notes.txt", Planned{Tools: []string{"word_count"}, Parameters: map[string]string{"path": "notes.txt"}, Criteria: "number"}},
		{"read todo.txt", Planned{Tools: []string{"read_file"}, Parameters: map[string]string{"path": "todo.txt"}, Criteria: "nonempty"}},
		{`search for "plans"`, Planned{Tools: []string{"search_index", "grep"}, Parameters: map[string]string{"term": "plans"}, Criteria: "nonempty"}},
		{"wait 2s", Planned{Tools: []string{"wait"}, Parameters: map[string]string{"ms": "2000"}, Criteria: "nonempty"}},
		{"wait 15 ms", Planned{Tools: []string{"wait"}, Parameters: map[string]string{"ms": "15"}, Criteria: "nonempty"}},
	}
	for _, c := range cases {
		got, err := p.PlanTask(context.Background(), "k", Task{Description: c.task, MaySplit: true})
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %+v, %v; want %+v", c.task, got, err, c.want)
		}
	}
	if _, err := p.PlanTask(context.Background(), "k", Task{Description: "sing a song", MaySplit: true}); !errors.Is(err, ErrNoRule) || !strings.Contains(err.Error(), `"sing a song"`) {
		t.Errorf("an unknown task: %v", err)
	}
	if _, err := p.Decompose(context.Background(), "k", " ; and , ", ""); err == nil {
		t.Errorf("an empty goal was split")
	}
}

// TestRulePlannerTrees: parts outside parentheses split a goal; a part
// written LABEL (GOAL) is split into the parts of GOAL when the task may be
// split, and planned as one call (or not at all) when it may not.
func TestRulePlannerTrees(t *testing.T) {
	var p RulePlanner
	parts, err := p.Decompose(context.Background(), "k", "compute 2*21 and notes (read a.txt and count words in b.txt, then x (find y; wait 1s)) then wait 2s", "")
	want := []string{"compute 2*21", "notes (read a.txt and count words in b.txt, then x (find y; wait 1s))", "wait 2s"}
	if err != nil || !reflect.DeepEqual(parts, want) {
		t.Fatalf("parts %q, %v; want %q", parts, err, want)
	}
	got, err := p.PlanTask(context.Background(), "k", Task{Description: parts[1], MaySplit: true})
	if want := []string{"read a.txt", "count words in b.txt", "x (find y; wait 1s)"}; err != nil || !reflect.DeepEqual(got.Subtasks, want) || len(got.Tools) > 0 {
		t.Fatalf("split %+v, %v; want %q", got, err, want)
	}
	got, err = p.PlanTask(context.Background(), "k", Task{Description: "compute (1+2)*3", MaySplit: true})
	if err != nil || len(got.Subtasks) > 0 || got.Parameters["expression"] != "(1+2)*3" {
		t.Errorf("an expression with parentheses: %+v, %v", got, err)
	}
	if got, err := p.PlanTask(context.Background(), "k", Task{Description: "x (find y; wait 1s)"}); !errors.Is(err, ErrNoRule) {
		t.Errorf("a task that may not be split: %+v, %v", got, err)
	}
}

// FuzzRulePlanner: whatever the goal, the planner splits it into
// non-empty parts or says it is empty, and plans each part with a tool or
// says no rule plans it; it never panics.
func FuzzRulePlanner(f *testing.F) {
	for _, s := range []string{"compute 1+2 and read a", "find \"x\" then wait 3s", ";;", "count words of ", "wait 99999999999999999999s", "a (b (c and d) and e) then (f", "x ()"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, goal string) {
		var p RulePlanner
		parts, err := p.Decompose(context.Background(), "k", goal, "")
		if err != nil {
			return
		}
		for _, part := range parts {
			if strings.TrimSpace(part) == "" {
				t.Fatalf("an empty part of %q", goal)
			}
			for _, split := range []bool{false, true} {
				plan, err := p.PlanTask(context.Background(), "k", Task{Description: part, MaySplit: split})
				if err != nil {
					if !errors.Is(err, ErrNoRule) {
						t.Fatalf("%q: %v", part, err)
					}
					continue
				}
				if len(plan.Subtasks) > 0 {
					if !split || len(plan.Tools) > 0 || slices.ContainsFunc(plan.Subtasks, func(s string) bool { return strings.TrimSpace(s) == "" }) {
						t.Fatalf("%q (split %v): plan %+v", part, split, plan)
					}
					continue
				}
				if len(plan.Tools) == 0 || len(plan.Parameters) == 0 {
					t.Fatalf("%q: plan %+v", part, plan)
				}
			}
		}
	})
}

// TestSatisfies: the success criteria.
func TestSatisfies(t *testing.T) {
	cases := []struct {
		criteria, out string
		want          bool
	}{
		{"", "", true},
		{"nonempty", " x ", true},
		{"nonempty", " \n", false},
		{"number", "42", true},
		{"number", "-1.5", true},
		{"number", "1/3", true},
		{"number", "4x", false},
		{"contains:ok", "all ok", true},
		{"contains:ok", "no", false},
		{"bogus", "x", false},
	}
	for _, c := range cases {
		if got := Satisfies(c.criteria, c.out); got != c.want {
			t.Errorf("Satisfies(%q, %q) = %v", c.criteria, c.out, got)
		}
	}
}

// TestRuleReflector: the strategy for each kind of outcome.
func TestRuleReflector(t *testing.T) {
	step := decl.PlanStep{ToolCandidates: []string{"a", "b"}, RetryLimit: 1}
	sub := decl.TaskNode{TaskID: "t1", ParentID: "root", Description: "do it"}
	root := decl.TaskNode{TaskID: "root"}
	failed := func(tool string, kind decl.ErrorKind) decl.ToolCall {
		return decl.ToolCall{Tool: tool, ErrorKind: kind, Error: "boom"}
	}
	cases := []struct {
		name string
		r    Reflection
		want decl.Strategy
	}{
		{"success advances", Reflection{Call: decl.ToolCall{Tool: "a", Success: true}, Step: step, Task: sub}, decl.StrategyAdvance},
		{"a permission error asks the user", Reflection{Call: failed("a", decl.ErrorKindPermission), Step: step, Task: sub}, decl.StrategyAskUser},
		{"bad parameters roll back", Reflection{Call: failed("a", decl.ErrorKindInvalid), Step: step, Task: sub}, decl.StrategyRollback},
		{"bad parameters of the root abort", Reflection{Call: failed("a", decl.ErrorKindInvalid), Step: step, Task: root}, decl.StrategyAbort},
		{"a first failure retries", Reflection{Call: failed("a", decl.ErrorKindFailure), Step: step, Task: sub}, decl.StrategyRetry},
		{"a timeout retries", Reflection{Call: failed("a", decl.ErrorKindTimeout), Step: step, Task: sub}, decl.StrategyRetry},
		{"retries used up: the fallback", Reflection{Call: failed("a", decl.ErrorKindFailure), Step: step, Task: sub, Earlier: []decl.ToolCall{failed("a", decl.ErrorKindFailure)}}, decl.StrategySubstitute},
		{"the fallback failed too: roll back", Reflection{Call: failed("b", decl.ErrorKindCriteria), Step: step, Task: sub, Earlier: []decl.ToolCall{failed("a", ""), failed("a", ""), failed("b", "")}}, decl.StrategyRollback},
		{"nothing left for the root: abort", Reflection{Call: failed("b", decl.ErrorKindFailure), Step: step, Task: root, Earlier: []decl.ToolCall{failed("b", "")}}, decl.StrategyAbort},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, reason, err := RuleReflector{}.Reflect(context.Background(), "k", c.r)
			if err != nil || got != c.want || reason == "" && got != decl.StrategyAdvance {
				t.Errorf("%s (%q), %v; want %s", got, reason, err, c.want)
			}
		})
	}
}

// TestLLMPlanner: the model's plan, through the scripted model, which
// checks the requests as a provider would; the prompt shows each tool with
// the schema of its arguments.
func TestLLMPlanner(t *testing.T) {
	kit, err := NewKit(Tools(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	model := llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		switch req.RequiredTool {
		case decomposeTool:
			return llm.Response{ToolCalls: []llm.ToolCall{{ID: "1", Name: decomposeTool, Arguments: json.RawMessage(`{"subtasks":["add two and two","count the words of notes.txt"]}`)}}}, nil
		case planTaskTool:
			for _, tool := range kit.LLMTools() {
				if !strings.Contains(req.System, fmt.Sprintf("- %s: %s Arguments (JSON Schema): %s", tool.Name, tool.Description, tool.Parameters)) || !strings.Contains(req.System, "give its subtasks instead") {
					return llm.Response{}, fmt.Errorf("%s is not in the prompt:\n%s", tool.Name, req.System)
				}
			}
			return llm.Response{ToolCalls: []llm.ToolCall{{ID: "1", Name: planTaskTool, Arguments: json.RawMessage(`{"tools":["word_count"],"parameters":{"path":"notes.txt"},"criteria":"number"}`)}}}, nil
		}
		return llm.Response{Text: "no"}, nil
	}}
	p := LLMPlanner{Model: model}
	cfg := builtinConfig()
	parts, err := p.Decompose(context.Background(), "k", "two things", render(cfg, PromptDecompose, DecomposePrompt{Goal: "two things"}))
	if err != nil || len(parts) != 2 {
		t.Fatalf("%q, %v", parts, err)
	}
	tools := kit.LLMTools()
	plan, err := p.PlanTask(context.Background(), "k", Task{Description: parts[1], Tools: tools, MaySplit: true,
		Prompt: render(cfg, PromptPlan, PlanPrompt{Tools: tools, MaySplit: true})})
	if err != nil || plan.Tools[0] != "word_count" || plan.Parameters["path"] != "notes.txt" {
		t.Fatalf("%+v, %v", plan, err)
	}
	bad := LLMPlanner{Model: llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "1", Name: req.RequiredTool, Arguments: json.RawMessage(`{"subtasks":[]}`)}}}, nil
	}}}
	if _, err := bad.Decompose(context.Background(), "k", "g", ""); err == nil {
		t.Errorf("an empty plan was accepted")
	}
}
