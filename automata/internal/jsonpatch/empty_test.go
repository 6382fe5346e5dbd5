package jsonpatch

import (
	"encoding/json"
	"reflect"
	"testing"
)

// state is as agentgen generates a state type: MarshalJSON writes the nil
// lists it names in JSONEmptyOnNil as empty; maybe is nullable, and stays
// null when nil.
type state struct {
	Items []string          `json:"items"`
	Tags  map[string]string `json:"tags"`
	Maybe []string          `json:"maybe"`
	N     int               `json:"n"`
}

func (v state) MarshalJSON() ([]byte, error) {
	type plain state
	if v.Items == nil {
		v.Items = []string{}
	}
	if v.Tags == nil {
		v.Tags = map[string]string{}
	}
	return json.Marshal(plain(v))
}

func (state) JSONEmptyOnNil() []string { return []string{"items", "tags"} }

// TestEmptyOnNil: a state type whose MarshalJSON writes nil lists as empty
// is diffed field by field, not replaced whole: a first item is one add, a
// list going from empty to nil is no change; a nullable list that is
// nil is still null. Each patch turns the JSON of the old value into the
// JSON of the new.
func TestEmptyOnNil(t *testing.T) {
	items := make([]string, 1, 4)
	items[0] = "a"
	for _, tc := range []struct {
		name     string
		old, new state
		want     []Op
	}{
		{"first item of a nil list", state{}, state{Items: []string{"a"}}, []Op{{Op: "add", Path: "/items/-", Value: json.RawMessage(`"a"`)}}},
		{"an item appended in place", state{Items: items}, state{Items: append(items, "b")}, []Op{{Op: "add", Path: "/items/-", Value: json.RawMessage(`"b"`)}}},
		{"empty to nil", state{Items: []string{}, Tags: map[string]string{}}, state{}, nil},
		{"first key of a nil map", state{}, state{Tags: map[string]string{"k": "v"}}, []Op{{Op: "add", Path: "/tags/k", Value: json.RawMessage(`"v"`)}}},
		{"a nullable list set", state{}, state{Maybe: []string{}}, []Op{{Op: "replace", Path: "/maybe", Value: json.RawMessage(`[]`)}}},
		{"a number", state{N: 1}, state{N: 2}, []Op{{Op: "replace", Path: "/n", Value: json.RawMessage(`2`)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := Diff(tc.old, tc.new)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ops, tc.want) {
				t.Errorf("Diff = %s, want %s", show(ops), show(tc.want))
			}
			var doc, want any
			data, _ := json.Marshal(tc.old)
			json.Unmarshal(data, &doc)
			got, err := Apply(doc, ops)
			if err != nil {
				t.Fatal(err)
			}
			data, _ = json.Marshal(tc.new)
			json.Unmarshal(data, &want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the patch makes %v of the old JSON, want %v", got, want)
			}
		})
	}
}

func show(ops []Op) string {
	data, _ := json.Marshal(ops)
	return string(data)
}
