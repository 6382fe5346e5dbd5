package gemini

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

// textReply streams text as the API streams a reply in JSON mode: text
// parts of about five bytes, the last chunk with the finish reason, the
// usage in each.
func textReply(text string, in, out int) reply {
	var b strings.Builder
	for first := true; first || len(text) > 0; first = false {
		n := min(5, len(text))
		piece, _ := json.Marshal(text[:n])
		text = text[n:]
		finish := ""
		if text == "" {
			finish = `, "finishReason": "STOP"`
		}
		fmt.Fprintf(&b, `data: {"candidates": [{"content": {"parts": [{"text": %s}], "role": "model"}, "index": 0%s}], "usageMetadata": {"promptTokenCount": %d, "candidatesTokenCount": %d, "totalTokenCount": %d}, "modelVersion": "gemini-2.5-flash", "responseId": "r1"}`+"\n\n",
			piece, finish, in, out, in+out)
	}
	return reply{status: http.StatusOK, body: b.String()}
}

var ticket = llm.Request{System: "Triage the ticket.", Messages: []llm.Message{{Role: llm.RoleUser, Content: "The invoices page is down."}}, IdempotencyKey: "llm/triage-1"}

// TestStructuredNatively: structured.Ask asks the provider in its native
// mode, responseMimeType application/json and responseJsonSchema in the
// generationConfig as the API documents them, decodes the streamed text,
// and corrects an invalid first answer with a user content, under the key's
// -retry-1.
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
	config, _ := json.Marshal(first["generationConfig"])
	assertJSON(t, config, `{"responseMimeType": "application/json", "responseJsonSchema": {
		"type": "object", "additionalProperties": false, "required": ["severity", "summary"],
		"properties": {"severity": {"type": "string", "enum": ["low", "high"]}, "summary": {"type": "string"},
			"labels": {"type": "array", "items": {"type": "string"}}}}}`)
	if first["tools"] != nil || first["toolConfig"] != nil {
		t.Errorf("native mode sent tools %v, toolConfig %v", first["tools"], first["toolConfig"])
	}
	var second struct {
		Contents []struct {
			Role  string
			Parts []struct{ Text string }
		}
	}
	if err := json.Unmarshal(reqs[1].body, &second); err != nil {
		t.Fatal(err)
	}
	c := second.Contents
	if k := reqs[1].header.Get("Idempotency-Key"); k != "llm/triage-1-retry-1" {
		t.Errorf("the retry's key %q", k)
	}
	if len(c) != 3 || c[1].Role != "model" || !strings.Contains(c[1].Parts[0].Text, "urgent") ||
		c[2].Role != "user" || !strings.Contains(c[2].Parts[0].Text, "/severity: value must be one of") {
		t.Fatalf("the retry's contents: %+v", c)
	}
}

// TestStructuredNativelyGivesUp: an answer that never validates ends, after
// the retries, in ErrInvalidAnswer that says what was wrong.
func TestStructuredNativelyGivesUp(t *testing.T) {
	srv := newServer(t, textReply(`{"severity":"high"}`, 40, 5))
	_, usage, err := structured.Ask[triage](context.Background(), srv.model(t), ticket, structured.Options{Retries: 2})
	if !errors.Is(err, structured.ErrInvalidAnswer) || !strings.Contains(err.Error(), "after 3 tries") || !strings.Contains(err.Error(), "summary") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.received()); n != 3 || usage.InputTokens != 120 {
		t.Fatalf("%d requests, usage %+v", n, usage)
	}
}
