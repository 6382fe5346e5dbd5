package inputjson

import (
	"encoding/json"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/moora-go/moora/automata/internal/jsonvalid"
)

// The fast path. Decode validates an input with a general JSON Schema
// validator, which reads the input into a tree of values first and checks
// what encoding/json would decode without a word after decoding it (see
// checkDecoded): some 16 µs and a hundred allocations for an input of a
// chat message, eight times what encoding/json takes to decode it. Most
// inputs of most agents are objects of strings, numbers and booleans, with
// arrays and maps of them, whose schemas use a handful of keywords; Decode
// checks those in one pass over the bytes, without building the tree, and
// decodes them at once. Fast or not, it accepts the same inputs and
// decodes them to the same values: the fast path accepts an input only
// when it is certain that the validator would accept it as it is (no
// integer to rewrite, no property in another case than the schema's, no
// null), and hands anything else, every input it refuses included, to the
// validator, which says what is wrong. An input type whose schema uses a
// keyword the fast path does not check (allOf, oneOf, if, pattern,
// format, …) is always validated so.
//
// The keywords it checks: type (one type, or one and "null"), const and
// enum of strings, properties, required, additionalProperties (false, or
// the schema of the values of a map without properties), items, minItems,
// maxItems, minLength, maxLength, minimum, maximum, exclusiveMinimum,
// exclusiveMaximum, and a $ref to a type under $defs, alone. It ignores
// the annotations (description, title, default, examples, readOnly,
// writeOnly, deprecated, $comment). An object with properties is closed,
// as closeObjects closes it: a key it does not declare is not fast.

// kind is a JSON type of a value, as a bit of a fastNode's types.
type kind uint8

const (
	kindString kind = 1 << iota
	kindInteger
	kindNumber // any number; an integer is one too
	kindBoolean
	kindObject
	kindArray
)

// fastNode is a schema as the fast path checks it.
type fastNode struct {
	types kind
	// consts, when not nil, are the strings the value may be (const, enum).
	consts []string
	// minLen and maxLen bound a string's length in code points; -1 is no
	// bound.
	minLen, maxLen int
	// bounds are a number's minimum, maximum and their exclusive kin.
	bounds []bound
	// props are an object's declared properties, each with its bit in a
	// mask of them; required is the mask of the required ones.
	props    map[string]fastProp
	required uint64
	// values is the schema of the values of a map (additionalProperties
	// with a schema), which takes any key; nil for an object with props.
	values *fastNode
	// items is the schema of an array's elements, and minItems and
	// maxItems bound their count (-1: no bound).
	items              *fastNode
	minItems, maxItems int
}

type fastProp struct {
	node *fastNode
	bit  uint64
}

// bound is a limit of a number: the value compared with it must not be
// below (lower) or above it, nor equal to it if exclusive.
type bound struct {
	limit            *big.Rat
	lower, exclusive bool
	// small is the limit as an int64, if it is an integer of 18 digits at
	// most, for the integers that are too.
	small   int64
	isSmall bool
}

// newBound returns the bound of a keyword (minimum, exclusiveMaximum, …).
func newBound(keyword string, limit *big.Rat) bound {
	b := bound{limit: limit, lower: strings.HasSuffix(keyword, "inimum"), exclusive: strings.HasPrefix(keyword, "exclusive")}
	if limit.IsInt() && limit.Num().IsInt64() {
		b.small = limit.Num().Int64()
		b.isSmall = b.small > -1e18 && b.small < 1e18
	}
	return b
}

// cmp compares v, written lit, with b's limit: -1, 0 or +1 as v is below,
// at or above it. small is v if it is an integer of 18 digits at most.
func (b bound) cmp(lit []byte, small int64, isSmall bool) (int, bool) {
	if isSmall && b.isSmall {
		return cmpInt(small, b.small), true
	}
	v, ok := new(big.Rat).SetString(string(lit))
	if !ok {
		return 0, false
	}
	return v.Cmp(b.limit), true
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// smallInteger reads lit, a JSON number, as an int64 if it is an integer
// written with 18 digits at most.
func smallInteger(lit []byte) (int64, bool) {
	neg := len(lit) > 0 && lit[0] == '-'
	digits := lit
	if neg {
		digits = lit[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// annotations are the keywords that do not constrain a value.
var annotations = map[string]bool{
	"description": true, "title": true, "default": true, "examples": true,
	"readOnly": true, "writeOnly": true, "deprecated": true, "$comment": true,
}

// compileFast returns the fast node of each of the input types types of
// the schema document doc whose schema the fast path can check. A type
// missing from the result is always validated by the validator.
func compileFast(doc string, types []string) map[string]*fastNode {
	var root map[string]any
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return nil
	}
	inputs, _ := root["inputs"].(map[string]any)
	defs, _ := root["$defs"].(map[string]any)
	nodes := make(map[string]*fastNode, len(types))
	for _, typ := range types {
		// One compilation per type, so that a $defs type it cannot check
		// keeps only the types that use it off the fast path.
		c := fastCompiler{defs: defs, refs: map[string]*fastNode{}}
		if n, ok := c.node(inputs[typ]); ok && n.types == kindObject && n.props != nil {
			nodes[typ] = n
		}
	}
	return nodes
}

type fastCompiler struct {
	defs map[string]any
	refs map[string]*fastNode // the $defs types compiled or being compiled
}

// node compiles the schema v, and reports false if it uses a keyword the
// fast path does not check, or a form of one.
func (c fastCompiler) node(v any) (*fastNode, bool) {
	s, ok := v.(map[string]any)
	if !ok {
		return nil, false // a boolean schema, or none
	}
	if ref, ok := s["$ref"]; ok {
		for k := range s {
			if k != "$ref" && !annotations[k] {
				return nil, false
			}
		}
		return c.ref(ref)
	}
	n := &fastNode{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
	for k, kv := range s {
		ok := true
		switch k {
		case "type":
			n.types, ok = typesOf(kv)
		case "const":
			str, isStr := kv.(string)
			ok = isStr && n.consts == nil
			n.consts = []string{str}
		case "enum":
			list, isList := kv.([]any)
			ok = isList && len(list) > 0 && n.consts == nil
			for _, e := range list {
				str, isStr := e.(string)
				ok = ok && isStr
				n.consts = append(n.consts, str)
			}
		case "minLength":
			n.minLen, ok = count(kv)
		case "maxLength":
			n.maxLen, ok = count(kv)
		case "minItems":
			n.minItems, ok = count(kv)
		case "maxItems":
			n.maxItems, ok = count(kv)
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			num, isNum := kv.(json.Number)
			limit, isRat := new(big.Rat).SetString(string(num))
			ok = isNum && isRat
			if ok {
				n.bounds = append(n.bounds, newBound(k, limit))
			}
		case "items":
			n.items, ok = c.node(kv)
		case "properties", "required", "additionalProperties":
			// Read together below.
		default:
			ok = annotations[k]
		}
		if !ok {
			return nil, false
		}
	}
	if n.consts != nil {
		// A const or enum of strings is a string, whatever type says.
		if n.types != 0 && n.types != kindString {
			return nil, false
		}
		n.types = kindString
	}
	switch {
	case n.types == 0:
		return nil, false // any JSON
	case n.types == kindArray && n.items == nil:
		return nil, false // an array of anything
	case n.types == kindObject && !c.object(n, s):
		return nil, false
	}
	return n, true
}

// object reads the properties of the object schema s into n: declared
// properties, closed, or a map's values.
func (c fastCompiler) object(n *fastNode, s map[string]any) bool {
	props, hasProps := s["properties"].(map[string]any)
	additional, hasAdditional := s["additionalProperties"]
	switch {
	case hasProps && (!hasAdditional || additional == false):
		if len(props) > 64 {
			return false // more than the mask has bits
		}
		n.props = make(map[string]fastProp, len(props))
		bit := uint64(1)
		for name, p := range props {
			pn, ok := c.node(p)
			if !ok {
				return false
			}
			n.props[name] = fastProp{node: pn, bit: bit}
			bit <<= 1
		}
		required, _ := s["required"].([]any)
		for _, r := range required {
			name, _ := r.(string)
			p, ok := n.props[name]
			if !ok {
				return false // no input has it: the validator says so
			}
			n.required |= p.bit
		}
		return true
	case !hasProps && s["required"] == nil && hasAdditional:
		// A map, or an object closed to every property.
		if additional == false {
			n.props = map[string]fastProp{}
			return true
		}
		var ok bool
		n.values, ok = c.node(additional)
		return ok
	}
	return false // free-form, or open with additionalProperties: true
}

// ref compiles the $defs type a $ref names.
func (c fastCompiler) ref(v any) (*fastNode, bool) {
	ref, _ := v.(string)
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok || strings.ContainsAny(name, "/~%") {
		return nil, false
	}
	if n, ok := c.refs[name]; ok {
		return n, true // compiled, or being compiled (a recursive type)
	}
	def, ok := c.defs[name].(map[string]any)
	if !ok {
		return nil, false
	}
	n := new(fastNode)
	c.refs[name] = n
	compiled, ok := c.node(def)
	if !ok {
		return nil, false
	}
	*n = *compiled
	return n, true
}

// typesOf reads the keyword type: one type, or one and "null" (the fast
// path takes no null: encoding/json decodes it as nothing, into a field
// that may not say null after it).
func typesOf(v any) (kind, bool) {
	var names []string
	switch v := v.(type) {
	case string:
		names = []string{v}
	case []any:
		for _, e := range v {
			name, ok := e.(string)
			if !ok {
				return 0, false
			}
			if name != "null" {
				names = append(names, name)
			}
		}
	}
	if len(names) != 1 {
		return 0, false
	}
	switch names[0] {
	case "string":
		return kindString, true
	case "integer":
		return kindInteger, true
	case "number":
		return kindNumber, true
	case "boolean":
		return kindBoolean, true
	case "object":
		return kindObject, true
	case "array":
		return kindArray, true
	}
	return 0, false
}

// count reads a non-negative integer keyword (minLength, maxItems).
func count(v any) (int, bool) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := num.Int64()
	if err != nil || i < 0 || i > 1<<31 {
		return 0, false
	}
	return int(i), true
}

// fastScanner checks a valid JSON value against a fast node, in one pass
// over its bytes.
type fastScanner struct {
	syntaxScanner
}

// topLevelType returns the value of the "type" property of the object
// data, valid JSON, if it is a string written without escapes.
func topLevelType(data []byte) (string, bool) {
	s := fastScanner{syntaxScanner{data: data}}
	s.space()
	if s.off >= len(data) || data[s.off] != '{' {
		return "", false
	}
	s.off++
	for {
		s.space()
		if data[s.off] == '}' {
			return "", false
		}
		if data[s.off] == ',' {
			s.off++
			s.space()
		}
		key, keyEscaped := s.str()
		s.space()
		s.off++ // the colon
		s.space()
		if string(key) == "type" && !keyEscaped {
			if data[s.off] != '"' {
				return "", false
			}
			typ, escaped := s.str()
			return string(typ), !escaped
		}
		s.skip()
	}
}

// skip moves past the value at s.off.
func (s *fastScanner) skip() {
	depth := 0
	for s.off < len(s.data) {
		switch s.data[s.off] {
		case '"':
			s.str()
			if depth == 0 {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return // after a number, true, false or null
			}
			depth--
			if depth == 0 {
				s.off++
				return
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return
			}
		}
		s.off++
	}
}

// value reports whether the value at s.off is valid against n, as the
// validator would find it, and needs nothing the fast path does not do.
func (s *fastScanner) value(n *fastNode) bool {
	s.space()
	switch c := s.data[s.off]; {
	case c == '"':
		return n.types == kindString && s.string(n)
	case c == '{':
		return n.types == kindObject && s.object(n)
	case c == '[':
		return n.types == kindArray && s.array(n)
	case c == 't' || c == 'f':
		s.off += 4
		if c == 'f' {
			s.off++
		}
		return n.types == kindBoolean
	case c == 'n':
		return false // null: see typesOf
	}
	return n.types&(kindInteger|kindNumber) != 0 && s.number(n)
}

func (s *fastScanner) string(n *fastNode) bool {
	raw, escaped := s.str()
	if !utf8.Valid(raw) {
		return false
	}
	if escaped {
		if _, ok := loneSurrogate(raw); !ok {
			return false
		}
	}
	if n.consts == nil && n.minLen < 0 && n.maxLen < 0 {
		return true
	}
	str := string(raw)
	if escaped {
		if err := json.Unmarshal(s.data[s.off-len(raw)-2:s.off], &str); err != nil {
			return false
		}
	}
	if n.consts != nil {
		found := false
		for _, c := range n.consts {
			found = found || c == str
		}
		if !found {
			return false
		}
	}
	if n.minLen >= 0 || n.maxLen >= 0 {
		l := utf8.RuneCountInString(str)
		if l < n.minLen || n.maxLen >= 0 && l > n.maxLen {
			return false
		}
	}
	return true
}

// number checks the number at s.off. A number with an exponent or over
// maxNumberLen characters, or an integer written with a fraction (even
// where a number is wanted), is not fast: the validator checks its exponent and its length, and Decode
// rewrites such an integer for encoding/json.
func (s *fastScanner) number(n *fastNode) bool {
	start := s.off
	for s.off < len(s.data) && !strings.ContainsRune(",}] \t\n\r", rune(s.data[s.off])) {
		s.off++
	}
	lit := s.data[start:s.off]
	if len(lit) > maxNumberLen {
		return false
	}
	for _, b := range lit {
		if b == 'e' || b == 'E' || b == '.' && n.types == kindInteger {
			return false
		}
	}
	if _, ok := integerLiteral(string(lit)); ok {
		return false // Decode rewrites it, in a number too: -0.0 is 0 there
	}
	if len(n.bounds) == 0 {
		return true
	}
	small, isSmall := smallInteger(lit)
	for _, b := range n.bounds {
		c, ok := b.cmp(lit, small, isSmall)
		if !ok {
			return false
		}
		if !b.lower {
			c = -c
		}
		if c < 0 || c == 0 && b.exclusive {
			return false
		}
	}
	return true
}

func (s *fastScanner) object(n *fastNode) bool {
	s.off++ // {
	var seen uint64
	var keys []string // a map's keys, to find one written twice
	for {
		s.space()
		if s.data[s.off] == '}' {
			s.off++
			return seen&n.required == n.required
		}
		if s.data[s.off] == ',' {
			s.off++
			s.space()
		}
		raw, escaped := s.str()
		if escaped || !utf8.Valid(raw) {
			return false
		}
		s.space()
		s.off++ // the colon
		var child *fastNode
		if n.values != nil {
			key := string(raw)
			for _, k := range keys {
				if k == key {
					return false
				}
			}
			// The validator's cost is a map's too; comparing each key
			// with the others of its map is kept linear by leaving the
			// large maps to it.
			if len(keys) == maxFastMapKeys {
				return false
			}
			keys = append(keys, key)
			child = n.values
		} else {
			p, ok := n.props[string(raw)]
			if !ok || seen&p.bit != 0 {
				return false // undeclared (in another case?) or written twice
			}
			seen |= p.bit
			child = p.node
		}
		if !s.value(child) {
			return false
		}
	}
}

// maxFastMapKeys is the most keys of a map the fast path checks: a map
// with more is the validator's, so that finding a key written twice
// costs no more than a few comparisons per key.
const maxFastMapKeys = 16

func (s *fastScanner) array(n *fastNode) bool {
	s.off++ // [
	for count := 0; ; count++ {
		s.space()
		if s.data[s.off] == ']' {
			s.off++
			return count >= n.minItems && (n.maxItems < 0 || count <= n.maxItems)
		}
		if s.data[s.off] == ',' {
			s.off++
		}
		if !s.value(n.items) {
			return false
		}
	}
}

// decodeFast decodes data on the fast path, and reports false if the
// input is not one for it, which Decode then validates in full.
func (d *Decoder[T]) decodeFast(data []byte) (T, bool) {
	var zero T
	if d.fast == nil {
		return zero, false
	}
	nodes := d.fast()
	if len(nodes) == 0 || !jsonvalid.Valid(data) {
		return zero, false
	}
	typ, ok := topLevelType(data)
	if !ok {
		return zero, false
	}
	node := nodes[typ]
	if node == nil {
		return zero, false
	}
	s := fastScanner{syntaxScanner{data: data}}
	if !s.value(node) {
		return zero, false
	}
	in, err := d.decoders[typ](data)
	if err != nil {
		return zero, false // a number too large for its Go type
	}
	return in, true
}
