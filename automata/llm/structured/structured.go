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
// In the provider's native JSON-schema mode where it has one, and through a
// forced tool call where it has not. A model that says it answers
// llm.Request.ResponseFormat natively (llm.SupportsResponseFormat: the
// OpenAI, Anthropic and Gemini providers, and the tracer and the recorder
// of one, which say what the model they wrap says, and a recording's
// Player what its ResponseFormat tells it) is asked for a reply
// whose text is the JSON of the value: OpenAI's response_format of type
// json_schema, Anthropic's output_config.format (the keywords it refuses
// moved into descriptions), Gemini's responseMimeType application/json
// with responseJsonSchema. The schema goes as the toolkit derives it, with
// strict false at OpenAI: its strict mode would require
// every property, and T's optional fields (omitempty) are optional; the
// answer is validated here instead, at every provider alike. A request
// with tools of its own is asked through the tool (below) unless
// Options.Mode is NativeMode: every provider takes tools beside a forced
// call, not every model beside a JSON-schema mode (Gemini's before Gemini
// 3 refuse function calling with responseMimeType application/json). In
// native mode the request's tools are offered as they are, and none is
// required: a call of one is no answer.
//
// Every other model (the scripted one by default, and one that Options.Mode
// ToolMode asks so) is asked for the value as the arguments of a tool,
// Options.Name, which it must call (Request's RequiredTool): a mechanism
// that every provider has.
//
// An answer that does not validate is sent back to the model and asked
// again, at most Options.Retries times (default 2), each try under the
// request's IdempotencyKey with "-retry-N" after it: with the tool, its
// call, and as the call's result the validation's error; in native mode
// (where there is no call to answer) its text, then a user message that
// says what is wrong with it. The tokens of every try are summed in the
// Usage returned. After the last, the error wraps ErrInvalidAnswer and
// says what was wrong with the last answer.
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
// Not a parser of free text: the value comes as a tool call's arguments, or
// as the whole text of a reply the provider was asked to write as JSON,
// never out of prose. T is a struct (a tool's arguments are a JSON object,
// and so is a value in native mode, that the modes be the same); for a
// list, give the struct a field that holds it.
package structured

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
)

// Mode says how Ask asks: see "How it asks" in the package documentation.
type Mode int

// The modes of Options.Mode.
const (
	// AutoMode, the default, asks in the provider's native JSON-schema
	// mode when the model says it has one (llm.SupportsResponseFormat)
	// and the request has no tools of its own, else through a forced tool
	// call.
	AutoMode Mode = iota
	// ToolMode asks through a forced tool call, whatever the model.
	ToolMode
	// NativeMode asks with llm.Request.ResponseFormat, whatever the model
	// says: for a model that has the mode and a wrapper that hides it.
	NativeMode
)

// Options configure Ask; the zero value gives the defaults.
type Options struct {
	// Name is the tool the model answers through (in native mode, the
	// response format's name): 1 to 64 letters, digits, '_' or '-', not
	// the name of one of the request's tools. Default "answer".
	Name string
	// Description tells the model what the value is (the tool's
	// description, or the response format's). Default, of the tool,
	// "Answers with the value asked for, as its arguments."; of the
	// format, none.
	Description string
	// Mode says how to ask; default AutoMode.
	Mode Mode
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
// did not validate against the schema, or was no call of the tool (in
// native mode, no text: a call of one of the request's tools, or nothing).
var ErrInvalidAnswer = errors.New("structured: the model's answer is not a valid value")

// Ask asks model for a value of type T, a struct, in answer to req (its
// conversation and tools as they are; Ask adds its tool, and requires it, or
// its response format), and returns the value, the tokens every try took,
// and an error: the model's (a failed call, as Complete returns it), or one
// that wraps ErrInvalidAnswer.
func Ask[T any](ctx context.Context, model llm.Model, req llm.Request, opts Options) (T, llm.Usage, error) {
	var zero T
	var usage llm.Usage
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	native := opts.Mode == NativeMode || opts.Mode == AutoMode && len(req.Tools) == 0 && llm.SupportsResponseFormat(model)
	description := opts.Description
	if description == "" {
		description = DefaultDescription
	}
	if opts.Retries == 0 {
		opts.Retries = DefaultRetries
	}
	var got T
	kit, err := toolkit.New(toolkit.Config{}, toolkit.Func(opts.Name, description, func(_ context.Context, v T) (string, error) {
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
	req.Messages = append([]llm.Message(nil), req.Messages...)
	if native {
		req.RequiredTool = ""
		req.ResponseFormat = &llm.JSONSchema{Name: opts.Name, Description: opts.Description, Schema: kit.LLMTools()[0].Parameters}
	} else {
		req.Tools = append(append([]llm.Tool(nil), req.Tools...), kit.LLMTools()...)
		req.RequiredTool = opts.Name
		req.ResponseFormat = nil
	}
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
		var why error
		var answers []llm.Message
		if native {
			answers, why = answerText(ctx, kit, req, resp, opts.Name)
		} else {
			answers, why = answerCall(ctx, kit, req, resp, opts.Name)
		}
		if why == nil {
			return got, usage, nil
		}
		var fatal *readError
		if errors.As(why, &fatal) {
			return zero, usage, fmt.Errorf("structured: reading the answer: %w", fatal.err)
		}
		if try >= max(opts.Retries, 0) {
			return zero, usage, fmt.Errorf("%w: after %d tries, the last: %v", ErrInvalidAnswer, try+1, why)
		}
		// Show the model its answer and what is wrong with it.
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
		req.Messages = append(req.Messages, answers...)
	}
}

// readError is an answer that could not be read for another reason than
// its being invalid: the toolkit failed.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }

// answerCall reads a reply to a request that requires the tool name: nil
// when its first call of the tool validates (and the value is set), else
// why not, and the messages that answer the reply.
func answerCall(ctx context.Context, kit *toolkit.Kit, req llm.Request, resp llm.Response, name string) ([]llm.Message, error) {
	why := fmt.Errorf("it called no tool %s", name)
	answers := make([]llm.Message, 0, len(resp.ToolCalls))
	tried := false // the first call of the tool is the answer
	for _, call := range resp.ToolCalls {
		content := "not run: only " + name + " answers"
		if call.Name == name && !tried {
			tried = true
			r := kit.Run(ctx, toolkit.Call{ID: call.ID, Name: call.Name, Arguments: call.Arguments, Key: req.IdempotencyKey})
			if r.Err == nil {
				return nil, nil
			}
			if r.Kind != toolkit.KindInvalid {
				return nil, &readError{r.Err}
			}
			why, content = r.Err, r.Content()
		}
		answers = append(answers, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: content})
	}
	if len(answers) == 0 {
		answers = append(answers, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("Answer by calling the tool %s, with the value as its arguments.", name)})
	}
	return answers, why
}

// answerText reads a reply to a request with a response format: nil when
// its text validates as the tool's arguments would (and the value is set),
// else why not, and the messages that answer the reply: a result for each
// tool call it made (none is run), and a user message that says what is
// wrong.
func answerText(ctx context.Context, kit *toolkit.Kit, req llm.Request, resp llm.Response, name string) ([]llm.Message, error) {
	var answers []llm.Message
	for _, call := range resp.ToolCalls {
		answers = append(answers, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: "not run: answer with the value, as JSON"})
	}
	text := strings.TrimSpace(resp.Text)
	var why error
	var content string
	switch {
	case text == "" && len(resp.ToolCalls) > 0:
		why = fmt.Errorf("it called %s instead of answering with JSON", resp.ToolCalls[0].Name)
		content = "error: " + why.Error()
	case text == "":
		why = errors.New("its answer is empty")
		content = "error: " + why.Error()
	default:
		r := kit.Run(ctx, toolkit.Call{ID: name, Name: name, Arguments: json.RawMessage(text), Key: req.IdempotencyKey})
		if r.Err == nil {
			return nil, nil
		}
		if r.Kind != toolkit.KindInvalid {
			return nil, &readError{r.Err}
		}
		why, content = r.Err, r.Content()
	}
	answers = append(answers, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf(
		"That answer is not a valid value (%s). Answer again with only the JSON of the value, as the response format %s's schema says.", content, name)})
	return answers, why
}
func add(a, b llm.Usage) llm.Usage {
	return llm.Usage{
		InputTokens:              a.InputTokens + b.InputTokens,
		OutputTokens:             a.OutputTokens + b.OutputTokens,
		CacheReadInputTokens:     a.CacheReadInputTokens + b.CacheReadInputTokens,
		CacheCreationInputTokens: a.CacheCreationInputTokens + b.CacheCreationInputTokens,
	}
}
