package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/examples/react/decl"
)

// The prompt templates of the configuration (react.yaml's prompts), by
// name, each with the data it is executed on.
const (
	PromptDecompose = "decompose" // DecomposePrompt
	PromptPlan      = "plan"      // PlanPrompt
	PromptQuestion  = "question"  // QuestionPrompt
	PromptRecover   = "recover"   // RecoverPrompt
	PromptAnswer    = "answer"    // AnswerPrompt
)

// PromptNames are the names of the prompt templates.
var PromptNames = []string{PromptDecompose, PromptPlan, PromptQuestion, PromptRecover, PromptAnswer}

type (
	// DecomposePrompt is the data of the decompose template: the goal.
	DecomposePrompt struct{ Goal string }
	// PlanPrompt is the data of the plan template: the tools enabled, and
	// whether the task may be split into subtasks (it is above maxDepth).
	PlanPrompt struct {
		Tools    []llm.Tool
		MaySplit bool
	}
	// QuestionPrompt is the data of the question template: the tool that
	// was refused, why, and the task's description.
	QuestionPrompt struct{ Tool, Error, Task string }
	// RecoverPrompt is the data of the recover template: the error, and the
	// task the run was at.
	RecoverPrompt struct{ Error, Task string }
	// AnswerPrompt is the data of the answer template, one line for each
	// task without subtasks: its description, whether it is done, its
	// result, or why it is not done.
	AnswerPrompt struct {
		Task, Result, Why string
		Done              bool
	}
)

// PromptSamples are data of each template's type, for checking a template
// before it is put in force.
func PromptSamples() map[string]any {
	return map[string]any{
		PromptDecompose: DecomposePrompt{Goal: "compute 1+2"},
		PromptPlan:      PlanPrompt{Tools: []llm.Tool{{Name: "calculator", Description: "Evaluates.", Parameters: json.RawMessage(`{"type":"object"}`)}}, MaySplit: true},
		PromptQuestion:  QuestionPrompt{Tool: "read_file", Error: "refused", Task: "read x"},
		PromptRecover:   RecoverPrompt{Error: "3 tool calls in a row failed", Task: "read x"},
		PromptAnswer:    AnswerPrompt{Task: "compute 1+2", Result: "3", Done: true},
	}
}

// render executes the prompt template name of cfg on data; a template the
// configuration does not have (none, before the first agent-configure) is
// the built-in configuration's. A template that fails is shown as the
// error, so that the run goes on and the mistake is in plain sight (the
// configuration's templates are checked on PromptSamples when loaded).
func render(cfg decl.Config, name string, data any) string {
	text, ok := cfg.Prompts[name]
	if !ok {
		text = builtinConfig().Prompts[name]
	}
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return "prompt " + name + ": " + err.Error()
	}
	if _, why := unboundedNode(t); why != "" {
		return "prompt " + name + ": " + why
	}
	b := &capped{max: maxPromptBytes}
	if err := t.Execute(b, data); err != nil {
		return "prompt " + name + ": " + err.Error()
	}
	return strings.TrimSpace(b.String())
}

// maxPromptBytes bounds what a prompt template writes: a template such as
// {{printf "%0999999d" 0}} is cut short with an error.
const maxPromptBytes = 64 << 10

// capped is a buffer that refuses to grow past max bytes.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if c.Len()+len(p) > c.max {
		return 0, fmt.Errorf("it writes more than %d bytes", c.max)
	}
	return c.Buffer.Write(p)
}

// enabled reports whether cfg lets the planner use tool: a configuration
// enables the tools it lists; without one (before the first
// agent-configure) every tool is enabled.
func enabled(cfg decl.Config, tool string) bool {
	if cfg.Digest == "" {
		return true
	}
	_, ok := cfg.Tools[tool]
	return ok
}

// failureStrategies are the reflector's strategies after a failed call, in the
// order of cfg (without a configuration: retry, substitute, rollback).
func failureStrategies(cfg decl.Config) []decl.Strategy {
	if cfg.Digest == "" {
		return []decl.Strategy{decl.StrategyRetry, decl.StrategySubstitute, decl.StrategyRollback}
	}
	return slices.Clone(cfg.Strategies)
}

// recoveryStrategies are the reflector's strategies out of error, in the order of
// cfg (without a configuration none: the run is over in error anyway, as
// maxRecoveries is 0).
func recoveryStrategies(cfg decl.Config) []decl.RecoveryStrategy {
	return slices.Clone(cfg.Recovery)
}

// unboundedNode returns the first node of t that could make it run without
// bound, and why; or, for t as a whole, nil and why; or nil and "". A
// prompt template ranges over the fields of its data only ({{range
// .Tools}}), whose lengths are bounded, and calls no template: {{range N}}
// over a number, over a variable or an expression, and templates that call
// themselves could run for as long as they like, writing nothing (the
// output's bound would not stop them), and text/template cannot be
// stopped. The configuration's templates are checked when the file is
// loaded, and again before each rendering, as an agent-configure input
// may come from elsewhere.
func unboundedNode(t *template.Template) (parse.Node, string) {
	if len(t.Templates()) > 1 {
		return nil, "it defines templates ({{define}} or {{block}}); a prompt template is one template"
	}
	if t.Tree == nil {
		return nil, ""
	}
	return unbounded(t.Tree.Root)
}

func unbounded(n parse.Node) (parse.Node, string) {
	var branch *parse.BranchNode
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil, ""
		}
		for _, c := range n.Nodes {
			if bad, why := unbounded(c); bad != nil {
				return bad, why
			}
		}
		return nil, ""
	case *parse.TemplateNode:
		return n, "it calls a template ({{template}}); a prompt template calls none"
	case *parse.RangeNode:
		p := n.Pipe
		if p == nil || len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
			return n, "it ranges over something other than a field of its data, such as {{range .Tools}}"
		}
		if _, ok := p.Cmds[0].Args[0].(*parse.FieldNode); !ok {
			return n, "it ranges over something other than a field of its data, such as {{range .Tools}}"
		}
		branch = &n.BranchNode
	case *parse.IfNode:
		branch = &n.BranchNode
	case *parse.WithNode:
		branch = &n.BranchNode
	default:
		return nil, ""
	}
	if bad, why := unbounded(branch.List); bad != nil {
		return bad, why
	}
	return unbounded(branch.ElseList)
}
