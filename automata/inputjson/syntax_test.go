package inputjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCheckSyntax: on valid JSON, checkSyntax refuses exactly the documents
// with a key written twice in one object or bytes that are not UTF-8, as
// encoding/json's tokenizer sees them.
func FuzzCheckSyntax(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":1,"c":2}]}}`, `{"a\u0062":1,"ab":2}`, "{\"a\":\"\xff\"}", `[{"a":1},{"a":1}]`, `"x"`, `{"a":"\\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		err := checkSyntax(data)
		want := !utf8.Valid(data) || hasDuplicate(data)
		if (err != nil) != want {
			t.Fatalf("checkSyntax(%q) = %v, want an error: %v", data, err, want)
		}
	})
}

// hasDuplicate says whether an object of data has a key twice, reading data
// with encoding/json's tokenizer.
func hasDuplicate(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &frame{object: true, keys: map[string]bool{}, key: true})
			case '[':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.object && top.key {
				if top.keys[tok] {
					return true
				}
				top.keys[tok] = true
				top.key = false
				continue
			}
			if top != nil && top.object {
				top.key = true
			}
		default:
			if top != nil && top.object {
				top.key = true
			}
		}
	}
}

// BenchmarkCheckSyntaxManyKeys: an object of many keys (a hostile input at
// the size limit has tens of thousands) costs in proportion to its length.
func BenchmarkCheckSyntaxManyKeys(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		var buf strings.Builder
		buf.WriteByte('{')
		for i := range n {
			if i > 0 {
				buf.WriteByte(',')
			}
			fmt.Fprintf(&buf, `"k%d":1`, i)
		}
		buf.WriteByte('}')
		data := []byte(buf.String())
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for range b.N {
				if err := checkSyntax(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
