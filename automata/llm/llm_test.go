package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var wordCount = Tool{
	Name:        "word-count",
	Description: "Counts the words of a text.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
}

func TestValidate(t *testing.T) {
	call := func(id string) ToolCall {
		return ToolCall{ID: id, Name: "word-count", Arguments: json.RawMessage(`{"text":"a b"}`)}
	}
	user := Message{Role: RoleUser, Content: "count"}
	tests := []struct {
		name   string
		reason string
		req    Request
		want   string // a part of the error, "" for none
	}{
		{name: "system prompt only", req: Request{System: "be brief"}},
		{name: "a whole tool round", req: Request{
			Tools: []Tool{wordCount},
			Messages: []Message{user,
				{Role: RoleAssistant, ToolCalls: []ToolCall{call("c1"), call("c2")}},
				{Role: RoleTool, ToolCallID: "c2", Content: "2"}, // any order
				{Role: RoleTool, ToolCallID: "c1", Content: "2"},
				{Role: RoleAssistant, Content: "2 words"},
				user,
			},
			RequiredTool: AnyTool,
		}},
		{name: "arguments are not checked", reason: "a model's invalid JSON goes back to it as it was",
			req: Request{Messages: []Message{user,
				{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "x", Arguments: json.RawMessage(`{"text":`)}}},
				{Role: RoleTool, ToolCallID: "c1", Content: "error: arguments are not JSON"}}}},
		{name: "nothing at all", req: Request{}, want: "no system prompt and no messages"},
		{name: "unknown role", req: Request{Messages: []Message{{Role: "system", Content: "x"}}}, want: `messages[0]: unknown role "system"`},
		{name: "tool result out of the blue", req: Request{Messages: []Message{user, {Role: RoleTool, ToolCallID: "c1"}}},
			want: `messages[1]: the result of tool call "c1", which the assistant message before it did not make`},
		{name: "tool result twice", req: Request{Messages: []Message{user,
			{Role: RoleAssistant, ToolCalls: []ToolCall{call("c1")}},
			{Role: RoleTool, ToolCallID: "c1"}, {Role: RoleTool, ToolCallID: "c1"}}},
			want: `messages[3]: the result of tool call "c1"`},
		{name: "user speaks before the tool result", req: Request{Messages: []Message{user,
			{Role: RoleAssistant, ToolCalls: []ToolCall{call("c1")}}, user, {Role: RoleTool, ToolCallID: "c1"}}},
			want: `messages[2]: a user message before the result of tool call "c1"`},
		{name: "unanswered call at the end", req: Request{Messages: []Message{user, {Role: RoleAssistant, ToolCalls: []ToolCall{call("c1")}}}},
			want: `tool call "c1" has no result`},
		{name: "two calls with one ID", req: Request{Messages: []Message{user, {Role: RoleAssistant, ToolCalls: []ToolCall{call("c1"), call("c1")}}}},
			want: `messages[1].ToolCalls[1]: a second tool call with ID "c1"`},
		{name: "call without ID", req: Request{Messages: []Message{user, {Role: RoleAssistant, ToolCalls: []ToolCall{{Name: "x"}}}}},
			want: "messages[1].ToolCalls[0]: no ID"},
		{name: "call without name", req: Request{Messages: []Message{user, {Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1"}}}}},
			want: "messages[1].ToolCalls[0]: no name"},
		{name: "user with tool calls", req: Request{Messages: []Message{{Role: RoleUser, ToolCalls: []ToolCall{call("c1")}}}},
			want: "messages[0]: a user message with tool calls"},
		{name: "tool name with a space", req: Request{System: "s", Tools: []Tool{{Name: "word count"}}},
			want: `tools[0]: name "word count" is not 1 to 64 letters`},
		{name: "tool name too long", req: Request{System: "s", Tools: []Tool{{Name: strings.Repeat("a", 65)}}},
			want: "tools[0]: name"},
		{name: "the AnyTool name", req: Request{System: "s", Tools: []Tool{{Name: AnyTool}}}, want: `tools[0]: name "*"`},
		{name: "two tools, one name", req: Request{System: "s", Tools: []Tool{wordCount, wordCount}},
			want: `tools[1]: a second tool named "word-count"`},
		{name: "parameters not an object", req: Request{System: "s", Tools: []Tool{{Name: "t", Parameters: json.RawMessage(`["a"]`)}}},
			want: "tools[0] (t): parameters are not a JSON object"},
		{name: "parameters null", req: Request{System: "s", Tools: []Tool{{Name: "t", Parameters: json.RawMessage(`null`)}}},
			want: "tools[0] (t): parameters are not a JSON object"},
		{name: "parameters not JSON", req: Request{System: "s", Tools: []Tool{{Name: "t", Parameters: json.RawMessage(`{`)}}},
			want: "tools[0] (t): parameters are not a JSON object"},
		{name: "required tool unknown", req: Request{System: "s", Tools: []Tool{wordCount}, RequiredTool: "search"},
			want: `required tool "search" is not among the request's tools`},
		{name: "any tool of none", req: Request{System: "s", RequiredTool: AnyTool},
			want: "a tool is required but the request has no tools"},
		{name: "images of a user and of a tool's result", req: Request{Messages: []Message{
			{Role: RoleUser, Content: "what is this?", Images: []Image{testPNG, {MediaType: "image/jpeg", Data: testJPEG}}},
			{Role: RoleAssistant, ToolCalls: []ToolCall{call("c1")}},
			{Role: RoleTool, ToolCallID: "c1", Content: "a screenshot", Images: []Image{{MediaType: "image/gif", Data: testGIF}, {MediaType: "image/webp", Data: testWebP}}},
		}}},
		{name: "an image without text", req: Request{Messages: []Message{{Role: RoleUser, Images: []Image{testPNG}}}}},
		{name: "MaxImages images", req: Request{Messages: []Message{
			{Role: RoleUser, Images: slices.Repeat([]Image{testPNG}, MaxImages-1)}, {Role: RoleUser, Images: []Image{testPNG}}}}},
		{name: "one image too many", req: Request{Messages: []Message{
			{Role: RoleUser, Images: slices.Repeat([]Image{testPNG}, MaxImages-1)}, {Role: RoleUser, Images: []Image{testPNG, testPNG}}}},
			want: "messages[1].Images[1]: the request's image number 21, past MaxImages (20)"},
		{name: "an image of the assistant", req: Request{Messages: []Message{user, {Role: RoleAssistant, Content: "here", Images: []Image{testPNG}}}},
			want: "messages[1]: an assistant message with images"},
		{name: "an image of no known type", req: Request{Messages: []Message{{Role: RoleUser, Images: []Image{testPNG, {MediaType: "image/svg+xml", Data: []byte("<svg/>")}}}}},
			want: `messages[0].Images[1]: media type "image/svg+xml" is not one of image/png, image/jpeg, image/gif, image/webp`},
		{name: "a media type in capitals", req: Request{Messages: []Message{{Role: RoleUser, Images: []Image{{MediaType: "image/PNG", Data: testPNG.Data}}}}},
			want: `messages[0].Images[0]: media type "image/PNG" is not one of`},
		{name: "an image of no bytes", req: Request{Messages: []Message{{Role: RoleUser, Images: []Image{{MediaType: "image/png"}}}}},
			want: "messages[0].Images[0]: an image/png image with no data"},
		{name: "an image too big", req: Request{Messages: []Message{{Role: RoleUser, Images: []Image{{MediaType: "image/png", Data: append(slices.Clip(testPNG.Data), make([]byte, MaxImageBytes)...)}}}}},
			want: fmt.Sprintf("messages[0].Images[0]: an image/png image of %d bytes, past MaxImageBytes (5242880)", len(testPNG.Data)+MaxImageBytes)},
		{name: "a JPEG declared PNG", req: Request{Messages: []Message{{Role: RoleUser, Images: []Image{{MediaType: "image/png", Data: testJPEG}}}}},
			want: "messages[0].Images[0]: an image declared image/png whose bytes are not (they look like image/jpeg)"},
		{name: "text declared an image", req: Request{Messages: []Message{user, {Role: RoleAssistant, ToolCalls: []ToolCall{call("c1")}},
			{Role: RoleTool, ToolCallID: "c1", Images: []Image{{MediaType: "image/gif", Data: []byte("GIF? no")}}}}},
			want: "messages[2].Images[0]: an image declared image/gif whose bytes are not (they look like text/plain; charset=utf-8)"},
		{name: "a response format", req: Request{System: "s", Tools: []Tool{wordCount},
			ResponseFormat: &JSONSchema{Name: "triage", Schema: json.RawMessage(`{"type":"object"}`)}}},
		{name: "a response format without a name", req: Request{System: "s", ResponseFormat: &JSONSchema{Schema: json.RawMessage(`{}`)}},
			want: `response format: name "" is not 1 to 64 letters`},
		{name: "a response format's schema not an object", req: Request{System: "s", ResponseFormat: &JSONSchema{Name: "f", Schema: json.RawMessage(`"object"`)}},
			want: "response format f: the schema is not a JSON object"},
		{name: "a response format and a required tool", req: Request{System: "s", Tools: []Tool{wordCount}, RequiredTool: "word-count",
			ResponseFormat: &JSONSchema{Name: "f", Schema: json.RawMessage(`{}`)}},
			want: `response format f beside required tool "word-count"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tt.want != "" && err == nil:
				t.Fatalf("Validate: nil, want an error with %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Validate: %v, want an error with %q", err, tt.want)
			case err != nil && !strings.HasPrefix(err.Error(), "llm: invalid request: "):
				t.Fatalf("Validate: %v, want the prefix %q", err, "llm: invalid request: ")
			}
		})
	}
}

func TestScriptedStreamsWordByWord(t *testing.T) {
	m := Scripted{Reply: func(Request) (Response, error) {
		return Response{Text: "Hello there,\n  general  Kenobi. "}, nil
	}}
	var got []string
	resp, err := m.Complete(context.Background(), Request{System: "greet"}, func(c string) { got = append(got, c) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Hello", " there,", "\n  general", "  Kenobi.", " "}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("chunks = %q, want %q", got, want)
	}
	if strings.Join(got, "") != resp.Text {
		t.Errorf("chunks put together = %q, want the text %q", strings.Join(got, ""), resp.Text)
	}
	if resp.FinishReason != FinishStop {
		t.Errorf("finish reason = %q, want %q", resp.FinishReason, FinishStop)
	}
	if want := (Usage{InputTokens: 1, OutputTokens: 4}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestScriptedToolCalls(t *testing.T) {
	m := Scripted{Reply: func(req Request) (Response, error) {
		return Response{ToolCalls: []ToolCall{{ID: "c1", Name: "word-count"}}, Usage: Usage{InputTokens: 7, OutputTokens: 3}}, nil
	}}
	chunks := 0
	resp, err := m.Complete(context.Background(), Request{System: "s", Tools: []Tool{wordCount}, RequiredTool: "word-count"},
		func(string) { chunks++ })
	if err != nil {
		t.Fatal(err)
	}
	want := Response{
		ToolCalls:    []ToolCall{{ID: "c1", Name: "word-count", Arguments: json.RawMessage("{}")}},
		FinishReason: FinishToolCalls,
		Usage:        Usage{InputTokens: 7, OutputTokens: 3}, // as the script said
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response = %+v\nwant       %+v", resp, want)
	}
	if chunks != 0 {
		t.Errorf("%d chunks for a reply without text", chunks)
	}
}

func TestScriptedRefusesWhatARealModelWould(t *testing.T) {
	reply := func(r Response) func(Request) (Response, error) {
		return func(Request) (Response, error) { return r, nil }
	}
	tools := []Tool{wordCount, {Name: "search"}}
	tests := []struct {
		name  string
		model Scripted
		req   Request
		want  string
	}{
		{name: "invalid request", model: Scripted{Reply: reply(Response{Text: "hi"})}, req: Request{},
			want: "scripted model: llm: invalid request: no system prompt and no messages"},
		{name: "no reply function", model: Scripted{}, req: Request{System: "s"},
			want: "scripted model: no Reply function"},
		{name: "script fails", model: Scripted{Reply: func(Request) (Response, error) { return Response{}, errors.New("out of lines") }},
			req: Request{System: "s"}, want: "scripted model: out of lines"},
		{name: "tool not offered", model: Scripted{Reply: reply(Response{ToolCalls: []ToolCall{{ID: "c", Name: "delete-all"}}})},
			req: Request{System: "s", Tools: tools}, want: `scripted model: reply: tool call "c" of "delete-all", which the request does not offer`},
		{name: "no tool call, one required", model: Scripted{Reply: reply(Response{Text: "no"})},
			req: Request{System: "s", Tools: tools, RequiredTool: AnyTool}, want: "no tool call, and the request requires one"},
		{name: "the wrong tool", model: Scripted{Reply: reply(Response{ToolCalls: []ToolCall{{ID: "c", Name: "search"}}})},
			req: Request{System: "s", Tools: tools, RequiredTool: "word-count"}, want: `no call of "word-count", and the request requires one`},
		{name: "call without ID", model: Scripted{Reply: reply(Response{ToolCalls: []ToolCall{{Name: "search"}}})},
			req: Request{System: "s", Tools: tools}, want: "tool call 0 has no ID"},
		{name: "two calls, one ID", model: Scripted{Reply: reply(Response{ToolCalls: []ToolCall{{ID: "c", Name: "search"}, {ID: "c", Name: "search"}}})},
			req: Request{System: "s", Tools: tools}, want: `two tool calls with ID "c"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.model.Complete(context.Background(), tt.req, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Complete: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestScript(t *testing.T) {
	m := Scripted{Reply: Script(
		Response{ToolCalls: []ToolCall{{ID: "c1", Name: "word-count", Arguments: json.RawMessage(`{"text":"a b c"}`)}}},
		Response{Text: "3 words."},
	)}
	req := Request{Tools: []Tool{wordCount}, Messages: []Message{{Role: RoleUser, Content: "count a b c"}}}
	first, err := m.Complete(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.ToolCalls) != 1 || first.Text != "" {
		t.Fatalf("first reply = %+v, want the tool call", first)
	}
	again, err := m.Complete(context.Background(), req, nil)
	if err != nil || !reflect.DeepEqual(again, first) {
		t.Fatalf("the same request again = %+v, %v; want the same reply %+v", again, err, first)
	}
	req.Messages = append(req.Messages,
		Message{Role: RoleAssistant, ToolCalls: first.ToolCalls},
		Message{Role: RoleTool, ToolCallID: "c1", Content: "3"})
	second, err := m.Complete(context.Background(), req, nil)
	if err != nil || second.Text != "3 words." {
		t.Fatalf("second reply = %+v, %v; want 3 words.", second, err)
	}
	req.Messages = append(req.Messages, Message{Role: RoleAssistant, Content: second.Text}, Message{Role: RoleUser, Content: "again"})
	if _, err := m.Complete(context.Background(), req, nil); err == nil ||
		!strings.Contains(err.Error(), "the script has 2 replies and the conversation 2 assistant messages") {
		t.Fatalf("past the script: %v, want an error", err)
	}
}

// Cancelling ctx while the reply streams stops it: no more chunks, and an
// error that wraps the context's.
func TestScriptedStopsWhenCancelled(t *testing.T) {
	m := Scripted{
		Reply: func(Request) (Response, error) { return Response{Text: strings.Repeat("word ", 1000)}, nil },
		Delay: time.Millisecond,
	}
	ctx, cancel := context.WithCancel(context.Background())
	chunks := 0
	_, err := m.Complete(ctx, Request{System: "s"}, func(string) {
		chunks++
		if chunks == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Complete: %v, want context.Canceled", err)
	}
	if chunks != 3 {
		t.Errorf("%d chunks, want 3: none after the cancellation", chunks)
	}
}

func TestErrorMatchesItsKindAndCause(t *testing.T) {
	cause := fmt.Errorf("HTTP 429")
	var err error = fmt.Errorf("llm job: %w", &Error{Kind: ErrRateLimited, StatusCode: 429, RetryAfter: 20 * time.Second,
		Message: "openai: rate limited (HTTP 429, retry after 20s): slow down", Err: cause})
	if !errors.Is(err, ErrRateLimited) || !errors.Is(err, cause) || errors.Is(err, ErrUnauthorized) {
		t.Errorf("errors.Is does not see the kind and the cause alone: %v", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.RetryAfter != 20*time.Second {
		t.Fatalf("errors.As: %v", err)
	}
	if got := err.Error(); got != "llm job: openai: rate limited (HTTP 429, retry after 20s): slow down" {
		t.Errorf("message = %q", got)
	}
	if (&Error{Message: "x"}).Unwrap() != nil {
		t.Error("an Error with neither kind nor cause unwraps to something")
	}
}
