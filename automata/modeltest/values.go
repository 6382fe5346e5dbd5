package modeltest

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// source is the deterministic decoder of a fuzz input: every choice the
// value generator makes is a byte of it, and an exhausted source answers
// 0, the smallest choice (the fewest items, no optional property, the
// first enum value), so that the fuzzer's minimiser, which shortens the
// bytes, shortens the sequence and simplifies its values.
type source struct {
	data []byte
	pos  int
}

func (s *source) empty() bool { return s.pos >= len(s.data) }

func (s *source) byte() byte {
	if s.pos >= len(s.data) {
		return 0
	}
	b := s.data[s.pos]
	s.pos++
	return b
}

// intn returns a choice in [0, n).
func (s *source) intn(n int) int {
	if n <= 1 {
		return 0
	}
	if n <= 256 {
		return int(s.byte()) % n
	}
	return int(s.uint64() % uint64(n))
}

func (s *source) uint64() uint64 {
	var v uint64
	for range 8 {
		v = v<<8 | uint64(s.byte())
	}
	return v
}

// Bounds on what the generator makes, so that a sequence stays small and
// fast to check.
const (
	maxDepth      = 6  // beyond it, arrays and maps get their minimum size and objects their required properties only
	maxExtraItems = 3  // items beyond minItems (and entries beyond minProperties)
	maxExtraRunes = 12 // runes beyond minLength
	maxRepeat     = 3  // repetitions beyond a pattern's minimum
)

// schemaDoc is the JSON Schema of an agent's inputs, as decl.InputSchema
// returns it: the schema of each input under "inputs", the inputs of each
// actor under "actors", the shared types under "$defs".
type schemaDoc struct {
	Actors map[string][]string `json:"actors"`
	Inputs map[string]schema   `json:"inputs"`
	Defs   map[string]schema   `json:"$defs"`
}

type schema = map[string]any

// generator draws JSON values that satisfy a schema of the document from
// a source.
type generator struct {
	doc      *schemaDoc
	patterns map[string]*regexp.Regexp
}

func (g *generator) resolve(s schema) (schema, error) {
	for range 64 {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s, nil
		}
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok {
			return nil, fmt.Errorf("$ref %q: only #/$defs/Name is supported", ref)
		}
		def, ok := g.doc.Defs[name]
		if !ok {
			return nil, fmt.Errorf("$ref %q: no such type in $defs", ref)
		}
		s = def
	}
	return nil, fmt.Errorf("a cycle of $refs")
}

// value draws a value of s.
func (g *generator) value(src *source, s schema, depth int) (any, error) {
	s, err := g.resolve(s)
	if err != nil {
		return nil, err
	}
	if c, ok := s["const"]; ok {
		return c, nil
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[src.intn(len(e))], nil
	}
	if variants, ok := s["oneOf"].([]any); ok && len(variants) > 0 {
		v, _ := variants[src.intn(len(variants))].(schema)
		return g.value(src, v, depth+1)
	}
	if _, ok := s["allOf"]; ok {
		merged, err := g.merge(s)
		if err != nil {
			return nil, err
		}
		return g.object(src, merged, depth)
	}
	switch t := typeOf(s, src); t {
	case "null":
		return nil, nil
	case "boolean":
		return src.byte()&1 == 1, nil
	case "integer":
		return g.integer(src, s)
	case "number":
		return g.number(src, s), nil
	case "string":
		return g.string(src, s)
	case "array":
		return g.array(src, s, depth)
	case "object":
		return g.object(src, s, depth)
	default:
		return nil, fmt.Errorf("a schema of type %q", t)
	}
}

// typeOf is the type of a value s allows, chosen by src when it allows
// several (a nullable one: [T, "null"]).
func typeOf(s schema, src *source) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		if len(t) > 0 {
			name, _ := t[src.intn(len(t))].(string)
			return name
		}
	}
	if _, ok := s["properties"]; ok {
		return "object"
	}
	if _, ok := s["additionalProperties"]; ok {
		return "object"
	}
	if _, ok := s["items"]; ok {
		return "array"
	}
	return ""
}

// merge turns a schema with allOf into one object schema: the properties
// and required names of its members (and their own allOfs) and its own.
func (g *generator) merge(s schema) (schema, error) {
	props := schema{}
	var required []any
	var add func(s schema, depth int) error
	add = func(s schema, depth int) error {
		if depth > 32 {
			return fmt.Errorf("allOf nested too deep")
		}
		s, err := g.resolve(s)
		if err != nil {
			return err
		}
		if members, ok := s["allOf"].([]any); ok {
			for _, m := range members {
				ms, _ := m.(schema)
				if err := add(ms, depth+1); err != nil {
					return err
				}
			}
		}
		if p, ok := s["properties"].(schema); ok {
			for k, v := range p {
				props[k] = v
			}
		}
		if r, ok := s["required"].([]any); ok {
			required = append(required, r...)
		}
		return nil
	}
	if err := add(s, 0); err != nil {
		return nil, err
	}
	out := schema{"type": "object", "properties": props, "required": required}
	for _, k := range []string{"minProperties", "maxProperties"} {
		if v, ok := s[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

func number(s schema, key string) (float64, bool) {
	v, ok := s[key].(float64)
	return v, ok
}

func (g *generator) integer(src *source, s schema) (any, error) {
	lo, hi := float64(math.MinInt64), float64(math.MaxInt64)
	bounded := false
	if v, ok := number(s, "minimum"); ok {
		lo, bounded = math.Max(lo, math.Ceil(v)), true
	}
	if v, ok := number(s, "exclusiveMinimum"); ok {
		lo, bounded = math.Max(lo, math.Floor(v)+1), true
	}
	if v, ok := number(s, "maximum"); ok {
		hi = math.Min(hi, math.Floor(v))
	}
	if v, ok := number(s, "exclusiveMaximum"); ok {
		hi = math.Min(hi, math.Ceil(v)-1)
	}
	step := 1.0
	if m, ok := number(s, "multipleOf"); ok && m >= 1 && m == math.Trunc(m) {
		step = m
	}
	klo, khi := math.Ceil(lo/step), math.Floor(hi/step)
	if klo > khi {
		return nil, fmt.Errorf("an integer range without a value")
	}
	// Near the bound that is set (the lower one first), or near 0: the
	// small values are where off-by-one bugs live.
	var k float64
	choice := src.byte()
	switch {
	case choice >= 250: // now and then, anywhere in the range
		span := khi - klo
		k = klo + math.Floor(float64(src.uint64())/float64(math.MaxUint64)*span)
	case bounded || klo > 0:
		k = klo + float64(choice%16)
	case khi < 0:
		k = khi - float64(choice%16)
	default:
		k = float64(int8(choice)) / 4
		k = math.Trunc(k)
	}
	k = math.Min(math.Max(k, klo), khi)
	v := k * step
	if v >= math.MaxInt64 {
		return int64(math.MaxInt64), nil
	}
	if v <= math.MinInt64 {
		return int64(math.MinInt64), nil
	}
	return int64(v), nil
}

func (g *generator) number(src *source, s schema) float64 {
	lo, hi := -1e6, 1e6
	if v, ok := number(s, "minimum"); ok {
		lo = v
	}
	if v, ok := number(s, "maximum"); ok {
		hi = v
	}
	exLo, exHi := false, false
	if v, ok := number(s, "exclusiveMinimum"); ok && v >= lo {
		lo, exLo = v, true
	}
	if v, ok := number(s, "exclusiveMaximum"); ok && v <= hi {
		hi, exHi = v, true
	}
	if _, ok := s["minimum"]; !ok && !exLo && hi < 1e6 {
		lo = hi - 1e6
	}
	if _, ok := s["maximum"]; !ok && !exHi && lo > -1e6 {
		hi = lo + 1e6
	}
	if m, ok := number(s, "multipleOf"); ok && m > 0 {
		klo, khi := math.Ceil(lo/m), math.Floor(hi/m)
		if exLo && klo*m <= lo {
			klo++
		}
		if exHi && khi*m >= hi {
			khi--
		}
		k := klo + float64(src.intn(16))
		return math.Min(k, khi) * m
	}
	b := src.byte()
	if b < 128 && !exLo { // the lower bound itself, or a small step above it
		if lo <= 0 && hi >= 0 && lo == -1e6 {
			return float64(b%8) / 2
		}
		return math.Min(lo+float64(b%8)/2, hi)
	}
	f := (float64(b) + 1) / 257 // strictly inside (0, 1)
	return lo + f*(hi-lo)
}

// The runes of generated strings: few, so that ids collide and a
// transition meets the same key twice, with one of two bytes and one of
// three in UTF-8.
var alphabet = []rune("aab0 -é日")

// formats are values of the formats of JSON Schema the validator checks.
var formats = map[string][]string{
	"date-time":             {"2024-01-02T03:04:05Z", "1999-12-31T23:59:59.5+01:00"},
	"date":                  {"2024-01-02", "1999-12-31"},
	"time":                  {"03:04:05Z", "23:59:59+01:00"},
	"duration":              {"P1D", "PT1H30M"},
	"email":                 {"a@example.com", "b.c@example.org"},
	"idn-email":             {"a@example.com"},
	"hostname":              {"example.com", "a-b.example.org"},
	"idn-hostname":          {"example.com"},
	"ipv4":                  {"192.0.2.1", "10.0.0.255"},
	"ipv6":                  {"2001:db8::1", "::1"},
	"uri":                   {"https://example.com/a", "urn:isbn:0451450523"},
	"uri-reference":         {"/a/b", "https://example.com/"},
	"iri":                   {"https://example.com/é"},
	"iri-reference":         {"/é"},
	"uri-template":          {"https://example.com/{id}"},
	"uuid":                  {"0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b20", "00000000-0000-0000-0000-000000000000"},
	"json-pointer":          {"/a/0", ""},
	"relative-json-pointer": {"0/a", "1"},
	"regex":                 {"a+", "^[a-z]$"},
}

func (g *generator) string(src *source, s schema) (any, error) {
	minLen, maxLen := 0, math.MaxInt
	if v, ok := number(s, "minLength"); ok {
		minLen = int(v)
	}
	if v, ok := number(s, "maxLength"); ok {
		maxLen = int(v)
	}
	if f, ok := s["format"].(string); ok {
		if vs, ok := formats[f]; ok {
			return vs[src.intn(len(vs))], nil
		}
	}
	if p, ok := s["pattern"].(string); ok {
		return g.pattern(src, p, minLen, maxLen)
	}
	n := minLen + src.intn(min(maxLen-minLen, maxExtraRunes)+1)
	rs := make([]rune, n)
	for i := range rs {
		rs[i] = alphabet[src.intn(len(alphabet))]
	}
	return string(rs), nil
}

// pattern draws a string the regular expression matches, from its syntax
// tree; a draw that misses (a lookaround the tree cannot say, a length out
// of bounds) is drawn again, a few times.
func (g *generator) pattern(src *source, p string, minLen, maxLen int) (string, error) {
	re, ok := g.patterns[p]
	if !ok {
		var err error
		if re, err = regexp.Compile(p); err != nil {
			return "", fmt.Errorf("pattern %q: %w", p, err)
		}
		g.patterns[p] = re
	}
	tree, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("pattern %q: %w", p, err)
	}
	tree = tree.Simplify()
	var last string
	for range 4 {
		var b strings.Builder
		drawRegexp(src, tree, &b)
		last = b.String()
		if n := utf8.RuneCountInString(last); n >= minLen && n <= maxLen && re.MatchString(last) {
			return last, nil
		}
	}
	return last, nil
}

func drawRegexp(src *source, re *syntax.Regexp, b *strings.Builder) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		// Rune holds pairs of bounds: pick a pair, then a rune in it.
		if len(re.Rune) < 2 {
			return
		}
		i := src.intn(len(re.Rune)/2) * 2
		lo, hi := re.Rune[i], re.Rune[i+1]
		b.WriteRune(lo + rune(src.intn(int(min(hi-lo, 255))+1)))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteRune('a' + rune(src.intn(26)))
	case syntax.OpCapture:
		drawRegexp(src, re.Sub[0], b)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, maxRepeat
		switch re.Op {
		case syntax.OpPlus:
			lo, hi = 1, 1+maxRepeat
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
			if hi < 0 {
				hi = lo + maxRepeat
			}
			hi = min(hi, lo+maxRepeat)
		}
		for range lo + src.intn(hi-lo+1) {
			drawRegexp(src, re.Sub[0], b)
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			drawRegexp(src, sub, b)
		}
	case syntax.OpAlternate:
		drawRegexp(src, re.Sub[src.intn(len(re.Sub))], b)
	}
	// The empty ones (^, $, \b, \B, the empty match, no match) write nothing.
}

func (g *generator) array(src *source, s schema, depth int) (any, error) {
	minItems, maxItems := 0, math.MaxInt
	if v, ok := number(s, "minItems"); ok {
		minItems = int(v)
	}
	if v, ok := number(s, "maxItems"); ok {
		maxItems = int(v)
	}
	n := minItems
	if depth < maxDepth {
		n += src.intn(min(maxItems-minItems, maxExtraItems) + 1)
	}
	items, _ := s["items"].(schema)
	unique, _ := s["uniqueItems"].(bool)
	out := []any{}
	var seen []string
	for tries := 0; len(out) < n && tries < 4*n+4; tries++ {
		v, err := g.value(src, items, depth+1)
		if err != nil {
			return nil, err
		}
		if unique {
			key, _ := json.Marshal(v)
			if slices.Contains(seen, string(key)) {
				continue
			}
			seen = append(seen, string(key))
		}
		out = append(out, v)
	}
	return out, nil
}

func (g *generator) object(src *source, s schema, depth int) (any, error) {
	out := map[string]any{}
	props, _ := s["properties"].(schema)
	required := map[string]bool{}
	if r, ok := s["required"].([]any); ok {
		for _, name := range r {
			if name, ok := name.(string); ok {
				required[name] = true
			}
		}
	}
	minProps := 0
	if v, ok := number(s, "minProperties"); ok {
		minProps = int(v)
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	// Required properties first, then optional ones, each drawn in or out.
	for _, name := range names {
		if !required[name] {
			continue
		}
		ps, _ := props[name].(schema)
		v, err := g.value(src, ps, depth+1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = v
	}
	for _, name := range names {
		if required[name] || (depth >= maxDepth && len(out) >= minProps) || (src.byte()&1 == 0 && len(out) >= minProps) {
			continue
		}
		ps, _ := props[name].(schema)
		v, err := g.value(src, ps, depth+1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = v
	}
	values, isMap := s["additionalProperties"].(schema)
	if isMap && len(props) == 0 {
		maxProps := math.MaxInt
		if v, ok := number(s, "maxProperties"); ok {
			maxProps = int(v)
		}
		n := minProps
		if depth < maxDepth {
			n += src.intn(min(maxProps-minProps, maxExtraItems) + 1)
		}
		for tries := 0; len(out) < n && tries < 4*n+4; tries++ {
			key, err := g.string(src, schema{"maxLength": float64(4)})
			if err != nil {
				return nil, err
			}
			v, err := g.value(src, values, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			out[key.(string)] = v
		}
	}
	return out, nil
}
