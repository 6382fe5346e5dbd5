package sample_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/sample/decl"
)

// FuzzDecodeInput feeds arbitrary bytes to DecodeInput and DecodeClientInput.
// Neither may panic. What DecodeInput accepts must be JSON, and must survive
// MarshalJSON and a second DecodeInput unchanged. What DecodeClientInput
// accepts holds no client's value for start-thinking's readOnly timestamp,
// and DecodeInput reads it back once MarshalJSON wrote it (as the journal
// does after admission; 0 is a valid timestamp here); what DecodeInput
// accepts, DecodeClientInput accepts alike, but for that timestamp, unless
// the input has a key that differs from "timestamp" only in case.
func FuzzDecodeInput(f *testing.F) {
	for _, tc := range validInputs {
		f.Add([]byte(tc.json))
	}
	for _, seed := range []string{
		``, `null`, `[]`, `{}`, `{"type":null}`, `{"type":"start-thinking","timestamp":1} x`,
		`{"type":"start-thinking","timestamp":1,"TimeStamp":-5}`, `{"type":"start-thinking"}`, `{"type":"start-thinking","TimeStamp":-5}`,
		`{"type":"start-thinking","timestamp":"soon"}`,
		`{"type":"start-thinking","timestamp":-0.0}`, `{"type":"start-thinking","timestamp":1e19}`,
		`{"type":"start-thinking","timestamp":9.223372036854775807e18}`,
		`{"type":"start-thinking","timestamp":1e1000001}`, `{"type":"start-thinking","timestamp":1e-1000}`,
		`{"type":"start-thinking","timestamp":1,"x":` + strings.Repeat(`[`, 64) + strings.Repeat(`]`, 64) + `}`,
		`{"type":"start-thinking","timestamp":1,"x":"` + strings.Repeat(`[{\"`, 64) + `"}`,
		`{"type":"send-user-message","message":{"id":"0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b20","Id":"x","role":"user","content":"","timestamp":2.0,"tags":[]}}`,
		`{"type":"complete-call","callId":"c","call":{"tool":"fetch","url":"https://x","headers":{"a":"b"}},"result":"r","mode":"sync"}`,
		`{"type":"send-assi-message","message":{"id":"0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b20","role":"tool","content":"\u00e9\ud83d\ude00","timestamp":9007199254740993,"tags":[]},"calls":[],"usage":{"promptTokens":0,"completionTokens":0,"cost":1e-300}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkClient(t, data)
		in, err := decl.DecodeInput(data)
		if err != nil {
			if in != nil {
				t.Fatalf("DecodeInput returned %#v with error %v", in, err)
			}
			return
		}
		if in == nil {
			t.Fatal("DecodeInput returned neither an input nor an error")
		}
		if !json.Valid(data) {
			t.Fatalf("DecodeInput accepted invalid JSON %q", data)
		}
		out, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("Marshal(%#v): %v", in, err)
		}
		if where, dropped := droppedKey(unmarshalAny(t, data), unmarshalAny(t, out), ""); dropped {
			t.Fatalf("DecodeInput accepted %s and dropped it\ninput: %s\nmarshalled: %s", where, data, out)
		}
		again, err := decl.DecodeInput(out)
		if err != nil {
			t.Fatalf("DecodeInput(Marshal(input)) failed: %v\ninput: %s\nmarshalled: %s", err, data, out)
		}
		if !reflect.DeepEqual(in, again) {
			t.Fatalf("round trip changed the input\nfirst:  %#v\nsecond: %#v", in, again)
		}
	})
}

// checkClient checks DecodeClientInput on data against DecodeInput.
func checkClient(t *testing.T, data []byte) {
	t.Helper()
	in, err := decl.DecodeClientInput(data)
	if err != nil {
		if in != nil {
			t.Fatalf("DecodeClientInput returned %#v with error %v", in, err)
		}
	} else {
		if st, ok := in.(decl.StartThinking); ok && st.Timestamp != 0 {
			t.Fatalf("DecodeClientInput let a client's timestamp through: %#v from %q", st, data)
		}
		out, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("Marshal(%#v): %v", in, err)
		}
		back, err := decl.DecodeInput(out)
		if err != nil {
			t.Fatalf("DecodeClientInput accepted %q, whose MarshalJSON DecodeInput refuses: %v\nmarshalled: %s", data, err, out)
		}
		if !reflect.DeepEqual(in, back) {
			t.Fatalf("DecodeInput(Marshal(DecodeClientInput)) changed the input\nfirst:  %#v\nsecond: %#v", in, back)
		}
	}
	full, err := decl.DecodeInput(data)
	if err != nil {
		return
	}
	client, err := decl.DecodeClientInput(data)
	if err != nil {
		if !strings.Contains(err.Error(), "property names are case-sensitive") {
			t.Fatalf("DecodeInput accepted %q, DecodeClientInput refused it: %v", data, err)
		}
		return
	}
	if st, ok := full.(decl.StartThinking); ok {
		st.Timestamp = 0
		full = st
	}
	if !reflect.DeepEqual(client, full) {
		t.Fatalf("%q: DecodeClientInput made %#v, DecodeInput %#v (but for the timestamp)", data, client, full)
	}
}

func unmarshalAny(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	return v
}

// droppedKey returns where a key of in, with a value other than null, is
// missing from out, the same input decoded and encoded again: a property
// that decoding dropped without a word.
func droppedKey(in, out any, at string) (string, bool) {
	switch in := in.(type) {
	case map[string]any:
		o, _ := out.(map[string]any)
		for k, v := range in {
			ov, ok := o[k]
			if !ok && v != nil {
				return at + "/" + k, true
			}
			if where, dropped := droppedKey(v, ov, at+"/"+k); dropped {
				return where, true
			}
		}
	case []any:
		o, _ := out.([]any)
		for i := range min(len(in), len(o)) {
			if where, dropped := droppedKey(in[i], o[i], fmt.Sprintf("%s/%d", at, i)); dropped {
				return where, true
			}
		}
	}
	return "", false
}
