package httpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/moora-go/moora/automata/internal/wire"
)

// Chat makes a chat-shaped agent speak the AI SDK's UI message stream
// protocol (Config.Chat), so that a page built on the AI SDK's useChat, or
// any client of that protocol, talks to it unchanged: POST /chat takes the
// user's new message and streams the reply, GET /chat/{chat}/stream
// resumes the reply under way, GET /chat lists the conversation as UI
// messages. See "The AI SDK's UI message stream" in the package
// documentation.
//
// The agent is the conversation: a reply is read from its state (and the
// text that streams, from Config.Streams), never kept beside it, so that a
// stream followed again, after a reconnect or a restart, is the same reply.
// Input, Reply and Active are required.
type Chat[S, I any] struct {
	// Input is the input that sends the user's message m: the agent's
	// own, decoded and validated as a POSTed one would be (it goes
	// through Config.ClientActors, Config.InputID's dedup and the
	// admission step as POST /inputs does). Its error is the 400's
	// message.
	Input func(m ChatMessage) (I, error)
	// Reply is the reply to the user's message of the given id in state
	// s, as far as s has it; ok is false when s has no user message of
	// that id. A reply only grows: a later state's has the parts of an
	// earlier one's, in the same order, each as far along or further.
	Reply func(s S, id string) (r ChatReply, ok bool)
	// Active is the id of the user's message whose reply is under way in
	// s, or "" when none is: what GET /chat/{chat}/stream resumes.
	Active func(s S) string
	// History is the conversation in s, oldest first. Optional: without
	// it, GET /chat answers 404.
	History func(s S) []ChatTurn
	// MaxBody bounds a POST /chat, which carries the whole conversation
	// as the client holds it (the AI SDK sends every message each time,
	// and only the last is read): 413 beyond. Default 4 MiB.
	MaxBody int64
}

// ChatMessage is a message of the user: its id, which the client chose,
// and its text.
type ChatMessage struct {
	ID   string
	Text string
}

// ChatTurn is a user's message and the reply to it.
type ChatTurn struct {
	User  ChatMessage
	Reply ChatReply
}

// ChatReply is the reply to a user's message: the assistant message of the
// UI message stream.
type ChatReply struct {
	// ID is the assistant message's id, the same in every state.
	ID string
	// Parts are its parts in order: texts and tool calls.
	Parts []ChatPart
	// Done says the reply is over: nothing more will be added to it.
	Done bool
	// Error, if not "", is why the reply failed (a person reads it): the
	// stream ends with an error chunk and the finish reason "error".
	Error string
}

// ChatPart is a part of a reply: a text (Tool is "") or a tool call.
type ChatPart struct {
	// Step groups the parts of one step, one call of the model: parts of
	// one step share it, and a new value starts a step.
	Step int64
	// ID is the text's id, or the tool call's.
	ID string

	// Text is a text part's whole text once it is complete (Streaming
	// false).
	Text string
	// Streaming says the text is still growing, in the token stream
	// Stream of Config.Streams.
	Streaming bool
	Stream    string

	// Tool is a tool call's tool, and Input its arguments (a JSON value).
	Tool  string
	Input json.RawMessage
	// Answered says the tool call has its result: Output (a JSON value),
	// or Err, what failed.
	Answered bool
	Output   json.RawMessage
	Err      string
}

// defaultChatMaxBody is Chat.MaxBody's default.
const defaultChatMaxBody = 4 << 20

// checkChat checks a Config.Chat and fills in its defaults.
func checkChat[S, I any](c *Chat[S, I]) error {
	if c == nil {
		return nil
	}
	if c.Input == nil || c.Reply == nil || c.Active == nil {
		return errors.New("httpbridge: Config.Chat needs Input, Reply and Active")
	}
	setDefault(&c.MaxBody, defaultChatMaxBody)
	return nil
}

// isChatPost says whether r is a POST /chat, at path (the bridge's own, or
// a fleet's /agents/{id}/chat).
func isChatPost(r *http.Request, path string) bool {
	return r.Method == http.MethodPost && path == "/chat"
}

// isChatStream says whether r, at path, is one of the chat's streams: a
// POST /chat, or a GET /chat/{chat}/stream.
func isChatStream(r *http.Request, path string) bool {
	if isChatPost(r, path) {
		return true
	}
	rest, ok := strings.CutPrefix(path, "/chat/")
	return ok && r.Method == http.MethodGet && strings.HasSuffix(rest, "/stream") && strings.Count(rest, "/") == 1
}

// uiStreamHeader is the header of a UI message stream, which the AI SDK's
// clients check.
const uiStreamHeader = "x-vercel-ai-ui-message-stream"

// chatRequest is what the AI SDK's DefaultChatTransport POSTs: the chat's
// id, its messages as the client holds them, and what the request is for.
type chatRequest struct {
	ID        string            `json:"id"`
	Messages  []json.RawMessage `json:"messages"`
	Trigger   string            `json:"trigger"`
	MessageID string            `json:"messageId"`
}

// uiMessage is a UI message as a client sends it: the parts this reads.
type uiMessage struct {
	ID    string `json:"id"`
	Role  string `json:"role"`
	Parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"parts"`
}

// chatUserMessage returns the user's new message of a POST /chat's body, or
// why it has none.
func chatUserMessage(body []byte) (ChatMessage, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return ChatMessage{}, fmt.Errorf("decoding the chat request: %v", err)
	}
	switch req.Trigger {
	case "", "submit-message":
	default:
		return ChatMessage{}, fmt.Errorf("trigger %q: the conversation is durable, and a reply given is never taken back; send a new message (trigger \"submit-message\")", wire.Truncate(req.Trigger, 40))
	}
	if req.MessageID != "" {
		return ChatMessage{}, fmt.Errorf("messageId %q: the conversation is durable, and a message sent is never edited; send a new message", wire.Truncate(req.MessageID, 100))
	}
	if len(req.Messages) == 0 {
		return ChatMessage{}, errors.New("the chat request has no messages: its last is the user's new message")
	}
	var m uiMessage
	if err := json.Unmarshal(req.Messages[len(req.Messages)-1], &m); err != nil {
		return ChatMessage{}, fmt.Errorf("decoding messages[%d]: %v", len(req.Messages)-1, err)
	}
	if m.Role != "user" {
		return ChatMessage{}, fmt.Errorf("messages[%d] is of role %q: the last message of a chat request is the user's new one", len(req.Messages)-1, wire.Truncate(m.Role, 40))
	}
	if m.ID == "" {
		return ChatMessage{}, fmt.Errorf("messages[%d] has no id", len(req.Messages)-1)
	}
	var text strings.Builder
	for i, p := range m.Parts {
		if p.Type != "text" {
			return ChatMessage{}, fmt.Errorf("messages[%d].parts[%d] is of type %q: this agent takes text parts only", len(req.Messages)-1, i, wire.Truncate(p.Type, 40))
		}
		text.WriteString(p.Text)
	}
	return ChatMessage{ID: m.ID, Text: text.String()}, nil
}

// postChat takes the user's new message and streams the reply to it.
func (b *Bridge[S, I, V]) postChat(w http.ResponseWriter, r *http.Request) {
	chat := b.cfg.Chat
	if chat == nil {
		wire.WriteError(w, http.StatusNotFound, "this bridge does not chat (Config.Chat)")
		return
	}
	if !jsonBody(w, r) {
		return
	}
	body, err := io.ReadAll(r.Body) // bounded by the front (Chat.MaxBody)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			wire.WriteError(w, http.StatusRequestEntityTooLarge, "the chat request is over %d bytes (Config.Chat.MaxBody)", tooBig.Limit)
			return
		}
		wire.WriteError(w, http.StatusBadRequest, "reading the chat request: %v", err)
		return
	}
	m, err := chatUserMessage(body)
	if err != nil {
		wire.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	in, err := chat.Input(m)
	if err != nil {
		wire.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if err := b.actors.check(in); err != nil {
		wire.WriteError(w, http.StatusForbidden, "%v", err)
		return
	}
	key := m.ID
	if b.cfg.InputID != nil {
		key = b.cfg.InputID(in)
	} else if err := checkKey(key); err != nil {
		wire.WriteError(w, http.StatusBadRequest, "message id: %v", err)
		return
	}
	if _, _, ok := b.apply(w, r, in, key); !ok {
		return
	}
	b.followReply(w, r, m.ID, chatCursor{})
}

// getChatStream resumes the reply under way: from its start (the AI SDK
// replays a resumed stream whole), or after the event Last-Event-ID names.
// With no reply under way, 204.
func (b *Bridge[S, I, V]) getChatStream(w http.ResponseWriter, r *http.Request) {
	chat := b.cfg.Chat
	if chat == nil {
		wire.WriteError(w, http.StatusNotFound, "this bridge does not chat (Config.Chat)")
		return
	}
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		id, c, err := parseChatEventID(last)
		if err != nil {
			wire.WriteError(w, http.StatusBadRequest, "Last-Event-ID: %v", err)
			return
		}
		b.followReply(w, r, id, c)
		return
	}
	b.mu.Lock()
	s := b.state
	b.mu.Unlock()
	id := chat.Active(s)
	if id == "" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	b.followReply(w, r, id, chatCursor{})
}

// getChat lists the conversation as the AI SDK's UI messages, for a page
// to start from (useChat's messages).
func (b *Bridge[S, I, V]) getChat(w http.ResponseWriter, r *http.Request) {
	chat := b.cfg.Chat
	if chat == nil || chat.History == nil {
		wire.WriteError(w, http.StatusNotFound, "this bridge lists no conversation (Config.Chat.History)")
		return
	}
	b.mu.Lock()
	s := b.state
	b.mu.Unlock()
	turns := chat.History(s)
	msgs := make([]any, 0, 2*len(turns))
	for _, t := range turns {
		msgs = append(msgs, uiUserMessage(t.User))
		if len(t.Reply.Parts) > 0 {
			msgs = append(msgs, uiAssistantMessage(t.Reply))
		}
	}
	wire.WriteJSON(w, http.StatusOK, msgs)
}

func uiUserMessage(m ChatMessage) any {
	type part struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	return struct {
		ID    string `json:"id"`
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}{m.ID, "user", []part{{"text", m.Text}}}
}

// uiPart is a part of an assistant's UI message, as the AI SDK's clients
// hold it.
type uiPart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	State      string          `json:"state,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	ErrorText  string          `json:"errorText,omitempty"`
}

func uiAssistantMessage(r ChatReply) any {
	parts := make([]uiPart, 0, len(r.Parts)+1)
	for i, p := range r.Parts {
		if i == 0 || p.Step != r.Parts[i-1].Step {
			parts = append(parts, uiPart{Type: "step-start"})
		}
		switch {
		case p.Tool == "":
			state := "done"
			if p.Streaming {
				state = "streaming"
			}
			parts = append(parts, uiPart{Type: "text", Text: p.Text, State: state})
		case !p.Answered:
			parts = append(parts, uiPart{Type: "tool-" + p.Tool, ToolCallID: p.ID, State: "input-available", Input: p.Input})
		case p.Err != "":
			parts = append(parts, uiPart{Type: "tool-" + p.Tool, ToolCallID: p.ID, State: "output-error", Input: p.Input, ErrorText: p.Err})
		default:
			parts = append(parts, uiPart{Type: "tool-" + p.Tool, ToolCallID: p.ID, State: "output-available", Input: p.Input, Output: p.Output})
		}
	}
	return struct {
		ID    string   `json:"id"`
		Role  string   `json:"role"`
		Parts []uiPart `json:"parts"`
	}{r.ID, "assistant", parts}
}

// followReply streams the reply to the user's message id, from cursor c:
// the chunks of the UI message stream as the state and the token streams
// give them, until the reply is done (then finish, and [DONE]), the client
// leaves or the bridge closes.
func (b *Bridge[S, I, V]) followReply(w http.ResponseWriter, r *http.Request, id string, c chatCursor) {
	free, ok := b.admitStream(w, r)
	if !ok {
		return
	}
	defer free()
	w.Header().Set(uiStreamHeader, "v1")
	out := startSSE(w, b.cfg.WriteTimeout, b.tel, chatStream)
	defer out.end()
	text := chatText{streams: b.cfg.Streams}
	defer text.release()
	if c.finished {
		out.write(0, doneEvent)
		return
	}
	tick := time.NewTicker(b.cfg.Heartbeat)
	defer tick.Stop()
	ctx := r.Context()
	for {
		b.mu.Lock()
		s, moved := b.state, b.moved
		b.mu.Unlock()
		reply, ok := b.cfg.Chat.Reply(s, id)
		if !ok {
			out.write(2, chunkEvent("", chatChunk{Type: "error", ErrorText: fmt.Sprintf("no message %q in this conversation", wire.Truncate(id, 100))}), doneEvent)
			return
		}
		events, wake := c.advance(reply, id, text.read)
		if len(events) > 0 {
			if out.write(len(events), events...) != nil {
				return
			}
			if c.finished {
				out.write(0, doneEvent)
				return
			}
			continue
		}
		if !b.awaitChat(ctx, out, moved, wake, tick) {
			return
		}
	}
}

// awaitChat waits for the state to move or the text read to grow, writing
// a heartbeat each tick; false when the stream is over.
func (b *Bridge[S, I, V]) awaitChat(ctx context.Context, out *sse, moved, wake <-chan struct{}, tick *time.Ticker) bool {
	for {
		select {
		case <-moved:
			return true
		case <-wake:
			return true
		case <-tick.C:
			if out.write(0, heartbeat) != nil {
				return false
			}
		case <-ctx.Done():
			return false
		case <-b.closing:
			return false
		}
	}
}

// chatText reads the token stream of the text part being followed, holding
// it open (so that it is not freed) until another is read or release.
type chatText struct {
	streams *Streams
	name    string
	st      *stream
}

// read returns the text of token stream name from byte from on, and a
// channel closed when it changes; "" and nil when there is none to read.
func (t *chatText) read(name string, from int) (string, <-chan struct{}) {
	if t.streams == nil || name == "" {
		return "", nil
	}
	if t.name != name {
		t.release()
		st, err := t.streams.open(name)
		if err != nil {
			return "", nil // too many streams: the text comes whole when it completes
		}
		t.name, t.st = name, st
	}
	text, _, changed, ok := t.streams.read(t.st, from)
	if !ok {
		return "", changed
	}
	return string(text), changed
}

func (t *chatText) release() {
	if t.st != nil {
		t.streams.release(t.st)
		t.name, t.st = "", nil
	}
}

// chatCursor is how far a UI message stream has gone into a reply. Between
// two calls of advance:
//   - every part before part has been written whole: each text from its
//     text-start to its text-end, each tool call's input;
//   - of part, pre of the events that begin its step have been written
//     (1: the finish-step of the step before, or nothing to write for the
//     first part; 2: its start-step too), and off-1 bytes of its text
//     after its text-start, or not its text-start when off is 0; past the
//     last part, pre counts the events that end the stream (1: the last
//     finish-step; 2: the error);
//   - the results of the first outs tool calls have been written, each
//     after its call's input and before the next step;
//   - started says start was written, finished that finish was.
//
// A stream resumed from an event's id (eventID) goes on from the same
// cursor: the reply only grows, so the cursor means the same in any later
// state, and no event is written twice.
type chatCursor struct {
	part, pre, off, outs int
	started, finished    bool
}

// advance returns the events that take c as far into r as it goes now, the
// reply to the user's message id, and the channel of the text it waits on
// (nil when it waits for the state alone). read reads a token stream from
// a byte offset.
func (c *chatCursor) advance(r ChatReply, id string, read func(name string, from int) (string, <-chan struct{})) ([][]byte, <-chan struct{}) {
	if c.finished {
		return nil, nil
	}
	var events [][]byte
	emit := func(ch chatChunk) { events = append(events, chunkEvent(c.eventID(id), ch)) }
	if !c.started {
		c.started = true
		emit(chatChunk{Type: "start", MessageID: r.ID})
	}
	// results writes the results of the tool calls before part, in
	// order, as far as they have come; it reports whether all have.
	results := func() bool {
		for k, n := 0, 0; k < c.part && k < len(r.Parts); k++ {
			p := r.Parts[k]
			if p.Tool == "" {
				continue
			}
			if n++; n <= c.outs {
				continue
			}
			if !p.Answered {
				return false
			}
			c.outs++
			if p.Err != "" {
				emit(chatChunk{Type: "tool-output-error", ToolCallID: p.ID, ErrorText: p.Err})
			} else {
				emit(chatChunk{Type: "tool-output-available", ToolCallID: p.ID, Output: orNull(p.Output)})
			}
		}
		return true
	}
	var wake <-chan struct{}
	for c.part < len(r.Parts) && wake == nil {
		p := r.Parts[c.part]
		if c.off == 0 {
			if c.part == 0 || p.Step != r.Parts[c.part-1].Step {
				// A new step, once the steps before it have every
				// result.
				if c.pre == 0 {
					if !results() {
						return events, nil
					}
					c.pre = 1
					if c.part > 0 {
						emit(chatChunk{Type: "finish-step"})
					}
				}
				if c.pre == 1 {
					c.pre = 2
					emit(chatChunk{Type: "start-step"})
				}
			}
			if p.Tool != "" {
				c.part, c.pre = c.part+1, 0
				emit(chatChunk{Type: "tool-input-available", ToolCallID: p.ID, ToolName: p.Tool, Input: orNull(p.Input)})
				continue
			}
			c.off = 1
			emit(chatChunk{Type: "text-start", ID: p.ID})
		}
		if p.Streaming {
			var delta string
			delta, wake = read(p.Stream, c.off-1)
			if delta != "" {
				c.off += len(delta)
				emit(chatChunk{Type: "text-delta", ID: p.ID, Delta: delta})
			}
			if wake == nil {
				break // no token stream to read: the text comes whole
			}
			continue
		}
		if from := c.off - 1; from < len(p.Text) && utf8.RuneStart(p.Text[from]) {
			c.off += len(p.Text) - from
			emit(chatChunk{Type: "text-delta", ID: p.ID, Delta: p.Text[from:]})
		}
		c.part, c.pre, c.off = c.part+1, 0, 0
		emit(chatChunk{Type: "text-end", ID: p.ID})
	}
	if !results() || c.part < len(r.Parts) || !r.Done {
		return events, wake
	}
	if c.pre == 0 {
		c.pre = 1
		if len(r.Parts) > 0 {
			emit(chatChunk{Type: "finish-step"})
		}
	}
	reason := "stop"
	if r.Error != "" {
		reason = "error"
		if c.pre == 1 {
			c.pre = 2
			emit(chatChunk{Type: "error", ErrorText: r.Error})
		}
	}
	c.finished = true
	emit(chatChunk{Type: "finish", FinishReason: reason})
	return events, nil
}

func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

// eventID is the id of the event written at c: where a stream resumed after
// it goes on from, and in which reply (the user's message id, escaped).
func (c *chatCursor) eventID(id string) string {
	if c.finished {
		return "end:" + url.QueryEscape(id)
	}
	return fmt.Sprintf("%d.%d.%d.%d:%s", c.part, c.pre, c.off, c.outs, url.QueryEscape(id))
}

// parseChatEventID reads an id of eventID: the user's message id, and the
// cursor to go on from.
func parseChatEventID(s string) (string, chatCursor, error) {
	bad := func(why string) (string, chatCursor, error) {
		return "", chatCursor{}, fmt.Errorf("%q is not an event id of a chat stream: %s", wire.Truncate(s, 100), why)
	}
	pos, esc, ok := strings.Cut(s, ":")
	if !ok {
		return bad("want part.pre.offset.results:message")
	}
	id, err := url.QueryUnescape(esc)
	if err != nil || id == "" {
		return bad("no message id after the colon")
	}
	c := chatCursor{started: true}
	if pos == "end" {
		c.finished = true
		return id, c, nil
	}
	f := strings.Split(pos, ".")
	if len(f) != 4 {
		return bad("want part.pre.offset.results:message")
	}
	for i, p := range []*int{&c.part, &c.pre, &c.off, &c.outs} {
		n, err := strconv.Atoi(f[i])
		if err != nil || n < 0 || n > 1<<30 {
			return bad(fmt.Sprintf("%q is not a count", wire.Truncate(f[i], 20)))
		}
		*p = n
	}
	if c.pre > 2 {
		return bad("pre is 0, 1 or 2")
	}
	return id, c, nil
}

// chatChunk is a chunk of the UI message stream: the fields its types use.
type chatChunk struct {
	Type         string          `json:"type"`
	ID           string          `json:"id,omitempty"`
	MessageID    string          `json:"messageId,omitempty"`
	Delta        string          `json:"delta,omitempty"`
	ToolCallID   string          `json:"toolCallId,omitempty"`
	ToolName     string          `json:"toolName,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	Output       json.RawMessage `json:"output,omitempty"`
	ErrorText    string          `json:"errorText,omitempty"`
	FinishReason string          `json:"finishReason,omitempty"`
}

// chunkEvent is one event of a UI message stream: data only (the protocol
// names no events), with its id.
func chunkEvent(id string, ch chatChunk) []byte {
	data, err := json.Marshal(ch)
	if err != nil { // the raw values are JSON the adapter vouched for
		data, _ = json.Marshal(chatChunk{Type: "error", ErrorText: "a chunk of the reply would not encode"})
	}
	e := make([]byte, 0, len(id)+len(data)+16)
	if id != "" {
		e = append(e, "id: "...)
		e = append(e, id...)
		e = append(e, '\n')
	}
	e = append(e, "data: "...)
	e = append(e, data...)
	return append(e, "\n\n"...)
}

// doneEvent ends a UI message stream.
var doneEvent = []byte("data: [DONE]\n\n")
