package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/examples/internal/mcpflag"
	"github.com/moora-go/moora/examples/internal/otelenv"
)

// offlineLLM is the llm when the environment names no model: a scripted
// model, deterministic, so that the example runs with no key and no network.
// It answers a user message by asking for the word-count tool (or for the
// tool it names, "call TOOL {arguments}": an MCP server's, with -mcp), and
// a tool result by reporting it. Each word of its replies takes delay to stream.
func offlineLLM(delay time.Duration) llm.Scripted {
	return llm.Scripted{Delay: delay, Reply: func(req llm.Request) (llm.Response, error) {
		if len(req.Messages) == 0 {
			return llm.Response{Text: "Hello."}, nil
		}
		last := req.Messages[len(req.Messages)-1]
		// count asks for the word-count tool on the user's newest message.
		count := func(text string) (llm.Response, error) {
			newest := newestUserMessage(req)
			args, err := json.Marshal(wordCountArgs{Text: &newest})
			if err != nil {
				return llm.Response{}, err
			}
			return llm.Response{
				Text:      text,
				ToolCalls: []llm.ToolCall{{ID: callID(req), Name: "word-count", Arguments: args}},
			}, nil
		}
		switch last.Role {
		case llm.RoleUser:
			if name, args, ok := mcpflag.ToolAsked(req, last.Content); ok {
				return llm.Response{Text: fmt.Sprintf("Let me call %s.", name), ToolCalls: []llm.ToolCall{{ID: callID(req), Name: name, Arguments: args}}}, nil
			}
			return count("Let me count the words of that.")
		case llm.RoleTool:
			if name := toolOf(req, last.ToolCallID); name != "word-count" {
				return llm.Response{Text: fmt.Sprintf("The %s tool says: %s", name, last.Content)}, nil
			}
			answer := fmt.Sprintf("Your message has %s words.", last.Content)
			if last.Content == "1" {
				answer = "Your message has 1 word."
			}
			// The user wrote again while the tool ran: count that too.
			if counted := countedText(req); counted != nil && *counted != newestUserMessage(req) {
				return count(answer + " Let me count the words of your next message.")
			}
			return llm.Response{Text: answer}, nil
		}
		return llm.Response{Text: "I have nothing to add."}, nil
	}}
}

// callID is the ID of the tool call the offline llm asks for in answer to
// req: unique to the call of the llm, and the same for the same request
// (when the job makes the call again after a crash). It is made of the
// request's idempotency key, the llm job's key (llm/llm-{lastMessageId});
// of a request without one, of the number of its messages, which is
// unique only in a conversation shorter than the llm is sent
// (-prompt-bytes): past that, the number stops growing.
func callID(req llm.Request) string {
	if req.IdempotencyKey != "" {
		return "call-" + strings.TrimPrefix(req.IdempotencyKey, "llm/llm-")
	}
	return fmt.Sprintf("call-%d", len(req.Messages))
}

// toolOf is the name of the tool of the call id in req.
func toolOf(req llm.Request, id string) string {
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return c.Name
			}
		}
	}
	return ""
}

// newestUserMessage is the content of the last user message of req.
func newestUserMessage(req llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

// countedText is the text of the last word-count call of req, nil if there
// is none.
func countedText(req llm.Request) *string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		for j := len(m.ToolCalls) - 1; j >= 0; j-- {
			var args wordCountArgs
			if json.Unmarshal(m.ToolCalls[j].Arguments, &args) == nil && args.Text != nil {
				return args.Text
			}
		}
	}
	return nil
}

// wordCountArgs are the word-count tool's arguments.
type wordCountArgs struct {
	Text *string `json:"text" jsonschema_description:"The text whose words to count."`
}

// Tools are the agent's tools: word-count, which counts the words of its
// text, taking delay to do so, to give a crash something to interrupt.
func Tools(delay time.Duration) (*toolkit.Kit, error) {
	return tracedTools(otelenv.Providers{}, delay)
}

// tracedTools are Tools, whose calls p traces and measures.
func tracedTools(p otelenv.Providers, delay time.Duration) (*toolkit.Kit, error) {
	return toolkit.New(toolkit.Config{TracerProvider: p.Tracer, MeterProvider: p.Meter}, toolkit.Func("word-count", "Counts the words of a text: the runs of characters between white space.",
		func(ctx context.Context, args wordCountArgs) (string, error) {
			if err := sleep(ctx, delay); err != nil {
				return "", err
			}
			return strconv.Itoa(len(strings.Fields(*args.Text))), nil // the schema requires text
		}))
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
