package inputjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// tree is a test input whose schema is recursive: a node holds nodes
// through "$ref": "#/$defs/Node".
type tree struct {
	Root node `json:"root"`
}

func (tree) inputType() string { return "tree" }

type node struct {
	Name     string            `json:"name"`
	Weight   int64             `json:"weight,omitempty"`
	Children []node            `json:"children,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
}

const treeSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "inputs": {
    "tree": {
      "type": "object",
      "properties": {
        "type": {"const": "tree"},
        "root": {"$ref": "#/$defs/Node"}
      },
      "required": ["type", "root"]
    }
  },
  "$defs": {
    "Node": {
      "type": "object",
      "properties": {
        "name": {"type": "string"},
        "weight": {"type": "integer", "minimum": 0},
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}
      },
      "required": ["name"]
    }
  }
}`

var treeDecoder = NewDecoder(treeSchema, map[string]func([]byte) (input, error){
	"tree": unmarshal[tree],
})

// treeInput wraps the JSON of a node as a tree input.
func treeInput(root string) []byte {
	return []byte(`{"type":"tree","root":` + root + `}`)
}

// chain is the JSON of n nodes, each the only child of the one before: it
// nests 2n-1 levels deep.
func chain(n int) string {
	return strings.Repeat(`{"name":"n","children":[`, n-1) + `{"name":"n"}` + strings.Repeat(`]}`, n-1)
}

// sized returns a valid tree input of exactly n bytes, n at least 36.
func sized(n int) []byte {
	data := treeInput(`{"name":""}`)
	return treeInput(`{"name":"` + strings.Repeat("x", n-len(data)) + `"}`)
}

// nested returns a tree input nested exactly levels deep (levels even, at
// least 2), whose innermost node holds inner.
func nested(levels int, inner string) []byte {
	n := levels / 2
	return treeInput(strings.Repeat(`{"name":"n","children":[`, n-1) + `{"name":"n"` + inner + `}` + strings.Repeat(`]}`, n-1))
}

func TestLimits(t *testing.T) {
	deep := strings.Repeat(`[`, 10) + strings.Repeat(`]`, 10)
	tests := []struct {
		name   string
		limits *Limits // nil: the Decoder of NewDecoder
		data   []byte
		want   string // the whole error message; "" for success
	}{
		{"exactly MaxBytes", nil, sized(1 << 20), ""},
		{"one byte over MaxBytes", nil, sized(1<<20 + 1),
			"decoding input: 1048577 bytes, over the limit of 1048576 (inputjson.Limits.MaxBytes)"},
		{"zero Limits are the defaults", &Limits{}, sized(1<<20 + 1),
			"decoding input: 1048577 bytes, over the limit of 1048576 (inputjson.Limits.MaxBytes)"},
		{"negative Limits are the defaults", &Limits{MaxBytes: -1, MaxDepth: -1}, sized(1 << 20), ""},
		{"MaxBytes raised", &Limits{MaxBytes: 2 << 20}, sized(2 << 20), ""},
		{"MaxBytes lowered", &Limits{MaxBytes: 100}, sized(101),
			"decoding input: 101 bytes, over the limit of 100 (inputjson.Limits.MaxBytes)"},
		{"exactly MaxBytes lowered", &Limits{MaxBytes: 100}, sized(100), ""},
		{"over MaxBytes and invalid: the size first", &Limits{MaxBytes: 3}, []byte(`[[[[`),
			"decoding input: 4 bytes, over the limit of 3 (inputjson.Limits.MaxBytes)"},

		{"exactly MaxDepth", nil, nested(64, ""), ""},
		{"exactly MaxDepth, an empty array innermost", nil, nested(62, `,"children":[{"name":"x"}]`), ""},
		// The innermost node starts at 22+31*24 = 766; its "labels" or
		// "children" opens at 766+21 or 766+23.
		{"an object one level over MaxDepth", nil, nested(64, `,"labels":{}`),
			"decoding input: nested deeper than 64 levels at byte offset 787 (inputjson.Limits.MaxDepth)"},
		{"an array one level over MaxDepth", nil, nested(64, `,"children":[]`),
			"decoding input: nested deeper than 64 levels at byte offset 789 (inputjson.Limits.MaxDepth)"},
		{"arrays over MaxDepth, not JSON", nil, []byte(strings.Repeat("[", 100)),
			"decoding input: nested deeper than 64 levels at byte offset 64 (inputjson.Limits.MaxDepth)"},
		{"objects over MaxDepth, not JSON", nil, []byte(strings.Repeat(`{"a":`, 100)),
			"decoding input: nested deeper than 64 levels at byte offset 320 (inputjson.Limits.MaxDepth)"},
		{"brackets in strings do not count", nil,
			treeInput(`{"name":"` + strings.Repeat(`[{`, 100) + `","labels":{"` + strings.Repeat(`{`, 100) + `":"` + strings.Repeat(`[`, 100) + `"}}`), ""},
		{"an escaped quote does not end a string", nil,
			treeInput(`{"name":"\"` + strings.Repeat(`[`, 100) + `\\\"` + strings.Repeat(`{`, 100) + `"}`), ""},
		{"an escaped backslash does not escape the quote after it", &Limits{MaxDepth: 2}, []byte(`{"a":"\\",[[]]}`),
			"decoding input: nested deeper than 2 levels at byte offset 11 (inputjson.Limits.MaxDepth)"},
		{"a \\u escape", &Limits{MaxDepth: 2}, []byte(`{"a":"\u005b\u007b[{"} x`),
			"decoding input: unexpected data after the JSON value"},
		{"closing brackets do not make room", &Limits{MaxDepth: 2}, []byte(`]]]]]]]]` + deep),
			"decoding input: nested deeper than 2 levels at byte offset 10 (inputjson.Limits.MaxDepth)"},
		{"MaxDepth raised", &Limits{MaxDepth: 1000}, nested(998, `,"labels":{}`), ""},
		{"MaxDepth lowered", &Limits{MaxDepth: 2}, treeInput(`{"name":"n","labels":{}}`),
			"decoding input: nested deeper than 2 levels at byte offset 43 (inputjson.Limits.MaxDepth)"},
		{"exactly MaxDepth lowered", &Limits{MaxDepth: 2}, treeInput(`{"name":"n"}`), ""},
		{"MaxDepth over encoding/json's", &Limits{MaxDepth: 20000}, nested(10002, ""),
			"decoding input: invalid character '[' exceeded max depth"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := treeDecoder
			if tc.limits != nil {
				d = d.WithLimits(*tc.limits)
			}
			in, err := d.Decode(tc.data)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Decode failed: %v", err)
			case tc.want == "" && in == nil:
				t.Fatal("Decode returned neither an input nor an error")
			case tc.want != "" && err == nil:
				t.Fatalf("Decode succeeded: %.100v", in)
			case tc.want != "" && err.Error() != tc.want:
				t.Errorf("error\ngot:  %s\nwant: %s", err, tc.want)
			}
		})
	}
}

// TestWithLimitsLeavesTheOriginal checks that WithLimits makes a new
// Decoder, sharing the compiled schemas, and leaves d alone.
func TestWithLimitsLeavesTheOriginal(t *testing.T) {
	d := NewDecoder(treeSchema, map[string]func([]byte) (input, error){"tree": unmarshal[tree]})
	low := d.WithLimits(Limits{MaxBytes: 40})
	if _, err := low.Decode(sized(41)); err == nil {
		t.Error("the lowered Decoder accepted 41 bytes")
	}
	if _, err := d.Decode(sized(41)); err != nil {
		t.Errorf("the original Decoder: %v", err)
	}
	s1, _ := d.schemas()
	s2, _ := low.schemas()
	if s1["tree"] != s2["tree"] {
		t.Error("WithLimits compiled the schemas again")
	}
}

// TestOverLimitsFailsFast checks that an input over a limit is refused
// without being read into anything: whatever its size, refusing it
// allocates the error message alone.
func TestOverLimitsFailsFast(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"over MaxBytes", bytes.Repeat([]byte(`{"type":"tree","root":{"name":"x"}} `), 1<<20)},
		{"over MaxDepth", bytes.Repeat([]byte(`[`), 1<<20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			allocs := testing.AllocsPerRun(10, func() {
				if _, err := treeDecoder.Decode(tc.data); err == nil {
					t.Fatal("Decode succeeded")
				}
			})
			runtime.ReadMemStats(&after)
			if allocs > 10 {
				t.Errorf("refusing %d bytes made %v allocations, want at most 10", len(tc.data), allocs)
			}
			// 11 calls (AllocsPerRun warms up once) of a few hundred bytes.
			if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
				t.Errorf("refusing %d bytes 11 times allocated %d bytes", len(tc.data), n)
			}
		})
	}
}

func TestDecodeNumbers(t *testing.T) {
	long := "1." + strings.Repeat("0", maxNumberLen-2) // 1, in 1000 characters
	tests := []struct {
		name, json string
		want       string // the whole error message; "" for success
	}{
		{"an exponent at the limit", `{"type":"ping","count":0.1e1000}`,
			`decoding input "ping": /count: number 0.1e1000 does not fit in a Go int64`},
		{"a negative exponent at the limit", `{"type":"ping","count":0,"tags":[{"weight":1e-1000}]}`,
			`decoding input "ping": /tags/0/weight: expected integer, but got number`},
		{"an exponent written with zeros in front", `{"type":"ping","count":1e+0000000000000000000000000003}`, ""},
		{"an exponent over the limit", `{"type":"ping","count":1e1001}`,
			`decoding input "ping": /count: number 1e1001 is out of range: its exponent is beyond ±1000`},
		{"an exponent under the limit", `{"type":"ping","count":0,"tags":[{"weight":-1E-999999}]}`,
			`decoding input "ping": /tags/0/weight: number -1E-999999 is out of range: its exponent is beyond ±1000`},
		{"an exponent beyond math/big's, which made the validator panic", `{"type":"ping","count":1e1000001}`,
			`decoding input "ping": /count: number 1e1000001 is out of range: its exponent is beyond ±1000`},
		{"an exponent too long for an int", `{"type":"ping","count":1e99999999999999999999}`,
			`decoding input "ping": /count: number 1e99999999999999999999 is out of range: its exponent is beyond ±1000`},
		{"a number of the greatest length", `{"type":"ping","count":` + long + `}`, ""},
		{"a number one character too long", `{"type":"ping","count":` + long + `0}`,
			`decoding input "ping": /count: number 1.000000000000000000… is too long: 1001 characters, over 1000`},
		{"a number the schema does not check", `{"type":"ping","count":0,"extra":1e1001}`,
			`decoding input "ping": /extra: number 1e1001 is out of range: its exponent is beyond ±1000`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := testDecoder.Decode([]byte(tc.json))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Decode failed: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("Decode succeeded: %#v", in)
			case tc.want != "" && err.Error() != tc.want:
				t.Errorf("error\ngot:  %s\nwant: %s", err, tc.want)
			}
		})
	}
}

// TestDeepLocations checks the locations of problems deep in an input,
// which the walks make only when they report one.
func TestDeepLocations(t *testing.T) {
	for _, tc := range []struct {
		name, inner, want string
	}{
		{"a key in another case", `,"Weight":1`,
			`decoding input "tree": /root/children/0/children/0/children/0/Weight: property names are case-sensitive: "Weight" is not "weight"`},
		{"a number out of range", `,"labels":{"a":"b"},"x":[0,1e9999]`,
			`decoding input "tree": /root/children/0/children/0/children/0/x/1: number 1e9999 is out of range: its exponent is beyond ±1000`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := treeDecoder.Decode(nested(8, tc.inner))
			if err == nil || err.Error() != tc.want {
				t.Errorf("error\ngot:  %v\nwant: %s", err, tc.want)
			}
		})
	}
}

func TestDeeperThan(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		limit      int
		want       int
	}{
		{"empty", ``, 0, -1},
		{"a scalar at limit 0", `1`, 0, -1},
		{"an array at limit 0", ` []`, 0, 1},
		{"at the limit", `[{},[]]`, 2, -1},
		{"over the limit", `[{},[[]]]`, 2, 5},
		{"in a string", `["[[["]`, 1, -1},
		{"after an escaped quote", `["\"[[["]`, 1, -1},
		{"after an escaped backslash", `["\\",[]]`, 1, 6},
		{"an unterminated string", `["[[[`, 1, -1},
		{"a backslash at the end", `["\`, 1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := deeperThan([]byte(tc.data), tc.limit); got != tc.want {
				t.Errorf("deeperThan(%s, %d) = %d, want %d", tc.data, tc.limit, got, tc.want)
			}
		})
	}
}

// FuzzDeeperThan checks the nesting pre-scan against encoding/json: on
// valid JSON it finds the depth encoding/json's tokens reach and the first
// bracket that reaches it; on any bytes it returns -1 or the offset of a
// bracket, and does not panic.
func FuzzDeeperThan(f *testing.F) {
	for _, seed := range []string{
		``, `1`, `[]`, `{}`, `[{},[[]]]`, `["[[[",{"\"{":[]}]`, `["\\",[]]`, `"\u005b"`,
		`{"type":"tree","root":{"name":"n","children":[{"name":"]]}"}]}}`, `]]]][[`, `["\`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, limit := range []int{0, 1, 2, 64} {
			off := deeperThan(data, limit)
			if off < -1 || off >= len(data) || off >= 0 && data[off] != '[' && data[off] != '{' {
				t.Fatalf("deeperThan(%q, %d) = %d, not -1 or the offset of a bracket", data, limit, off)
			}
		}
		if !json.Valid(data) {
			return
		}
		depth, first := jsonNesting(t, data)
		if got := deeperThan(data, depth); got != -1 {
			t.Fatalf("deeperThan(%q, %d) = %d; encoding/json nests %d levels", data, depth, got, depth)
		}
		if depth > 0 {
			if got := deeperThan(data, depth-1); got != first {
				t.Fatalf("deeperThan(%q, %d) = %d; encoding/json reaches level %d at %d", data, depth-1, got, depth, first)
			}
		}
	})
}

// jsonNesting returns how deep the valid JSON data nests by encoding/json's
// tokens, and the offset of the first bracket at that depth.
func jsonNesting(t *testing.T, data []byte) (depth, first int) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // 1E700 is valid JSON, not a float64
	level := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return depth, first
		}
		if err != nil {
			t.Fatalf("valid JSON %q: %v", data, err)
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			if level++; level > depth {
				depth, first = level, int(dec.InputOffset())-1
			}
		case json.Delim(']'), json.Delim('}'):
			level--
		}
	}
}

func ExampleDecoder_WithLimits() {
	d := treeDecoder.WithLimits(Limits{MaxBytes: 64 << 10, MaxDepth: 3})
	_, err := d.Decode([]byte(`{"type":"tree","root":{"name":"a","children":[{"name":"b"}]}}`))
	fmt.Println(err)
	// Output:
	// decoding input: nested deeper than 3 levels at byte offset 46 (inputjson.Limits.MaxDepth)
}
