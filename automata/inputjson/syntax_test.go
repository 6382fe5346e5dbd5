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
// with a key written twice in one object, bytes that are not UTF-8, or
// half a surrogate pair escaped alone, as encoding/json's tokenizer sees
// them (it reads the last two as U+FFFD).
func FuzzCheckSyntax(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":1,"c":2}]}}`, `{"a\u0062":1,"ab":2}`, "{\"a\":\"\xff\"}", `[{"a":1},{"a":1}]`, `"x"`, `{"a":"\\"}`,
		`"\ud83d\ude00"`, `"\ud800"`, `{"\udc00":1}`, `"\\ud800"`, `["\ud83d\ud83d\ude00"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		if utf8.Valid(data) && (strings.ContainsRune(string(data), utf8.RuneError) || strings.Contains(strings.ToLower(string(data)), `\ufffd`)) {
			return // a U+FFFD of its own: the oracle below cannot tell
		}
		err := checkSyntax(data)
		want := !utf8.Valid(data) || hasDuplicate(data) || replacedSurrogate(data)
		if (err != nil) != want {
			t.Fatalf("checkSyntax(%q) = %v, want an error: %v", data, err, want)
		}
	})
}

// replacedSurrogate says whether encoding/json reads a string of data, UTF-8
// without a U+FFFD of its own, as holding U+FFFD: the character it puts in
// place of half a surrogate pair.
func replacedSurrogate(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if s, ok := tok.(string); ok && strings.ContainsRune(s, utf8.RuneError) {
			return true
		}
	}
}

func TestLoneSurrogate(t *testing.T) {
	for _, tc := range []struct {
		raw, esc string // esc "": none alone
	}{
		{`\ud83d\ude00`, ""},
		{`a\u00e9\uD83D\uDE00b`, ""},
		{`\\ud800`, ""}, // an escaped backslash, then text
		{`\\\ud800`, `\ud800`},
		{`\ud800`, `\ud800`},
		{`\ud800x`, `\ud800`},
		{`\ud800\n`, `\ud800`},
		{`\ud83d\ud83d\ude00`, `\ud83d`},
		{`x\uDFFF`, `\uDFFF`},
		{`\ude00\ud83d`, `\ude00`},
	} {
		esc, ok := loneSurrogate([]byte(tc.raw))
		if ok != (tc.esc == "") || esc != tc.esc {
			t.Errorf("loneSurrogate(%s) = %q, %v; want %q", tc.raw, esc, ok, tc.esc)
		}
	}
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
