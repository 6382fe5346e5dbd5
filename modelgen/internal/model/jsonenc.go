package model

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// appendIndentedJSON appends v as encoding/json's Encoder writes it with
// SetEscapeHTML(false) and SetIndent("", "  "), byte for byte, without its
// trailing newline, except that properties keep their order; indent is the
// indentation of the line v starts on. It
// is written out for the trees inputSchema builds (maps, slices, strings,
// numbers, booleans and null), which encoding/json walks by reflection and
// sorts the keys of with an allocation per map; anything else goes through
// encoding/json.
func appendIndentedJSON(b []byte, v any, indent string) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case string:
		return appendString(b, v)
	case json.Number:
		if v == "" {
			break // encoding/json writes 0
		}
		return append(b, v...)
	case map[string]any:
		if v == nil {
			return append(b, "null"...)
		}
		if len(v) == 0 {
			return append(b, "{}"...)
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return appendObject(b, indent, len(keys), func(i int) (string, any) { return keys[i], v[keys[i]] })
	case properties:
		if len(v) == 0 {
			return append(b, "{}"...)
		}
		return appendObject(b, indent, len(v), func(i int) (string, any) { return v[i].name, v[i].schema })
	case []any:
		if v == nil {
			return append(b, "null"...)
		}
		if len(v) == 0 {
			return append(b, "[]"...)
		}
		inner := indent + "  "
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '\n')
			b = append(b, inner...)
			b = appendIndentedJSON(b, e, inner)
		}
		b = append(b, '\n')
		b = append(b, indent...)
		return append(b, ']')
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(indent, "  ")
	if err := enc.Encode(v); err != nil {
		panic("model: encoding the input schema: " + err.Error()) // the tree holds JSON values only
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// appendObject appends an object of n members, the i-th of which is
// member(i), on lines of their own below indent.
func appendObject(b []byte, indent string, n int, member func(i int) (string, any)) []byte {
	inner := indent + "  "
	b = append(b, '{')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		k, v := member(i)
		b = append(b, '\n')
		b = append(b, inner...)
		b = appendString(b, k)
		b = append(b, ": "...)
		b = appendIndentedJSON(b, v, inner)
	}
	b = append(b, '\n')
	b = append(b, indent...)
	return append(b, '}')
}

// appendString appends s as a JSON string, as encoding/json writes it
// without HTML escaping.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.Encode(s) // a string always encodes
			return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
