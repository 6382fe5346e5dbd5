package inputjson

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Limits bound the inputs a Decoder accepts, so that decoding a hostile
// input costs time and memory in proportion to MaxBytes at most. A field
// that is zero (or negative) means its default.
type Limits struct {
	// MaxBytes is the most bytes an input may have, white space included.
	// The default is 1 MiB (1 << 20).
	MaxBytes int
	// MaxDepth is how deep arrays and objects may nest in an input, the
	// input object itself being level 1. The default is 64. encoding/json
	// refuses anything deeper than 10,000 whatever MaxDepth says.
	MaxDepth int
}

const (
	// defaultMaxBytes is far above the inputs of an agent (messages, tool
	// calls and their results are kilobytes) and low enough that decoding
	// one, at a few MB/s (see Speed in the package doc), takes a fraction
	// of a second.
	defaultMaxBytes = 1 << 20

	// defaultMaxDepth is 64 because the inputs of an agent nest a few levels
	// (an input, its message, a tool call, the call's arguments) and
	// recursive types such as trees a few dozen, while some costs grow with
	// the depth: the schema validator builds the location of each value it
	// visits (so a value d levels deep costs d), and each generated
	// UnmarshalJSON of a struct holding a sealed interface hands its nested
	// JSON to encoding/json again (so a byte inside d of them is read d
	// times). 64 bounds that factor; serde_json's default of 128 is for a
	// parser that reads each byte once.
	defaultMaxDepth = 64

	// maxNumberLen and maxExponent bound how a number may be written. The
	// schema validator reads every number it checks (each integer, each
	// number with a minimum or a maximum) as a math/big.Rat, which costs
	// time growing with the square of the number's length and with the
	// power of ten its exponent names: 1e999999, 9 bytes, takes 20 ms. No
	// Go number needs either: a float64 has 17 significant digits and
	// exponents from -324 to 308.
	maxNumberLen = 1000
	maxExponent  = 1000
)

// WithLimits returns a Decoder like d that decodes with the limits l. It
// shares d's compiled schemas: making one per set of limits is cheap.
func (d *Decoder[T]) WithLimits(l Limits) *Decoder[T] {
	limited := *d
	limited.limits = l
	return &limited
}

// maxBytes returns the most bytes an input may have under l.
func (l Limits) maxBytes() int {
	if l.MaxBytes <= 0 {
		return defaultMaxBytes
	}
	return l.MaxBytes
}

// maxDepth returns how deep an input may nest under l.
func (l Limits) maxDepth() int {
	if l.MaxDepth <= 0 {
		return defaultMaxDepth
	}
	return l.MaxDepth
}

// check reports an input over l, before any of it is parsed: its length,
// then its nesting.
func (l Limits) check(data []byte) error {
	if n, limit := len(data), l.maxBytes(); n > limit {
		return fmt.Errorf("decoding input: %d bytes, over the limit of %d (inputjson.Limits.MaxBytes)", n, limit)
	}
	limit := l.maxDepth()
	if off := deeperThan(data, limit); off >= 0 {
		return fmt.Errorf("decoding input: nested deeper than %d levels at byte offset %d (inputjson.Limits.MaxDepth)", limit, off)
	}
	return nil
}

// deeperThan returns the offset in data of the first [ or { that opens
// level limit+1 of nesting, or -1 if none does. It reads data once, left
// to right, and counts the brackets outside strings, skipping each string
// from its opening quote to the first quote not escaped by a backslash.
// On valid JSON its levels are encoding/json's; on anything else it returns
// an offset or -1 without fail, and the parser that reads data next reports
// what is wrong with it.
func deeperThan(data []byte, limit int) int {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '[', '{':
			if depth++; depth > limit {
				return i
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		}
	}
	return -1
}

// checkNumbers returns an error for the first number in v, a value decoded
// with UseNumber, that is too long or has too large an exponent for the
// schema validator to read in time in proportion to its length (see
// maxNumberLen). p is where v is in the input.
func checkNumbers(v any, p *path) error {
	switch v := v.(type) {
	case json.Number:
		if problem := numberProblem(string(v)); problem != "" {
			return fmt.Errorf("%s: number %s", p, problem)
		}
	case map[string]any:
		for k, e := range v {
			p.push(pathKey(k))
			err := checkNumbers(e, p)
			p.pop()
			if err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			p.push(pathIndex(i))
			err := checkNumbers(e, p)
			p.pop()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// numberProblem says what is wrong with the JSON number n, written out, if
// it is longer than maxNumberLen or its exponent is beyond ±maxExponent,
// or returns "".
func numberProblem(n string) string {
	if len(n) > maxNumberLen {
		return fmt.Sprintf("%s… is too long: %d characters, over %d", n[:20], len(n), maxNumberLen)
	}
	i := strings.IndexAny(n, "eE")
	if i < 0 {
		return ""
	}
	exp := strings.TrimLeft(strings.TrimLeft(n[i+1:], "+-"), "0")
	if e, err := strconv.Atoi(exp); exp != "" && (err != nil || e > maxExponent) {
		return fmt.Sprintf("%s is out of range: its exponent is beyond ±%d", n, maxExponent)
	}
	return ""
}

// path is where a value is in an input while a walk descends to it: one
// element per level, a key or an index, pushed on the way down and popped
// on the way up. Its string, the location in the form of the schema
// validator's messages, is made only to report a problem; so a value d
// levels deep costs no more than one at the top.
type path struct {
	elems []pathElem
}

// pathElem is a level of a path: the property key, or, when index is not
// negative, the array index.
type pathElem struct {
	key   string
	index int
}

func pathKey(k string) pathElem { return pathElem{key: k, index: -1} }
func pathIndex(i int) pathElem  { return pathElem{index: i} }

func (p *path) push(e pathElem) { p.elems = append(p.elems, e) }
func (p *path) pop()            { p.elems = p.elems[:len(p.elems)-1] }

// String returns the location p names: "/tags/0/weight", or "" at the top.
func (p *path) String() string {
	var b strings.Builder
	for _, e := range p.elems {
		b.WriteByte('/')
		if e.index >= 0 {
			b.WriteString(strconv.Itoa(e.index))
		} else {
			b.WriteString(e.key)
		}
	}
	return b.String()
}

// child returns the location of p's element e, for a message.
func (p *path) child(e pathElem) string {
	p.push(e)
	defer p.pop()
	return p.String()
}
