package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/llm/openai"
	"github.com/moora-go/moora/internal/testbuf"
)

// With OPENAI_MODEL set, the agent talks to the model the environment names,
// here an OpenAI-compatible server on this machine that asks for the
// word-count tool and then reports the count, streaming as OpenAI does.
func TestOnTheModelTheEnvironmentNames(t *testing.T) {
	srv, requests := newChatServer(t)
	t.Setenv(openai.EnvModel, "gpt-test")
	t.Setenv("LLM_PROVIDER", "") // OPENAI_MODEL chooses (see package automata/llm/llmenv)
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

// A model that refuses the key: the failed reply is printed as it happens,
// while stdin is still open, and the conversation goes on; the next run,
// with a good key, answers the next message.
func TestAWrongKeyIsShownAtOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided: sk-wrong.","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	t.Cleanup(srv.Close)
	t.Setenv(openai.EnvModel, "gpt-test")
	t.Setenv("LLM_PROVIDER", "") // OPENAI_MODEL chooses (see package automata/llm/llmenv)
	t.Setenv(openai.EnvBaseURL, srv.URL+"/v1")
	t.Setenv(openai.EnvAPIKey, "sk-wrong")
	dir := t.TempDir()
	stdin, typing := io.Pipe()
	var out testbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- run([]string{"-data", dir}, stdin, &out) }()
	go io.WriteString(typing, "hello there\n") // a run that fails to start reads nothing: the wait says so
	failure := "  [no reply: the llm failed: llm: openai: unauthorized (HTTP 401): Incorrect API key provided: sk-wrong.]"
	out.Wait(t, failure, time.Minute) // a hang guard
	typing.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
	case <-time.After(time.Minute): // a hang guard
		t.Fatalf("run did not return once stdin closed:\n%s", out.String())
	}

	good, _ := newChatServer(t)
	t.Setenv(openai.EnvBaseURL, good.URL+"/v1")
	var again bytes.Buffer
	if err := run([]string{"-data", dir}, strings.NewReader("hello again\n"), &again); err != nil {
		t.Fatalf("second run: %v\n%s", err, again.String())
	}
	if strings.Contains(again.String(), "[resuming") {
		t.Errorf("the second run resumed a call:\n%s", again.String())
	}
	assertInOrder(t, again.String(), []string{"you: hello there", failure, "you: hello again", "assistant: Counting.", "assistant: It has 2 words."})
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
