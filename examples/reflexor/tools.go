package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/examples/internal/calc"
)

// Tool is a tool the brain may call: what the brain is told of it, and how
// to run it. key is the job's key (toolkit/request-toolkit-{toolCallId}),
// the same after a restart: its idempotency key. arguments are the brain's,
// as it wrote them: Run checks them, and its error is reported to the brain
// as the call's result.
type Tool struct {
	llm.Tool
	Run func(ctx context.Context, key string, arguments json.RawMessage) (string, error)
}

// Tools are the tools of the offline demo: real ones, which need no
// network. clock tells the time.
func Tools(clock func() time.Time) []Tool {
	return []Tool{WordCount(), Calculator(), Clock(clock)}
}

// WordCount counts the words of a text.
func WordCount() Tool {
	return Tool{
		Tool: llm.Tool{
			Name:        "word_count",
			Description: "Counts the words of a text: the runs of characters between white space.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"The text whose words to count."}},"required":["text"],"additionalProperties":false}`),
		},
		Run: func(_ context.Context, _ string, arguments json.RawMessage) (string, error) {
			var args struct {
				Text *string `json:"text"`
			}
			if err := json.Unmarshal(arguments, &args); err != nil || args.Text == nil {
				return "", fmt.Errorf(`the arguments are not {"text": "…"}: %s`, arguments)
			}
			return strconv.Itoa(len(strings.Fields(*args.Text))), nil
		},
	}
}

// Calculator evaluates an arithmetic expression: numbers, + - * /, and
// parentheses, exactly (as Go evaluates constant expressions), so that 1/3*3
// is 1.
func Calculator() Tool {
	return Tool{
		Tool: llm.Tool{
			Name:        "calculator",
			Description: "Evaluates an arithmetic expression of numbers, + - * / and parentheses, exactly.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string","description":"The expression, such as (2 + 3) * 4.5."}},"required":["expression"],"additionalProperties":false}`),
		},
		Run: func(_ context.Context, _ string, arguments json.RawMessage) (string, error) {
			var args struct {
				Expression *string `json:"expression"`
			}
			if err := json.Unmarshal(arguments, &args); err != nil || args.Expression == nil {
				return "", fmt.Errorf(`the arguments are not {"expression": "…"}: %s`, arguments)
			}
			return calc.Calculate(*args.Expression)
		},
	}
}

// Clock tells the time: clock's, in UTC.
func Clock(clock func() time.Time) Tool {
	return Tool{
		Tool: llm.Tool{
			Name:        "clock",
			Description: "Tells the current date and time, in UTC.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		},
		Run: func(context.Context, string, json.RawMessage) (string, error) {
			return clock().UTC().Format(time.RFC1123), nil
		},
	}
}
