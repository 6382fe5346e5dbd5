package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/moora-go/moora/automata/llm"
)

// arithmetic finds an arithmetic expression in a message: a number, then
// operators and numbers.
var arithmetic = regexp.MustCompile(`[-+(]*\d[\d.]*(?:\s*[-+*/()]+\s*[-+(]*\d[\d.]*\)*)+`)

// ScriptedBrain is the brain when the environment names no model: a
// scripted model, deterministic, so that the agent runs with no key and no
// network. It calls the calculator for a message with arithmetic in it, the
// clock when asked for the time or the date, word_count when asked to count
// words; it reports a tool's result in a sentence, summarises the
// conversation when asked to compress it, and otherwise answers with what
// it can do. Each word of its replies takes delay to stream.
func ScriptedBrain(delay time.Duration) llm.Scripted {
	return llm.Scripted{Delay: delay, Reply: scriptedReply}
}

func scriptedReply(req llm.Request) (llm.Response, error) {
	if req.RequiredTool == compressTool {
		var said []string
		for _, m := range req.Messages {
			if m.Role == llm.RoleUser {
				said = append(said, fmt.Sprintf("%q", firstWords(m.Content, 8)))
			}
		}
		summary := "The user said " + strings.Join(said, ", then ") + "; the assistant answered each."
		if _, earlier, ok := strings.Cut(req.System, "Summary of the conversation so far:\n"); ok {
			earlier, _, _ = strings.Cut(earlier, "\n\n")
			summary = earlier + " Then " + strings.ToLower(summary[:1]) + summary[1:]
		}
		args, err := json.Marshal(map[string]string{"summary": summary})
		if err != nil {
			return llm.Response{}, err
		}
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("compress-%d", len(req.Messages)), Name: compressTool, Arguments: args}}}, nil
	}
	if len(req.Messages) == 0 {
		return llm.Response{Text: "Hello."}, nil
	}
	last := req.Messages[len(req.Messages)-1]
	// The conversation grows with every call: its length makes a call's ID
	// unique, and the same for the same request.
	callID := fmt.Sprintf("call-%d", len(req.Messages))
	call := func(text, tool string, args any) (llm.Response, error) {
		raw, err := json.Marshal(args)
		if err != nil {
			return llm.Response{}, err
		}
		return llm.Response{Text: text, ToolCalls: []llm.ToolCall{{ID: callID, Name: tool, Arguments: raw}}}, nil
	}
	switch last.Role {
	case llm.RoleTool:
		name := ""
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls {
				if c.ID == last.ToolCallID {
					name = c.Name
				}
			}
		}
		if after, ok := strings.CutPrefix(last.Content, "error: "); ok {
			return llm.Response{Text: fmt.Sprintf("The %s tool failed: %s.", name, after)}, nil
		}
		return llm.Response{Text: fmt.Sprintf("The %s tool says: %s.", name, last.Content)}, nil
	case llm.RoleUser:
		text := strings.ToLower(last.Content)
		switch {
		case arithmetic.MatchString(last.Content):
			expr := arithmetic.FindString(last.Content)
			return call("Let me calculate that.", "calculator", map[string]string{"expression": expr})
		case strings.Contains(text, "time") || strings.Contains(text, "date") || strings.Contains(text, "clock"):
			return call("Let me look at the clock.", "clock", map[string]string{})
		case strings.Contains(text, "count"):
			return call("Let me count the words.", "word_count", map[string]string{"text": last.Content})
		}
		return llm.Response{Text: fmt.Sprintf("You said: %s. I can calculate, count words and tell the time.", firstWords(last.Content, 20))}, nil
	}
	return llm.Response{Text: "I have nothing to add."}, nil
}

// firstWords returns the first n words of s, with an ellipsis if there are
// more.
func firstWords(s string, n int) string {
	words := strings.Fields(s)
	if len(words) <= n {
		return strings.Join(words, " ")
	}
	return strings.Join(words[:n], " ") + " …"
}
