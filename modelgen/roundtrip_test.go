package modelgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/moora-go/moora/modelgen/internal/model"
	"math"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// inputInstances returns JSON documents that satisfy the input schema of
// each input of m, by reading the schema as generated code validates it
// (Model.InputSchema): for each input, a "null" instance, where every
// nullable value is null and every optional property absent (the JSON of
// Go's nil pointers, slices and maps), and a "full" instance, where every
// property is present and nothing is null. The instances are a generator's
// reading of the schema, not of the Go types, so that a mismatch between
// the two fails the round trip (usesRoundTripSource).
func inputInstances(t *testing.T, m *model.Model) map[string]string {
	t.Helper()
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(m.InputSchema))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	g := &instanceGen{t: t, defs: asMap(doc["$defs"])}
	out := make(map[string]string)
	inputs := asMap(doc["inputs"])
	for _, name := range slices.Sorted(mapKeys(inputs)) {
		for _, full := range []bool{false, true} {
			g.full = full
			v := g.value(inputs[name], 0)
			data, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			mode := "null"
			if full {
				mode = "full"
			}
			out[name+"/"+mode] = string(data)
		}
	}
	return out
}

type instanceGen struct {
	t    *testing.T
	defs map[string]any
	full bool
}

// maxInstanceDepth bounds the nesting of a full instance: past it, optional
// properties are left out and arrays and maps kept as short as allowed,
// which ends the recursion of recursive types.
const maxInstanceDepth = 6

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// resolve follows $ref.
func (g *instanceGen) resolve(s map[string]any) map[string]any {
	for i := 0; i < 100; i++ {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok || g.defs[name] == nil {
			g.t.Fatalf("instance: $ref %q does not resolve", ref)
		}
		s = asMap(g.defs[name])
	}
	g.t.Fatal("instance: $ref cycle")
	return nil
}

// types returns the types a schema allows, "" standing for any.
func types(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

func (g *instanceGen) value(schema any, depth int) any {
	s := g.resolve(asMap(schema))
	if c, ok := s["const"]; ok {
		return c
	}
	ts := types(s)
	if !g.full && slices.Contains(ts, "null") {
		return nil
	}
	if e, ok := s["enum"].([]any); ok {
		for _, v := range e {
			if v != nil {
				return v
			}
		}
	}
	typ := ""
	for _, x := range ts {
		if x != "null" {
			typ = x
		}
	}
	if typ == "" {
		switch {
		case s["properties"] != nil || s["allOf"] != nil || s["required"] != nil || s["additionalProperties"] != nil:
			typ = "object"
		case s["items"] != nil:
			typ = "array"
		default:
			g.t.Fatalf("instance: cannot tell the type of %v", s)
		}
	}
	switch typ {
	case "object":
		return g.object(s, depth)
	case "array":
		n := intKeyword(s, "minItems", 0)
		if g.full && depth < maxInstanceDepth {
			n = max(n, 1)
		}
		if s["uniqueItems"] == true && n > 1 {
			g.t.Fatalf("instance: unique items, at least %d: not supported", n)
		}
		a := make([]any, n)
		for i := range a {
			a[i] = g.value(s["items"], depth+1)
		}
		return a
	case "string":
		return g.str(s)
	case "integer", "number":
		return g.number(s, typ == "integer")
	case "boolean":
		return g.full
	}
	g.t.Fatalf("instance: type %q", typ)
	return nil
}

// object builds an object from the properties and required lists of s and
// of its allOf members; of the if/then branches a oneOf becomes, it takes
// the first, or the first that does not recurse when deep.
func (g *instanceGen) object(s map[string]any, depth int) any {
	props := make(map[string]any)
	var order []string
	required := make(map[string]bool)
	var collect func(s map[string]any)
	collect = func(s map[string]any) {
		s = g.resolve(s)
		for k, p := range asMap(s["properties"]) {
			if _, seen := props[k]; !seen {
				order = append(order, k)
			}
			if _, isEnum := asMap(p)["enum"]; isEnum && props[k] != nil {
				continue // the oneOf's list of discriminator values: the branch's const wins
			}
			props[k] = p
		}
		for _, r := range asSlice(s["required"]) {
			required[r.(string)] = true
		}
		branchTaken := false
		for _, m := range asSlice(s["allOf"]) {
			mm := asMap(m)
			if then, ok := mm["then"]; ok {
				if branchTaken {
					continue
				}
				branchTaken = true
				collect(asMap(then))
				continue
			}
			collect(mm)
		}
	}
	collect(s)
	slices.Sort(order)
	obj := make(map[string]any)
	for _, k := range order {
		if !required[k] && (!g.full || depth >= maxInstanceDepth) {
			continue
		}
		obj[k] = g.value(props[k], depth+1)
	}
	if ap := asMap(s["additionalProperties"]); ap != nil && len(props) == 0 {
		n := intKeyword(s, "minProperties", 0)
		if g.full && depth < maxInstanceDepth {
			n = max(n, 1)
		}
		for i := range n {
			obj["k"+strconv.Itoa(i)] = g.value(ap, depth+1)
		}
	}
	return obj
}

func asSlice(v any) []any {
	a, _ := v.([]any)
	return a
}

func intKeyword(s map[string]any, k string, def int) int {
	n, ok := s[k].(json.Number)
	if !ok {
		return def
	}
	f, err := n.Float64()
	if err != nil {
		return def
	}
	return int(f)
}

func floatKeyword(s map[string]any, k string) (float64, bool) {
	n, ok := s[k].(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// formatExamples are values of the formats the validator knows.
var formatExamples = map[string]string{
	"date-time": "2024-01-02T03:04:05Z",
	"date":      "2024-01-02",
	"time":      "03:04:05Z",
	"email":     "a@example.com",
	"uri":       "https://example.com/a",
	"uuid":      "0b6d6f5e-5c4e-4b8a-9d1e-2f6f1a7c3b20",
	"hostname":  "example.com",
	"ipv4":      "192.0.2.1",
	"ipv6":      "2001:db8::1",
}

func (g *instanceGen) str(s map[string]any) string {
	v := ""
	if f, ok := s["format"].(string); ok {
		ex, ok := formatExamples[f]
		if !ok {
			g.t.Fatalf("instance: no example of format %q", f)
		}
		v = ex
	}
	if p, ok := s["pattern"].(string); ok {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			g.t.Fatalf("instance: pattern %q: %v", p, err)
		}
		v = matching(re.Simplify())
	}
	if n := intKeyword(s, "minLength", 0); len([]rune(v)) < n {
		v += strings.Repeat("a", n-len([]rune(v)))
	}
	return v
}

// matching returns the shortest string a simple regular expression
// matches: the first alternative, the minimum of repetitions, the first
// character of a class.
func matching(re *syntax.Regexp) string {
	var b strings.Builder
	var walk func(re *syntax.Regexp)
	walk = func(re *syntax.Regexp) {
		switch re.Op {
		case syntax.OpLiteral:
			b.WriteString(string(re.Rune))
		case syntax.OpCharClass:
			b.WriteRune(re.Rune[0])
		case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			b.WriteByte('a')
		case syntax.OpCapture, syntax.OpPlus:
			walk(re.Sub[0])
		case syntax.OpRepeat:
			for range re.Min {
				walk(re.Sub[0])
			}
		case syntax.OpConcat:
			for _, sub := range re.Sub {
				walk(sub)
			}
		case syntax.OpAlternate:
			walk(re.Sub[0])
		}
	}
	walk(re)
	return b.String()
}

func (g *instanceGen) number(s map[string]any, integer bool) json.Number {
	v := 0.0
	if lo, ok := floatKeyword(s, "minimum"); ok {
		v = lo
	}
	if lo, ok := floatKeyword(s, "exclusiveMinimum"); ok {
		step := 1.0
		if m, ok := floatKeyword(s, "multipleOf"); ok {
			step = m
		}
		v = max(v, lo+step)
	}
	if m, ok := floatKeyword(s, "multipleOf"); ok {
		v = math.Ceil(v/m) * m
	}
	if integer {
		v = math.Ceil(v)
	}
	return json.Number(strconv.FormatFloat(v, 'g', -1, 64))
}

// usesRoundTripSource is a test, in the package of usesSource, that decodes
// each of the instances with DecodeInput, encodes the input with
// json.Marshal and decodes that again: every step must succeed, and the two
// inputs be equal.
func usesRoundTripSource(m *model.Model, instances map[string]string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `package uses

import (
	"encoding/json"
	"reflect"
	"testing"

	"%s/decl"
)

func TestInputRoundTrip(t *testing.T) {
	for name, data := range map[string]string{
`, m.Package)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range instances {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "\t\t%q: %q,\n", k, instances[k])
	}
	b.WriteString(`	} {
		in, err := decl.DecodeInput([]byte(data))
		if err != nil {
			t.Errorf("%s: DecodeInput(%s): %v", name, data, err)
			continue
		}
		again, err := json.Marshal(in)
		if err != nil {
			t.Errorf("%s: json.Marshal: %v", name, err)
			continue
		}
		back, err := decl.DecodeInput(again)
		if err != nil {
			t.Errorf("%s: DecodeInput(json.Marshal(DecodeInput(%s))) = DecodeInput(%s): %v", name, data, again, err)
			continue
		}
		if !reflect.DeepEqual(in, back) {
			t.Errorf("%s: %#v came back as %#v", name, in, back)
		}
	}
}
`)
	return []byte(b.String())
}
