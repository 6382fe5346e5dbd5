// Package structured asks a language model for a typed value: a Go struct
// whose JSON Schema the model is shown, whose answer is validated against
// it, and which comes back decoded, or an error that says why not.
//
//	type Triage struct {
//		Severity string   `json:"severity" jsonschema:"enum=low,enum=high,enum=critical"`
//		Summary  string   `json:"summary"`
//		Labels   []string `json:"labels,omitempty"`
//	}
//	t, usage, err := structured.Ask[Triage](ctx, model, llm.Request{
//		System:   "Triage the ticket.",
//		Messages: []llm.Message{{Role: llm.RoleUser, Content: ticket}},
//		IdempotencyKey: automata.JobKey(ctx),
//	}, structured.Options{})
//
// The schema is derived from T as the toolkit derives a tool's arguments'
// (package automata/toolkit, Func: a property per exported field, required
// unless omitempty, jsonschema tags for enums and bounds), and the answer
// goes through the same validation, so that what a model may get wrong —
// JSON that does not parse, a value outside an enum, a property missing or
// unknown — is said to it in the same words, with where and what.
//
// # How it asks
//
// Every provider of package automata/llm can force a tool call (Request's
// RequiredTool), and a tool's arguments are what its schema says: Ask asks
// for the value as the arguments of a tool, Options.Name, which the model
// must call, so that one mechanism holds for every provider, the scripted
// model included. An answer that does not validate is sent back to the
// model — its call, and as the call's result the validation's error — and
// asked again, at most Options.Retries times (default 2), each try under
// the request's IdempotencyKey with "-retry-N" after it; the tokens of
// every try are summed in the Usage returned. After the last, the error
// wraps ErrInvalidAnswer and says what was wrong with the last answer.
//
// # In an agent
//
// A value a model answered is what a job dispatches, as an input: it is
// journaled, and a replay or a restart reads it from the journal and never
// asks the model again. A job that is killed after the model answered and
// before the input is journaled asks again when the agent restarts (the
// state still calls for the job), under the same idempotency key: a
// provider that honours the key answers it without charging it twice
// (see each provider's documentation for whether it does).
//
// # What it is not
//
// Not a parser of free text: the value comes as a tool call's arguments,
// never out of prose. T is a struct (a tool's arguments are a JSON object);
// for a list, give the struct a field that holds it.
package structured

import (
	"context"
	"errors"
	"fmt"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
)

// Options configure Ask; the zero value gives the defaults.
type Options struct {
	// Name is the tool the model answers through: 1 to 64 letters,
	// digits, '_' or '-', not the name of one of the request's tools.
	// Default "answer".
	Name string
	// Description tells the model what the value is (the tool's
	// description). Default "Answers with the value asked for, as its
	// arguments."
	Description string
	// Retries is how many times an answer that does not validate is sent
	// back to the model with what is wrong with it. Default 2; negative:
	// none.
	Retries int
}

// The defaults of Options.
const (
	DefaultName        = "answer"
	DefaultDescription = "Answers with the value asked for, as its arguments."
	DefaultRetries     = 2
)

// ErrInvalidAnswer is wrapped by Ask's error when the model's last answer
// did not validate against the schema, or was no call of the tool.
var ErrInvalidAnswer = errors.New("structured: the model's answer is not a valid value")

// Ask asks model for a value of type T, a struct, in answer to req (its
// conversation and tools as they are; Ask adds its tool, and requires it),
// and returns the value, the tokens every try took, and an error: the
// model's (a failed call, as Complete returns it), or one that wraps
// ErrInvalidAnswer.
func Ask[T any](ctx context.Context, model llm.Model, req llm.Request, opts Options) (T, llm.Usage, error) {
	var zero T
	var usage llm.Usage
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.Description == "" {
		opts.Description = DefaultDescription
	}
	if opts.Retries == 0 {
		opts.Retries = DefaultRetries
	}
	var got T
	kit, err := toolkit.New(toolkit.Config{}, toolkit.Func(opts.Name, opts.Description, func(_ context.Context, v T) (string, error) {
		got = v
		return "ok", nil
	}))
	if err != nil {
		return zero, usage, fmt.Errorf("structured: a value of type %T: %w", zero, err)
	}
	for _, t := range req.Tools {
		if t.Name == opts.Name {
			return zero, usage, fmt.Errorf("structured: the request has a tool named %q already: give Options.Name another", opts.Name)
		}
	}
	req.Tools = append(append([]llm.Tool(nil), req.Tools...), kit.LLMTools()...)
	req.Messages = append([]llm.Message(nil), req.Messages...)
	req.RequiredTool = opts.Name
	key := req.IdempotencyKey
	for try := 0; ; try++ {
		if try > 0 && key != "" {
			req.IdempotencyKey = fmt.Sprintf("%s-retry-%d", key, try)
		}
		resp, err := model.Complete(ctx, req, nil)
		usage = add(usage, resp.Usage)
		if err != nil {
			return zero, usage, err
		}
		why := fmt.Errorf("it called no tool %s", opts.Name)
		answers := make([]llm.Message, 0, len(resp.ToolCalls))
		tried := false // the first call of the tool is the answer
		for _, call := range resp.ToolCalls {
			content := "not run: only " + opts.Name + " answers"
			if call.Name == opts.Name && !tried {
				tried = true
				r := kit.Run(ctx, toolkit.Call{ID: call.ID, Name: call.Name, Arguments: call.Arguments, Key: req.IdempotencyKey})
				if r.Err == nil {
					return got, usage, nil
				}
				if r.Kind != toolkit.KindInvalid {
					return zero, usage, fmt.Errorf("structured: reading the answer: %w", r.Err)
				}
				why, content = r.Err, r.Content()
			}
			answers = append(answers, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: content})
		}
		if try >= max(opts.Retries, 0) {
			return zero, usage, fmt.Errorf("%w: after %d tries, the last: %v", ErrInvalidAnswer, try+1, why)
		}
		// Show the model its answer and what is wrong with it.
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
		if len(answers) == 0 {
			answers = append(answers, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("Answer by calling the tool %s, with the value as its arguments.", opts.Name)})
		}
		req.Messages = append(req.Messages, answers...)
	}
}

func add(a, b llm.Usage) llm.Usage {
	return llm.Usage{
		InputTokens:              a.InputTokens + b.InputTokens,
		OutputTokens:             a.OutputTokens + b.OutputTokens,
		CacheReadInputTokens:     a.CacheReadInputTokens + b.CacheReadInputTokens,
		CacheCreationInputTokens: a.CacheCreationInputTokens + b.CacheCreationInputTokens,
	}
}
