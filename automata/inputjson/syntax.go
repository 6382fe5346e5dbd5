package inputjson

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// checkSyntax reports what encoding/json reads from valid JSON without a
// word: a key written twice in one object (it keeps the last), bytes that
// are not UTF-8 and escapes of half a UTF-16 surrogate pair ("\ud800"
// alone; it replaces both with U+FFFD). data must be one valid
// JSON value. The error names where, as a JSON Pointer. One pass over the
// bytes; an object's keys are compared with the others of that object only.
func checkSyntax(data []byte) error {
	s := syntaxScanner{data: data}
	return s.value("")
}

type syntaxScanner struct {
	data []byte
	off  int
}

func (s *syntaxScanner) space() {
	for s.off < len(s.data) {
		switch s.data[s.off] {
		case ' ', '\t', '\n', '\r':
			s.off++
		default:
			return
		}
	}
}

// str reads a string at s.off and returns its raw bytes, quotes excluded,
// and whether it holds an escape.
func (s *syntaxScanner) str() (raw []byte, escaped bool) {
	start := s.off + 1
	for s.off++; s.off < len(s.data) && s.data[s.off] != '"'; s.off++ {
		if s.data[s.off] == '\\' {
			escaped = true
			s.off++
		}
	}
	raw = s.data[start:min(s.off, len(s.data))]
	s.off++ // the closing quote
	return raw, escaped
}

// text checks a string's bytes at ptr and returns its value.
func (s *syntaxScanner) text(ptr string, raw []byte, escaped bool) (string, error) {
	if !utf8.Valid(raw) {
		i := 0
		for i < len(raw) {
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return "", fmt.Errorf("%s: not valid UTF-8: byte %#x", where(ptr), raw[i])
	}
	if !escaped {
		return string(raw), nil
	}
	if esc, ok := loneSurrogate(raw); !ok {
		return "", fmt.Errorf("%s: %s is half of a UTF-16 surrogate pair, no character on its own", where(ptr), esc)
	}
	var v string
	if err := json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &v); err != nil {
		return "", fmt.Errorf("%s: %w", where(ptr), err)
	}
	return v, nil
}

func (s *syntaxScanner) value(ptr string) error {
	s.space()
	if s.off >= len(s.data) {
		return nil
	}
	switch s.data[s.off] {
	case '"':
		raw, escaped := s.str()
		_, err := s.text(ptr, raw, escaped)
		return err
	case '[':
		s.off++
		for i := 0; ; i++ {
			s.space()
			if s.off >= len(s.data) || s.data[s.off] == ']' {
				s.off++
				return nil
			}
			if s.data[s.off] == ',' {
				s.off++
			}
			if err := s.value(ptr + "/" + strconv.Itoa(i)); err != nil {
				return err
			}
		}
	case '{':
		s.off++
		var keys []string        // the first few, compared one by one
		var many map[string]bool // then all of them, in a set
		for {
			s.space()
			if s.off >= len(s.data) || s.data[s.off] == '}' {
				s.off++
				return nil
			}
			if s.data[s.off] == ',' {
				s.off++
				s.space()
			}
			raw, escaped := s.str()
			key, err := s.text(ptr, raw, escaped)
			if err != nil {
				return err
			}
			child := ptr + "/" + pointerEscaper.Replace(key)
			seen := many[key]
			for _, k := range keys {
				seen = seen || k == key
			}
			if seen {
				return fmt.Errorf("%s: the key %q is written twice", where(ptr), key)
			}
			switch {
			case many != nil:
				many[key] = true
			case len(keys) < 8:
				keys = append(keys, key)
			default:
				many = make(map[string]bool)
				for _, k := range append(keys, key) {
					many[k] = true
				}
				keys = nil
			}
			s.space()
			s.off++ // the colon
			if err := s.value(child); err != nil {
				return err
			}
		}
	default: // a number, true, false or null
		for s.off < len(s.data) && !strings.ContainsRune(",}] \t\n\r", rune(s.data[s.off])) {
			s.off++
		}
		return nil
	}
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// where names a JSON Pointer in a message: the object itself for "".
func where(ptr string) string {
	if ptr == "" {
		return "at the top level"
	}
	return "at " + ptr
}

// loneSurrogate reads the escapes of a string's raw bytes (valid JSON) and
// returns the first \u escape of half a UTF-16 surrogate pair that is not
// in a pair (a high half right before a low half), and ok false; ok true if
// there is none.
func loneSurrogate(raw []byte) (esc string, ok bool) {
	pending := "" // a high half waiting for its low half
	for i := 0; i < len(raw); i++ {
		r := rune(-1) // the \u escape at i, if one
		if raw[i] == '\\' {
			i++
			if i+4 < len(raw) && raw[i] == 'u' {
				v, err := strconv.ParseUint(string(raw[i+1:i+5]), 16, 32)
				if err != nil {
					return "", true // not JSON: its parser says so
				}
				r, i = rune(v), i+4
			}
		}
		switch {
		case r >= 0xdc00 && r < 0xe000 && pending != "":
			pending = ""
		case pending != "":
			return pending, false
		case r >= 0xd800 && r < 0xdc00:
			pending = string(raw[i-5 : i+1])
		case r >= 0xdc00 && r < 0xe000:
			return string(raw[i-5 : i+1]), false
		}
	}
	return pending, pending == ""
}
