package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/structured"
)

// triage is the value the structured tests ask for: an enum, an optional
// field.
type triage struct {
	Severity string   `json:"severity" jsonschema:"enum=low,enum=high"`
	Summary  string   `json:"summary"`
	Labels   []string `json:"labels,omitempty"`
}

// textReply streams text as the chat completions API streams a reply: a
// chunk a piece of about five bytes, the finish reason, the usage.
func textReply(text string, in, out int) reply {
	const id = `"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-test"`
	var b strings.Builder
	fmt.Fprintf(&b, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n", id)
	for len(text) > 0 {
		n := min(5, len(text))
		piece, _ := json.Marshal(text[:n])
		fmt.Fprintf(&b, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", id, piece)
		text = text[n:]
	}
	fmt.Fprintf(&b, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", id)
	fmt.Fprintf(&b, "data: {%s,\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", id, in, out, in+out)
	b.WriteString("data: [DONE]\n\n")
	return reply{status: http.StatusOK, body: b.String()}
}

var ticket = llm.Request{System: "Triage the ticket.", Messages: []llm.Message{{Role: llm.RoleUser, Content: "The invoices page is down."}}, IdempotencyKey: "llm/triage-1"}

// TestStructuredNatively: structured.Ask asks the provider in its native
// mode, response_format json_schema as the API documents it (strict false:
// the schema has an optional property), decodes the streamed text, and
// corrects an invalid first answer with a user message, under the
// key's -retry-1.
func TestStructuredNatively(t *testing.T) {
	srv := newServer(t,
		textReply(`{"severity":"urgent","summary":"invoices down"}`, 40, 12),
		textReply(`{"severity":"high","summary":"invoices down","labels":["billing"]}`, 70, 15))
	m := srv.model(t)
	if !llm.SupportsResponseFormat(llm.Traced(m, nil, nil)) {
		t.Fatal("the provider does not say it has a native mode")
	}
	got, usage, err := structured.Ask[triage](context.Background(), m, ticket, structured.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Severity != "high" || got.Summary != "invoices down" || len(got.Labels) != 1 {
		t.Fatalf("got %+v", got)
	}
	if usage.InputTokens != 110 || usage.OutputTokens != 27 {
		t.Errorf("usage %+v, want both tries' summed", usage)
	}
	reqs := srv.received()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	var first map[string]any
	if err := json.Unmarshal(reqs[0].body, &first); err != nil {
		t.Fatal(err)
	}
	format, _ := json.Marshal(first["response_format"])
	assertJSON(t, format, `{"type": "json_schema", "json_schema": {"name": "answer", "strict": false, "schema": {
		"type": "object", "additionalProperties": false, "required": ["severity", "summary"],
		"properties": {"severity": {"type": "string", "enum": ["low", "high"]}, "summary": {"type": "string"},
			"labels": {"type": "array", "items": {"type": "string"}}}}}}`)
	if first["tools"] != nil || first["tool_choice"] != nil {
		t.Errorf("native mode sent tools %v, tool_choice %v", first["tools"], first["tool_choice"])
	}
	var second struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal(reqs[1].body, &second); err != nil {
		t.Fatal(err)
	}
	msgs := second.Messages
	if k := reqs[1].header.Get("Idempotency-Key"); k != "llm/triage-1-retry-1" {
		t.Errorf("the retry's key %q", k)
	}
	if len(msgs) != 4 || msgs[2].Role != "assistant" || !strings.Contains(msgs[2].Content, "urgent") ||
		msgs[3].Role != "user" || !strings.Contains(msgs[3].Content, "/severity: value must be one of") {
		t.Fatalf("the retry's messages: %+v", msgs)
	}
}

// TestStructuredNativelyGivesUp: an answer that never validates ends, after
// the retries, in ErrInvalidAnswer that says what was wrong; ToolMode asks
// the same provider through a forced tool call instead.
func TestStructuredNativelyGivesUp(t *testing.T) {
	srv := newServer(t, textReply(`{"severity":"high"}`, 40, 5))
	_, usage, err := structured.Ask[triage](context.Background(), srv.model(t), ticket, structured.Options{Retries: 2})
	if !errors.Is(err, structured.ErrInvalidAnswer) || !strings.Contains(err.Error(), "after 3 tries") || !strings.Contains(err.Error(), "summary") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.received()); n != 3 || usage.InputTokens != 120 {
		t.Fatalf("%d requests, usage %+v", n, usage)
	}

	srv = newServer(t, sse(t, "tool_call.sse"))
	_, _, _ = structured.Ask[triage](context.Background(), srv.model(t), ticket, structured.Options{Mode: structured.ToolMode, Retries: -1})
	var body map[string]any
	if err := json.Unmarshal(srv.received()[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if body["response_format"] != nil || body["tool_choice"] == nil {
		t.Errorf("ToolMode: response_format %v, tool_choice %v", body["response_format"], body["tool_choice"])
	}
}
