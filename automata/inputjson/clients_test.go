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
    "memo": {
      "type": "object",
      "properties": {
        "type": {"const": "memo"},
        "text": {"type": "string"},
        "at": {"type": "integer", "minimum": 1, "readOnly": true}
      },
      "required": ["type", "text", "at"]
    },
    "ping": {
      "type": "object",
      "properties": {"type": {"const": "ping"}, "count": {"type": "integer"}},
      "required": ["type", "count"]
    }
  }
}`

// memo is stamped without additionalProperties: false: a key that differs
// from "at" only in case gets past its schema.
type memo struct {
	Text string `json:"text"`
	At   int64  `json:"at"`
}

func (memo) inputType() string { return "memo" }

func stampedDecoder() *Decoder[input] {
	return NewDecoder(stampedSchema, map[string]func([]byte) (input, error){
		"stamped": unmarshal[stamped],
		"memo":    unmarshal[memo],
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
		// Dropped before the limits on numbers are checked: nothing reads it.
		{"sent out of range, dropped", `{"type":"stamped","text":"hi","at":1e1000001}`},
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
		// encoding/json would fill At from "At": a client's value for
		// the stamp, refused as Decode refuses a key in another case.
		{"the readOnly property in another case", `{"type":"memo","text":"hi","At":99}`,
			`decoding input "memo": /At: property names are case-sensitive: "At" is not "at"`},
		{"the readOnly property in two cases", `{"type":"memo","text":"hi","at":5,"At":5}`,
			`decoding input "memo": /At: property names are case-sensitive: "At" is not "at"`},
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

// TestForClientsSharesSchemas checks that the client decoder compiles
// again only the schemas of the input types with readOnly properties, and
// that ForClients and WithLimits combine in either order.
func TestForClientsSharesSchemas(t *testing.T) {
	full := stampedDecoder()
	clients := full.ForClients()
	own, err := full.schemas()
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := clients.schemas()
	if err != nil {
		t.Fatal(err)
	}
	for typ, shared := range map[string]bool{"ping": true, "stamped": false, "memo": false} {
		if got := own[typ] == theirs[typ]; got != shared {
			t.Errorf("%s: the schema is shared: %v, want %v", typ, got, shared)
		}
	}
	none := testDecoder.ForClients() // no readOnly property at all
	a, _ := testDecoder.schemas()
	b, _ := none.schemas()
	if a["ping"] != b["ping"] || a["note"] != b["note"] {
		t.Error("without readOnly properties, the client decoder compiled its own schemas")
	}

	limits := Limits{MaxBytes: 40}
	for name, d := range map[string]*Decoder[input]{
		"ForClients().WithLimits": full.ForClients().WithLimits(limits),
		"WithLimits().ForClients": full.WithLimits(limits).ForClients(),
	} {
		if got, err := d.Decode([]byte(`{"type":"stamped","text":"hi"}`)); err != nil || got != (stamped{Text: "hi"}) {
			t.Errorf("%s: Decode = %#v, %v", name, got, err)
		}
		if _, err := d.Decode([]byte(`{"type":"stamped","text":"hello, world, hello"}`)); err == nil || !strings.Contains(err.Error(), "inputjson.Limits.MaxBytes") {
			t.Errorf("%s: Decode over MaxBytes = %v", name, err)
		}
	}
}

// FuzzForClients checks that the client decoder never panics; that what it
// accepts holds the zero value where the server assigns, and once the
// server has, the journal's decoder accepts too: dropping a property never
// lets through what the schema refuses elsewhere; and that what the
// journal's decoder accepts, the client decoder accepts alike, but for the
// stamp (or refuses it for a key that differs from the stamp's in case
// only, which the journal's decoder lets by when both hold the same
// value).
func FuzzForClients(f *testing.F) {
	for _, s := range []string{
		`{"type":"stamped","text":"hi"}`, `{"type":"stamped","text":"hi","at":4}`, `{"type":"ping","count":1}`,
		`{"type":"stamped","at":{}}`, `{"type":"memo","text":"x","At":7}`, `{"type":"memo","text":"x","at":2,"At":2}`,
		`{"type":"memo","text":"x","at":1e1000001}`, `{"type":"memo","text":"x","at":3.0,"AT":"3"}`,
	} {
		f.Add([]byte(s))
	}
	full := stampedDecoder()
	clients := full.ForClients()
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := clients.Decode(data)
		if err != nil {
			if in != nil {
				t.Fatalf("the client decoder returned %#v with error %v", in, err)
			}
		} else {
			// admission assigns the stamp
			var typ string
			switch v := in.(type) {
			case stamped:
				if v.At != 0 {
					t.Fatalf("the client decoder let the client's stamp %d through from %q", v.At, data)
				}
				v.At = 1
				in, typ = v, "stamped"
			case memo:
				if v.At != 0 {
					t.Fatalf("the client decoder let the client's stamp %d through from %q", v.At, data)
				}
				v.At = 1
				in, typ = v, "memo"
			case ping:
				typ = "ping"
			}
			admitted := withType(t, typ, in)
			if _, err := full.Decode(admitted); err != nil {
				t.Errorf("the client decoder accepted %q, which the journal's then refuses as %s: %v", data, admitted, err)
			}
		}
		journaled, err := full.Decode(data)
		if err != nil {
			return
		}
		got, err := clients.Decode(data)
		if err != nil {
			if !strings.Contains(err.Error(), "property names are case-sensitive") {
				t.Fatalf("the journal's decoder accepted %q, the client decoder refused it: %v", data, err)
			}
			return
		}
		switch v := journaled.(type) {
		case stamped:
			v.At = 0
			journaled = v
		case memo:
			v.At = 0
			journaled = v
		}
		if !reflect.DeepEqual(got, journaled) {
			t.Fatalf("%q: the client decoder made %#v, the journal's %#v (but for the stamp)", data, got, journaled)
		}
	})
}

// withType returns the JSON of the input in with its "type" typ, as a
// generated MarshalJSON writes it.
func withType(t *testing.T, typ string, in input) []byte {
	t.Helper()
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["type"] = typ
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	return data
}
