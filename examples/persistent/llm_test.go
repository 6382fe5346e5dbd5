package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/openai"
	"github.com/moora-go/moora/examples/persistent/decl"
)

// A user message typed while a tool ran is newer than the call and older
// than its result; the llm is sent the result right after the call, as chat
// APIs require, and the user message after it.
func TestToolResultsFollowTheirCalls(t *testing.T) {
	s := decl.AgentState{
		SystemPrompt: "count",
		UserMessages: []decl.UserMessage{{ID: "u1", Content: "one two", Timestamp: 10}, {ID: "u2", Content: "and three", Timestamp: 12}},
		AssistantMessages: []decl.AssistantMessage{{ID: "a1", Content: "Counting.", Timestamp: 11, ToolCalls: []decl.ToolCall{
			{ID: "c1", Name: "word-count", Input: `{"text":"one two"}`},
			{ID: "c2", Name: "word-count", Input: `{"text":"three"}`},
		}}},
		ToolMessages: []decl.ToolMessage{
			{ID: "t2", CallID: "c2", Content: "1", Timestamp: 13},
			{ID: "t1", CallID: "c1", Content: "2", Timestamp: 14},
		},
		LastSentToLlmAt: 10,
	}
	w := Work{LLM: offlineLLM(0), Tools: []Tool{WordCount(0)}, Now: time.Now}
	last, ok := pendingLLMCall(s.ContextOfLlm())
	if !ok || last.ID != "t1" {
		t.Fatalf("pending llm call = %v, last %q; want one, up to t1", ok, last.ID)
	}
	req := w.request(s.SystemPrompt, Prompt(s.ContextOfLlm(), last.Timestamp, DefaultPromptBytes))
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range req.Messages {
		got = append(got, string(m.Role)+":"+m.Content+m.ToolCallID)
	}
	want := []string{"user:one two", "assistant:Counting.", "tool:2c1", "tool:1c2", "user:and three"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("messages = %q\nwant       %q", got, want)
	}
	if len(req.Tools) != 1 || req.Tools[0].Name != "word-count" {
		t.Errorf("tools = %+v, want word-count", req.Tools)
	}
}

// With OPENAI_MODEL set, the agent talks to the model the environment names,
// here an OpenAI-compatible server on this machine that asks for the
// word-count tool and then reports the count, streaming as OpenAI does.
func TestOnTheModelTheEnvironmentNames(t *testing.T) {
	srv, requests := newChatServer(t)
	t.Setenv(openai.EnvModel, "gpt-test")
	t.Setenv(openai.EnvBaseURL, srv.URL+"/v1")
	t.Setenv(openai.EnvAPIKey, "sk-test")
	var out bytes.Buffer
	if err := run([]string{"-data", t.TempDir()}, strings.NewReader("count these four words\n"), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	assertInOrder(t, out.String(), []string{
		"you: count these four words",
		"assistant: Counting.",
		`  [calls word-count({"text":"count these four words"})]`,
		"  [call_Q1 → 4]",
		"assistant: It has 4 words.",
	})
	reqs := requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if k := reqs[0].key; !strings.HasPrefix(k, "llm/llm-user-") {
		t.Errorf("first Idempotency-Key = %q, want the job's key llm/llm-user-…", k)
	}
	if k := reqs[1].key; k != "llm/llm-tool-call_Q1" {
		t.Errorf("second Idempotency-Key = %q, want the job's key llm/llm-tool-call_Q1", k)
	}
	if got := strings.Join(reqs[1].roles, " "); got != "system user assistant tool" {
		t.Errorf("second request's roles = %s, want system user assistant tool", got)
	}
}

// A model that refuses the key stops the run with the llm job's error, and
// the conversation waits in the journal: the next run makes the call again.
func TestAWrongKeyStopsTheRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided: sk-wrong.","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	t.Cleanup(srv.Close)
	t.Setenv(openai.EnvModel, "gpt-test")
	t.Setenv(openai.EnvBaseURL, srv.URL+"/v1")
	t.Setenv(openai.EnvAPIKey, "sk-wrong")
	dir := t.TempDir()
	var out bytes.Buffer
	err := run([]string{"-data", dir}, strings.NewReader("hello there\n"), &out)
	if err == nil || !strings.HasPrefix(err.Error(), "llm/llm-user-") ||
		!strings.HasSuffix(err.Error(), " failed: llm: openai: unauthorized (HTTP 401): Incorrect API key provided: sk-wrong.") {
		t.Fatalf("run: %v, want the llm job's unauthorized error", err)
	}
	if !errors.Is(err, llm.ErrUnauthorized) {
		t.Errorf("errors.Is(%v, llm.ErrUnauthorized) = false", err)
	}

	good, _ := newChatServer(t)
	t.Setenv(openai.EnvBaseURL, good.URL+"/v1")
	out.Reset()
	if err := run([]string{"-data", dir}, strings.NewReader(""), &out); err != nil {
		t.Fatalf("second run: %v\n%s", err, out.String())
	}
	assertInOrder(t, out.String(), []string{"you: hello there", "[resuming llm/llm-user-", "assistant: Counting.", "assistant: It has 2 words."})
}

type chatRequest struct {
	key   string   // the Idempotency-Key header
	roles []string // of the messages
}

// newChatServer starts an OpenAI-compatible server whose model asks for
// word-count on the user's last message, and reports a tool's result.
func newChatServer(t *testing.T) (*httptest.Server, func() []chatRequest) {
	var mu sync.Mutex
	var reqs []chatRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream   bool
			Messages []struct {
				Role    string
				Content string
			}
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || !body.Stream || len(body.Messages) == 0 {
			http.Error(w, `{"error":{"message":"not a streamed chat completion"}}`, http.StatusBadRequest)
			return
		}
		req := chatRequest{key: r.Header.Get("Idempotency-Key")}
		for _, m := range body.Messages {
			req.roles = append(req.roles, m.Role)
		}
		mu.Lock()
		reqs = append(reqs, req)
		mu.Unlock()
		last := body.Messages[len(body.Messages)-1]
		w.Header().Set("Content-Type", "text/event-stream")
		event := func(delta any, finish any) {
			fmt.Fprintf(w, "data: %s\n\n", must(json.Marshal(map[string]any{
				"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
			})))
		}
		event(map[string]any{"role": "assistant", "content": ""}, nil)
		switch last.Role {
		case "user":
			args := string(must(json.Marshal(map[string]string{"text": last.Content})))
			event(map[string]any{"content": "Counting."}, nil)
			event(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_Q1", "type": "function",
				"function": map[string]any{"name": "word-count", "arguments": args[:5]}}}}, nil)
			event(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": args[5:]}}}}, nil)
			event(map[string]any{}, "tool_calls")
		default:
			event(map[string]any{"content": "It has "}, nil)
			event(map[string]any{"content": last.Content + " words."}, nil)
			event(map[string]any{}, "stop")
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, func() []chatRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]chatRequest(nil), reqs...)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestPromptIsTheConversationsEnd: the llm is sent the conversation up to
// the message it answers, in the order of Conversation (of the same time,
// user, assistant, then tool messages), whole if it fits in the budget,
// else from the oldest user message on that fits, or from the newest one
// on if none does.
func TestPromptIsTheConversationsEnd(t *testing.T) {
	want := func(c decl.ContextOfLlm, upTo int64, budget int) []Message {
		conv := slices.DeleteFunc(Conversation(c.UserMessages, c.AssistantMessages, c.ToolMessages), func(m Message) bool { return m.Timestamp > upTo })
		size := func(from int) int {
			n := 0
			for _, m := range conv[from:] {
				n += m.Size()
			}
			return n
		}
		if size(0) <= budget {
			return conv
		}
		newest := -1
		for k, m := range conv {
			if m.Role != "user" {
				continue
			}
			if size(k) <= budget {
				return conv[k:]
			}
			newest = k
		}
		if newest < 0 {
			return conv
		}
		return conv[newest:]
	}
	rng := rand.New(rand.NewPCG(3, 4))
	text := strings.Repeat("x", 100)
	for range 20_000 {
		var c decl.ContextOfLlm
		at := int64(0)
		for i := range rng.IntN(12) {
			at += int64(rng.IntN(2)) // times repeat
			id, content := fmt.Sprint(i), text[:rng.IntN(len(text))]
			switch rng.IntN(3) {
			case 0:
				c.UserMessages = append(c.UserMessages, decl.UserMessage{ID: "u" + id, Content: content, Timestamp: at})
			case 1:
				c.AssistantMessages = append(c.AssistantMessages, decl.AssistantMessage{ID: "a" + id, Content: content, Timestamp: at,
					ToolCalls: []decl.ToolCall{{ID: "c" + id, Name: "word-count", Input: content}}})
			default:
				c.ToolMessages = append(c.ToolMessages, decl.ToolMessage{ID: "t" + id, CallID: "c" + id, Content: content, Timestamp: at})
			}
		}
		upTo, budget := int64(rng.IntN(int(at)+2)), rng.IntN(600)
		got, w := Prompt(c, upTo, budget), want(c, upTo, budget)
		if !reflect.DeepEqual(ids(got), ids(w)) {
			t.Fatalf("Prompt(%+v, %d, %d) = %v, want %v", c, upTo, budget, ids(got), ids(w))
		}
	}
}

func ids(conv []Message) []string {
	out := []string{}
	for _, m := range conv {
		out = append(out, m.ID)
	}
	return out
}
