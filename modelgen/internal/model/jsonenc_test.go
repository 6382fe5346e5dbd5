package model

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestAppendIndentedJSONIsEncodingJSON: on trees of every kind of value
// inputSchema builds, and on strings that need escaping, the encoder
// writes what encoding/json writes, byte for byte.
func TestAppendIndentedJSONIsEncodingJSON(t *testing.T) {
	strs := []string{"", "plain", `quo"te`, `back\slash`, "tab\there", "nl\n", "\x00\x1f", "<html>&amp;", "é ü 日本", "\u2028\u2029", "bad \xff utf-8", "#/$defs/Item"}
	r := rand.New(rand.NewPCG(7, 9))
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.IntN(10); {
		case depth > 4 || k < 2:
			return strs[r.IntN(len(strs))]
		case k == 2:
			return json.Number([]string{"0", "-1", "1.5e10", "42", ""}[r.IntN(5)])
		case k == 3:
			return r.IntN(2) == 0
		case k == 4:
			if r.IntN(3) == 0 {
				return nil
			}
			return []any(nil)
		case k == 5:
			return json.RawMessage(`"raw"`)
		case k < 8:
			m := map[string]any{}
			if r.IntN(5) == 0 {
				return map[string]any(nil)
			}
			for range r.IntN(5) {
				m[strs[r.IntN(len(strs))]] = gen(depth + 1)
			}
			return m
		}
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = gen(depth + 1)
		}
		return a
	}
	for i := range 2000 {
		v := gen(0)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		got := appendIndentedJSON(nil, v, "")
		if !bytes.Equal(got, bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Fatalf("tree %d: %#v\ngot  %s\nwant %s", i, v, got, want.Bytes())
		}
	}
}

// TestPropertiesKeepTheirOrder: properties are written in their order, not
// sorted, and every other object sorted.
func TestPropertiesKeepTheirOrder(t *testing.T) {
	v := map[string]any{"type": "object", "properties": properties{{"zeta", map[string]any{"type": "string"}}, {"alpha", map[string]any{}}}}
	want := `{
  "properties": {
    "zeta": {
      "type": "string"
    },
    "alpha": {}
  },
  "type": "object"
}`
	if got := string(appendIndentedJSON(nil, v, "")); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
