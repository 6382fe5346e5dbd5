package jsonvalid_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/internal/jsonvalid"
)

// raw is a json.Marshaler that writes its bytes: what json.Marshal makes of
// them is Marshaled's oracle.
type raw []byte

func (r raw) MarshalJSON() ([]byte, error) { return r, nil }

// marshaledByEncodingJSON is Marshaled as encoding/json answers it.
func marshaledByEncodingJSON(data []byte) bool {
	out, err := json.Marshal(raw(data))
	return err == nil && bytes.Equal(out, data)
}

var cases = []string{
	``, ` `, `null`, `true`, `false`, `nul`, `nulll`, `truex`, `true1`, `True`,
	`0`, `-0`, `01`, `-`, `-a`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-05`, `1e`, `1e+`, `-1.5e3`, `123456789012345678901234567890`,
	`""`, `"a"`, `"\""`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u00e9"`, `"\u00E9"`, `"\u00g9"`, `"\u00e"`, `"\x"`, `"\`, `"`, `"a`,
	"\"\x01\"", "\"\x1f\"", "\"\x7f\"", "\"\xff\"", "\"\xe2\x80\xa8\"", "\"\xe2\x80\xa9\"", "\"\xe2\x80\xaa\"", "\"\xe2\x80\"", "\"\xe2\"",
	`"<"`, `">"`, `"&"`, `"\u003c"`, `"a b"`,
	`{}`, `{ }`, `{"a":1}`, `{"a" :1}`, `{"a": 1}`, `{"a":1,}`, `{,}`, `{"a"}`, `{"a":}`, `{1:2}`, `{"a":1 "b":2}`, `{"a":1,"b":[true,null,{}]}`,
	`[]`, `[ ]`, `[1]`, `[1,]`, `[,1]`, `[1 2]`, `[[[]]]`, `[[]`, `[]]`, `[}`, `{]`, `{"a":[}]`,
	" {} ", "\t[]\n", "\r\n1", "1 2", "{}{}", "[] x", "\v1", "\x001",
	`{"type":"send-user-message","id":"msg-0000002","content":"a chat message of a typical length, some sixty characters.","timestamp":1700000000000002}`,
}

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range append(cases, nested(10_000, "[", "]"), nested(10_001, "[", "]"), nested(10_000, `{"a":`, "}"), nested(10_001, `{"a":`, "}"), nested(64, "[", "]"), nested(65, "[", "]")) {
		data := []byte(c)
		if got, want := jsonvalid.Valid(data), json.Valid(data); got != want {
			t.Errorf("Valid(%.80q) = %v, json.Valid says %v", c, got, want)
		}
		if got, want := jsonvalid.Marshaled(data), marshaledByEncodingJSON(data); got != want {
			t.Errorf("Marshaled(%.80q) = %v, json.Marshal says %v", c, got, want)
		}
	}
}

// nested is depth opens around a 0, and depth closes.
func nested(depth int, open, close string) string {
	return strings.Repeat(open, depth) + "0" + strings.Repeat(close, depth)
}

func FuzzValid(f *testing.F) {
	for _, c := range cases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := jsonvalid.Valid(data), json.Valid(data); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", data, got, want)
		}
		if got, want := jsonvalid.Marshaled(data), marshaledByEncodingJSON(data); got != want {
			t.Fatalf("Marshaled(%q) = %v, json.Marshal says %v", data, got, want)
		}
	})
}

// BenchmarkValid checks a journaled input of the starter agent (151 bytes)
// and a 64 KiB document with encoding/json and with this package.
func BenchmarkValid(b *testing.B) {
	input := []byte(cases[len(cases)-1])
	var doc bytes.Buffer
	doc.WriteByte('[')
	for i := 0; doc.Len() < 64<<10; i++ {
		if i > 0 {
			doc.WriteByte(',')
		}
		doc.Write(input)
	}
	doc.WriteByte(']')
	for _, c := range []struct {
		name string
		data []byte
	}{{"input", input}, {"64KiB", doc.Bytes()}} {
		for _, f := range []struct {
			name  string
			valid func([]byte) bool
		}{{"encoding-json", json.Valid}, {"jsonvalid", jsonvalid.Valid}} {
			b.Run(c.name+"/"+f.name, func(b *testing.B) {
				b.SetBytes(int64(len(c.data)))
				b.ReportAllocs()
				for b.Loop() {
					if !f.valid(c.data) {
						b.Fatal("not valid")
					}
				}
			})
		}
	}
}
