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
// properties), an integer range that holds no int64, an empty enum, an
// enum value that its own minLength, maxLength or pattern rules out, and
// an object that must have more properties than it may. Each is an error,
// at the keyword that makes the schema unsatisfiable (of two bounds, the
// one written later): an input or an observed property that no value
// satisfies cannot be used, and generated code would reject every value.
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
		}
		if typeAllows(n, "array") {
			b.checkCounts(ptr, n, "minItems", "maxItems", "array")
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

// later returns the one of the keywords k1 and k2 of the schema at ptr that
// is written later.
func (b *builder) later(ptr, k1, k2 string) string {
	p1, p2 := b.d.Src.KeyPos(ptr+"/"+k1), b.d.Src.KeyPos(ptr+"/"+k2)
	if cmp.Or(cmp.Compare(p1.Line, p2.Line), cmp.Compare(p1.Col, p2.Col)) > 0 {
		return k1
	}
	return k2
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

// checkNumberRange reports bounds that no number satisfies and, for an
// integer, bounds that hold no integer a Go int64 (the generated field's
// type) holds.
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
	if !isInteger(n) || (!okLo && !okHi) {
		return
	}
	// The integers allowed, clamped to int64.
	minInt, maxInt := big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
	first, last := minInt, maxInt
	if okLo {
		first = lo.d.ceil()
		if lo.exclusive && lo.d.isInteger() {
			first.Add(first, big.NewInt(1))
		}
		if first.Cmp(maxInt) > 0 {
			b.d.AtKey(ptr+"/"+lo.key, fmt.Sprintf("no int64 (the Go type of an integer) is %s: the largest is %d", lo.phrase(true), int64(math.MaxInt64)),
				"lower the bound, or use type: number")
			return
		}
	}
	if okHi {
		last = hi.d.floor()
		if hi.exclusive && hi.d.isInteger() {
			last.Sub(last, big.NewInt(1))
		}
		if last.Cmp(minInt) < 0 {
			b.d.AtKey(ptr+"/"+hi.key, fmt.Sprintf("no int64 (the Go type of an integer) is %s: the smallest is %d", hi.phrase(false), int64(math.MinInt64)),
				"raise the bound, or use type: number")
			return
		}
	}
	if okLo && okHi && first.Cmp(last) > 0 {
		b.d.AtKey(ptr+"/"+b.later(ptr, lo.key, hi.key), fmt.Sprintf("no integer is %s and %s", lo.phrase(true), hi.phrase(false)),
			"widen the range to hold an integer, or use type: number")
	}
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
