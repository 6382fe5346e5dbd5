package migrate

import (
	"encoding/json"
	"errors"
	"fmt"
)

// InputType returns the "type" of an input's JSON: the value of the
// top-level property "type", which must be a string. It reads only as far
// as that property, without decoding the rest (which the decoder of the
// input's version validates next), so its cost is small where the type
// comes first, as generated MarshalJSON methods write it.
func InputType(data []byte) (string, error) {
	s := scanner{data: data}
	s.space()
	if !s.byte('{') {
		return "", errors.New("not a JSON object")
	}
	for first := true; ; first = false {
		s.space()
		if s.byte('}') {
			return "", errors.New(`no "type" property`)
		}
		if !first && !(s.byte(',') && s.skipSpace()) {
			return "", s.errorf("a , or } after an object member")
		}
		key, ok := s.str()
		if !ok {
			return "", s.errorf("a property name")
		}
		s.space()
		if !s.byte(':') {
			return "", s.errorf("a : after a property name")
		}
		s.space()
		if key != "type" {
			if !s.skipValue(0) {
				return "", s.errorf("a JSON value")
			}
			continue
		}
		typ, ok := s.str()
		if !ok {
			return "", errors.New(`"type" is not a string`)
		}
		return typ, nil
	}
}

// scanner reads JSON from data at off.
type scanner struct {
	data []byte
	off  int
}

func (s *scanner) errorf(want string) error {
	if s.off >= len(s.data) {
		return fmt.Errorf("unexpected end of JSON, want %s", want)
	}
	return fmt.Errorf("offset %d: want %s", s.off, want)
}

func (s *scanner) space() {
	for s.off < len(s.data) {
		switch s.data[s.off] {
		case ' ', '\t', '\n', '\r':
			s.off++
		default:
			return
		}
	}
}

func (s *scanner) skipSpace() bool { s.space(); return true }

// byte consumes c if it is next.
func (s *scanner) byte(c byte) bool {
	if s.off < len(s.data) && s.data[s.off] == c {
		s.off++
		return true
	}
	return false
}

// str reads a string; one with escapes is decoded by encoding/json.
func (s *scanner) str() (string, bool) {
	start := s.off
	if !s.skipString() {
		return "", false
	}
	raw := s.data[start:s.off]
	for _, c := range raw[1 : len(raw)-1] {
		if c == '\\' || c >= 0x80 {
			var v string
			if json.Unmarshal(raw, &v) != nil {
				return "", false
			}
			return v, true
		}
	}
	return string(raw[1 : len(raw)-1]), true
}

// skipString skips a string, checking no more than its quotes and escapes.
func (s *scanner) skipString() bool {
	if !s.byte('"') {
		return false
	}
	for s.off < len(s.data) {
		switch c := s.data[s.off]; {
		case c == '\\':
			s.off += 2
		case c == '"':
			s.off++
			return true
		case c < 0x20:
			return false
		default:
			s.off++
		}
	}
	return false
}

// maxDepth bounds the nesting skipValue follows: the decoder that reads
// the input next has its own, lower limit.
const maxDepth = 10_000

// skipValue skips one value, checking its brackets and strings; the
// decoder of the input's version validates it next.
func (s *scanner) skipValue(depth int) bool {
	if depth > maxDepth || s.off >= len(s.data) {
		return false
	}
	switch s.data[s.off] {
	case '"':
		return s.skipString()
	case '{', '[':
		open := s.data[s.off]
		close := byte('}')
		if open == '[' {
			close = ']'
		}
		s.off++
		s.space()
		if s.byte(close) {
			return true
		}
		for {
			s.space()
			if open == '{' {
				if !s.skipString() {
					return false
				}
				s.space()
				if !s.byte(':') {
					return false
				}
				s.space()
			}
			if !s.skipValue(depth + 1) {
				return false
			}
			s.space()
			if s.byte(close) {
				return true
			}
			if !s.byte(',') {
				return false
			}
		}
	default: // a number, true, false or null
		start := s.off
		for s.off < len(s.data) {
			switch s.data[s.off] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.off > start
			}
			s.off++
		}
		return s.off > start
	}
}
