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

	"github.com/moora-go/moora/automata/llm/gemini"
	"github.com/moora-go/moora/automata/llm/llmenv"
)

// With LLM_PROVIDER=gemini, the agent talks to the Gemini model the
// environment names, here a server on this machine that speaks the Gemini
// API: it asks for the word-count tool, then reports the count. The
// tool's result goes back as a functionResponse part in a user content.
func TestOnGeminiByTheEnvironment(t *testing.T) {
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
		if r.URL.Path != "/v1beta/models/gemini-test:streamGenerateContent" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(parts string, finish bool) {
			f := ""
			if finish {
				f = `, "finishReason": "STOP"`
			}
			fmt.Fprintf(w, "data: {\"candidates\": [{\"content\": {\"parts\": [%s], \"role\": \"model\"}%s, \"index\": 0}], \"usageMetadata\": {\"promptTokenCount\": 30, \"candidatesTokenCount\": 6, \"totalTokenCount\": 36}, \"responseId\": \"r%d\"}\n\n", parts, f, n)
		}
		if n == 1 {
			chunk(`{"text": "Counting."}`, false)
			chunk(`{"functionCall": {"name": "word-count", "args": {"text": "count these four words"}}}`, true)
		} else {
			chunk(`{"text": "It has 4 words."}`, true)
		}
	}))
	t.Cleanup(srv.Close)
	t.Setenv(llmenv.EnvProvider, "gemini")
	t.Setenv("OPENAI_MODEL", "")
	t.Setenv(gemini.EnvModel, "gemini-test")
	t.Setenv(gemini.EnvBaseURL, srv.URL)
	t.Setenv(gemini.EnvAPIKey, "AIza-test")
	t.Setenv(gemini.EnvGoogleAPIKey, "")
	var out bytes.Buffer
	if err := run([]string{"-data", t.TempDir()}, strings.NewReader("count these four words\n"), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	assertInOrder(t, out.String(), []string{
		"you: count these four words",
		"assistant: Counting.",
		`  [calls word-count({"text":"count these four words"})]`,
		"  [gemini-",
		"assistant: It has 4 words.",
	})
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	contents, _ := bodies[1]["contents"].([]any)
	last, _ := contents[len(contents)-1].(map[string]any)
	parts, _ := last["parts"].([]any)
	part, _ := parts[0].(map[string]any)
	fr, _ := part["functionResponse"].(map[string]any)
	if last["role"] != "user" || fr["name"] != "word-count" || !strings.Contains(fmt.Sprint(fr["response"]), "4") {
		t.Errorf("the second request ends with %v, want a user content with the functionResponse of word-count", last)
	}
}
