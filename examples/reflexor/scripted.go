package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/moora-go/moora/automata/agents/reflexor"
	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/examples/internal/mcpflag"
)

// arithmetic finds an arithmetic expression in a message: a number, then
// operators and numbers.
var arithmetic = regexp.MustCompile(`[-+(]*\d[\d.]*(?:\s*[-+*/()]+\s*[-+(]*\d[\d.]*\)*)+`)

// ScriptedBrain is the brain when the environment names no model: a
// scripted model, deterministic, so that the agent runs with no key and no
// network. It calls any tool it is offered when told "call TOOL" (then the
// tool's JSON arguments, if any: call echo {"message": "hi"}), as with the
// tools of an MCP server (-mcp); the calculator for a message with
// arithmetic in it, the clock when asked for the time or the date,
// word_count when asked to count words; it reports a tool's result in a sentence, summarises the
// conversation when asked to compress it, and otherwise answers with what
// it can do. Each word of its replies takes delay to stream.
func ScriptedBrain(delay time.Duration) llm.Scripted {
	return llm.Scripted{Delay: delay, Reply: scriptedReply}
}

func scriptedReply(req llm.Request) (llm.Response, error) {
	if req.RequiredTool == reflexor.CompressTool {
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
		summary = lastRunes(summary, maxSummary)
		args, err := json.Marshal(map[string]string{"summary": summary})
		if err != nil {
			return llm.Response{}, err
		}
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("compress-%d", len(req.Messages)), Name: reflexor.CompressTool, Arguments: args}}}, nil
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
		return llm.Response{Text: fmt.Sprintf("The %s tool says: %s.", name, strings.TrimSuffix(last.Content, "."))}, nil
	case llm.RoleUser:
		if name, args, ok := mcpflag.ToolAsked(req, last.Content); ok {
			return llm.Response{Text: fmt.Sprintf("Let me call %s.", name), ToolCalls: []llm.ToolCall{{ID: callID, Name: name, Arguments: args}}}, nil
		}
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

// How much of the conversation the scripted brain repeats: the words of a
// message it quotes, their length, and the length of its summary, which
// keeps the newest part of the conversation when it would grow past it. A
// message that is one long word, or a conversation that goes on and on,
// makes replies and summaries no longer than these; what the brain writes
// follows the message it answers, not the conversation's length.
const (
	maxQuotedWord = 24   // runes of a quoted word
	maxSummary    = 2000 // bytes of a summary
)

// firstWords returns the first n words of s, with an ellipsis if there are
// more, each word cut to maxQuotedWord runes (with an ellipsis).
func firstWords(s string, n int) string {
	var words []string
	for word := range strings.FieldsSeq(s) {
		if len(words) == n {
			return strings.Join(words, " ") + " …"
		}
		if cut, ok := firstRunes(word, maxQuotedWord); ok {
			word = cut + "…"
		}
		words = append(words, word)
	}
	return strings.Join(words, " ")
}

// firstRunes returns the first n runes of s, and whether s had more.
func firstRunes(s string, n int) (string, bool) {
	for i := range s {
		if n == 0 {
			return s[:i], true
		}
		n--
	}
	return s, false
}

// lastRunes returns the end of s, at most n bytes of whole runes, after an
// ellipsis when s was longer.
func lastRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n+len("… "):]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:] // from the first whole rune
	}
	return "… " + s
}
