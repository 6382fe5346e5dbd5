package model

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/moora-go/moora/modelgen/internal/spec"
)

// checkSatisfiable reports the validation keywords of a schema that no
// value can satisfy: bounds that leave nothing between them (minimum 10
// with maximum 1, minLength 5 with maxLength 1, and so for items and
// properties), an integer range that holds no int64, a range that holds no
// multiple of multipleOf, an empty enum, an enum value that its own
// minLength, maxLength or pattern rules out, a pattern that matches no
// string or none that minLength, maxLength or format allow, unique items
// more than the items schema has values, and an object that must have more
// properties than it may. Each is an error, at the keyword that makes the
// schema unsatisfiable (of several, the one written last): an input or an
// observed property that no value satisfies cannot be used, and generated
// code would reject every value.
//
// Every check is exact or errs on the side of accepting: a schema is
// refused only when no value can satisfy it. Numbers are compared and
// divided as the decimals they are written as (multipleOf: 0.1 is a tenth),
// and a pattern is analysed as the run-time validator compiles it, a Go
// (RE2) regular expression; what the analysis cannot tell is accepted.
//
// Every schema of the document is checked where it is written, each copy of
// an observed property included. A keyword that does not apply to the
// schema's type (minimum on a string) is reported by checkKeywords, not
// here.
func (b *builder) checkSatisfiable() {
	spec.ForEachSchema(b.d.Src.Root(), func(ptr string, n *spec.Node) {
		if n.Kind() != spec.ObjectNode {
			return
		}
		if typeAllows(n, "number") || typeAllows(n, "integer") {
			b.checkNumberRange(ptr, n)
		}
		if typeAllows(n, "string") {
			b.checkCounts(ptr, n, "minLength", "maxLength", "string")
			b.checkEnum(ptr, n)
			b.checkPattern(ptr, n)
		}
		if typeAllows(n, "array") {
			b.checkCounts(ptr, n, "minItems", "maxItems", "array")
			b.checkUniqueItems(ptr, n)
		}
		if typeAllows(n, "object") {
			b.checkCounts(ptr, n, "minProperties", "maxProperties", "object")
			b.checkPropertyCounts(ptr, n)
		}
	})
}

// typeAllows says whether the schema n may be of JSON type t: it has no
// "type", or its type is t or a list holding t.
func typeAllows(n *spec.Node, t string) bool {
	typ := n.Get("type")
	switch {
	case typ == nil:
		return true
	case typ.Kind() == spec.StringNode:
		return typ.Str() == t
	case typ.Kind() == spec.ArrayNode:
		for _, it := range typ.Items() {
			if it.Kind() == spec.StringNode && it.Str() == t {
				return true
			}
		}
	}
	return false
}

// isInteger says whether the schema n is of type integer, nullable or not.
func isInteger(n *spec.Node) bool {
	return typeAllows(n, "integer") && n.Get("type") != nil
}

// later returns the one of the keywords of the schema at ptr that is
// written last.
func (b *builder) later(ptr string, keys ...string) string {
	last := keys[0]
	for _, k := range keys[1:] {
		p1, p2 := b.d.Src.KeyPos(ptr+"/"+last), b.d.Src.KeyPos(ptr+"/"+k)
		if cmp.Or(cmp.Compare(p1.Line, p2.Line), cmp.Compare(p1.Col, p2.Col)) <= 0 {
			last = k
		}
	}
	return last
}

// count returns the value of a keyword that holds a non-negative integer,
// or ok false when it has none (the spec schema reports what is not one).
func count(n *spec.Node, key string) (int64, bool) {
	v := n.Get(key)
	if v == nil || v.Kind() != spec.NumberNode || !spec.JSONInteger(v.Str()) {
		return 0, false
	}
	c, err := strconv.ParseInt(v.Str(), 10, 64)
	return c, err == nil && c >= 0
}

// checkCounts reports a lower bound greater than the upper bound of a count:
// minLength and maxLength, minItems and maxItems, minProperties and
// maxProperties.
func (b *builder) checkCounts(ptr string, n *spec.Node, minKey, maxKey, what string) {
	lo, okLo := count(n, minKey)
	hi, okHi := count(n, maxKey)
	if !okLo || !okHi || lo <= hi {
		return
	}
	b.d.AtKey(ptr+"/"+b.later(ptr, minKey, maxKey), fmt.Sprintf("%s %d is greater than %s %d: no %s satisfies both", minKey, lo, maxKey, hi, what),
		fmt.Sprintf("make %s at most %s", minKey, maxKey))
}

// checkPropertyCounts reports an object that must have more properties than
// it may: more required properties than maxProperties, or, with
// additionalProperties: false, fewer declared properties than
// minProperties.
func (b *builder) checkPropertyCounts(ptr string, n *spec.Node) {
	if hi, ok := count(n, "maxProperties"); ok {
		if req := n.Get("required"); req != nil && req.Kind() == spec.ArrayNode {
			distinct := make(map[string]bool)
			for _, r := range req.Items() {
				if r.Kind() == spec.StringNode {
					distinct[r.Str()] = true
				}
			}
			if int64(len(distinct)) > hi {
				b.d.AtKey(ptr+"/"+b.later(ptr, "required", "maxProperties"),
					fmt.Sprintf("required lists %s, more than maxProperties %d: no object satisfies both", plural(int64(len(distinct)), "property"), hi),
					"raise maxProperties, or require fewer properties")
			}
		}
	}
	lo, ok := count(n, "minProperties")
	ap := n.Get("additionalProperties")
	if !ok || ap == nil || ap.Kind() != spec.BoolNode || ap.Str() != "false" || n.Get("allOf") != nil {
		return
	}
	declared := 0
	if props := n.Get("properties"); props != nil && props.Kind() == spec.ObjectNode {
		declared = len(props.Keys())
	}
	if int64(declared) < lo {
		b.d.AtKey(ptr+"/"+b.later(ptr, "minProperties", "additionalProperties"),
			fmt.Sprintf("additionalProperties: false allows only the %s declared, fewer than minProperties %d: no object satisfies both", plural(int64(declared), "property"), lo),
			"lower minProperties, or declare more properties")
	}
}

// checkEnum reports an empty enum, and each enum value that the schema's
// own minLength, maxLength or pattern rules out: its Go constant could
// never be a valid value.
func (b *builder) checkEnum(ptr string, n *spec.Node) {
	enum := n.Get("enum")
	if enum == nil || enum.Kind() != spec.ArrayNode {
		return
	}
	if len(enum.Items()) == 0 {
		b.d.AtKey(ptr+"/enum", "enum lists no values: no value satisfies it", "list the allowed values")
		return
	}
	lo, okLo := count(n, "minLength")
	hi, okHi := count(n, "maxLength")
	var re *regexp.Regexp
	if p := n.Get("pattern"); p != nil && p.Kind() == spec.StringNode {
		re, _ = regexp.Compile(p.Str()) // one that does not compile is reported by checkKeywords
	}
	for i, v := range enum.Items() {
		if v.Kind() != spec.StringNode {
			continue
		}
		vptr := ptr + "/enum/" + strconv.Itoa(i)
		length := int64(utf8.RuneCountInString(v.Str()))
		switch {
		case okLo && length < lo:
			b.d.At(vptr, fmt.Sprintf("enum value %q is %s long, shorter than minLength %d: it is never valid", v.Str(), plural(length, "character"), lo), "remove the value, or lower minLength")
		case okHi && length > hi:
			b.d.At(vptr, fmt.Sprintf("enum value %q is %s long, longer than maxLength %d: it is never valid", v.Str(), plural(length, "character"), hi), "remove the value, or raise maxLength")
		case re != nil && !re.MatchString(v.Str()):
			b.d.At(vptr, fmt.Sprintf("enum value %q does not match pattern %q: it is never valid", v.Str(), re.String()), "remove the value, or fix the pattern")
		}
	}
}

// plural says "1 property", "2 properties", "3 characters".
func plural(n int64, what string) string {
	switch {
	case n == 1:
		return "1 " + what
	case strings.HasSuffix(what, "y"):
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(what, "y"))
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// quoted returns the strings quoted.
func quoted(items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// andList says "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// bound is one of the keywords minimum, exclusiveMinimum, maximum and
// exclusiveMaximum of a schema.
type bound struct {
	key       string
	lit       string // the number as written (in JSON syntax)
	d         decimal
	exclusive bool
}

// phrase says what the bound requires of a number: "at least 10".
func (bd bound) phrase(lower bool) string {
	switch {
	case lower && bd.exclusive:
		return "greater than " + bd.lit
	case lower:
		return "at least " + bd.lit
	case bd.exclusive:
		return "less than " + bd.lit
	}
	return "at most " + bd.lit
}

// tightest returns the tighter of the bounds of the keywords incl and excl
// that the schema has: the greater lower bound (lower) or the smaller upper
// bound; of two equal ones, the exclusive.
func tightest(n *spec.Node, incl, excl string, lower bool) (bound, bool) {
	var out bound
	found := false
	for _, key := range []string{incl, excl} {
		v := n.Get(key)
		if v == nil || v.Kind() != spec.NumberNode {
			continue
		}
		d, ok := parseDecimal(v.Str())
		if !ok {
			continue
		}
		bd := bound{key: key, lit: v.Str(), d: d, exclusive: key == excl}
		c := d.cmp(out.d)
		if !lower {
			c = -c
		}
		if !found || c > 0 || (c == 0 && bd.exclusive) {
			out, found = bd, true
		}
	}
	return out, found
}

// checkNumberRange reports bounds that no number satisfies, for an
// integer bounds that hold no integer a Go int64 (the generated field's
// type) holds, and bounds that hold no multiple of multipleOf.
func (b *builder) checkNumberRange(ptr string, n *spec.Node) {
	lo, okLo := tightest(n, "minimum", "exclusiveMinimum", true)
	hi, okHi := tightest(n, "maximum", "exclusiveMaximum", false)
	if okLo && okHi {
		key := b.later(ptr, lo.key, hi.key)
		switch c := lo.d.cmp(hi.d); {
		case c > 0:
			b.d.AtKey(ptr+"/"+key, fmt.Sprintf("%s %s is greater than %s %s: no number satisfies both", lo.key, lo.lit, hi.key, hi.lit),
				fmt.Sprintf("make %s at most %s", lo.key, hi.key))
			return
		case c == 0 && (lo.exclusive || hi.exclusive):
			b.d.AtKey(ptr+"/"+key, fmt.Sprintf("%s %s equals %s %s: no number is %s and %s", lo.key, lo.lit, hi.key, hi.lit, lo.phrase(true), hi.phrase(false)),
				"use minimum and maximum for a single value, or widen the range")
			return
		}
	}
	if isInteger(n) && (okLo || okHi) {
		first, last, ok := b.checkIntegerRange(ptr, lo, okLo, hi, okHi)
		if ok {
			b.checkIntegerMultiple(ptr, n, first, last, lo, okLo, hi, okHi)
		}
		return
	}
	if okLo && okHi && !isInteger(n) {
		b.checkNumberMultiple(ptr, n, lo, hi)
	}
}

// checkIntegerRange reports integer bounds that hold no int64, and
// returns the first and last int64 they allow.
func (b *builder) checkIntegerRange(ptr string, lo bound, okLo bool, hi bound, okHi bool) (first, last *big.Int, ok bool) {
	first, last, empty := integerRange(lo, okLo, hi, okHi)
	switch empty {
	case aboveInt64:
		b.d.AtKey(ptr+"/"+lo.key, fmt.Sprintf("no int64 (the Go type of an integer) is %s: the largest is %d", lo.phrase(true), int64(math.MaxInt64)),
			"lower the bound, or use type: number")
	case belowInt64:
		b.d.AtKey(ptr+"/"+hi.key, fmt.Sprintf("no int64 (the Go type of an integer) is %s: the smallest is %d", hi.phrase(false), int64(math.MinInt64)),
			"raise the bound, or use type: number")
	case noInteger:
		b.d.AtKey(ptr+"/"+b.later(ptr, lo.key, hi.key), fmt.Sprintf("no integer is %s and %s", lo.phrase(true), hi.phrase(false)),
			"widen the range to hold an integer, or use type: number")
	default:
		return first, last, true
	}
	return nil, nil, false
}

// Why integerRange holds no integer.
const (
	nonEmpty = iota
	aboveInt64
	belowInt64
	noInteger
)

// integerRange returns the first and last int64 that the bounds allow (a
// bound not given is the end of int64), or why there is none.
func integerRange(lo bound, okLo bool, hi bound, okHi bool) (first, last *big.Int, empty int) {
	minInt, maxInt := big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
	first, last = minInt, maxInt
	if okLo {
		first = lo.d.ceil()
		if lo.exclusive && lo.d.isInteger() {
			first.Add(first, big.NewInt(1))
		}
		if first.Cmp(maxInt) > 0 {
			return nil, nil, aboveInt64
		}
	}
	if okHi {
		last = hi.d.floor()
		if hi.exclusive && hi.d.isInteger() {
			last.Sub(last, big.NewInt(1))
		}
		if last.Cmp(minInt) < 0 {
			return nil, nil, belowInt64
		}
	}
	if first.Cmp(last) > 0 {
		return nil, nil, noInteger
	}
	return first, last, nonEmpty
}

// multipleOf returns the schema's multipleOf, when it has one above zero
// that arithmetic can afford: a number of at most maxMultipleDigits
// digits.
func multipleOf(n *spec.Node) (lit string, d decimal, ok bool) {
	v := n.Get("multipleOf")
	if v == nil || v.Kind() != spec.NumberNode {
		return "", decimal{}, false
	}
	d, ok = parseDecimal(v.Str())
	if !ok || d.sign() <= 0 || len(d.digits) > maxMultipleDigits {
		return "", decimal{}, false
	}
	return v.Str(), d, true
}

// maxMultipleDigits and maxMultipleSpan bound the work of a multipleOf
// check: numbers of more digits, or bounds and multipleOf that would take
// integers of more digits to compare exactly, are not checked (but for
// ranges that a multipleOf beyond both ends rules out, which need no
// arithmetic).
const (
	maxMultipleDigits = 400
	maxMultipleSpan   = 4096
)

// checkIntegerMultiple reports integer bounds, whose int64 values run from
// first to last, that hold no multiple of multipleOf. The integer
// multiples of m = p/q (in lowest terms) are the multiples of p.
func (b *builder) checkIntegerMultiple(ptr string, n *spec.Node, first, last *big.Int, lo bound, okLo bool, hi bound, okHi bool) {
	lit, m, ok := multipleOf(n)
	if !ok {
		return
	}
	step := integerStep(m)
	if hasMultiple(first, false, last, false, step) {
		return
	}
	var conds []string
	keys := []string{"multipleOf"}
	what := "integer"
	if okLo {
		conds, keys = append(conds, lo.phrase(true)), append(keys, lo.key)
	}
	if okHi {
		conds, keys = append(conds, hi.phrase(false)), append(keys, hi.key)
	}
	if !okLo || !okHi {
		what = "int64 (the Go type of an integer)"
	}
	b.d.AtKey(ptr+"/"+b.later(ptr, keys...), fmt.Sprintf("no %s that is %s is a multiple of %s", what, strings.Join(conds, " and "), lit),
		"widen the range to hold a multiple, or change multipleOf")
}

// integerStep returns the least integer multiple above zero of m = p/q
// (in lowest terms), p, of which the integer multiples of m are the
// multiples; for an m beyond int64, 10^20, of which 0 is the only int64
// multiple too.
func integerStep(m decimal) *big.Int {
	low := m.lowExp()
	if low > 20 {
		return new(big.Int).Exp(big.NewInt(10), big.NewInt(20), nil)
	}
	step, _ := new(big.Int).SetString(m.digits, 10)
	if low >= 0 {
		return step.Mul(step, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(low)), nil))
	}
	// Divide out of the digits the factors 2 and 5 that they share with
	// the denominator 10^-low.
	step.Rsh(step, uint(min(int(step.TrailingZeroBits()), -low)))
	five, q, r := big.NewInt(5), new(big.Int), new(big.Int)
	for i := 0; i < -low; i++ {
		if q.QuoRem(step, five, r); r.Sign() != 0 {
			break
		}
		step.Set(q)
	}
	return step
}

// checkNumberMultiple reports bounds that hold no multiple of multipleOf.
func (b *builder) checkNumberMultiple(ptr string, n *spec.Node, lo, hi bound) {
	lit, m, ok := multipleOf(n)
	if !ok {
		return
	}
	if found, known := rangeHasMultiple(lo, hi, m); found || !known {
		return
	}
	b.d.AtKey(ptr+"/"+b.later(ptr, "multipleOf", lo.key, hi.key), fmt.Sprintf("no number that is %s and %s is a multiple of %s", lo.phrase(true), hi.phrase(false), lit),
		"widen the range to hold a multiple, or change multipleOf")
}

// rangeHasMultiple says whether a multiple of m > 0 lies between the
// bounds lo and hi; known is false when the numbers take too long to
// compare exactly (see maxMultipleSpan).
func rangeHasMultiple(lo, hi bound, m decimal) (found, known bool) {
	switch {
	case lo.d.sign() < 0 && hi.d.sign() > 0, lo.d.sign() == 0 && !lo.exclusive, hi.d.sign() == 0 && !hi.exclusive:
		return true, true // 0 is a multiple of everything
	case lo.d.sign() >= 0 && m.cmp(hi.d) > 0, hi.d.sign() <= 0 && m.cmp(lo.d.abs()) > 0:
		return false, true // every multiple but 0 lies beyond the range
	case len(lo.d.digits) > maxMultipleDigits || len(hi.d.digits) > maxMultipleDigits || len(m.digits) > maxMultipleDigits:
		return false, false
	}
	low := min(lo.d.lowExp(), hi.d.lowExp(), m.lowExp())
	if max(lo.d.exp, hi.d.exp, m.exp)-low > maxMultipleSpan {
		return false, false
	}
	return hasMultiple(lo.d.scaled(low), lo.exclusive, hi.d.scaled(low), hi.exclusive, m.scaled(low)), true
}

// checkUniqueItems reports an array of unique items that must have more
// items than its items schema has values: minItems 3 of booleans.
func (b *builder) checkUniqueItems(ptr string, n *spec.Node) {
	u := n.Get("uniqueItems")
	if u == nil || u.Kind() != spec.BoolNode || u.Str() != "true" {
		return
	}
	need, ok := count(n, "minItems")
	if !ok || need < 2 {
		return
	}
	have, values, ok := b.fewValues(n.Get("items"))
	if !ok || have == 0 || have >= need {
		return
	}
	b.d.AtKey(ptr+"/"+b.later(ptr, "minItems", "uniqueItems"),
		fmt.Sprintf("minItems %d with uniqueItems needs %d different items, but items allows only %s (%s): no array satisfies both", need, need, plural(have, "value"), values),
		fmt.Sprintf("lower minItems to at most %d, or remove uniqueItems", have))
}

// maxListedValues is how many values fewValues lists by name.
const maxListedValues = 4

// fewValues returns how many different values the schema n allows, and
// which, when it can tell that they are few: a boolean, an enum, a const,
// an integer between bounds, a string of maxLength 0 or one that a
// pattern allows few of; nullable or not.
func (b *builder) fewValues(n *spec.Node) (total int64, values string, ok bool) {
	// Follow $refs to the $defs they name.
	for hops := 0; n != nil && n.Kind() == spec.ObjectNode && n.Get("$ref") != nil; hops++ {
		ref := n.Get("$ref")
		if hops == 16 || ref.Kind() != spec.StringNode {
			return 0, "", false
		}
		name, found := strings.CutPrefix(ref.Str(), "#/$defs/")
		if !found || strings.Contains(name, "/") {
			return 0, "", false
		}
		n = b.d.Src.Node("/$defs/" + name)
	}
	if n == nil || n.Kind() != spec.ObjectNode || n.Get("allOf") != nil || n.Get("oneOf") != nil {
		return 0, "", false
	}
	var names []string
	typ := n.Get("type")
	switch {
	case n.Get("const") != nil:
		names = []string{"its const"}
		if c := n.Get("const"); c.Kind() != spec.ObjectNode && c.Kind() != spec.ArrayNode {
			names = []string{string(c.AppendIndentedJSON(nil, ""))}
		}
	case n.Get("enum") != nil:
		enum := n.Get("enum")
		if enum.Kind() != spec.ArrayNode {
			return 0, "", false
		}
		// Values are told apart by their JSON: two equal ones written
		// differently (1 and 1.0) count twice, which errs on the side
		// of accepting.
		seen := make(map[string]bool)
		for _, v := range enum.Items() {
			if js := string(v.AppendIndentedJSON(nil, "")); !seen[js] {
				seen[js] = true
				names = append(names, js)
			}
		}
	case typ == nil:
		return 0, "", false
	case typeAllows(n, "boolean"):
		names = []string{"true", "false"}
	case typeAllows(n, "integer"):
		c, vals, ok := integerValues(n)
		if !ok {
			return 0, "", false
		}
		total, names = c, vals
	case typeAllows(n, "string"):
		if hi, ok := count(n, "maxLength"); ok && hi == 0 {
			names = []string{`""`}
			break
		}
		p := n.Get("pattern")
		if p == nil || p.Kind() != spec.StringNode {
			return 0, "", false
		}
		pat, ok := analysePattern(p.Str())
		if !ok || pat.only == nil {
			return 0, "", false
		}
		total = int64(len(pat.only))
		names = []string{fmt.Sprintf("the %s that pattern %q matches", plural(total, "string"), p.Str())}
		if len(pat.only) <= maxListedValues {
			names = quoted(pat.only)
		}
	default:
		return 0, "", false
	}
	if total == 0 {
		total = int64(len(names))
		if len(names) > maxListedValues {
			names = []string{fmt.Sprintf("the %d values of its enum", len(names))}
		}
	}
	if typ != nil && typeAllows(n, "null") {
		total++
		names = append(names, "null")
	}
	return total, andList(names), true
}

// integerValues returns how many integers the bounds and multipleOf of an
// integer schema allow, and which, when both bounds are given.
func integerValues(n *spec.Node) (count int64, values []string, ok bool) {
	lo, okLo := tightest(n, "minimum", "exclusiveMinimum", true)
	hi, okHi := tightest(n, "maximum", "exclusiveMaximum", false)
	if !okLo || !okHi {
		return 0, nil, false
	}
	first, last, empty := integerRange(lo, true, hi, true)
	if empty != nonEmpty {
		return 0, nil, false
	}
	step := big.NewInt(1)
	if _, m, ok := multipleOf(n); ok {
		step = integerStep(m)
	} else if n.Get("multipleOf") != nil {
		return 0, nil, false
	}
	// The multiples of step from step*kLo to step*kHi.
	kLo, r := new(big.Int).DivMod(first, step, new(big.Int))
	if r.Sign() != 0 {
		kLo.Add(kLo, big.NewInt(1))
	}
	kHi := new(big.Int).Div(last, step)
	c := new(big.Int).Sub(kHi, kLo)
	if c.Sign() < 0 || !c.IsInt64() || c.Int64() >= math.MaxInt64-2 {
		return 0, nil, false
	}
	count = c.Int64() + 1
	if count <= maxListedValues {
		var vals []string
		for k := new(big.Int).Set(kLo); k.Cmp(kHi) <= 0; k.Add(k, big.NewInt(1)) {
			vals = append(vals, new(big.Int).Mul(k, step).String())
		}
		return count, vals, true
	}
	from, to := new(big.Int).Mul(kLo, step), new(big.Int).Mul(kHi, step)
	if step.Cmp(big.NewInt(1)) == 0 {
		return count, []string{fmt.Sprintf("the integers from %s to %s", from, to)}, true
	}
	return count, []string{fmt.Sprintf("the multiples of %s from %s to %s", step, from, to)}, true
}

// hasMultiple says whether a multiple of step > 0 lies between lo and hi,
// each included unless exclusive.
func hasMultiple(lo *big.Int, loExclusive bool, hi *big.Int, hiExclusive bool, step *big.Int) bool {
	kLo, r := new(big.Int).DivMod(lo, step, new(big.Int)) // floor(lo/step)
	if r.Sign() != 0 || loExclusive {
		kLo.Add(kLo, big.NewInt(1))
	}
	kHi, r := new(big.Int).DivMod(hi, step, new(big.Int))
	if r.Sign() == 0 && hiExclusive {
		kHi.Sub(kHi, big.NewInt(1))
	}
	return kLo.Cmp(kHi) <= 0
}

// decimal is a JSON number, exactly: 0.digits × 10^exp, where digits has
// no leading or trailing zeros and is empty for zero. Numbers compare
// without arithmetic, so a bound like 1e400 costs nothing.
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// maxDecimalExp bounds the exponents parseDecimal accepts, far beyond any
// bound that makes sense, so that exponents never overflow.
const maxDecimalExp = 1_000_000

// parseDecimal parses a number in JSON syntax (a + in the exponent
// allowed); ok is false for anything else and for exponents beyond
// ±maxDecimalExp.
func parseDecimal(lit string) (d decimal, ok bool) {
	s := lit
	if rest, found := strings.CutPrefix(s, "-"); found {
		d.neg, s = true, rest
	}
	mant, expPart, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, hasFrac := strings.Cut(mant, ".")
	if intPart == "" || !allDigits(intPart) || !allDigits(frac) || (hasFrac && frac == "") {
		return decimal{}, false
	}
	exp := 0
	if hasExp {
		e, err := strconv.Atoi(strings.TrimPrefix(expPart, "+"))
		if err != nil || e < -maxDecimalExp || e > maxDecimalExp || strings.HasPrefix(expPart, "+-") {
			return decimal{}, false
		}
		exp = e
	}
	digits := intPart + frac
	exp += len(intPart)
	trimmed := strings.TrimLeft(digits, "0")
	exp -= len(digits) - len(trimmed)
	d.digits = strings.TrimRight(trimmed, "0")
	d.exp = exp
	if d.digits == "" {
		return decimal{}, true
	}
	return d, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (d decimal) sign() int {
	switch {
	case d.digits == "":
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// cmp compares d and e: -1, 0 or +1.
func (d decimal) cmp(e decimal) int {
	sd, se := d.sign(), e.sign()
	if sd != se || sd == 0 {
		return cmp.Compare(sd, se)
	}
	// The same sign: compare the magnitudes. Without trailing zeros,
	// comparing the digit strings compares the fractions 0.digits.
	m := cmp.Or(cmp.Compare(d.exp, e.exp), strings.Compare(d.digits, e.digits))
	return sd * m
}

// lowExp returns the exponent of d's last digit: d is an integer times
// 10^lowExp.
func (d decimal) lowExp() int { return d.exp - len(d.digits) }

// scaled returns d / 10^e, an integer when e is at most d.lowExp().
func (d decimal) scaled(e int) *big.Int {
	v, _ := new(big.Int).SetString("0"+d.digits, 10)
	v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.lowExp()-e)), nil))
	if d.neg {
		v.Neg(v)
	}
	return v
}

// abs returns |d|.
func (d decimal) abs() decimal {
	d.neg = false
	return d
}

// isInteger says whether d has no fractional part.
func (d decimal) isInteger() bool { return len(d.digits) <= d.exp || d.digits == "" }

// intPart returns the integer part of |d|, saturated at 10^20 (beyond any
// int64), and whether a fraction was cut off.
func (d decimal) intPart() (*big.Int, bool) {
	if d.digits == "" || d.exp <= 0 {
		return new(big.Int), d.digits != ""
	}
	if d.exp > 20 {
		return new(big.Int).Exp(big.NewInt(10), big.NewInt(20), nil), false
	}
	digits := d.digits
	if len(digits) < d.exp {
		digits += strings.Repeat("0", d.exp-len(digits))
	}
	v, _ := new(big.Int).SetString(digits[:d.exp], 10)
	return v, len(digits) > d.exp
}

// floor returns the greatest integer at most d, saturated beyond ±10^20.
func (d decimal) floor() *big.Int {
	v, frac := d.intPart()
	if d.neg {
		v.Neg(v)
		if frac {
			v.Sub(v, big.NewInt(1))
		}
	}
	return v
}

// ceil returns the least integer at least d, saturated beyond ±10^20.
func (d decimal) ceil() *big.Int {
	v, frac := d.intPart()
	if d.neg {
		return v.Neg(v)
	}
	if frac {
		v.Add(v, big.NewInt(1))
	}
	return v
}
