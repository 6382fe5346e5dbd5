package inputjson

import (
	"encoding/json"
	"testing"
)

// closedSchema has an object of each kind the spec can write: declared
// properties, a $defs type by $ref, an allOf of a $defs type and more
// properties, a oneOf told apart by a const, a map, a free-form object, and
// an input that opts out with additionalProperties: true.
const closedSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$defs": {
    "Base": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    "Claim": {
      "allOf": [
        {"$ref": "#/$defs/Base"},
        {"type": "object", "properties": {"amount": {"type": "integer"}, "meta": {"type": "object", "properties": {"note": {"type": "string"}}}}}
      ]
    },
    "Shape": {
      "oneOf": [
        {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}, "required": ["kind"]},
        {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}}, "required": ["kind"]}
      ]
    },
    "Anything": {"type": "object"}
  },
  "inputs": {
    "file": {
      "type": "object",
      "properties": {
        "type": {"const": "file"},
        "claim": {"$ref": "#/$defs/Claim"},
        "base": {"$ref": "#/$defs/Base"},
        "claims": {"type": "array", "items": {"$ref": "#/$defs/Claim"}},
        "byName": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Base"}},
        "shape": {"$ref": "#/$defs/Shape"},
        "extra": {"$ref": "#/$defs/Anything"},
        "count": {"type": "integer"},
        "at": {"type": "integer", "readOnly": true}
      },
      "required": ["type"]
    },
    "open": {
      "type": "object",
      "properties": {"type": {"const": "open"}, "text": {"type": "string"}},
      "required": ["type"],
      "additionalProperties": true
    }
  }
}`

func closedDecoder() *Decoder[map[string]any] {
	decode := func(data []byte) (map[string]any, error) {
		var m map[string]any
		err := json.Unmarshal(data, &m)
		return m, err
	}
	return NewDecoder(closedSchema, map[string]func([]byte) (map[string]any, error){"file": decode, "open": decode})
}

// TestUndeclaredProperties: an input holds only the properties its schema
// declares, at any depth, with the properties of allOf members, $refs and
// oneOf variants counted as declared; a map, a free-form object and an
// input that says additionalProperties: true stay open; a property that
// fails its schema is reported as that, not as undeclared.
func TestUndeclaredProperties(t *testing.T) {
	d := closedDecoder()
	clients := d.ForClients()
	for _, tc := range []struct {
		name, in, want string // want "" for accepted
	}{
		{"declared only", `{"type":"file","count":1,"at":5}`, ""},
		{"at the top", `{"type":"file","bogus":1,"at":5}`, `decoding input "file": /bogus: a property the spec does not declare`},
		{"two at once", `{"type":"file","b":1,"a":2,"at":5}`, `decoding input "file": /a: a property the spec does not declare; /b: a property the spec does not declare`},
		{"allOf members and $ref", `{"type":"file","claim":{"id":"c1","amount":3,"meta":{"note":"n"}},"at":5}`, ""},
		{"beside allOf members", `{"type":"file","claim":{"id":"c1","amount":3,"category":"x"},"at":5}`, `decoding input "file": /claim/category: a property the spec does not declare`},
		{"inside an allOf member", `{"type":"file","claim":{"id":"c1","meta":{"note":"n","tag":1}},"at":5}`, `decoding input "file": /claim/meta/tag: a property the spec does not declare`},
		{"in a $ref type", `{"type":"file","base":{"id":"b","name":"x"},"at":5}`, `decoding input "file": /base/name: a property the spec does not declare`},
		{"in an item", `{"type":"file","claims":[{"id":"a"},{"id":"b","x":1}],"at":5}`, `decoding input "file": /claims/1/x: a property the spec does not declare`},
		{"a map's keys", `{"type":"file","byName":{"any key":{"id":"a"}},"at":5}`, ""},
		{"in a map's value", `{"type":"file","byName":{"k":{"id":"a","y":1}},"at":5}`, `decoding input "file": /byName/k/y: a property the spec does not declare`},
		{"oneOf variant", `{"type":"file","shape":{"kind":"square","side":2},"at":5}`, ""},
		{"another variant's property", `{"type":"file","shape":{"kind":"square","r":2},"at":5}`, `decoding input "file": /shape/r: a property the spec does not declare`},
		{"free-form object", `{"type":"file","extra":{"whatever":[1,2]},"at":5}`, ""},
		{"opted out", `{"type":"open","text":"t","anything":1}`, ""},
		{"an invalid property is invalid, not undeclared", `{"type":"file","claim":{"id":1,"amount":"x"},"at":5}`,
			`decoding input "file": /claim/amount: expected integer, but got string; /claim/id: expected string, but got number`},
		// (A key in another case than a property's is named as such:
		// TestDecodeErrors, whose inputs are structs.)
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.Decode([]byte(tc.in))
			if got := errString(err); got != tc.want {
				t.Errorf("Decode:\ngot:  %s\nwant: %s", got, tc.want)
			}
			_, err = clients.Decode([]byte(tc.in))
			if got := errString(err); got != tc.want {
				t.Errorf("ForClients().Decode:\ngot:  %s\nwant: %s", got, tc.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
