package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/moora-go/moora/examples/persistent/decl"
)

// OfflineLLM is a deterministic stand-in for a language model, so that the
// example runs with no key and no network: it answers a user message by
// asking for the word-count tool, and a tool result by reporting it.
type OfflineLLM struct {
	Delay time.Duration // how long a reply takes
}

func (l OfflineLLM) Reply(ctx context.Context, key string, req Request) (Reply, error) {
	if err := sleep(ctx, l.Delay); err != nil {
		return Reply{}, err
	}
	if len(req.Messages) == 0 {
		return Reply{Content: "Hello."}, nil
	}
	last := req.Messages[len(req.Messages)-1]
	switch last.Role {
	case "user":
		return Reply{
			Content:   "Let me count the words of that.",
			ToolCalls: []decl.ToolCall{{ID: "call-" + last.ID, Name: "word-count", Input: last.Content}},
		}, nil
	case "tool":
		return Reply{Content: fmt.Sprintf("Your message has %s words.", last.Content)}, nil
	}
	return Reply{Content: "I have nothing to add."}, nil
}

// WordCount is a tool: it counts the words of its input. It takes delay to
// do so, to give a crash something to interrupt.
func WordCount(delay time.Duration) Tool {
	return func(ctx context.Context, key, input string) (string, error) {
		if err := sleep(ctx, delay); err != nil {
			return "", err
		}
		return strconv.Itoa(len(strings.Fields(input))), nil
	}
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
