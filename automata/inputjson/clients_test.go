package inputjson

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// stamped is an input whose "at" the server assigns.
type stamped struct {
	Text string `json:"text"`
	At   int64  `json:"at"`
}

func (stamped) inputType() string { return "stamped" }

const stampedSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "inputs": {
    "stamped": {
      "type": "object",
      "properties": {
        "type": {"const": "stamped"},
        "text": {"type": "string"},
        "at": {"type": "integer", "minimum": 1, "readOnly": true}
      },
      "required": ["type", "text", "at"],
      "additionalProperties": false
    },
    "ping": {
      "type": "object",
      "properties": {"type": {"const": "ping"}, "count": {"type": "integer"}},
      "required": ["type", "count"]
    }
  }
}`

func stampedDecoder() *Decoder[input] {
	return NewDecoder(stampedSchema, map[string]func([]byte) (input, error){
		"stamped": unmarshal[stamped],
		"ping":    unmarshal[ping],
	})
}

// TestForClients checks the decoder of what clients send: a readOnly
// property may be absent, what a client sends for it is dropped (even a
// value its schema refuses), and everything else is checked as Decode
// checks it; Decode itself still requires the property, as the journal
// reads what the server stamped.
func TestForClients(t *testing.T) {
	full := stampedDecoder()
	clients := full.ForClients()
	for _, tc := range []struct{ name, json string }{
		{"absent", `{"type":"stamped","text":"hi"}`},
		{"sent, dropped", `{"type":"stamped","text":"hi","at":42}`},
		{"sent invalid, dropped", `{"type":"stamped","text":"hi","at":"yesterday"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := clients.Decode([]byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if want := (stamped{Text: "hi"}); !reflect.DeepEqual(got, want) {
				t.Errorf("ForClients().Decode = %#v, want %#v", got, want)
			}
		})
	}
	for _, tc := range []struct{ name, json, want string }{
		{"a property that is not readOnly", `{"type":"stamped","at":1}`, "missing properties: 'text'"},
		{"an undeclared property", `{"type":"stamped","text":"hi","extra":1}`, "additionalProperties 'extra' not allowed"},
		{"a property in another case", `{"type":"ping","Count":1}`, "missing properties: 'count'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := clients.Decode([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ForClients().Decode(%s) = %v, want an error with %q", tc.json, err, tc.want)
			}
		})
	}
	// The journal's decoder is unchanged: the stamp is required, and kept.
	if _, err := full.Decode([]byte(`{"type":"stamped","text":"hi"}`)); err == nil || !strings.Contains(err.Error(), "missing properties: 'at'") {
		t.Errorf("Decode without the stamp = %v, want missing 'at'", err)
	}
	got, err := full.Decode([]byte(`{"type":"stamped","text":"hi","at":42}`))
	if err != nil || got != (stamped{Text: "hi", At: 42}) {
		t.Errorf("Decode = %#v, %v", got, err)
	}
	// An input without readOnly properties decodes as Decode decodes it.
	if got, err := clients.Decode([]byte(`{"type":"ping","count":3}`)); err != nil || !reflect.DeepEqual(got, ping{Count: 3}) {
		t.Errorf("ForClients().Decode(ping) = %#v, %v", got, err)
	}
}

// FuzzForClients checks that the client decoder never panics, and that what
// it accepts, once the server assigns the stamp, the journal's decoder
// accepts too: dropping a property never lets through what the schema
// refuses elsewhere.
func FuzzForClients(f *testing.F) {
	for _, s := range []string{`{"type":"stamped","text":"hi"}`, `{"type":"stamped","text":"hi","at":4}`, `{"type":"ping","count":1}`, `{"type":"stamped","at":{}}`} {
		f.Add([]byte(s))
	}
	full := stampedDecoder()
	clients := full.ForClients()
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := clients.Decode(data)
		if err != nil {
			return
		}
		if s, ok := in.(stamped); ok {
			s.At = 1 // admission
			data, err = json.Marshal(struct {
				Type string `json:"type"`
				stamped
			}{"stamped", s})
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := full.Decode(data); err != nil {
			t.Errorf("the client decoder accepted %q, which the journal's then refuses: %v", data, err)
		}
	})
}
