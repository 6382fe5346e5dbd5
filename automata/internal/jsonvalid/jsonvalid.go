// Package jsonvalid checks JSON text as encoding/json does, in one tight
// pass: Valid answers as json.Valid (its nesting limit too), and Marshaled
// says whether json.Marshal would write a json.Marshaler's output unchanged.
// encoding/json's scanner calls a function per byte; on a journaled input of
// ~150 bytes its check was a third of what the journal spends on the input
// outside the disk (see BenchmarkValid).
package jsonvalid

// maxDepth is encoding/json's limit on nesting: a value nested deeper is
// not valid to it.
const maxDepth = 10000

// Valid reports whether data is one valid JSON value, with only whitespace
// around it: json.Valid's answer, for every input.
func Valid(data []byte) bool {
	ok, _ := scan(data)
	return ok
}

// Marshaled reports whether data is valid JSON that json.Marshal, given a
// json.Marshaler whose MarshalJSON returns data, would write unchanged: it
// has no whitespace outside its strings, and no '<', '>', '&', U+2028 or
// U+2029, which Marshal escapes (its HTML escaping, on by default).
func Marshaled(data []byte) bool {
	ok, compact := scan(data)
	return ok && compact
}

// Where scan is in the grammar.
const (
	wantValue    = iota // a value
	wantKey             // an object's key (after '{' or ',')
	wantAfter           // ',' or the end of the container, after a value
	wantFirstKey        // a key or '}', just after '{'
	wantFirstVal        // a value or ']', just after '['
)

// scan reports whether data is valid JSON, and whether it is as Marshal
// writes it (Marshaled).
func scan(data []byte) (valid, compact bool) {
	compact = true
	// The open containers, innermost last: true for an object. Most
	// values nest a few levels: the array lives on the stack to 64.
	var fixed [64]bool
	stack := fixed[:0]
	i, n := 0, len(data)
	state := wantValue
	for {
		// Whitespace between tokens.
		for i < n && isSpace[data[i]] {
			i++
			compact = false
		}
		if i == n {
			return len(stack) == 0 && state == wantAfter, compact
		}
		c := data[i]
		switch state {
		case wantFirstKey:
			if c == '}' {
				stack = stack[:len(stack)-1]
				i++
				state = wantAfter
				continue
			}
			fallthrough
		case wantKey:
			if c != '"' {
				return false, compact
			}
			var ok bool
			if i, ok = str(data, i, &compact); !ok {
				return false, compact
			}
			for i < n && isSpace[data[i]] {
				i++
				compact = false
			}
			if i == n || data[i] != ':' {
				return false, compact
			}
			i++
			state = wantValue
			continue
		case wantAfter:
			if len(stack) == 0 {
				return false, compact // data after the value
			}
			object := stack[len(stack)-1]
			switch {
			case c == ',':
				i++
				state = wantValue
				if object {
					state = wantKey
				}
			case c == '}' && object, c == ']' && !object:
				stack = stack[:len(stack)-1]
				i++
			default:
				return false, compact
			}
			continue
		case wantFirstVal:
			if c == ']' {
				stack = stack[:len(stack)-1]
				i++
				state = wantAfter
				continue
			}
		}
		// A value at i.
		var ok bool
		switch c {
		case '{', '[':
			if len(stack) == maxDepth {
				return false, compact
			}
			stack = append(stack, c == '{')
			i++
			state = wantFirstVal
			if c == '{' {
				state = wantFirstKey
			}
			continue
		case '"':
			i, ok = str(data, i, &compact)
		case 't':
			i, ok = literal(data, i, "true")
		case 'f':
			i, ok = literal(data, i, "false")
		case 'n':
			i, ok = literal(data, i, "null")
		default:
			i, ok = number(data, i)
		}
		if !ok {
			return false, compact
		}
		state = wantAfter
	}
}

// str checks the string whose opening quote is at i and returns the index
// after its closing quote.
func str(data []byte, i int, compact *bool) (int, bool) {
	n := len(data)
	for i++; i < n; i++ {
		c := data[i]
		if plain[c] {
			continue
		}
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i == n {
				return i, false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= n || !isHex[data[i+1]] || !isHex[data[i+2]] || !isHex[data[i+3]] || !isHex[data[i+4]] {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		case c == '<', c == '>', c == '&':
			*compact = false
		case c == 0xE2 && i+2 < n && data[i+1] == 0x80 && data[i+2]&^1 == 0xA8:
			*compact = false // U+2028 or U+2029
		}
	}
	return i, false
}

// literal checks that word is at i, and returns the index after it.
func literal(data []byte, i int, word string) (int, bool) {
	if len(data)-i < len(word) || string(data[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

// number checks the number at i and returns the index after it: an
// optional minus, 0 or digits not starting with 0, an optional fraction,
// an optional exponent.
func number(data []byte, i int) (int, bool) {
	n := len(data)
	if data[i] == '-' {
		i++
	}
	switch {
	case i == n:
		return i, false
	case data[i] == '0':
		i++
	case data[i] >= '1' && data[i] <= '9':
		for i++; i < n && isDigit(data[i]); i++ {
		}
	default:
		return i, false
	}
	if i < n && data[i] == '.' {
		i++
		if i == n || !isDigit(data[i]) {
			return i, false
		}
		for i++; i < n && isDigit(data[i]); i++ {
		}
	}
	if i < n && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < n && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i == n || !isDigit(data[i]) {
			return i, false
		}
		for i++; i < n && isDigit(data[i]); i++ {
		}
	}
	return i, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

var isSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// plain marks the bytes of a string that need no look: not a quote, a
// backslash, a control character, nor a byte Marshal escapes or begins
// U+2028 with.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = true
	}
	for _, c := range []byte{'"', '\\', '<', '>', '&', 0xE2} {
		t[c] = false
	}
	return t
}()

var isHex = func() (t [256]bool) {
	for _, c := range []byte("0123456789abcdefABCDEF") {
		t[c] = true
	}
	return t
}()
