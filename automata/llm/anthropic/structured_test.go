package anthropic

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
// field, a bound that structured outputs do not take.
type triage struct {
	Severity string   `json:"severity" jsonschema:"enum=low,enum=high"`
	Summary  string   `json:"summary" jsonschema:"maxLength=200"`
	Labels   []string `json:"labels,omitempty"`
}

// textReply streams text as the Messages API streams a reply in JSON
// mode: one text block, in deltas of about five bytes, then the stop
// reason and the usage.
func textReply(text string, in, out int) reply {
	var b strings.Builder
	fmt.Fprintf(&b, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":%d,\"output_tokens\":1}}}\n\n", in)
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for len(text) > 0 {
		n := min(5, len(text))
		piece, _ := json.Marshal(text[:n])
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%s}}\n\n", piece)
		text = text[n:]
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	fmt.Fprintf(&b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":%d}}\n\n", out)
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return reply{status: http.StatusOK, body: b.String()}
}

var ticket = llm.Request{System: "Triage the ticket.", Messages: []llm.Message{{Role: llm.RoleUser, Content: "The invoices page is down."}}, IdempotencyKey: "llm/triage-1"}

// TestStructuredNatively: structured.Ask asks the provider in its native
// mode, output_config.format of type json_schema as the API documents it
// (the bound it does not take moved into the description), decodes the
// streamed text, and corrects an invalid first answer with a user message,
// under the key's -retry-1.
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
	config, _ := json.Marshal(first["output_config"])
	assertJSON(t, config, `{"format": {"type": "json_schema", "schema": {
		"type": "object", "additionalProperties": false, "required": ["severity", "summary"],
		"properties": {"severity": {"type": "string", "enum": ["low", "high"]}, "summary": {"type": "string", "description": "{maxLength: 200}"},
			"labels": {"type": "array", "items": {"type": "string"}}}}}}`)
	if first["tools"] != nil || first["tool_choice"] != nil {
		t.Errorf("native mode sent tools %v, tool_choice %v", first["tools"], first["tool_choice"])
	}
	var second struct {
		Messages []struct {
			Role    string
			Content []struct{ Text string }
		}
	}
	if err := json.Unmarshal(reqs[1].body, &second); err != nil {
		t.Fatal(err)
	}
	msgs := second.Messages
	if k := reqs[1].header.Get("Idempotency-Key"); k != "llm/triage-1-retry-1" {
		t.Errorf("the retry's key %q", k)
	}
	if len(msgs) != 3 || msgs[1].Role != "assistant" || !strings.Contains(msgs[1].Content[0].Text, "urgent") ||
		msgs[2].Role != "user" || !strings.Contains(msgs[2].Content[0].Text, "/severity: value must be one of") {
		t.Fatalf("the retry's messages: %+v", msgs)
	}
}

// TestStructuredNativelyGivesUp: an answer that never validates ends, after
// the retries, in ErrInvalidAnswer that says what was wrong; with
// NoStructuredOutputs the provider is asked through a forced tool call.
func TestStructuredNativelyGivesUp(t *testing.T) {
	srv := newServer(t, textReply(`{"severity":"high"}`, 40, 5))
	_, usage, err := structured.Ask[triage](context.Background(), srv.model(t), ticket, structured.Options{Retries: 2})
	if !errors.Is(err, structured.ErrInvalidAnswer) || !strings.Contains(err.Error(), "after 3 tries") || !strings.Contains(err.Error(), "summary") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.received()); n != 3 || usage.InputTokens != 120 {
		t.Fatalf("%d requests, usage %+v", n, usage)
	}

	srv = newServer(t, sse(t, "documented_tool_use.sse"))
	old := srv.model(t, Config{NoStructuredOutputs: true})
	if llm.SupportsResponseFormat(old) {
		t.Fatal("NoStructuredOutputs: the provider says it has a native mode")
	}
	_, _, _ = structured.Ask[triage](context.Background(), old, ticket, structured.Options{Retries: -1})
	var body map[string]any
	if err := json.Unmarshal(srv.received()[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if body["output_config"] != nil || body["tool_choice"] == nil {
		t.Errorf("NoStructuredOutputs: output_config %v, tool_choice %v", body["output_config"], body["tool_choice"])
	}
}

// TestOutputSchema: the keywords structured outputs refuse go into the
// description, in nested schemas too, and every object gets
// additionalProperties false.
func TestOutputSchema(t *testing.T) {
	var schema map[string]any
	json.Unmarshal([]byte(`{"type":"object","properties":{
		"n":{"type":"integer","minimum":1,"maximum":5,"description":"How many."},
		"tags":{"type":"array","minItems":2,"items":{"type":"object","properties":{"k":{"type":"string","pattern":"^a"}}}},
		"any":{"type":"array","minItems":1,"items":{"type":"string"}}}}`), &schema)
	got, _ := json.Marshal(outputSchema(schema))
	assertJSON(t, got, `{"type":"object","additionalProperties":false,"properties":{
		"n":{"type":"integer","description":"How many. {minimum: 1, maximum: 5}"},
		"tags":{"type":"array","description":"{minItems: 2}","items":{"type":"object","additionalProperties":false,"properties":{"k":{"type":"string","pattern":"^a"}}}},
		"any":{"type":"array","minItems":1,"items":{"type":"string"}}}}`)
}
