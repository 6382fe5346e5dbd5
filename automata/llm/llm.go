package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
)

// Model is a chat model: the one thing an agent's jobs call to think.
//
// Complete sends req and returns the model's whole response. While the reply
// streams in, it calls onChunk (unless it is nil) with each piece of its
// text, in order, on the calling goroutine, and before it returns: the
// chunks put together are Response.Text. Tool calls are not chunks: their
// arguments are accumulated and arrive whole, in Response.ToolCalls.
//
// When ctx is done, Complete stops the call (an HTTP stream is closed) and
// returns promptly with an error that wraps ctx.Err(). Other errors are
// described under Error. A Model is safe for concurrent use.
type Model interface {
	Complete(ctx context.Context, req Request, onChunk func(text string)) (Response, error)
}

// Request is what an agent sends a model.
type Request struct {
	// System is the system prompt: the instructions before the
	// conversation. It may be empty.
	System string
	// Messages is the conversation, oldest first.
	Messages []Message
	// Tools are the tools the model may ask to call.
	Tools []Tool
	// RequiredTool makes the model call a tool (seed 000's requiredTool):
	// "" lets it answer in text or call tools as it sees fit, AnyTool makes
	// it call at least one of Tools, and the name of one of Tools makes it
	// call that one.
	RequiredTool string
	// IdempotencyKey identifies the call across retries and restarts: a
	// job passes its key, automata.JobKey(ctx), which a restored agent
	// derives again for the same unfinished work, so that a provider that
	// honours the key does the work once. Empty sends none.
	IdempotencyKey string
	// ResponseFormat, when it is not nil, asks for a reply whose text is
	// JSON of its schema, in the provider's native mode (OpenAI's
	// response_format json_schema, Gemini's responseJsonSchema,
	// Anthropic's output_config.format): see ResponseFormatter, which says
	// whether a model has one. nil lets the model write what it will. A
	// model may still answer otherwise (cut off, refused, a tool called):
	// check the text. (Left out of the request's JSON when nil, so that a
	// digest of a request without it stays what it was.)
	ResponseFormat *JSONSchema `json:",omitempty"`
}

// JSONSchema is a Request's ResponseFormat: the reply is to be JSON that
// Schema describes.
type JSONSchema struct {
	// Name names the format, as OpenAI's json_schema.name does: 1 to 64
	// letters, digits, '_' or '-'. Providers that take no name leave it
	// out.
	Name string
	// Description tells the model what the value is; it may be empty.
	Description string
	// Schema is the JSON Schema of the reply, a JSON object such as
	// {"type":"object","properties":{...}}.
	Schema json.RawMessage
	// Strict asks for OpenAI's strict mode (json_schema.strict), in which
	// the model cannot write what Schema does not allow, but which allows
	// only schemas whose every object lists all its properties as required
	// and has additionalProperties false. The other providers ignore it.
	Strict bool
}

// ResponseFormatter is implemented by a Model that may have a native mode
// for Request.ResponseFormat. A model that wraps another (a tracer, a
// recorder) implements it by asking the one it wraps.
type ResponseFormatter interface {
	// SupportsResponseFormat reports whether the model answers a request's
	// ResponseFormat in its provider's native mode.
	SupportsResponseFormat() bool
}

// SupportsResponseFormat reports whether m answers Request.ResponseFormat
// natively: whether it implements ResponseFormatter and says so. A model
// that does not may ignore ResponseFormat; ask it for JSON another way, as
// package automata/llm/structured does with a forced tool call.
func SupportsResponseFormat(m Model) bool {
	f, ok := m.(ResponseFormatter)
	return ok && f.SupportsResponseFormat()
}

// AnyTool is the RequiredTool that makes the model call at least one tool,
// whichever it chooses. It cannot be a tool's name.
const AnyTool = "*"

// Role says who wrote a Message.
type Role string

// The roles of a conversation. The system prompt is not a message: it is
// Request.System.
const (
	RoleUser      Role = "user"      // the user
	RoleAssistant Role = "assistant" // the model: text, tool calls or both
	RoleTool      Role = "tool"      // the result of one tool call
)

// Message is one message of a conversation.
type Message struct {
	Role Role
	// Content is the text: the user's words, the model's reply, or a
	// tool's result.
	Content string
	// Images are images of a user message or of a tool's result, which
	// providers send before its Content, as the vendors advise; an
	// assistant message has none. See Image for what Validate checks, and
	// each provider's documentation for how it sends them (OpenAI's chat
	// completions API takes none in a tool's result: that provider refuses
	// them). In JSON, a message without images has no Images, as before
	// there were images.
	Images []Image `json:",omitempty"`
	// ToolCalls are the calls an assistant message asked for. Each must be
	// answered by a RoleTool message, after it and before the next user or
	// assistant message, as chat APIs require.
	ToolCalls []ToolCall
	// ToolCallID is the ToolCall.ID a RoleTool message answers.
	ToolCallID string
}

// Tool describes a tool the model may call.
type Tool struct {
	// Name is how the model names the tool: 1 to 64 letters, digits,
	// underscores or dashes, as chat APIs require.
	Name string
	// Description tells the model what the tool does and when to use it.
	Description string
	// Parameters is the JSON Schema of the tool's arguments, a JSON
	// object such as {"type":"object","properties":{...}}. Empty means the
	// tool takes no arguments.
	Parameters json.RawMessage
}

// ToolCall is a call of a tool the model asked for.
type ToolCall struct {
	// ID identifies the call: the RoleTool message that answers it carries
	// it as ToolCallID.
	ID string
	// Name is the tool's name.
	Name string
	// Arguments are the arguments as the model wrote them, normally a JSON
	// object that Tool.Parameters describes ({} for none). A model can
	// write JSON that is invalid, above all when it was cut off
	// (FinishLength): check it before use (json.Valid, or by decoding it),
	// and keep it as it is when the call goes back to the model in the
	// conversation, which is what providers send.
	Arguments json.RawMessage
}

// Response is a model's whole reply.
type Response struct {
	// Text is the reply's text, all the chunks put together. It may be
	// empty when the model only calls tools.
	Text string
	// ToolCalls are the calls the model asked for, in its order.
	ToolCalls []ToolCall
	// FinishReason says why the model stopped.
	FinishReason FinishReason
	// Usage is what the call cost, in tokens, as the provider counted it
	// (zero when it did not say).
	Usage Usage
}

// FinishReason says why a model stopped writing.
type FinishReason string

// The finish reasons every chat API has. A provider passes on others as
// they come.
const (
	FinishStop          FinishReason = "stop"           // the reply is complete
	FinishToolCalls     FinishReason = "tool_calls"     // the model waits for its tool calls' results
	FinishLength        FinishReason = "length"         // cut off at the token limit: text or arguments are incomplete
	FinishContentFilter FinishReason = "content_filter" // withheld by the provider's content filter
)

// Usage counts the tokens of one call.
type Usage struct {
	InputTokens  int64 // the prompt: system, messages and tools, the cached part included
	OutputTokens int64 // the reply
	// CacheReadInputTokens are the tokens of InputTokens that the provider
	// read from its prompt cache, which cost less than the others (a tenth,
	// at Anthropic and OpenAI); zero when it read none or did not say.
	CacheReadInputTokens int64
	// CacheCreationInputTokens are the tokens of InputTokens that the
	// provider wrote to its prompt cache for the calls after this one
	// (Anthropic's cache_creation_input_tokens, which cost more than the
	// others); zero when it wrote none or did not say.
	CacheCreationInputTokens int64
}

// toolName is the name a chat API accepts for a tool, or a response
// format.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Validate reports the first thing in r that a chat API would refuse, or
// nil: an unknown role; a tool message that does not answer a call of the
// assistant message before it, or an assistant's tool call without a result
// before the next user or assistant message or the end; a tool call without ID or name, or two with
// the same ID; a tool with an invalid or repeated name, or Parameters that
// are not a JSON object; a RequiredTool that names no tool of r; a
// ResponseFormat with an invalid name or a Schema that is not a JSON
// object, or beside a RequiredTool (a forced tool call is no JSON reply);
// a request with neither a system prompt nor messages. Providers call it before they
// send anything, so that the scripted model refuses what a real one would.
func (r Request) Validate() error {
	if err := r.validate(); err != nil {
		return fmt.Errorf("llm: invalid request: %w", err)
	}
	return nil
}

func (r Request) validate() error {
	if r.System == "" && len(r.Messages) == 0 {
		return errors.New("no system prompt and no messages")
	}
	tools := make(map[string]bool, len(r.Tools))
	for i, t := range r.Tools {
		if !toolName.MatchString(t.Name) {
			return fmt.Errorf("tools[%d]: name %q is not 1 to 64 letters, digits, '_' or '-'", i, t.Name)
		}
		if tools[t.Name] {
			return fmt.Errorf("tools[%d]: a second tool named %q", i, t.Name)
		}
		tools[t.Name] = true
		if len(t.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Parameters, &schema); err != nil || schema == nil {
				return fmt.Errorf("tools[%d] (%s): parameters are not a JSON object", i, t.Name)
			}
		}
	}
	switch r.RequiredTool {
	case "":
	case AnyTool:
		if len(r.Tools) == 0 {
			return errors.New("a tool is required but the request has no tools")
		}
	default:
		if !tools[r.RequiredTool] {
			return fmt.Errorf("required tool %q is not among the request's tools", r.RequiredTool)
		}
	}
	if f := r.ResponseFormat; f != nil {
		if !toolName.MatchString(f.Name) {
			return fmt.Errorf("response format: name %q is not 1 to 64 letters, digits, '_' or '-'", f.Name)
		}
		var schema map[string]any
		if err := json.Unmarshal(f.Schema, &schema); err != nil || schema == nil {
			return fmt.Errorf("response format %s: the schema is not a JSON object", f.Name)
		}
		if r.RequiredTool != "" {
			return fmt.Errorf("response format %s beside required tool %q: a forced tool call is no JSON reply", f.Name, r.RequiredTool)
		}
	}
	ids := map[string]bool{}
	var pending []string // calls of the last assistant message not answered yet
	images := 0
	for i, m := range r.Messages {
		if len(m.Images) > 0 && m.Role == RoleAssistant {
			return fmt.Errorf("messages[%d]: an assistant message with images (only user messages and tool results may have them)", i)
		}
		for j, im := range m.Images {
			if images++; images > MaxImages {
				return fmt.Errorf("messages[%d].Images[%d]: the request's image number %d, past MaxImages (%d)", i, j, images, MaxImages)
			}
			if err := checkImage(im); err != nil {
				return fmt.Errorf("messages[%d].Images[%d]: %w", i, j, err)
			}
		}
		switch m.Role {
		case RoleUser, RoleAssistant:
			if len(pending) > 0 {
				return fmt.Errorf("messages[%d]: a %s message before the result of tool call %q", i, m.Role, pending[0])
			}
			if m.ToolCallID != "" {
				return fmt.Errorf("messages[%d]: a %s message with a ToolCallID", i, m.Role)
			}
			if m.Role == RoleUser && len(m.ToolCalls) > 0 {
				return fmt.Errorf("messages[%d]: a user message with tool calls", i)
			}
			for j, c := range m.ToolCalls {
				switch {
				case c.ID == "":
					return fmt.Errorf("messages[%d].ToolCalls[%d]: no ID", i, j)
				case c.Name == "":
					return fmt.Errorf("messages[%d].ToolCalls[%d]: no name", i, j)
				case ids[c.ID]:
					return fmt.Errorf("messages[%d].ToolCalls[%d]: a second tool call with ID %q", i, j, c.ID)
				}
				ids[c.ID] = true
				pending = append(pending, c.ID)
			}
		case RoleTool:
			at := -1
			for j, id := range pending {
				if id == m.ToolCallID {
					at = j
				}
			}
			if at < 0 {
				return fmt.Errorf("messages[%d]: the result of tool call %q, which the assistant message before it did not make (or was answered already)", i, m.ToolCallID)
			}
			pending = append(pending[:at], pending[at+1:]...)
		default:
			return fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("tool call %q has no result", pending[0])
	}
	return nil
}
