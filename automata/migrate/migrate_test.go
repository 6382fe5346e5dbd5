package migrate_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/migrate"
)

func TestInputType(t *testing.T) {
	tests := []struct {
		name, data, want, err string
	}{
		{"first", `{"type":"send","x":1}`, "send", ""},
		{"after others", ` { "a" : [1, {"type":"no"}, "]"], "b": {"c": "}"}, "n": -1.5e3, "t": true, "type" : "ask" }`, "ask", ""},
		{"escaped", `{"ty\u0070e":"a\u002db"}`, "a-b", ""},
		{"not a string", `{"type":1}`, "", `"type" is not a string`},
		{"missing", `{"a":"b"}`, "", `no "type" property`},
		{"not an object", `["type","a"]`, "", "not a JSON object"},
		{"cut", `{"a":"b`, "", "unexpected end"},
		{"no colon", `{"a" "b"}`, "", "want a :"},
		{"no comma", `{"a":"b" "type":"c"}`, "", "want a , or }"},
		{"control character", "{\"a\":\"\x01\",\"type\":\"c\"}", "", "want a JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := migrate.InputType([]byte(tt.data))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("InputType = %q, %v; want an error containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("InputType = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// FuzzInputType: InputType never panics, and on a JSON object whose "type"
// is a string (the one encoding/json reads, when there is no duplicate) it
// finds it.
func FuzzInputType(f *testing.F) {
	f.Add([]byte(`{"type":"send","message":{"id":"a","content":"b"}}`))
	f.Add([]byte(`{"a":[1,2,{"b":null}],"type":"x"}`))
	f.Add([]byte(`{"type":"\ud83d\ude00"}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := migrate.InputType(data)
		var raw map[string]json.RawMessage
		var want string
		if json.Unmarshal(data, &raw) != nil || json.Unmarshal(raw["type"], &want) != nil {
			return
		}
		if strings.Count(string(data), "type") > 1 || strings.Contains(string(data), `\`) {
			return // maybe a duplicate, which encoding/json reads last and InputType first
		}
		if err != nil || got != want {
			t.Fatalf("InputType(%s) = %q, %v; encoding/json reads %q", data, got, err, want)
		}
	})
}

// A chain of versions: 1 -> 2 renames a's property x to y (breaking), 2 ->
// 3 adds an optional property to b (compatible), 3 -> 4 makes a's y an
// integer (breaking) and removes b.
type (
	a1 struct{ X string }
	a2 struct{ Y string }
	a3 struct{ Y string }
	a4 struct{ Y int }
	b  struct {
		Z string `json:"z,omitempty"`
	}
)

func (a1) InputType() string { return "a" }
func (a2) InputType() string { return "a" }
func (a3) InputType() string { return "a" }
func (a4) InputType() string { return "a" }
func (b) InputType() string  { return "b" }

func (v a2) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"type": "a", "y": v.Y})
}

func (v a4) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"type": "a", "y": v.Y})
}

func decodeA[T any](conv func(map[string]any) (T, error)) func([]byte) (any, error) {
	return func(data []byte) (any, error) {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, err
		}
		if m["type"] != "a" {
			return nil, fmt.Errorf("not an a: %v", m["type"])
		}
		return conv(m)
	}
}

var history = &migrate.History{Current: 4, Steps: []migrate.Step{
	{Inputs: map[string]migrate.Input{"a": {
		Decode: decodeA(func(m map[string]any) (a1, error) {
			x, ok := m["x"].(string)
			if !ok {
				return a1{}, errors.New("missing properties: 'x'")
			}
			return a1{x}, nil
		}),
		Migrate: func(in any) any { return a2{Y: in.(a1).X} },
	}}},
	{}, // compatible
	{Inputs: map[string]migrate.Input{
		"a": {
			Decode: decodeA(func(m map[string]any) (a3, error) {
				y, ok := m["y"].(string)
				if !ok {
					return a3{}, errors.New("missing properties: 'y'")
				}
				return a3{y}, nil
			}),
			Migrate: func(in any) any { return a4{Y: len(in.(a3).Y)} },
		},
		"b": {Decode: func([]byte) (any, error) { return b{}, nil }, Migrate: func(any) any { return nil }},
	}},
}}

func decodeCurrent(data []byte) (any, error) {
	var v struct {
		Type string `json:"type"`
		Y    *int   `json:"y"`
	}
	if err := json.Unmarshal(data, &v); err != nil || v.Type != "a" || v.Y == nil {
		return nil, fmt.Errorf("not an a of version 4: %s", data)
	}
	return a4{*v.Y}, nil
}

func TestInputChain(t *testing.T) {
	tests := []struct {
		name    string
		version int
		data    string
		want    any
		err     string
	}{
		{"from 1, through a re-encoded version 2", 1, `{"type":"a","x":"four"}`, a4{4}, ""},
		{"from 2", 2, `{"type":"a","y":"abc"}`, a4{3}, ""},
		{"current", 4, `{"type":"a","y":7}`, a4{7}, ""},
		{"dropped on the way", 2, `{"type":"b"}`, nil, `input "b" dropped by the migration from version 3 to 4`},
		{"invalid under its own version", 1, `{"type":"a","y":"x"}`, nil, "does not decode under version 1"},
		{"no type", 1, `{"x":"a"}`, nil, "does not decode under version 1"},
		{"newer", 5, `{"type":"a","y":1}`, nil, "written under version 5 of the spec, newer than version 4"},
		{"zero", 0, `{}`, nil, "versions start at 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := history.Input(tt.version, []byte(tt.data), decodeCurrent)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Input = %v, %v; want an error containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Input = %#v, %v; want %#v", got, err, tt.want)
			}
		})
	}
	var dropped *migrate.DroppedError
	if _, err := history.Input(1, []byte(`{"type":"b"}`), decodeCurrent); !errors.As(err, &dropped) || dropped.From != 3 {
		t.Errorf("b of version 1: %v, want a *DroppedError from 3", err)
	}
	var verr *migrate.VersionError
	if _, err := history.Input(9, nil, decodeCurrent); !errors.As(err, &verr) || verr.Version != 9 || verr.Current != 4 {
		t.Errorf("version 9: %v, want a *VersionError", err)
	}
}

// TestMigrationResultIsValidated: what a migration makes is validated by
// the current version, as a live input is: a migration that makes an
// input the current schema refuses is an error of that migration, at the
// version that has it (not only once a later version re-encodes it).
func TestMigrationResultIsValidated(t *testing.T) {
	h := &migrate.History{Current: 2, Steps: []migrate.Step{{Inputs: map[string]migrate.Input{"a": {
		Decode:  migrate.Unmarshal[a1],
		Migrate: func(any) any { return a4{Y: -1} }, // a y the current schema refuses
	}}}}}
	decode := func(data []byte) (any, error) {
		in, err := decodeCurrent(data)
		if err == nil && in.(a4).Y < 0 {
			return nil, errors.New("/y: must be >= 0")
		}
		return in, err
	}
	_, err := h.Input(1, []byte(`{"type":"a","X":"x"}`), decode)
	var me *migrate.MigrationError
	if !errors.As(err, &me) || me.From != 1 || !strings.Contains(err.Error(), "its result does not decode as version 2: /y: must be >= 0") {
		t.Fatalf("Input = %v, want the migration from 1 to 2 named with the schema's complaint", err)
	}
}

func TestMigrationPanicIsAnError(t *testing.T) {
	h := &migrate.History{Current: 2, Steps: []migrate.Step{{Inputs: map[string]migrate.Input{"a": {
		Decode:  func([]byte) (any, error) { return a1{}, nil },
		Migrate: func(any) any { panic("not implemented: migration of a from version 1") },
	}}}}}
	_, err := h.Input(1, []byte(`{"type":"a"}`), decodeCurrent)
	var me *migrate.MigrationError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "not implemented") || errors.As(err, new(*migrate.InvalidError)) {
		t.Fatalf("Input = %v, want a *MigrationError that says the migration panicked", err)
	}
}

// jsonStates is a StateCodec that writes states as JSON.
type jsonStates struct{}

func (jsonStates) EncodeStateValue(s any) ([]byte, error)    { return json.Marshal(s) }
func (jsonStates) DecodeStateValue(data []byte, p any) error { return json.Unmarshal(data, p) }

type (
	s1 struct{ Acks []string }
	s2 struct{ Acknowledgements []string }
	s3 struct {
		Acknowledgements []string
		Count            int
	}
)

func TestStateChain(t *testing.T) {
	steps := []migrate.Step{
		{StateChanged: true, State: &migrate.State{New: func() any { return new(s1) }, Migrate: func(p any) any { return s2{p.(*s1).Acks} }}},
		{StateChanged: true, State: &migrate.State{New: func() any { return new(s2) }, Migrate: func(p any) any {
			s := p.(*s2)
			return s3{s.Acknowledgements, len(s.Acknowledgements)}
		}}},
		{}, // the state is the same at 4
	}
	h := &migrate.History{Current: 4, Steps: steps}
	decode := func(data []byte) (any, error) {
		var s s3
		return s, json.Unmarshal(data, &s)
	}
	got, err := h.State(1, []byte(`{"Acks":["t1","t2"]}`), jsonStates{}, decode)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(s3{[]string{"t1", "t2"}, 2}) {
		t.Fatalf("State from 1 = %#v, %v", got, err)
	}
	// Without the second migration, a snapshot of 1 or 2 cannot come up;
	// one of 3 can, as it is.
	steps[1].State = nil
	for v := 1; v <= 2; v++ {
		if _, err := h.State(v, []byte(`{}`), jsonStates{}, decode); !errors.Is(err, migrate.ErrNoStateMigration) || !strings.Contains(err.Error(), "version 2 to 3") {
			t.Errorf("State from %d = %v, want ErrNoStateMigration at version 2 to 3", v, err)
		}
	}
	if got, err := h.State(3, []byte(`{"Count":1}`), jsonStates{}, decode); err != nil || got.(s3).Count != 1 {
		t.Errorf("State from 3 = %v, %v", got, err)
	}
	// A snapshot its codec cannot decode as its version's state (its frame
	// is checksummed: the codec cannot, as gob cannot some interfaces) is
	// replayed over, not called corrupt.
	steps[1].State = &migrate.State{New: func() any { return new(s2) }, Migrate: func(p any) any { return s3{} }}
	_, err = h.State(1, []byte(`{"Acks":`), jsonStates{}, decode)
	var no *migrate.NoStateMigrationError
	if !errors.Is(err, migrate.ErrNoStateMigration) || !errors.As(err, &no) || no.Reason == nil || errors.As(err, new(*migrate.InvalidError)) {
		t.Errorf("an undecodable snapshot: %v, want ErrNoStateMigration with its reason", err)
	}
	// A migration that returns nil is an error, never a state left to
	// the next decoder.
	steps[0].State = &migrate.State{New: func() any { return new(s1) }, Migrate: func(any) any { return nil }}
	if _, err := h.State(1, []byte(`{"Acks":["a"]}`), jsonStates{}, decode); !errors.As(err, new(*migrate.MigrationError)) || !strings.Contains(err.Error(), "returned nil") {
		t.Errorf("a migration returning nil: %v, want a *MigrationError", err)
	}
	// A codec that is no StateCodec cannot run the migration.
	if _, err := h.State(1, []byte(`{}`), nil, decode); !errors.As(err, &no) || !strings.Contains(err.Error(), "no migrate.StateCodec") {
		t.Errorf("no StateCodec: %v", err)
	}
}
