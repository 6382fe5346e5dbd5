package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Scripted is a deterministic model that needs no network and no key: the
// default of every example and test. Its Reply function answers each
// request, and Complete streams the answer's text in chunks, one word (with
// the space before it) at a time, Delay apart, as a real model would.
//
// It goes through the same checks as a real provider: it refuses a request
// that Validate refuses, and a reply that breaks the request (a call of a
// tool the request does not offer, no tool call when RequiredTool asks for
// one, two calls with one ID) is an error of the script. It fills in what a
// provider fills in: FinishReason (FinishToolCalls when there are tool calls,
// else FinishStop) and Usage (a count of words: of the request as input, of
// the reply as output) when the reply leaves them zero, and {} for empty tool
// call arguments. A request's images reach Reply as they came (a script may
// look at them or not), and count no words.
type Scripted struct {
	// Reply answers a request. It should be a pure function of the request,
	// so that a request sent again (a job restarted after a crash) gets the
	// same answer.
	Reply func(req Request) (Response, error)
	// Delay is how long each chunk of text takes to arrive; 0 streams it
	// at once.
	Delay time.Duration
	// ResponseFormat makes the model say that it answers
	// Request.ResponseFormat natively (SupportsResponseFormat), as a
	// provider with a JSON-schema mode does: Reply then answers such a
	// request with the JSON in Response.Text. By default it says not, and
	// package automata/llm/structured asks it through a forced tool call.
	// Either way the request's ResponseFormat reaches Reply as it is.
	ResponseFormat bool
}

// SupportsResponseFormat reports s.ResponseFormat (see ResponseFormatter).
func (s Scripted) SupportsResponseFormat() bool { return s.ResponseFormat }

// Script returns a Reply for Scripted that plays replies in turn: a request
// whose conversation holds n assistant messages is answered with replies[n],
// so that the answer depends on the request alone, and a conversation
// longer than the script is an error.
func Script(replies ...Response) func(Request) (Response, error) {
	return func(req Request) (Response, error) {
		n := 0
		for _, m := range req.Messages {
			if m.Role == RoleAssistant {
				n++
			}
		}
		if n >= len(replies) {
			return Response{}, fmt.Errorf("the script has %d replies and the conversation %d assistant messages", len(replies), n)
		}
		return replies[n], nil
	}
}

// ProviderName returns "moora.scripted", the provider Traced records for
// the scripted model (see Named).
func (Scripted) ProviderName() string { return "moora.scripted" }

// ModelName returns "scripted", the model Traced records for the scripted
// model (see Named).
func (Scripted) ModelName() string { return "scripted" }

// Complete answers req with s.Reply and streams the text to onChunk.
func (s Scripted) Complete(ctx context.Context, req Request, onChunk func(text string)) (Response, error) {
	if err := req.Validate(); err != nil {
		return Response{}, fmt.Errorf("scripted model: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return Response{}, fmt.Errorf("scripted model: %w", err)
	}
	if s.Reply == nil {
		return Response{}, errors.New("scripted model: no Reply function")
	}
	resp, err := s.Reply(req)
	if err != nil {
		return Response{}, fmt.Errorf("scripted model: %w", err)
	}
	resp.ToolCalls = slices.Clone(resp.ToolCalls)
	if err := checkReply(req, resp); err != nil {
		return Response{}, fmt.Errorf("scripted model: reply: %w", err)
	}
	for i, c := range resp.ToolCalls {
		if len(c.Arguments) == 0 {
			resp.ToolCalls[i].Arguments = json.RawMessage("{}")
		}
	}
	if resp.FinishReason == "" {
		resp.FinishReason = FinishStop
		if len(resp.ToolCalls) > 0 {
			resp.FinishReason = FinishToolCalls
		}
	}
	if resp.Usage == (Usage{}) {
		resp.Usage = Usage{InputTokens: requestWords(req), OutputTokens: replyWords(resp)}
	}
	for _, chunk := range chunks(resp.Text) {
		if err := wait(ctx, s.Delay); err != nil {
			return Response{}, fmt.Errorf("scripted model: %w", err)
		}
		if onChunk != nil {
			onChunk(chunk)
		}
	}
	return resp, nil
}

// checkReply reports a reply that breaks its request.
func checkReply(req Request, resp Response) error {
	ids := map[string]bool{}
	for i, c := range resp.ToolCalls {
		if c.ID == "" {
			return fmt.Errorf("tool call %d has no ID", i)
		}
		if ids[c.ID] {
			return fmt.Errorf("two tool calls with ID %q", c.ID)
		}
		ids[c.ID] = true
		if !slices.ContainsFunc(req.Tools, func(t Tool) bool { return t.Name == c.Name }) {
			return fmt.Errorf("tool call %q of %q, which the request does not offer", c.ID, c.Name)
		}
	}
	switch req.RequiredTool {
	case "":
	case AnyTool:
		if len(resp.ToolCalls) == 0 {
			return errors.New("no tool call, and the request requires one")
		}
	default:
		if !slices.ContainsFunc(resp.ToolCalls, func(c ToolCall) bool { return c.Name == req.RequiredTool }) {
			return fmt.Errorf("no call of %q, and the request requires one", req.RequiredTool)
		}
	}
	return nil
}

// chunks splits text as Scripted streams it: one word at a time, each with
// the white space before it, so that the chunks put together are text.
func chunks(text string) []string {
	var out []string
	for text != "" {
		start := len(text) - len(strings.TrimLeft(text, " \t\r\n"))
		end := strings.IndexAny(text[start:], " \t\r\n")
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		out = append(out, text[:end])
		text = text[end:]
	}
	return out
}

func requestWords(req Request) int64 {
	n := words(req.System)
	for _, m := range req.Messages {
		n += words(m.Content)
		for _, c := range m.ToolCalls {
			n += 1 + words(string(c.Arguments))
		}
	}
	for _, t := range req.Tools {
		n += 1 + words(t.Description) + words(string(t.Parameters))
	}
	if f := req.ResponseFormat; f != nil {
		n += 1 + words(f.Description) + words(string(f.Schema))
	}
	return n
}

func replyWords(resp Response) int64 {
	n := words(resp.Text)
	for _, c := range resp.ToolCalls {
		n += 1 + words(string(c.Arguments))
	}
	return n
}

// words counts the words of s as strings.Fields splits them, without
// making the slice.
func words(s string) int64 {
	var n int64
	for range strings.FieldsSeq(s) {
		n++
	}
	return n
}

// wait waits for d, or for ctx to be done.
func wait(ctx context.Context, d time.Duration) error {
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
