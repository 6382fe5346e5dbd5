package inputjson

import (
	"encoding/json"
	"strings"
	"testing"
)

// fastTestDecoder decodes the input "t", whose property "v" has the schema
// prop, into a map.
func fastTestDecoder(prop string) *Decoder[map[string]any] {
	schema := `{"inputs": {"t": {"type": "object", "properties": {"type": {"const": "t"}, "v": ` + prop + `},
		"required": ["type", "v"]}}, "$defs": {"S": {"type": "string", "maxLength": 2}}}`
	return NewDecoder(schema, map[string]func([]byte) (map[string]any, error){"t": func(data []byte) (map[string]any, error) {
		var m map[string]any
		return m, json.Unmarshal(data, &m)
	}})
}

// TestFastKeywords checks each keyword the fast path checks at its edges:
// the fast path takes exactly what the validator accepts.
func TestFastKeywords(t *testing.T) {
	tests := []struct {
		prop   string
		values []string
	}{
		{`{"type": "integer", "minimum": -3, "maximum": 5}`, []string{`-4`, `-3`, `0`, `5`, `6`, `99999999999999999999`, `-99999999999999999999`}},
		{`{"type": "integer", "exclusiveMinimum": -3, "exclusiveMaximum": 5}`, []string{`-3`, `-2`, `4`, `5`}},
		{`{"type": "number", "minimum": 0.5, "exclusiveMaximum": 1}`, []string{`0.49999999999999999999`, `0.5`, `0.75`, `1`, `0.99999999999999999999`, `1.0`, `-0`}},
		{`{"type": "number"}`, []string{`-0`, `-0.0`, `0.0`, `2.50`, `-7.000`, `1.5`}},
		{`{"type": "integer", "maximum": 1e20}`, []string{`99999999999999999999`, `100000000000000000001`, `5`}},
		{`{"type": "string", "minLength": 2, "maxLength": 3}`, []string{`"a"`, `"ab"`, `"abc"`, `"abcd"`, `"é\u00e9"`, `"\u00e9"`, `"😀😀😀"`, `"😀😀😀😀"`, `"\ud83d\ude00"`}},
		{`{"enum": ["a", "b\n"]}`, []string{`"a"`, `"b\n"`, `"b\u000a"`, `"c"`, `1`}},
		{`{"type": "string", "const": "x"}`, []string{`"x"`, `"\u0078"`, `"y"`}},
		{`{"type": "boolean"}`, []string{`true`, `false`, `"true"`, `0`}},
		{`{"type": ["string", "null"]}`, []string{`"a"`, `null`, `1`}},
		{`{"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2}`, []string{`[]`, `[1]`, `[1,2]`, `[1,2,3]`, `[1,"2"]`, `[ 1 , 2 ]`}},
		{`{"type": "object", "additionalProperties": {"$ref": "#/$defs/S"}}`, []string{`{}`, `{"a":"x"}`, `{"a":"xyz"}`, `{"a":"x","a":"y"}`, `{"a":"x","A":"y"}`, `{"":"x"}`}},
		{`{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}`, []string{`{}`, `{"a":"x"}`, `{"A":"x"}`, `{"a":"x","b":1}`, `{"a":"x","a":"y"}`, `{"\u0061":"x"}`}},
		{`{"type": "object", "additionalProperties": false}`, []string{`{}`, `{"a":1}`}},
		{`{"$ref": "#/$defs/S", "description": "d"}`, []string{`"ab"`, `"abc"`, `1`}},
	}
	for _, tc := range tests {
		d := fastTestDecoder(tc.prop)
		for _, v := range tc.values {
			data := []byte(`{"type":"t","v":` + v + `}`)
			fastIn, fast := d.decodeFast(data)
			slowIn, err := d.decodeValidated(data)
			// null, a duplicate, a key in another case, an escaped key and a
			// number out of an int64 or written 1.0 go to the validator,
			// whatever it says.
			toValidator := strings.Contains(v, "null") || strings.Contains(v, `"a":"x","a"`) || strings.Contains(v, `"A"`) ||
				strings.Contains(v, `\u0061`) || v == `-0.0` || v == `0.0` || v == `-7.000` || len(v) > 19 && strings.HasPrefix(tc.prop, `{"type": "integer"`) || v == `1.0` && strings.Contains(tc.prop, "integer")
			fastJSON, _ := json.Marshal(fastIn)
			slowJSON, _ := json.Marshal(slowIn)
			switch {
			case fast && err == nil && string(fastJSON) != string(slowJSON):
				t.Errorf("%s: %s: decoded to %s on the fast path, %s on the validator's", tc.prop, v, fastJSON, slowJSON)
			case fast && err != nil:
				t.Errorf("%s: %s: the fast path took what the validator refuses: %v", tc.prop, v, err)
			case !fast && err == nil && !toValidator:
				t.Errorf("%s: %s: the validator accepts it, the fast path does not take it", tc.prop, v)
			}
		}
	}
}

// TestFastLeavesKeywords checks that a schema with a keyword the fast path
// does not check is the validator's.
func TestFastLeavesKeywords(t *testing.T) {
	for _, prop := range []string{
		`{"type": "string", "pattern": "^a$"}`,
		`{"type": "string", "format": "email"}`,
		`{"type": "number", "multipleOf": 2}`,
		`{"type": "array", "items": {"type": "string"}, "uniqueItems": true}`,
		`{"type": "array"}`,
		`{"type": "object"}`,
		`{"type": "object", "additionalProperties": true}`,
		`{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}`,
		`{"type": "object", "minProperties": 1, "additionalProperties": {"type": "string"}}`,
		`{"allOf": [{"type": "string"}]}`,
		`{"oneOf": [{"type": "string"}, {"type": "integer"}]}`,
		`{"type": "string", "if": {"const": "a"}, "then": {"maxLength": 0}}`,
		`{"const": 1}`,
		`{"enum": ["a", 1]}`,
		`{"type": ["string", "integer"]}`,
		`{}`,
		`true`,
		`{"$ref": "#/$defs/S", "maxLength": 1}`,
		`{"$ref": "#/$defs/Missing"}`,
		`{"type": "string", "x-unknown": 1}`,
	} {
		d := fastTestDecoder(prop) // the last but one does not compile
		if nodes := d.fast(); nodes["t"] != nil {
			t.Errorf("%s: the fast path checks it", prop)
		}
	}
	if nodes := fastTestDecoder(`{"type": "string"}`).fast(); nodes["t"] == nil {
		t.Error(`{"type": "string"}: the fast path does not check it`)
	}
}
