package structured_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/structured"
)

// Triage is a nested struct with an enum and optional fields.
type Triage struct {
	Severity string   `json:"severity" jsonschema:"enum=low,enum=high,enum=critical"`
	Summary  string   `json:"summary"`
	Owner    *Person  `json:"owner,omitempty"`
	Labels   []string `json:"labels,omitempty"`
}

type Person struct {
	Name string `json:"name"`
	Team string `json:"team" jsonschema:"enum=billing,enum=platform"`
}

// script is a scripted model that answers the tool with each of answers in
// turn (the last one again past the end), and records the requests.
type script struct {
	mu       sync.Mutex
	answers  []string
	requests []llm.Request
}

func (s *script) model() llm.Scripted {
	return llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		n := len(s.requests)
		s.requests = append(s.requests, req)
		answer := s.answers[min(n, len(s.answers)-1)]
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c" + string(rune('0'+n)), Name: req.RequiredTool, Arguments: json.RawMessage(answer)}},
			Usage: llm.Usage{InputTokens: 10, OutputTokens: 3}}, nil
	}}
}

var ticket = llm.Request{System: "Triage the ticket.", Messages: []llm.Message{{Role: llm.RoleUser, Content: "The invoices page is down for everyone."}}, IdempotencyKey: "llm/triage-7"}

func TestAskDecodesANestedValue(t *testing.T) {
	s := &script{answers: []string{`{"severity":"critical","summary":"invoices down","owner":{"name":"Ann","team":"billing"}}`}}
	got, usage, err := structured.Ask[Triage](context.Background(), s.model(), ticket, structured.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Severity != "critical" || got.Summary != "invoices down" || got.Owner == nil || got.Owner.Team != "billing" || got.Labels != nil {
		t.Fatalf("got %+v", got)
	}
	if usage.InputTokens != 10 || usage.OutputTokens != 3 {
		t.Errorf("usage %+v, want one try's", usage)
	}
	req := s.requests[0]
	if req.RequiredTool != structured.DefaultName || len(req.Tools) != 1 || req.Tools[0].Name != structured.DefaultName {
		t.Fatalf("the request requires %q among %+v", req.RequiredTool, req.Tools)
	}
	// The model is shown the schema of T: the enums, what is required.
	schema := string(req.Tools[0].Parameters)
	for _, want := range []string{`"enum":["low","high","critical"]`, `"enum":["billing","platform"]`, `"required":["severity","summary"]`} {
		if !strings.Contains(schema, want) {
			t.Errorf("the schema lacks %s: %s", want, schema)
		}
	}
	if len(ticket.Tools) != 0 || ticket.RequiredTool != "" {
		t.Errorf("Ask changed the caller's request: %+v", ticket)
	}
}

func TestAskCorrectsAnInvalidAnswer(t *testing.T) {
	s := &script{answers: []string{
		`{"severity":"urgent","summary":"invoices down"}`, // not one of the enum
		`{"severity":"high","summary":"invoices down","labels":["billing"]}`,
	}}
	got, usage, err := structured.Ask[Triage](context.Background(), s.model(), ticket, structured.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Severity != "high" || len(got.Labels) != 1 {
		t.Fatalf("got %+v", got)
	}
	if len(s.requests) != 2 || usage.InputTokens != 20 || usage.OutputTokens != 6 {
		t.Fatalf("%d requests, usage %+v: want two tries, summed", len(s.requests), usage)
	}
	// The second try shows the model its answer and what was wrong.
	second := s.requests[1]
	if second.IdempotencyKey != "llm/triage-7-retry-1" {
		t.Errorf("the retry's key is %q", second.IdempotencyKey)
	}
	n := len(second.Messages)
	if n != 3 || second.Messages[1].Role != llm.RoleAssistant || second.Messages[2].Role != llm.RoleTool ||
		!strings.Contains(second.Messages[2].Content, "/severity: value must be one of") || !strings.Contains(string(second.Messages[1].ToolCalls[0].Arguments), "urgent") {
		t.Fatalf("the retry's conversation: %+v", second.Messages)
	}
}

func TestAskGivesUpAfterItsRetries(t *testing.T) {
	s := &script{answers: []string{`{"severity":"high"}`}} // summary missing, every time
	_, _, err := structured.Ask[Triage](context.Background(), s.model(), ticket, structured.Options{Retries: 3})
	if !errors.Is(err, structured.ErrInvalidAnswer) || !strings.Contains(err.Error(), "after 4 tries") || !strings.Contains(err.Error(), "summary") {
		t.Fatalf("err = %v, want ErrInvalidAnswer after 4 tries naming summary", err)
	}
	if len(s.requests) != 4 {
		t.Fatalf("%d requests, want 4", len(s.requests))
	}

	s = &script{answers: []string{`{"severity":"high"}`}}
	if _, _, err := structured.Ask[Triage](context.Background(), s.model(), ticket, structured.Options{Retries: -1}); !errors.Is(err, structured.ErrInvalidAnswer) || len(s.requests) != 1 {
		t.Fatalf("no retries: err %v after %d requests", err, len(s.requests))
	}
}

func TestAskRefusesWhatItCannotAsk(t *testing.T) {
	s := &script{answers: []string{`{}`}}
	req := ticket
	req.Tools = []llm.Tool{{Name: "answer"}}
	if _, _, err := structured.Ask[Triage](context.Background(), s.model(), req, structured.Options{}); err == nil || !strings.Contains(err.Error(), `a tool named "answer"`) {
		t.Errorf("a clash of names: %v", err)
	}
	if _, _, err := structured.Ask[chan int](context.Background(), s.model(), ticket, structured.Options{}); err == nil {
		t.Error("a chan: no error")
	}
	if len(s.requests) != 0 {
		t.Errorf("the model was asked %d times", len(s.requests))
	}
}

// TestAskPassesTheModelsError: a failed call is the model's error, as it
// came.
func TestAskPassesTheModelsError(t *testing.T) {
	failing := llm.Scripted{Reply: func(llm.Request) (llm.Response, error) { return llm.Response{}, llm.ErrRateLimited }}
	if _, _, err := structured.Ask[Triage](context.Background(), failing, ticket, structured.Options{}); !errors.Is(err, llm.ErrRateLimited) {
		t.Fatalf("err = %v", err)
	}
}

// nativeScript is a scripted model with a native JSON mode, which answers
// with each of answers in turn as its text, and records the requests.
func (s *script) native() llm.Scripted {
	return llm.Scripted{ResponseFormat: true, Reply: func(req llm.Request) (llm.Response, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		n := len(s.requests)
		s.requests = append(s.requests, req)
		return llm.Response{Text: s.answers[min(n, len(s.answers)-1)], Usage: llm.Usage{InputTokens: 10, OutputTokens: 3}}, nil
	}}
}

// TestAskNatively: a model that has a native JSON mode is asked for the
// value with the request's ResponseFormat (T's schema, no tool, none
// required), and its text is the value.
func TestAskNatively(t *testing.T) {
	s := &script{answers: []string{` {"severity":"critical","summary":"invoices down","owner":{"name":"Ann","team":"billing"}}` + "\n"}}
	got, usage, err := structured.Ask[Triage](context.Background(), s.native(), ticket, structured.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Severity != "critical" || got.Owner == nil || got.Owner.Team != "billing" || usage.InputTokens != 10 {
		t.Fatalf("got %+v, usage %+v", got, usage)
	}
	req := s.requests[0]
	if req.ResponseFormat == nil || req.ResponseFormat.Name != structured.DefaultName || req.ResponseFormat.Strict || len(req.Tools) != 0 || req.RequiredTool != "" {
		t.Fatalf("the request: format %+v, tools %+v, required %q", req.ResponseFormat, req.Tools, req.RequiredTool)
	}
	schema := string(req.ResponseFormat.Schema)
	for _, want := range []string{`"enum":["low","high","critical"]`, `"required":["severity","summary"]`, `"additionalProperties":false`} {
		if !strings.Contains(schema, want) {
			t.Errorf("the schema lacks %s: %s", want, schema)
		}
	}
	if ticket.ResponseFormat != nil {
		t.Error("Ask changed the caller's request")
	}

	// ToolMode asks the same model through the tool.
	s = &script{answers: []string{`{"severity":"low","summary":"s"}`}}
	tool := s.model()
	tool.ResponseFormat = true
	if _, _, err := structured.Ask[Triage](context.Background(), tool, ticket, structured.Options{Mode: structured.ToolMode}); err != nil ||
		s.requests[0].ResponseFormat != nil || s.requests[0].RequiredTool != structured.DefaultName {
		t.Fatalf("ToolMode: %v, %+v", err, s.requests[0])
	}
}

// TestAskNativelyCorrectsAnInvalidAnswer: in native mode an invalid answer
// goes back as the assistant's text, then a user message that says what is
// wrong with it, under the key's "-retry-1".
func TestAskNativelyCorrectsAnInvalidAnswer(t *testing.T) {
	s := &script{answers: []string{
		`{"severity":"urgent","summary":"invoices down"}`,
		`{"severity":"high","summary":"invoices down"}`,
	}}
	got, usage, err := structured.Ask[Triage](context.Background(), s.native(), ticket, structured.Options{})
	if err != nil || got.Severity != "high" {
		t.Fatalf("got %+v, %v", got, err)
	}
	if len(s.requests) != 2 || usage.InputTokens != 20 || usage.OutputTokens != 6 {
		t.Fatalf("%d requests, usage %+v", len(s.requests), usage)
	}
	second := s.requests[1]
	m := second.Messages
	if second.IdempotencyKey != "llm/triage-7-retry-1" || len(m) != 3 || m[1].Role != llm.RoleAssistant || !strings.Contains(m[1].Content, "urgent") ||
		m[2].Role != llm.RoleUser || !strings.Contains(m[2].Content, "/severity: value must be one of") || second.ResponseFormat == nil {
		t.Fatalf("the retry: key %q, messages %+v", second.IdempotencyKey, m)
	}
}

// TestAskNativelyGivesUp: answers that are not JSON, every time, end in
// ErrInvalidAnswer after the retries, which says what was wrong.
func TestAskNativelyGivesUp(t *testing.T) {
	s := &script{answers: []string{`Sure! The severity is high.`}}
	_, usage, err := structured.Ask[Triage](context.Background(), s.native(), ticket, structured.Options{Retries: 1})
	if !errors.Is(err, structured.ErrInvalidAnswer) || !strings.Contains(err.Error(), "after 2 tries") || !strings.Contains(err.Error(), "not JSON") {
		t.Fatalf("err = %v", err)
	}
	if len(s.requests) != 2 || usage.InputTokens != 20 {
		t.Fatalf("%d requests, usage %+v", len(s.requests), usage)
	}
}

// TestAskNativelyAnswersACallOfATool: a request with tools of its own is
// asked through the tool unless NativeMode says otherwise; in native mode
// the request's tools are offered, none required; a call of one is no
// answer: it is answered as not run, and the model is told to answer with
// the JSON.
func TestAskNativelyAnswersACallOfATool(t *testing.T) {
	s := &script{answers: []string{`{"severity":"low","summary":"fine"}`}}
	auto := s.model()
	auto.ResponseFormat = true
	withTools := ticket
	withTools.Tools = []llm.Tool{{Name: "search"}}
	if _, _, err := structured.Ask[Triage](context.Background(), auto, withTools, structured.Options{}); err != nil ||
		s.requests[0].ResponseFormat != nil || s.requests[0].RequiredTool != structured.DefaultName || len(s.requests[0].Tools) != 2 {
		t.Fatalf("a request with tools, AutoMode: %v, %+v", err, s.requests[0])
	}

	var requests []llm.Request
	m := llm.Scripted{ResponseFormat: true, Reply: func(req llm.Request) (llm.Response, error) {
		requests = append(requests, req)
		if len(requests) == 1 {
			return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "search", Arguments: json.RawMessage(`{}`)}}}, nil
		}
		return llm.Response{Text: `{"severity":"low","summary":"fine"}`}, nil
	}}
	req := ticket
	req.Tools = []llm.Tool{{Name: "search"}}
	got, _, err := structured.Ask[Triage](context.Background(), m, req, structured.Options{Mode: structured.NativeMode})
	if err != nil || got.Severity != "low" {
		t.Fatalf("got %+v, %v", got, err)
	}
	msgs := requests[1].Messages
	if len(requests[0].Tools) != 1 || requests[0].RequiredTool != "" || len(msgs) != 4 ||
		msgs[2].Role != llm.RoleTool || msgs[2].ToolCallID != "c1" || !strings.Contains(msgs[2].Content, "not run") ||
		msgs[3].Role != llm.RoleUser || !strings.Contains(msgs[3].Content, "called search instead of answering with JSON") {
		t.Fatalf("the requests: %+v", requests)
	}
}
