// Package sample_test exercises a generated decl/ package at run time: the
// JSON encoding of inputs, DecodeInput and the AgentState projections.
package sample_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/sample/decl"
)

func ptr[T any](v T) *T { return &v }

// validInputs are inputs as a client would send them.
var validInputs = []struct {
	name, json string
}{
	{"user message", `{"type":"send-user-message","message":{"id":"0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b20","role":"user","content":"hi","timestamp":1,"tags":[]}}`},
	{"user message with reply and tags", `{"type":"send-user-message","message":{"id":"0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b20","role":"user","content":"hi","timestamp":1,"tags":["a","b"],"replyTo":"x"}}`},
	{"null replyTo decodes to nil", `{"type":"send-user-message","message":{"id":"0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b20","role":"user","content":"","timestamp":0,"tags":[],"replyTo":null}}`},
	{"start thinking", `{"type":"start-thinking","timestamp":1700000000}`},
	{"assistant message with every tool call", `{"type":"send-assi-message",
		"message":{"id":"0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b21","role":"assistant","content":"let me look","timestamp":2,"tags":[]},
		"usage":{"promptTokens":10,"completionTokens":20,"cost":0.5},
		"calls":[
			{"tool":"search","query":"go generics","limit":5},
			{"tool":"fetch","url":"https://go.dev/","headers":{"Accept":"text/html"}},
			{"tool":"calculate","expression":"1 + 2","precision":null},
			{"tool":"calculate","expression":"(3*4)/2","precision":3}
		]}`},
	{"assistant message without calls", `{"type":"send-assi-message","message":{"id":"0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b21","role":"assistant","content":"","timestamp":2,"tags":[]},"calls":[]}`},
	{"complete a call", `{"type":"complete-call","callId":"c1","call":{"tool":"search","query":"q"},"result":null,"mode":"async"}`},
	{"complete a call with empty headers", `{"type":"complete-call","callId":"c1","call":{"tool":"fetch","url":"https://example.com","headers":{}},"result":"ok"}`},
	{"whitespace around the value", " \n\t{\"type\":\"start-thinking\",\"timestamp\":0}\n "},
	{"an integer written with a fraction", `{"type":"start-thinking","timestamp":1.0}`},
	{"an integer written with an exponent", `{"type":"start-thinking","timestamp":1e3}`},
	{"integers in nested objects and arrays", `{"type":"send-assi-message","message":{"id":"0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b21","role":"assistant","content":"","timestamp":2.5e1,"tags":[]},"usage":{"promptTokens":1.0,"completionTokens":20E-1,"cost":1.0},"calls":[{"tool":"search","query":"q","limit":5.00}]}`},
}

// TestIntegersWrittenAsNumbers checks that an integer written with a
// fraction or an exponent, which JSON Schema reads as an integer, decodes
// to its value.
func TestIntegersWrittenAsNumbers(t *testing.T) {
	for lit, want := range map[string]int64{
		"1.0": 1, "1e3": 1000, "1E+3": 1000, "0.5e1": 5, "123.4500e2": 12345, "-0.0": 0, "-2.0": -2,
		"9.223372036854775807e18": 9223372036854775807, "-9223372036854775808.0": -9223372036854775808,
	} {
		in, err := decl.DecodeInput([]byte(`{"type":"start-thinking","timestamp":` + lit + `}`))
		if err != nil {
			t.Errorf("%s: %v", lit, err)
			continue
		}
		if got := in.(decl.StartThinking).Timestamp; got != want {
			t.Errorf("%s decoded to %d, want %d", lit, got, want)
		}
	}
}

// TestInputRoundTrip decodes each valid input, encodes it with MarshalJSON
// and decodes the result again: the two values must be equal, so the JSON
// form with its "type" discriminator is a faithful codec for AgentInput.
func TestInputRoundTrip(t *testing.T) {
	for _, tc := range validInputs {
		t.Run(tc.name, func(t *testing.T) {
			in, err := decl.DecodeInput([]byte(tc.json))
			if err != nil {
				t.Fatalf("DecodeInput: %v", err)
			}
			data, err := json.Marshal(in)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			again, err := decl.DecodeInput(data)
			if err != nil {
				t.Fatalf("DecodeInput(Marshal(input)): %v\n%s", err, data)
			}
			if !reflect.DeepEqual(in, again) {
				t.Errorf("round trip changed the input\nfirst:  %#v\nsecond: %#v\njson: %s", in, again, data)
			}
		})
	}
}

// TestMarshalInputs encodes inputs built in Go, including the zero values
// of required slices, which must encode as [] to satisfy the schema.
func TestMarshalInputs(t *testing.T) {
	msg := decl.Message{ID: "0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b20", Role: decl.RoleUser, Content: "hi", Timestamp: 1}
	tests := []struct {
		name  string
		input decl.AgentInput
		want  string
	}{
		{"nil tags encode as []", decl.SendUserMessage{Message: msg},
			`{"type":"send-user-message","message":{"id":"0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b20","role":"user","content":"hi","timestamp":1,"tags":[]}}`},
		{"nil calls encode as [], absent usage is left out", decl.SendAssiMessage{Message: msg},
			`{"type":"send-assi-message","message":{"id":"0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b20","role":"user","content":"hi","timestamp":1,"tags":[]},"calls":[]}`},
		{"oneOf variants write their discriminator", decl.SendAssiMessage{Message: msg, Calls: []decl.ToolCall{
			decl.ToolCallSearch{Query: "q", Limit: ptr(int64(3))},
			decl.Calculate{Expression: "1+1"},
		}},
			`{"type":"send-assi-message","message":{"id":"0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b20","role":"user","content":"hi","timestamp":1,"tags":[]},"calls":[{"tool":"search","query":"q","limit":3},{"tool":"calculate","expression":"1+1","precision":null}]}`},
		{"a null result is written, an absent mode is not", decl.CompleteCall{CallID: "c", Call: decl.ToolCallFetch{URL: "https://example.com"}},
			`{"type":"complete-call","callId":"c","call":{"tool":"fetch","url":"https://example.com"},"result":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.input)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("Marshal\ngot:  %s\nwant: %s", got, tc.want)
			}
			back, err := decl.DecodeInput(got)
			if err != nil {
				t.Fatalf("DecodeInput: %v", err)
			}
			if back.InputType() != tc.input.InputType() {
				t.Errorf("InputType = %q, want %q", back.InputType(), tc.input.InputType())
			}
		})
	}
}

// TestRoundTripOfNilRequiredSlice pins the one exception to the round trip
// of inputs built in Go that the modelgen manual states: a nil slice in a
// required property of a struct type encodes as [] and decodes as an empty,
// non-nil slice.
func TestRoundTripOfNilRequiredSlice(t *testing.T) {
	in := decl.SendUserMessage{Message: decl.Message{ID: "0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b20", Role: decl.RoleUser}}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decl.DecodeInput(data)
	if err != nil {
		t.Fatal(err)
	}
	tags := back.(decl.SendUserMessage).Message.Tags
	if tags == nil || len(tags) != 0 {
		t.Errorf("nil tags came back as %#v, want an empty, non-nil slice", tags)
	}
	in.Message.Tags = []string{}
	if !reflect.DeepEqual(decl.AgentInput(in), back) {
		t.Errorf("apart from nil becoming empty, the round trip changed the input\nbefore: %#v\nafter:  %#v", in, back)
	}
}

// TestDecodeInputErrors checks that every kind of bad input is an error that
// says what and where.
func TestDecodeInputErrors(t *testing.T) {
	const msg = `{"id":"0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b20","role":"user","content":"hi","timestamp":1,"tags":[]}`
	tests := []struct {
		name, json string
		want       string // the whole error message
	}{
		{"not JSON", `{"type":`, "decoding input: unexpected EOF"},
		{"empty", ``, "decoding input: empty input"},
		{"only white space", " \n\t", "decoding input: empty input"},
		{"trailing garbage", `{"type":"start-thinking","timestamp":1} x`, "decoding input: unexpected data after the JSON value"},
		{"second value", `{"type":"start-thinking","timestamp":1}{}`, "decoding input: unexpected data after the JSON value"},
		{"not an object", `["start-thinking"]`, "decoding input: not a JSON object"},
		{"no type", `{"timestamp":1}`, `decoding input: missing string property "type" (want one of "complete-call", "send-assi-message", "send-user-message" and "start-thinking")`},
		{"type not a string", `{"type":7}`, `decoding input: missing string property "type" (want one of "complete-call", "send-assi-message", "send-user-message" and "start-thinking")`},
		{"unknown type", `{"type":"send-message"}`, `decoding input: unknown type "send-message" (want one of "complete-call", "send-assi-message", "send-user-message" and "start-thinking")`},
		{"missing required property", `{"type":"start-thinking"}`, `decoding input "start-thinking": /: missing properties: 'timestamp'`},
		{"a property the schema does not declare", `{"type":"start-thinking","timestamp":3,"extra":true}`, `decoding input "start-thinking": /extra: a property the spec does not declare`},
		{"wrong type", `{"type":"start-thinking","timestamp":"now"}`, `decoding input "start-thinking": /timestamp: expected integer, but got string`},
		{"fraction for an integer", `{"type":"start-thinking","timestamp":1.5}`, `decoding input "start-thinking": /timestamp: expected integer, but got number`},
		{"every violation is reported", `{"type":"send-user-message","message":{"id":"nope","role":"robot","content":7,"timestamp":-1,"tags":["a","a"]},"extra":1}`,
			`decoding input "send-user-message": /: additionalProperties 'extra' not allowed; /message/content: expected string, but got number; /message/id: 'nope' is not valid 'uuid'; /message/role: value must be one of "user", "assistant", "tool"; /message/tags: items at index 0 and 1 are equal; /message/timestamp: must be >= 0 but found -1`},
		{"pattern", `{"type":"complete-call","callId":"c","call":{"tool":"calculate","expression":"rm -rf","precision":null},"result":null}`,
			`decoding input "complete-call": /call/expression: does not match pattern '^[0-9+*/() .-]+$'`},
		{"unknown discriminator", `{"type":"complete-call","callId":"c","call":{"tool":"delete"},"result":null}`,
			`decoding input "complete-call": /call/tool: value must be one of "search", "fetch", "calculate"`},
		{"format", `{"type":"complete-call","callId":"c","call":{"tool":"fetch","url":"not a url"},"result":null}`,
			`decoding input "complete-call": /call/url: 'not a url' is not valid 'uri'`},
		{"variant's required properties", `{"type":"complete-call","callId":"c","call":{"tool":"search"},"result":null}`,
			`decoding input "complete-call": /call: missing properties: 'query'`},
		{"too many items", `{"type":"send-assi-message","message":` + msg + `,"calls":[` + strings.Repeat(`{"tool":"search","query":"q"},`, 8) + `{"tool":"search","query":"q"}]}`,
			`decoding input "send-assi-message": /calls: maximum 8 items required, but found 9 items`},
		{"a property name in another case cannot bypass the schema", `{"type":"start-thinking","timestamp":1,"TimeStamp":-5}`,
			`decoding input "start-thinking": /TimeStamp: property names are case-sensitive: "TimeStamp" is not "timestamp"`},
		{"nor fill an optional field the schema never saw", `{"type":"complete-call","callId":"c","call":{"tool":"search","query":"q","LIMIT":500},"result":null}`,
			`decoding input "complete-call": /call/LIMIT: property names are case-sensitive: "LIMIT" is not "limit"`},
		{"the key in another case is named", `{"type":"send-user-message","message":{"id":"0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b20","Id":"zz","role":"user","content":"hi","timestamp":1,"tags":[]}}`,
			`decoding input "send-user-message": /message/Id: property names are case-sensitive: "Id" is not "id"`},
		{"integer out of range", `{"type":"start-thinking","timestamp":1e30}`,
			`decoding input "start-thinking": /timestamp: number 1e30 does not fit in a Go int64`},
		{"integer out of range, written as one", `{"type":"start-thinking","timestamp":9223372036854775808}`,
			`decoding input "start-thinking": /timestamp: number 9223372036854775808 does not fit in a Go int64`},
		{"integer out of range in a nested object", `{"type":"send-user-message","message":{"id":"0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b20","role":"user","content":"hi","timestamp":1e19,"tags":[]}}`,
			`decoding input "send-user-message": /message/timestamp: number 1e19 does not fit in a Go int64`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := decl.DecodeInput([]byte(tc.json))
			if err == nil {
				t.Fatalf("DecodeInput succeeded: %#v", in)
			}
			if in != nil {
				t.Errorf("DecodeInput returned %#v with the error", in)
			}
			if err.Error() != tc.want {
				t.Errorf("error\ngot:  %s\nwant: %s", err, tc.want)
			}
		})
	}
}

// TestAgentState checks the projections of AgentState onto each actor's
// state and context, and WithStateOf.
func TestAgentState(t *testing.T) {
	m := decl.Message{ID: "1", Role: decl.RoleUser}
	s := decl.AgentState{
		UserMessages: []decl.Message{m},
		Thinking:     true,
		PendingCalls: map[string]decl.ToolCall{"c": decl.ToolCallSearch{Query: "q"}},
	}
	if got := s.StateOfUser(); !reflect.DeepEqual(got, decl.StateOfUser{UserMessages: s.UserMessages}) {
		t.Errorf("StateOfUser = %#v", got)
	}
	if got := s.ContextOfToolkit(); !reflect.DeepEqual(got, decl.ContextOfToolkit{PendingCalls: s.PendingCalls}) {
		t.Errorf("ContextOfToolkit = %#v", got)
	}
	ctx := s.ContextOfLlm()
	if len(ctx.UserMessages) != 1 || len(ctx.PendingCalls) != 1 || ctx.Results != nil {
		t.Errorf("ContextOfLlm = %#v", ctx)
	}
	next := s.WithStateOfLlm(decl.StateOfLlm{Thinking: false, Usage: map[string]decl.Usage{"m": {PromptTokens: 1}}})
	if next.Thinking || next.Usage["m"].PromptTokens != 1 || len(next.AssiMessages) != 0 {
		t.Errorf("WithStateOfLlm = %#v", next)
	}
	if !s.Thinking || s.Usage != nil {
		t.Error("WithStateOfLlm changed its receiver")
	}
	if len(next.UserMessages) != 1 {
		t.Error("WithStateOfLlm dropped another actor's state")
	}
	for _, a := range decl.Actors() {
		if !a.Valid() {
			t.Errorf("actor %q is not Valid", a)
		}
	}
	if decl.Actor("nobody").Valid() {
		t.Error(`Actor("nobody").Valid()`)
	}
}

// TestStateJSON checks that an AgentState survives a JSON round trip,
// sealed interfaces included: the durable form of a snapshot. Its nil lists
// and maps encode as empty, as a state always has them, and come back so.
func TestStateJSON(t *testing.T) {
	s := decl.AgentState{
		AssiMessages: []decl.Message{},
		Usage:        map[string]decl.Usage{},
		UserMessages: []decl.Message{{ID: "1", Role: decl.RoleUser, Tags: []string{"x"}}},
		PendingCalls: map[string]decl.ToolCall{
			"a": decl.ToolCallSearch{Query: "q"},
			"b": decl.Calculate{Expression: "1", Precision: ptr(int64(2))},
			"c": nil,
		},
		Results: map[string]*string{"a": ptr("done"), "b": nil},
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back decl.AgentState
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("Unmarshal: %v\n%s", err, data)
	}
	if !reflect.DeepEqual(s, back) {
		t.Errorf("round trip changed the state\nbefore: %#v\nafter:  %#v\njson: %s", s, back, data)
	}
	nils := s
	nils.AssiMessages, nils.Usage = nil, nil
	if again, err := json.Marshal(nils); err != nil || string(again) != string(data) {
		t.Errorf("with nil lists and maps the state encodes as\n%s (%v), want as with empty ones\n%s", again, err, data)
	}
}

func ExampleDecodeInput() {
	in, err := decl.DecodeInput([]byte(`{"type":"start-thinking","timestamp":42}`))
	if err != nil {
		panic(err)
	}
	switch in := in.(type) {
	case decl.InputFromLlm:
		fmt.Printf("llm dispatched %s: %+v\n", in.InputType(), in)
	}
	_, err = decl.DecodeInput([]byte(`{"type":"start-thinking","timestamp":"soon"}`))
	fmt.Println(err)
	// Output:
	// llm dispatched start-thinking: {Timestamp:42}
	// decoding input "start-thinking": /timestamp: expected integer, but got string
}

// TestWithTimestamp: an input with a required integer timestamp is
// Timestamped, and WithTimestamp returns a copy with the time set, leaving
// the input it was called on as it was; an input without one is not.
func TestWithTimestamp(t *testing.T) {
	in := decl.StartThinking{Timestamp: 5}
	var input decl.AgentInput = in
	ts, ok := input.(decl.Timestamped)
	if !ok {
		t.Fatal("StartThinking is not Timestamped")
	}
	if got := ts.WithTimestamp(42); got != (decl.StartThinking{Timestamp: 42}) || in.Timestamp != 5 {
		t.Fatalf("WithTimestamp(42) = %+v, and the input is now %+v; want a copy stamped 42 and the input unchanged", got, in)
	}
	if _, ok := decl.AgentInput(decl.CompleteCall{}).(decl.Timestamped); ok {
		t.Error("CompleteCall, which has no timestamp, is Timestamped")
	}
}

// TestInputActor: each input names the actor that dispatches it, the one
// whose sealed interface it implements, by its name in the spec.
func TestInputActor(t *testing.T) {
	for _, in := range []decl.AgentInput{decl.SendUserMessage{}, decl.SendAssiMessage{}, decl.StartThinking{}, decl.CompleteCall{}} {
		var want decl.Actor
		switch in.(type) {
		case decl.InputFromUser:
			want = decl.ActorUser
		case decl.InputFromLlm:
			want = decl.ActorLlm
		case decl.InputFromToolkit:
			want = decl.ActorToolkit
		}
		if got := in.InputActor(); got != string(want) || !decl.Actor(got).Valid() {
			t.Errorf("%s: InputActor() = %q, want %q", in.InputType(), got, want)
		}
	}
}
