package llmenv

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/anthropic"
	"github.com/moora-go/moora/automata/llm/gemini"
	"github.com/moora-go/moora/automata/llm/openai"
)

// clearEnv leaves every variable of the choice unset, whatever the
// machine's environment says.
func clearEnv(t *testing.T) {
	for _, v := range []string{EnvProvider, openai.EnvModel, openai.EnvAPIKey, openai.EnvBaseURL,
		anthropic.EnvModel, anthropic.EnvAPIKey, anthropic.EnvBaseURL,
		gemini.EnvModel, gemini.EnvAPIKey, gemini.EnvGoogleAPIKey, gemini.EnvBaseURL, gemini.EnvGoogleBaseURL} {
		t.Setenv(v, "")
	}
}

func TestFromEnv(t *testing.T) {
	offline := llm.Scripted{Reply: llm.Script(llm.Response{Text: "offline"})}
	tests := []struct {
		name     string
		env      map[string]string
		provider string // "offline" for the offline model
		model    string // its ModelName
		variable string // ModelVariable
		err      string // a part of the error, "" for none
	}{
		{name: "nothing set", provider: Offline, variable: "OPENAI_MODEL"},
		{name: "Anthropic's key alone does not choose it", env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant-x", "ANTHROPIC_MODEL": "claude-test"},
			provider: Offline, variable: "OPENAI_MODEL"},
		{name: "OPENAI_MODEL chooses OpenAI, as before", env: map[string]string{"OPENAI_MODEL": "gpt-test", "OPENAI_API_KEY": "sk-x"},
			provider: "openai", model: "gpt-test", variable: "OPENAI_MODEL"},
		{name: "LLM_PROVIDER=anthropic", env: map[string]string{"LLM_PROVIDER": "anthropic", "ANTHROPIC_MODEL": "claude-test", "ANTHROPIC_API_KEY": "sk-ant-x", "OPENAI_MODEL": "gpt-test"},
			provider: "anthropic", model: "claude-test", variable: "ANTHROPIC_MODEL"},
		{name: "LLM_PROVIDER=Anthropic, any case", env: map[string]string{"LLM_PROVIDER": " Anthropic ", "ANTHROPIC_MODEL": "claude-test", "ANTHROPIC_API_KEY": "sk-ant-x"},
			provider: "anthropic", model: "claude-test", variable: "ANTHROPIC_MODEL"},
		{name: "LLM_PROVIDER=offline over OPENAI_MODEL", env: map[string]string{"LLM_PROVIDER": "offline", "OPENAI_MODEL": "gpt-test"},
			provider: Offline, variable: "OPENAI_MODEL"},
		{name: "anthropic without a model", env: map[string]string{"LLM_PROVIDER": "anthropic", "ANTHROPIC_API_KEY": "sk-ant-x"},
			err: "anthropic: no model named: set ANTHROPIC_MODEL"},
		{name: "anthropic without a key", env: map[string]string{"LLM_PROVIDER": "anthropic", "ANTHROPIC_MODEL": "claude-test"},
			err: "anthropic: no API key for https://api.anthropic.com/: set ANTHROPIC_API_KEY"},
		{name: "Gemini's key alone does not choose it", env: map[string]string{"GEMINI_API_KEY": "AIza-x", "GOOGLE_API_KEY": "AIza-y", "GEMINI_MODEL": "gemini-test"},
			provider: Offline, variable: "OPENAI_MODEL"},
		{name: "LLM_PROVIDER=gemini", env: map[string]string{"LLM_PROVIDER": "gemini", "GEMINI_MODEL": "gemini-test", "GEMINI_API_KEY": "AIza-x", "OPENAI_MODEL": "gpt-test"},
			provider: "gcp.gemini", model: "gemini-test", variable: "GEMINI_MODEL"},
		{name: "LLM_PROVIDER=gemini with GOOGLE_API_KEY", env: map[string]string{"LLM_PROVIDER": "gemini", "GEMINI_MODEL": "gemini-test", "GOOGLE_API_KEY": "AIza-x"},
			provider: "gcp.gemini", model: "gemini-test", variable: "GEMINI_MODEL"},
		{name: "gemini without a model", env: map[string]string{"LLM_PROVIDER": "gemini", "GEMINI_API_KEY": "AIza-x"},
			err: "gemini: no model named: set GEMINI_MODEL"},
		{name: "gemini without a key", env: map[string]string{"LLM_PROVIDER": "gemini", "GEMINI_MODEL": "gemini-test"},
			err: "gemini: no API key for https://generativelanguage.googleapis.com/: set GEMINI_API_KEY (or GOOGLE_API_KEY)"},
		{name: "an unknown provider", env: map[string]string{"LLM_PROVIDER": "vertex"},
			err: `llmenv: LLM_PROVIDER="vertex" is none of openai, anthropic, gemini, offline`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			if tt.err == "" && ModelVariable() != tt.variable {
				t.Errorf("ModelVariable = %s, want %s", ModelVariable(), tt.variable)
			}
			m, err := FromEnv(offline)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("FromEnv: %v, want an error with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.provider == Offline {
				if _, ok := m.(llm.Scripted); !ok {
					t.Fatalf("FromEnv = %T, want the offline model", m)
				}
				return
			}
			n := m.(llm.Named)
			if n.ProviderName() != tt.provider || n.ModelName() != tt.model {
				t.Errorf("FromEnv = %s %s, want %s %s", n.ProviderName(), n.ModelName(), tt.provider, tt.model)
			}
		})
	}
}

// With the environment only, the Anthropic provider talks to the server
// ANTHROPIC_BASE_URL names, with the key and the model of the environment.
func TestAnthropicFromTheEnvironment(t *testing.T) {
	var got *http.Request
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, body = r, string(b)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range []string{
			`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`,
			`{"type":"message_stop"}`,
		} {
			typ := strings.SplitN(strings.SplitN(e, `"type":"`, 2)[1], `"`, 2)[0]
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, e)
		}
	}))
	defer srv.Close()
	clearEnv(t)
	t.Setenv(EnvProvider, "anthropic")
	t.Setenv(anthropic.EnvModel, "claude-test")
	t.Setenv(anthropic.EnvAPIKey, "sk-ant-env")
	t.Setenv(anthropic.EnvBaseURL, srv.URL)
	m, err := FromEnv(nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}}, nil)
	if err != nil || resp.Text != "Hi" {
		t.Fatalf("Complete = %+v, %v", resp, err)
	}
	if got.URL.Path != "/v1/messages" || !strings.Contains(body, `"model":"claude-test"`) {
		t.Errorf("request to %s with %s", got.URL.Path, body)
	}
	if a, x := got.Header.Get("Authorization"), got.Header.Get("X-Api-Key"); a != "Bearer sk-ant-env" && x != "sk-ant-env" {
		t.Errorf("the key of the environment was not sent: Authorization %q, X-Api-Key %q", a, x)
	}
}

// With the environment only, the Gemini provider talks to the server
// GEMINI_BASE_URL names, with the key and the model of the environment.
func TestGeminiFromTheEnvironment(t *testing.T) {
	var got *http.Request
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, body = r, string(b)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"candidates": [{"content": {"parts": [{"text": "Hi"}], "role": "model"}, "finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1, "totalTokenCount": 6}}`+"\n\n")
	}))
	defer srv.Close()
	clearEnv(t)
	t.Setenv(EnvProvider, "gemini")
	t.Setenv(gemini.EnvModel, "gemini-test")
	t.Setenv(gemini.EnvAPIKey, "AIza-env")
	t.Setenv(gemini.EnvBaseURL, srv.URL)
	m, err := FromEnv(nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}}, nil)
	if err != nil || resp.Text != "Hi" {
		t.Fatalf("Complete = %+v, %v", resp, err)
	}
	if got.URL.Path != "/v1beta/models/gemini-test:streamGenerateContent" || got.URL.Query().Get("alt") != "sse" || !strings.Contains(body, `"text":"hello"`) {
		t.Errorf("request to %s with %s", got.URL, body)
	}
	if k := got.Header.Get("X-Goog-Api-Key"); k != "AIza-env" {
		t.Errorf("the key of the environment was not sent: x-goog-api-key %q", k)
	}
}
