package httpbridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
)

// testChat is the chat test agent's conversation as a Chat: the reply to
// user message id is one text, "re-"+id, streamed in "reply-"+id.
func testChat() *Chat[state, input] {
	reply := func(s state, i int) ChatReply {
		id := s.UserMessages[i].ID
		r := ChatReply{ID: "re-" + id, Parts: []ChatPart{{Step: 1, ID: "re-" + id, Streaming: true, Stream: "reply-" + id}}}
		for _, a := range s.AssiMessages {
			if a.ID == "re-"+id {
				r.Parts[0].Streaming, r.Parts[0].Text, r.Done = false, a.Content, true
			}
		}
		return r
	}
	return &Chat[state, input]{
		Input: func(m ChatMessage) (input, error) {
			if m.Text == "" {
				return nil, fmt.Errorf("an empty message")
			}
			return decl.SendUserMessage{ID: m.ID, Content: m.Text}, nil
		},
		Reply: func(s state, id string) (ChatReply, bool) {
			for i := len(s.UserMessages) - 1; i >= 0; i-- {
				if s.UserMessages[i].ID == id {
					return reply(s, i), true
				}
			}
			return ChatReply{}, false
		},
		Active: func(s state) string {
			if n := len(s.UserMessages); n > 0 && !reply(s, n-1).Done {
				return s.UserMessages[n-1].ID
			}
			return ""
		},
		History: func(s state) []ChatTurn {
			var turns []ChatTurn
			for i, m := range s.UserMessages {
				turns = append(turns, ChatTurn{User: ChatMessage{ID: m.ID, Text: m.Content}, Reply: reply(s, i)})
			}
			return turns
		},
	}
}

func chatBody(id, text string) string {
	msg, _ := json.Marshal(map[string]any{"id": id, "role": "user", "parts": []any{map[string]string{"type": "text", "text": text}}})
	return fmt.Sprintf(`{"id":"chat","trigger":"submit-message","messages":[%s]}`, msg)
}

// chatEvent is an event of a UI message stream.
type chatEvent struct {
	id    string
	data  string // "[DONE]" for the last
	chunk map[string]any
}

// readChat reads a UI message stream to its end.
func readChat(t testing.TB, r io.Reader) []chatEvent {
	t.Helper()
	var events []chatEvent
	var ev chatEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.data != "" {
				if ev.data != "[DONE]" {
					if err := json.Unmarshal([]byte(ev.data), &ev.chunk); err != nil {
						t.Fatalf("a chunk is not JSON: %q", ev.data)
					}
				}
				events = append(events, ev)
			}
			ev = chatEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		case strings.HasPrefix(line, ":"): // a heartbeat
		default:
			t.Fatalf("not a line of a UI message stream: %q", line)
		}
	}
	return events
}

// canonical is a stream's chunks with the text deltas of one text merged:
// what a client assembles, whatever the chunks the text came in.
func canonical(events []chatEvent) []string {
	var out []string
	for _, e := range events {
		if e.chunk["type"] == "text-delta" && len(out) > 0 && strings.HasPrefix(out[len(out)-1], "text-delta "+e.chunk["id"].(string)+" ") {
			out[len(out)-1] += e.chunk["delta"].(string)
			continue
		}
		if e.chunk == nil {
			out = append(out, e.data)
			continue
		}
		switch e.chunk["type"] {
		case "text-delta":
			out = append(out, "text-delta "+e.chunk["id"].(string)+" "+e.chunk["delta"].(string))
		default:
			data, _ := json.Marshal(e.chunk)
			out = append(out, string(data))
		}
	}
	return out
}

func (f *fixture) chat(method, path, body string, header ...string) *http.Response {
	f.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, r)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestChatStream: POST /chat journals the user's message and streams the
// reply as the AI SDK's UI message stream, to its end; the same message
// posted again is not journaled twice and gets the same reply; GET /chat
// lists the conversation; GET chat/{chat}/stream answers 204 when no reply
// is under way, and a stream resumed after any of its events' ids gives
// the rest and nothing twice.
func TestChatStream(t *testing.T) {
	f := newFixture(t, func(c *Config[state, input, view]) { c.Chat = testChat() })
	resp := f.chat("POST", "/chat", chatBody("u1", "hello"))
	if resp.StatusCode != http.StatusOK || resp.Header.Get(uiStreamHeader) != "v1" || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("POST /chat: %d %v", resp.StatusCode, resp.Header)
	}
	events := readChat(t, resp.Body)
	text := replyText(decl.UserMessage{ID: "u1", Content: "hello"})
	want := []string{
		`{"messageId":"re-u1","type":"start"}`,
		`{"type":"start-step"}`,
		`{"id":"re-u1","type":"text-start"}`,
		"text-delta re-u1 " + text,
		`{"id":"re-u1","type":"text-end"}`,
		`{"type":"finish-step"}`,
		`{"finishReason":"stop","type":"finish"}`,
		"[DONE]",
	}
	if got := canonical(events); !slices.Equal(got, want) {
		t.Fatalf("the stream:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	seq := f.m.Seq()

	again := readChat(t, f.chat("POST", "/chat", chatBody("u1", "hello")).Body)
	if got := canonical(again); !slices.Equal(got, want) {
		t.Errorf("the same message posted again:\n%s", strings.Join(got, "\n"))
	}
	if f.m.Seq() != seq || len(f.m.Current().UserMessages) != 1 {
		t.Errorf("the same message posted again was journaled again: seq %d, then %d", seq, f.m.Seq())
	}

	if r := f.chat("GET", "/chat/chat/stream", ""); r.StatusCode != http.StatusNoContent {
		t.Errorf("GET chat/chat/stream with no reply under way: %d, want 204", r.StatusCode)
	}

	for i, e := range events {
		if e.id == "" {
			if e.data != "[DONE]" {
				t.Errorf("event %d has no id: %q", i, e.data)
			}
			continue
		}
		r := f.chat("GET", "/chat/chat/stream", "", "Last-Event-ID", e.id)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("resumed after %q: %d", e.id, r.StatusCode)
		}
		got := canonical(append(slices.Clone(events[:i+1]), readChat(t, r.Body)...))
		if !slices.Equal(got, want) {
			t.Errorf("resumed after event %d (%q):\n%s", i, e.id, strings.Join(got, "\n"))
		}
	}

	var listed []struct{ ID, Role string }
	if err := json.NewDecoder(f.chat("GET", "/chat", "").Body).Decode(&listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[0].ID != "u1" || listed[0].Role != "user" || listed[1].ID != "re-u1" || listed[1].Role != "assistant" {
		t.Fatalf("GET /chat: %+v", listed)
	}
}

// TestChatBadRequests: what POST /chat and GET chat/{chat}/stream refuse,
// and why, with nothing journaled.
func TestChatBadRequests(t *testing.T) {
	f := newFixture(t, func(c *Config[state, input, view]) {
		c.Chat = testChat()
		c.Chat.MaxBody = 1 << 10
	})
	cases := []struct {
		name, method, path, body, contentType, lastID string
		status                                        int
		says                                          string
	}{
		{"not JSON", "POST", "/chat", "{", "", "", 400, "decoding the chat request"},
		{"content type", "POST", "/chat", chatBody("u1", "hi"), "text/plain", "", 415, "want application/json"},
		{"regenerate", "POST", "/chat", `{"trigger":"regenerate-message","messages":[{"id":"u1","role":"user","parts":[]}]}`, "", "", 400, "never taken back"},
		{"edit", "POST", "/chat", `{"trigger":"submit-message","messageId":"u0","messages":[{"id":"u1","role":"user","parts":[]}]}`, "", "", 400, "never edited"},
		{"no messages", "POST", "/chat", `{"messages":[]}`, "", "", 400, "no messages"},
		{"assistant last", "POST", "/chat", `{"messages":[{"id":"a1","role":"assistant","parts":[]}]}`, "", "", 400, `of role "assistant"`},
		{"no id", "POST", "/chat", `{"messages":[{"role":"user","parts":[{"type":"text","text":"hi"}]}]}`, "", "", 400, "has no id"},
		{"a file", "POST", "/chat", `{"messages":[{"id":"u1","role":"user","parts":[{"type":"file","url":"data:,x","mediaType":"text/plain"}]}]}`, "", "", 400, `parts[0] is of type "file"`},
		{"the agent refuses it", "POST", "/chat", chatBody("u1", ""), "", "", 400, "an empty message"},
		{"too big", "POST", "/chat", chatBody("u1", strings.Repeat("x", 2<<10)), "", "", 413, "over 1024 bytes (Config.Chat.MaxBody)"},
		{"an id of no chat", "GET", "/chat/c/stream", "", "", "17", 400, "not an event id of a chat stream"},
		{"a count that is not", "GET", "/chat/c/stream", "", "", "1.x.0.0:u1", 400, "is not a count"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := f.m.Seq()
			var header []string
			if c.contentType != "" {
				header = append(header, "Content-Type", c.contentType)
			}
			if c.lastID != "" {
				header = append(header, "Last-Event-ID", c.lastID)
			}
			resp := f.chat(c.method, c.path, c.body, header...)
			body, _ := io.ReadAll(resp.Body)
			var e struct{ Error string }
			if json.Unmarshal(body, &e) == nil && e.Error != "" {
				body = []byte(e.Error)
			}
			if resp.StatusCode != c.status || !strings.Contains(string(body), c.says) {
				t.Errorf("%d %s, want %d saying %q", resp.StatusCode, body, c.status, c.says)
			}
			if f.m.Seq() != before {
				t.Errorf("refused, yet journaled: seq %d, then %d", before, f.m.Seq())
			}
		})
	}

	// Without Config.Chat, no chat.
	g := newFixture(t, nil)
	if r := g.chat("POST", "/chat", chatBody("u1", "hi")); r.StatusCode != http.StatusNotFound {
		t.Errorf("POST /chat without Config.Chat: %d, want 404", r.StatusCode)
	}
}

// TestChatCursor drives a UI message stream over a reply that grows in
// steps (a text, two tool calls whose results come in the other order, a
// text, a failure) and checks, for each event written, that a stream
// resumed after it gives what followed and nothing twice, in whatever
// state it resumes.
func TestChatCursor(t *testing.T) {
	texts := map[string]string{}
	read := func(name string, from int) (string, <-chan struct{}) {
		t := texts[name]
		if from > len(t) {
			return "", make(chan struct{})
		}
		return t[from:], make(chan struct{})
	}
	part := func(step int64, id, text string, streaming bool) ChatPart {
		return ChatPart{Step: step, ID: id, Text: text, Streaming: streaming, Stream: id}
	}
	call := func(step int64, id string, out string) ChatPart {
		p := ChatPart{Step: step, ID: id, Tool: "calc", Input: json.RawMessage(`{"x":1}`)}
		if out != "" {
			p.Answered, p.Output = true, json.RawMessage(fmt.Sprintf("%q", out))
		}
		return p
	}
	type moment struct {
		streamed map[string]string
		reply    ChatReply
	}
	history := []moment{
		{nil, ChatReply{ID: "r"}},
		{map[string]string{"a": "Let"}, ChatReply{ID: "r", Parts: []ChatPart{part(1, "a", "", true)}}},
		{map[string]string{"a": "Let me"}, ChatReply{ID: "r", Parts: []ChatPart{part(1, "a", "", true)}}},
		{nil, ChatReply{ID: "r", Parts: []ChatPart{part(1, "a", "Let me see.", false), call(1, "c1", ""), call(1, "c2", "")}}},
		{nil, ChatReply{ID: "r", Parts: []ChatPart{part(1, "a", "Let me see.", false), call(1, "c1", ""), call(1, "c2", "two")}}},
		{nil, ChatReply{ID: "r", Parts: []ChatPart{part(1, "a", "Let me see.", false), call(1, "c1", "one"), call(1, "c2", "two")}}},
		{map[string]string{"b": "It is"}, ChatReply{ID: "r", Parts: []ChatPart{part(1, "a", "Let me see.", false), call(1, "c1", "one"), call(1, "c2", "two"), part(2, "b", "", true)}}},
		{nil, ChatReply{ID: "r", Done: true, Error: "the model failed", Parts: []ChatPart{part(1, "a", "Let me see.", false), call(1, "c1", "one"), call(1, "c2", "two"), part(2, "b", "It is one and two.", false)}}},
	}
	var c chatCursor
	var events []chatEvent
	var at []int // the moment of each event
	for i, m := range history {
		for k, v := range m.streamed {
			texts[k] = v
		}
		out, _ := c.advance(m.reply, "u1", read)
		for _, e := range readChat(t, bytes.NewReader(bytes.Join(out, nil))) {
			events, at = append(events, e), append(at, i)
		}
	}
	if !c.finished {
		t.Fatal("the stream did not finish")
	}
	want := canonical(events)
	wantOrder := []string{"start", "start-step", "text-start", "text-delta", "text-end", "tool-input-available", "tool-input-available",
		"tool-output-available", "tool-output-available", "finish-step", "start-step", "text-start", "text-delta", "text-end", "finish-step", "error", "finish"}
	var order []string
	for _, e := range canonical(events) {
		if strings.HasPrefix(e, "text-delta ") {
			order = append(order, "text-delta")
			continue
		}
		var ch map[string]any
		json.Unmarshal([]byte(e), &ch)
		order = append(order, ch["type"].(string))
	}
	if !slices.Equal(order, wantOrder) {
		t.Fatalf("the chunks:\n%s", strings.Join(want, "\n"))
	}
	// The results come in the calls' order, c1's before c2's though c2's
	// came first.
	if w := strings.Join(want, "\n"); strings.Index(w, `"toolCallId":"c1","type":"tool-output-available"`) > strings.Index(w, `"toolCallId":"c2","type":"tool-output-available"`) {
		t.Errorf("c2's result before c1's:\n%s", w)
	}
	for i, e := range events {
		id, from, err := parseChatEventID(e.id)
		if err != nil || id != "u1" {
			t.Fatalf("event %d's id %q: %q %v", i, e.id, id, err)
		}
		// Resume in every later moment, to the end.
		for j := at[i]; j < len(history); j++ {
			r := from
			var rest []chatEvent
			for _, m := range history[j:] {
				out, _ := r.advance(m.reply, "u1", read)
				rest = append(rest, readChat(t, bytes.NewReader(bytes.Join(out, nil)))...)
			}
			if got := canonical(append(slices.Clone(events[:i+1]), rest...)); !slices.Equal(got, want) {
				t.Fatalf("resumed after event %d (%q) at moment %d:\n%s\nwant:\n%s", i, e.id, j, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}

// TestChatOverAFleet: a fleet's agents chat at /agents/{id}/chat, with the
// fleet's owner rules: another identity's agent is not found on any chat
// route, word for word as an agent that does not exist, and nothing is
// journaled; a POST /chat over Config.MaxBody but under Chat.MaxBody is
// taken (the AI SDK sends the whole conversation each time).
func TestChatOverAFleet(t *testing.T) {
	f := newFleetFixture(t, func(c *FleetConfig[state, input, view]) {
		c.Bridge.Chat = testChat()
		c.Bridge.MaxBody = 1 << 10
	})
	ann, bob := f.person(), f.person()
	a := f.create(ann)
	long := strings.Repeat("x", 2<<10)
	var body map[string]any
	json.Unmarshal([]byte(chatBody("m1", long)), &body)
	status, got := f.do("POST", "/agents/"+a+"/chat", ann, body)
	events := readChat(t, bytes.NewReader(got))
	if status != http.StatusOK || len(events) == 0 || events[len(events)-1].data != "[DONE]" {
		t.Fatalf("ann's POST /agents/%s/chat: %d %s", a, status, got)
	}
	if c := canonical(events); !slices.Contains(c, "text-delta re-m1 "+replyText(decl.UserMessage{ID: "m1", Content: long})) {
		t.Errorf("ann's reply:\n%s", strings.Join(c, "\n"))
	}
	seq := f.seqOf(a)
	json.Unmarshal([]byte(chatBody("m2", "not yours")), &body)
	for _, r := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/agents/%s/chat", body},
		{"GET", "/agents/%s/chat", nil},
		{"GET", "/agents/%s/chat/c/stream", nil},
	} {
		status, got := f.do(r.method, fmt.Sprintf(r.path, a), bob, r.body)
		_, none := f.do(r.method, fmt.Sprintf(r.path, "nobody"), bob, r.body)
		if status != http.StatusNotFound || !bytes.Equal(bytes.ReplaceAll(got, []byte(a), []byte("nobody")), none) {
			t.Errorf("bob %s %s: %d %s; want 404 as for no agent: %s", r.method, fmt.Sprintf(r.path, a), status, got, none)
		}
	}
	if f.seqOf(a) != seq {
		t.Errorf("bob's POST was journaled in ann's agent: seq %d, then %d", seq, f.seqOf(a))
	}
	status, got = f.do("GET", "/agents/"+a+"/chat", ann, nil)
	var listed []struct{ ID, Role string }
	if json.Unmarshal(got, &listed); status != http.StatusOK || len(listed) != 2 || listed[1].ID != "re-m1" {
		t.Errorf("ann's GET /agents/%s/chat: %d %s", a, status, got)
	}
}
