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

	"github.com/moora-go/moora/automata/llm/anthropic"
	"github.com/moora-go/moora/automata/llm/llmenv"
)

// With LLM_PROVIDER=anthropic, the agent talks to the Claude model the
// environment names, here a server on this machine that speaks Anthropic's
// Messages API: it asks for the word-count tool, then reports the count.
// The tool's result goes back as a tool_result block in a user message.
func TestOnAnthropicByTheEnvironment(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(b, &body)
		mu.Lock()
		bodies = append(bodies, body)
		n := len(bodies)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(typ, data string) { fmt.Fprintf(w, "event: %s\ndata: {\"type\":%q,%s}\n\n", typ, typ, data) }
		send("message_start", `"message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"usage":{"input_tokens":30,"output_tokens":1}}`)
		send("content_block_start", `"index":0,"content_block":{"type":"text","text":""}`)
		if n == 1 {
			send("content_block_delta", `"index":0,"delta":{"type":"text_delta","text":"Counting."}`)
			send("content_block_stop", `"index":0`)
			send("content_block_start", `"index":1,"content_block":{"type":"tool_use","id":"toolu_Q1","name":"word-count","input":{}}`)
			send("content_block_delta", `"index":1,"delta":{"type":"input_json_delta","partial_json":"{\"text\":\"count these four words\"}"}`)
			send("content_block_stop", `"index":1`)
			send("message_delta", `"delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":20}`)
		} else {
			send("content_block_delta", `"index":0,"delta":{"type":"text_delta","text":"It has 4 words."}`)
			send("content_block_stop", `"index":0`)
			send("message_delta", `"delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}`)
		}
		send("message_stop", `"x":0`)
	}))
	t.Cleanup(srv.Close)
	t.Setenv(llmenv.EnvProvider, "anthropic")
	t.Setenv("OPENAI_MODEL", "")
	t.Setenv(anthropic.EnvModel, "claude-test")
	t.Setenv(anthropic.EnvBaseURL, srv.URL)
	t.Setenv(anthropic.EnvAPIKey, "sk-ant-test")
	var out bytes.Buffer
	if err := run([]string{"-data", t.TempDir()}, strings.NewReader("count these four words\n"), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	assertInOrder(t, out.String(), []string{
		"you: count these four words",
		"assistant: Counting.",
		`  [calls word-count({"text":"count these four words"})]`,
		"  [toolu_Q1 → 4]",
		"assistant: It has 4 words.",
	})
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	msgs, _ := bodies[1]["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	content, _ := last["content"].([]any)
	result, _ := content[0].(map[string]any)
	if last["role"] != "user" || result["type"] != "tool_result" || result["tool_use_id"] != "toolu_Q1" {
		t.Errorf("the second request ends with %v, want a user message with the tool_result of toolu_Q1", last)
	}
}
