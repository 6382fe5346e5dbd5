package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
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
// before it is put in force, with tools as the plan's.
func PromptSamples(tools []llm.Tool) map[string]any {
	return map[string]any{
		PromptDecompose: DecomposePrompt{Goal: "compute 1+2"},
		PromptPlan:      PlanPrompt{Tools: tools, MaySplit: true},
		PromptQuestion:  QuestionPrompt{Tool: "read_file", Error: "refused", Task: "read x"},
		PromptRecover:   RecoverPrompt{Error: "3 tool calls in a row failed", Task: "read x"},
		PromptAnswer:    AnswerPrompt{Task: "compute 1+2", Result: "3", Done: true},
	}
}

// sampleTools are tools of the names given, for PromptSamples, each with
// a description and a schema of parameters, as the toolkit's have.
func sampleTools(names []string) []llm.Tool {
	tools := make([]llm.Tool, len(names))
	for i, name := range names {
		tools[i] = llm.Tool{Name: name, Description: "What " + name + " does.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)}
	}
	return tools
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
	var b bytes.Buffer
	if err := runPrompt(t, &b, data); err != nil {
		if bound := promptBound(err); bound != nil {
			err = bound // without text/template's words around it
		}
		return "prompt " + name + ": " + err.Error()
	}
	return strings.TrimSpace(b.String())
}

// What a rendering of a prompt template may do. Past either bound it stops
// with an error: {{printf "%0999999d" 0}} writes too much, and fourteen
// {{range .Tools}}{{with $}} nested (each range over the data's own
// field, with the data's root as dot) would run 6^14 times writing
// nothing; text/template cannot be stopped from outside, so the work is
// counted as it goes.
const (
	maxPromptBytes = 64 << 10 // written
	maxPromptSteps = 1 << 16  // nodes executed by ranges, as promptBudget counts them
)

var (
	errPromptTooLong   = fmt.Errorf("the template writes more than %d bytes", maxPromptBytes)
	errPromptTooCostly = fmt.Errorf("the template does more than %d steps of work (its ranges, nested, run too many times)", maxPromptSteps)
)

// runPrompt executes t, a prompt template unboundedNode admits, on data
// into w, within maxPromptBytes and maxPromptSteps: each {{range .Field}}
// of t is rewritten to {{range promptStep WEIGHT .Field}}, and promptStep
// charges the rendering's budget the range's items times WEIGHT, the
// nodes of its body (a range within counts as one, and is charged in turn
// each time it runs), before the range runs. As ranges are the only loops
// unboundedNode admits, the nodes a rendering executes outside them are at
// most those of its text. Call it once for each template parsed.
func runPrompt(t *template.Template, w io.Writer, data any) error {
	if t.Tree != nil {
		meterRanges(t.Tree, t.Tree.Root)
	}
	budget := maxPromptSteps
	t.Funcs(template.FuncMap{promptStep: func(weight int, items any) (any, error) {
		n, err := rangeLength(items)
		if err != nil {
			return nil, err
		}
		if n > 0 && weight > budget/n {
			budget = -1
			return nil, errPromptTooCostly
		}
		budget -= weight * n
		return items, nil
	}})
	return t.Execute(&promptWriter{w: w}, data)
}

// promptStep is the name of the function runPrompt puts in each range.
const promptStep = "promptStep"

// meterRanges rewrites each range under n as runPrompt says, and returns
// the nodes of n (a range within counts as one).
func meterRanges(tree *parse.Tree, n parse.Node) int {
	var branch *parse.BranchNode
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return 0
		}
		size := 1
		for _, c := range n.Nodes {
			size += meterRanges(tree, c)
		}
		return size
	case *parse.RangeNode:
		weight := meterRanges(tree, n.List) + meterRanges(tree, n.ElseList)
		cmd := n.Pipe.Cmds[0]
		cmd.Args = append([]parse.Node{
			parse.NewIdentifier(promptStep).SetTree(tree).SetPos(cmd.Pos),
			&parse.NumberNode{NodeType: parse.NodeNumber, Pos: cmd.Pos, IsInt: true, Int64: int64(weight), Text: strconv.Itoa(weight)},
		}, cmd.Args...)
		return 1
	case *parse.IfNode:
		branch = &n.BranchNode
	case *parse.WithNode:
		branch = &n.BranchNode
	default:
		return 1
	}
	return 1 + meterRanges(tree, branch.List) + meterRanges(tree, branch.ElseList)
}

// rangeLength is how many times a range over items runs: the length of a
// slice, an array, a map or a string, the value of an integer.
func rangeLength(items any) (int, error) {
	v := reflect.ValueOf(items)
	switch v.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.String:
		return v.Len(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(max(min(v.Int(), maxPromptSteps+1), 0)), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return int(min(v.Uint(), maxPromptSteps+1)), nil
	case reflect.Invalid:
		return 0, nil
	}
	return 0, fmt.Errorf("a prompt template cannot range over a %s", v.Type())
}

// promptWriter writes to w what a template writes, and stops it past
// maxPromptBytes.
type promptWriter struct {
	w io.Writer
	n int
}

func (p *promptWriter) Write(b []byte) (int, error) {
	if p.n += len(b); p.n > maxPromptBytes {
		return 0, errPromptTooLong
	}
	return p.w.Write(b)
}

// promptBound is the bound of a rendering err says it went past, or nil.
func promptBound(err error) error {
	for _, bound := range []error{errPromptTooLong, errPromptTooCostly} {
		if errors.Is(err, bound) {
			return bound
		}
	}
	return nil
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
