package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/provider"
)

// blockBytes is what each content block of a message counts on top of its
// bytes, as MaxResponseBytes counts them: the memory of its place in the
// message and in the response, and a margin. It bounds the number of blocks
// an endless stream of empty ones can open.
const blockBytes = 1 << 10

// message puts a stream's events together, as the Messages API documents
// them: message_start, then for each content block a content_block_start,
// its content_block_delta events and a content_block_stop, then
// message_delta (the stop reason and the usage) and message_stop. The
// SDK's Message.Accumulate does that too, but adds each text delta to the
// block's text with +, which copies the text so far for every delta
// (quadratic in the message's length), and keeps the raw JSON of every
// block besides; message keeps the text once, in a strings.Builder, and each
// tool call's input in a buffer of its own.
//
// Between events: started and stopped say whether message_start and
// message_stop came; blocks has one entry per content_block_start, in the
// order of their indexes (each start names the next index); text holds
// every text_delta of every text block, in order, which is what went to
// onChunk; kept counts what the message keeps, as MaxResponseBytes (limit)
// bounds, and no text past limit goes to onChunk.
type message struct {
	started, stopped bool
	blocks           []block
	text             strings.Builder
	stopReason       string
	usage            sdk.MessageDeltaUsage // the latest counts: message_start's, then message_delta's
	kept, limit      int64                 // limit: MaxResponseBytes
}

// block is one content block of a message.
type block struct {
	kind     string // text, tool_use, thinking, …
	id, name string // of a tool_use block
	start    string // a tool_use block's input as its start gave it, normally {}
	input    []byte // its input_json_delta events put together
	stopped  bool
}

// add takes the next event of the stream, and hands the text it brings to
// onChunk. It returns what is wrong with the event, or "".
func (r *message) add(ev *sdk.MessageStreamEventUnion, onChunk func(string)) string {
	if r.stopped {
		return fmt.Sprintf("a %s event after message_stop", oneLine(ev.Type))
	}
	if !r.started && ev.Type != "message_start" {
		return fmt.Sprintf("a %s event before message_start", oneLine(ev.Type))
	}
	switch ev.Type {
	case "message_start":
		if r.started {
			return "a second message_start"
		}
		r.started = true
		u := ev.Message.Usage
		r.usage = sdk.MessageDeltaUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadInputTokens: u.CacheReadInputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens}
		r.kept += int64(len(ev.Message.ID))
	case "content_block_start":
		if ev.Index != int64(len(r.blocks)) {
			return fmt.Sprintf("content block %d starts where block %d was due", ev.Index, len(r.blocks))
		}
		cb := &ev.ContentBlock
		b := block{kind: cb.Type}
		r.kept += blockBytes + int64(len(cb.Type))
		switch cb.Type {
		case "text":
			if cb.Text != "" {
				r.addText(cb.Text, onChunk)
			}
		case "tool_use":
			if cb.ID == "" || cb.Name == "" {
				return fmt.Sprintf("tool_use block %d without an id or a name", ev.Index)
			}
			b.id, b.name, b.start = cb.ID, cb.Name, cb.JSON.Input.Raw()
			r.kept += int64(len(b.id) + len(b.name) + len(b.start))
		}
		r.blocks = append(r.blocks, b)
	case "content_block_delta":
		b, what := r.block(ev)
		if what != "" {
			return what
		}
		switch d := &ev.Delta; d.Type {
		case "text_delta":
			if b.kind != "text" {
				return fmt.Sprintf("a text_delta in %s block %d", oneLine(b.kind), ev.Index)
			}
			r.addText(d.Text, onChunk)
		case "input_json_delta":
			if b.kind != "tool_use" {
				return fmt.Sprintf("an input_json_delta in %s block %d", oneLine(b.kind), ev.Index)
			}
			b.input = append(b.input, d.PartialJSON...)
			r.kept += int64(len(d.PartialJSON))
		}
		// Other deltas (thinking, signature, citations) are of blocks
		// this provider does not ask for: they are left out.
	case "content_block_stop":
		b, what := r.block(ev)
		if what != "" {
			return what
		}
		b.stopped = true
	case "message_delta":
		if ev.Delta.StopReason != "" {
			r.stopReason = string(ev.Delta.StopReason)
		}
		// The counts are totals of the whole message; those it leaves out,
		// message_start's stand.
		u := &ev.Usage
		r.usage.OutputTokens = u.OutputTokens
		if u.JSON.InputTokens.Valid() {
			r.usage.InputTokens = u.InputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			r.usage.CacheReadInputTokens = u.CacheReadInputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			r.usage.CacheCreationInputTokens = u.CacheCreationInputTokens
		}
	case "message_stop":
		r.stopped = true
	}
	// Event types the API adds later are left out, as its versioning
	// policy asks of clients.
	return ""
}

// addText adds t to the text, and hands it to onChunk unless it takes
// the message past its limit, which the caller checks after add.
func (r *message) addText(t string, onChunk func(string)) {
	r.kept += int64(len(t))
	if r.kept > r.limit {
		return
	}
	r.text.WriteString(t)
	if onChunk != nil {
		onChunk(t)
	}
}

// block is the open block a delta or a stop event names.
func (r *message) block(ev *sdk.MessageStreamEventUnion) (*block, string) {
	if ev.Index < 0 || ev.Index >= int64(len(r.blocks)) {
		return nil, fmt.Sprintf("a %s event for content block %d, of %d", ev.Type, ev.Index, len(r.blocks))
	}
	b := &r.blocks[ev.Index]
	if b.stopped {
		return nil, fmt.Sprintf("a %s event for content block %d, which has stopped", ev.Type, ev.Index)
	}
	return b, ""
}

// unfinished says how a stream that ended is not a whole message, or "".
func (r *message) unfinished() string {
	for _, b := range r.blocks {
		if !b.stopped && b.kind == "tool_use" {
			return fmt.Sprintf("the stream ended in the middle of tool call %s (%s)", oneLine(b.id), oneLine(b.name))
		}
	}
	switch {
	case !r.started:
		return "the stream ended before the model began (no message_start)"
	case !r.stopped:
		return "the stream ended before the model finished (no message_stop)"
	case r.stopReason == "":
		return "the message stopped without a stop reason"
	}
	return ""
}

// response is the whole message.
func (r *message) response() llm.Response {
	u := r.usage
	resp := llm.Response{
		Text:         r.text.String(),
		FinishReason: finishReason(r.stopReason),
		Usage: llm.Usage{
			// The API's input_tokens are those after the last breakpoint
			// only; llm's count the whole prompt.
			InputTokens:              u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
			OutputTokens:             u.OutputTokens,
			CacheReadInputTokens:     u.CacheReadInputTokens,
			CacheCreationInputTokens: u.CacheCreationInputTokens,
		},
	}
	for _, b := range r.blocks {
		if b.kind != "tool_use" {
			continue
		}
		args := json.RawMessage(b.input)
		if len(args) == 0 {
			args = json.RawMessage(b.start)
			if len(args) == 0 || string(args) == "null" {
				args = json.RawMessage("{}")
			}
		}
		resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{ID: b.id, Name: b.name, Arguments: args})
	}
	return resp
}

// finishReason maps the API's stop reasons to llm's: end_turn and
// stop_sequence are FinishStop, tool_use FinishToolCalls, max_tokens and
// model_context_window_exceeded FinishLength, refusal (the API's safety
// classifiers stopped the message) FinishContentFilter; others (pause_turn,
// of server tools, which this provider does not offer) pass as they come.
func finishReason(stop string) llm.FinishReason {
	switch stop {
	case "end_turn", "stop_sequence":
		return llm.FinishStop
	case "tool_use":
		return llm.FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return llm.FinishLength
	case "refusal":
		return llm.FinishContentFilter
	}
	return llm.FinishReason(stop)
}

func oneLine(s string) string { return provider.OneLine(s) }
