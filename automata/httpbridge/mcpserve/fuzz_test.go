package mcpserve

import (
	"encoding/json"
	"testing"
)

// FuzzParseSchema: the schema reader never panics, and the tool schemas of
// a document it accepts are JSON objects.
func FuzzParseSchema(f *testing.F) {
	f.Add([]byte(`{"inputs":{"a":{"type":"object","description":"A.","properties":{"type":{"const":"a"},"x":{"$ref":"#/$defs/X"},"t":{"readOnly":true}},"required":["type","x","t"]}},"$defs":{"X":{"type":"string"}},"actors":{"user":["a"]}}`))
	f.Add([]byte(`{"inputs":{"a":{"properties":{"x":true,"x":false}}}}`))
	f.Add([]byte(`{"inputs":{"a":{"allOf":[{"$ref":"#/$defs/A~1B"}]}},"$defs":{"A/B":{"$ref":"#/$defs/A~1B"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := parseSchema(data)
		if err != nil {
			return
		}
		for _, in := range doc.inputs {
			s, err := doc.toolSchema(in, []prop{{"waitFor", json.RawMessage(`{"type":"string"}`)}})
			if err != nil {
				continue
			}
			var v map[string]any
			if err := json.Unmarshal(s, &v); err != nil {
				t.Fatalf("tool schema of %q is not an object: %v\n%s", in.name, err, s)
			}
		}
	})
}

// FuzzOrderedObject: members come back in order, each once, or an error.
func FuzzOrderedObject(f *testing.F) {
	f.Add([]byte(`{"b":1,"a":{"c":[1,2]}}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`{"a":1} x`))
	f.Fuzz(func(t *testing.T, data []byte) {
		props, err := orderedObject(data)
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("accepted %q, which is not a JSON object: %v", data, err)
		}
		if len(m) != len(props) {
			t.Fatalf("%q: %d members, %d read", data, len(m), len(props))
		}
	})
}
