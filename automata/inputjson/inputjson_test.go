package inputjson

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// input is the sealed interface of the test inputs, as in a generated decl
// package.
type input interface{ inputType() string }

type ping struct {
	Count int64  `json:"count"`
	Limit *int64 `json:"limit,omitempty"`
	Tags  []item `json:"tags,omitempty"`
}

type item struct {
	Weight int64 `json:"weight"`
}

func (ping) inputType() string { return "ping" }

type note struct {
	Text string `json:"text"`
}

func (note) inputType() string { return "note" }

func unmarshal[T input](data []byte) (input, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}

const testSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "inputs": {
    "ping": {
      "type": "object",
      "properties": {
        "type": {"const": "ping"},
        "count": {"type": "integer", "minimum": 0},
        "limit": {"type": "integer", "maximum": 10},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/Item"}}
      },
      "required": ["type", "count"]
    },
    "note": {
      "type": "object",
      "properties": {
        "type": {"const": "note"},
        "text": {"type": "string", "format": "email"}
      },
      "required": ["type", "text"],
      "additionalProperties": false
    }
  },
  "$defs": {
    "Item": {
      "type": "object",
      "properties": {"weight": {"type": "integer"}},
      "required": ["weight"]
    }
  }
}`

var testDecoder = NewDecoder(testSchema, map[string]func([]byte) (input, error){
	"ping": unmarshal[ping],
	"note": unmarshal[note],
})

func ptr[T any](v T) *T { return &v }

func TestDecode(t *testing.T) {
	tests := []struct {
		name, json string
		want       input
	}{
		{"an input", `{"type":"note","text":"a@example.com"}`, note{Text: "a@example.com"}},
		{"white space around the value", " \n\t{\"type\":\"ping\",\"count\":1}\n ", ping{Count: 1}},
		{"integers written with a fraction or an exponent", `{"type":"ping","count":1e3,"limit":2.0,"tags":[{"weight":0.5e1},{"weight":-2.0}]}`,
			ping{Count: 1000, Limit: ptr(int64(2)), Tags: []item{{5}, {-2}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := testDecoder.Decode([]byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decode = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, json string
		want       string // the whole error message
	}{
		{"empty input", ``, "decoding input: empty input"},
		{"only white space", " \n\t", "decoding input: empty input"},
		{"not JSON", `{"type":`, "decoding input: unexpected EOF"},
		{"trailing data", `{"type":"ping","count":1} x`, "decoding input: unexpected data after the JSON value"},
		{"a second value", `{"type":"ping","count":1}{}`, "decoding input: unexpected data after the JSON value"},
		{"not an object", `["ping"]`, "decoding input: not a JSON object"},
		{"no type", `{"count":1}`, `decoding input: missing string property "type" (want one of "note" and "ping")`},
		{"type not a string", `{"type":1}`, `decoding input: missing string property "type" (want one of "note" and "ping")`},
		{"unknown type", `{"type":"pong"}`, `decoding input: unknown type "pong" (want one of "note" and "ping")`},
		{"every violation, sorted", `{"type":"note","text":"nope","extra":1}`,
			`decoding input "note": /: additionalProperties 'extra' not allowed; /text: 'nope' is not valid 'email'`},
		{"a violation in a $defs type", `{"type":"ping","count":-1,"tags":[{"weight":"x"}]}`,
			`decoding input "ping": /count: must be >= 0 but found -1; /tags/0/weight: expected integer, but got string`},
		{"a fraction for an integer", `{"type":"ping","count":1.5}`, `decoding input "ping": /count: expected integer, but got number`},
		{"an integer out of range", `{"type":"ping","count":1e19}`, `decoding input "ping": /count: number 1e19 does not fit in a Go int64`},
		{"an integer out of range in an array", `{"type":"ping","count":1,"tags":[{"weight":9223372036854775808}]}`,
			`decoding input "ping": /tags/weight: number 9223372036854775808 does not fit in a Go int64`},
		{"a key in another case", `{"type":"ping","count":1,"Count":-5}`,
			`decoding input "ping": /Count: property names are case-sensitive: "Count" is not "count"`},
		{"a key in another case the schema never saw", `{"type":"ping","count":1,"LIMIT":500}`,
			`decoding input "ping": /LIMIT: property names are case-sensitive: "LIMIT" is not "limit"`},
		{"a nested key in another case", `{"type":"ping","count":1,"tags":[{"weight":1,"Weight":2}]}`,
			`decoding input "ping": /tags/0/Weight: property names are case-sensitive: "Weight" is not "weight"`},
		{"a key written twice", `{"type":"note","text":"a@b.c","text":"x@y.z"}`,
			`decoding input: at the top level: the key "text" is written twice`},
		{"a key written twice, once escaped", `{"type":"note","text":"a@b.c","t\u0065xt":"x@y.z"}`,
			`decoding input: at the top level: the key "text" is written twice`},
		{"a nested key written twice", `{"type":"ping","count":1,"tags":[{"weight":1},{"weight":1,"weight":2}]}`,
			`decoding input: at /tags/1: the key "weight" is written twice`},
		{"a key written twice among many", `{"type":"ping","count":1,"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"count":2}`,
			`decoding input: at the top level: the key "count" is written twice`},
		{"bytes that are not UTF-8", "{\"type\":\"note\",\"text\":\"a\xffb@c.d\"}",
			`decoding input: at /text: not valid UTF-8: byte 0xff`},
		{"a key that is not UTF-8", "{\"type\":\"ping\",\"count\":1,\"x\xc3\":1}",
			`decoding input: at the top level: not valid UTF-8: byte 0xc3`},
		{"half a surrogate pair", `{"type":"note","text":"\ud800x@y.z"}`,
			`decoding input: at /text: \ud800 is half of a UTF-16 surrogate pair, no character on its own`},
		{"a low half alone", `{"type":"note","text":"a@b.c\uDC00"}`,
			`decoding input: at /text: \uDC00 is half of a UTF-16 surrogate pair, no character on its own`},
		{"a high half at the end", `{"type":"note","text":"a@b.c\ud83d"}`,
			`decoding input: at /text: \ud83d is half of a UTF-16 surrogate pair, no character on its own`},
		{"two high halves", `{"type":"note","text":"a@b.c\ud83d\ud83d\ude00"}`,
			`decoding input: at /text: \ud83d is half of a UTF-16 surrogate pair, no character on its own`},
		{"half a pair in a key", `{"type":"ping","count":1,"\udfff":1}`,
			`decoding input: at the top level: \udfff is half of a UTF-16 surrogate pair, no character on its own`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := testDecoder.Decode([]byte(tc.json))
			if err == nil {
				t.Fatalf("Decode succeeded: %#v", in)
			}
			if in != nil {
				t.Errorf("Decode returned %#v with the error", in)
			}
			if err.Error() != tc.want {
				t.Errorf("error\ngot:  %s\nwant: %s", err, tc.want)
			}
		})
	}
}

// TestTypeList checks how the known types are listed in error messages.
func TestTypeList(t *testing.T) {
	for _, tc := range []struct {
		types []string
		want  string
	}{
		{nil, "none"},
		{[]string{"a"}, `"a"`},
		{[]string{"b", "a"}, `"a" and "b"`},
		{[]string{"c", "a", "b"}, `"a", "b" and "c"`},
	} {
		decoders := make(map[string]func([]byte) (input, error))
		for _, typ := range tc.types {
			decoders[typ] = unmarshal[note]
		}
		_, err := NewDecoder(testSchema, decoders).Decode([]byte(`{"type":"?"}`))
		if want := `decoding input: unknown type "?" (want one of ` + tc.want + ")"; err == nil || err.Error() != want {
			t.Errorf("%q: error %v, want %s", tc.types, err, want)
		}
	}
}

// TestBadSchema checks that a schema that does not compile fails every
// decoding of a known type, and only those.
func TestBadSchema(t *testing.T) {
	d := NewDecoder(`{"inputs": {"note": {"type": 7}}}`, map[string]func([]byte) (input, error){"note": unmarshal[note]})
	for range 2 {
		_, err := d.Decode([]byte(`{"type":"note","text":"x"}`))
		if err == nil || !strings.HasPrefix(err.Error(), "decoding input: ") {
			t.Errorf("Decode with a bad schema: error %v", err)
		}
	}
	_, err := d.Decode([]byte(`{"type":"ping"}`))
	if want := `decoding input: unknown type "ping" (want one of "note")`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

// TestNewDecoderCopiesDecoders checks that changing the map after
// NewDecoder does not change the Decoder.
func TestNewDecoderCopiesDecoders(t *testing.T) {
	decoders := map[string]func([]byte) (input, error){"note": unmarshal[note]}
	d := NewDecoder(testSchema, decoders)
	delete(decoders, "note")
	if _, err := d.Decode([]byte(`{"type":"note","text":"a@example.com"}`)); err != nil {
		t.Error(err)
	}
}

func TestIntegerLiteral(t *testing.T) {
	for n, want := range map[string]string{
		"1.0": "1", "1e3": "1000", "1E+3": "1000", "0.5e1": "5", "123.4500e2": "12345",
		"-0.0": "0", "0e5": "0", "-2.0": "-2", "20E-1": "2", "2.5e1": "25", "5.00": "5",
		"9.223372036854775807e18": "9223372036854775807", "-9223372036854775808.0": "-9223372036854775808",
	} {
		if got, ok := integerLiteral(n); !ok || got != want {
			t.Errorf("integerLiteral(%s) = %q, %v; want %q, true", n, got, ok, want)
		}
	}
	for _, n := range []string{
		"1", "-7", // already integer literals
		"1.5", "1e-1", "0.25e1", // not integers
		"1e19", "9.223372036854775808e18", "-9223372036854775809.0", "1e1001", // out of range
		"1e99999999999999999999", // an exponent that does not fit an int
	} {
		if got, ok := integerLiteral(n); ok {
			t.Errorf("integerLiteral(%s) = %q, true; want false", n, got)
		}
	}
}

func TestCanonicalIntegers(t *testing.T) {
	doc := map[string]any{
		"a": json.Number("1.0"),
		"b": []any{json.Number("2e1"), json.Number("1.5"), "3.0"},
		"c": map[string]any{"d": json.Number("7")},
	}
	got, changed := canonicalIntegers(doc)
	if !changed {
		t.Error("canonicalIntegers reported no change")
	}
	want := map[string]any{
		"a": json.Number("1"),
		"b": []any{json.Number("20"), json.Number("1.5"), "3.0"},
		"c": map[string]any{"d": json.Number("7")},
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(doc, want) {
		t.Errorf("canonicalIntegers = %v (in place: %v), want %v", got, doc, want)
	}
	if _, changed := canonicalIntegers(want); changed {
		t.Error("canonicalIntegers changed canonical integers")
	}
}
