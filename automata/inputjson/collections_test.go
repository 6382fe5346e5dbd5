package inputjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// decodeShape decodes a sealed interface by its "kind", as a generated
// decodeX function does.
func decodeShape(data []byte) (input, error) {
	var probe struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, err
	}
	switch probe.Kind {
	case "ping":
		return unmarshal[ping](data)
	case "note":
		return unmarshal[note](data)
	}
	return nil, errors.New("unknown kind " + probe.Kind)
}

func TestSliceOf(t *testing.T) {
	dec := SliceOf(decodeShape)
	for _, tc := range []struct {
		data string
		want []input
	}{
		{``, nil},
		{`null`, nil},
		{`[]`, []input{}},
		{`[{"kind":"ping","count":1},{"kind":"note","text":"hi"}]`, []input{ping{Count: 1}, note{Text: "hi"}}},
	} {
		got, err := dec([]byte(tc.data))
		if err != nil {
			t.Errorf("%s: %v", tc.data, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: got %#v, want %#v", tc.data, got, tc.want)
		}
	}
	for data, want := range map[string]string{
		`[{"kind":"ping"},{"kind":"square"}]`: "[1]: unknown kind square",
		`{}`:                                  "json: cannot unmarshal object into Go value of type []json.RawMessage",
	} {
		if _, err := dec([]byte(data)); err == nil || err.Error() != want {
			t.Errorf("%s: got error %v, want %q", data, err, want)
		}
	}
}

func TestMapOf(t *testing.T) {
	dec := MapOf(decodeShape)
	for _, tc := range []struct {
		data string
		want map[string]input
	}{
		{``, nil},
		{`null`, nil},
		{`{}`, map[string]input{}},
		{`{"a":{"kind":"ping","count":1},"b":{"kind":"note","text":"hi"}}`, map[string]input{"a": ping{Count: 1}, "b": note{Text: "hi"}}},
	} {
		got, err := dec([]byte(tc.data))
		if err != nil {
			t.Errorf("%s: %v", tc.data, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: got %#v, want %#v", tc.data, got, tc.want)
		}
	}
	for data, want := range map[string]string{
		`{"x":{"kind":"square"}}`: `"x": unknown kind square`,
		`[]`:                      "json: cannot unmarshal array into Go value of type map[string]json.RawMessage",
	} {
		if _, err := dec([]byte(data)); err == nil || err.Error() != want {
			t.Errorf("%s: got error %v, want %q", data, err, want)
		}
	}
}

func TestNested(t *testing.T) {
	got, err := MapOf(SliceOf(decodeShape))([]byte(`{"k":[{"kind":"note","text":"a"},{"kind":"circle"}]}`))
	if want := `"k": [1]: unknown kind circle`; err == nil || err.Error() != want {
		t.Fatalf("got %v, %v; want error %q", got, err, want)
	}
	got, err = MapOf(SliceOf(decodeShape))([]byte(`{"k":[{"kind":"note","text":"a"}]}`))
	if want := map[string][]input{"k": {note{Text: "a"}}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
}
