package model

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/moora-go/moora/modelgen/internal/spec"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// checkPattern reports a string schema whose pattern matches no string, or
// none that its minLength, maxLength or format allows. A schema with an
// enum is left to checkEnum, which tries the pattern on each value.
func (b *builder) checkPattern(ptr string, n *spec.Node) {
	p := n.Get("pattern")
	if p == nil || p.Kind() != spec.StringNode || n.Get("enum") != nil {
		return
	}
	pat, ok := analysePattern(p.Str())
	if !ok {
		return // one that does not compile is reported by checkKeywords
	}
	if pat.empty {
		b.d.AtKey(ptr+"/pattern", fmt.Sprintf("pattern %q matches no string: no string satisfies it", p.Str()), "fix the pattern")
		return
	}
	if hi, ok := count(n, "maxLength"); ok && pat.minLen > hi {
		b.d.AtKey(ptr+"/"+b.later(ptr, "pattern", "maxLength"),
			fmt.Sprintf("pattern %q matches only strings of at least %s, more than maxLength %d: no string satisfies both", p.Str(), plural(pat.minLen, "character"), hi),
			"raise maxLength, or fix the pattern")
	}
	if lo, ok := count(n, "minLength"); ok && pat.maxLen >= 0 && pat.maxLen < lo {
		b.d.AtKey(ptr+"/"+b.later(ptr, "pattern", "minLength"),
			fmt.Sprintf("pattern %q matches only strings of at most %s, fewer than minLength %d: no string satisfies both", p.Str(), plural(pat.maxLen, "character"), lo),
			"lower minLength, or fix the pattern")
	}
	f := n.Get("format")
	if f == nil || f.Kind() != spec.StringNode {
		return
	}
	valid, known := jsonschema.Formats[f.Str()]
	if !known {
		return // reported by checkKeywords
	}
	key := ptr + "/" + b.later(ptr, "pattern", "format")
	if pat.only != nil && !slices.ContainsFunc(pat.only, func(s string) bool { return valid(s) }) {
		what := fmt.Sprintf("only %q, which is not", pat.only[0])
		if len(pat.only) > 1 {
			what = fmt.Sprintf("only %d strings, none of which is", len(pat.only))
		}
		b.d.AtKey(key, fmt.Sprintf("pattern %q matches %s a valid %s: no string satisfies both", p.Str(), what, f.Str()),
			"fix the pattern, or remove the format")
		return
	}
	if length, fixed := formatLength[f.Str()]; fixed && (pat.minLen > length || (pat.maxLen >= 0 && pat.maxLen < length)) {
		what := fmt.Sprintf("at least %s", plural(pat.minLen, "character"))
		if pat.minLen <= length {
			what = fmt.Sprintf("at most %s", plural(pat.maxLen, "character"))
		}
		b.d.AtKey(key, fmt.Sprintf("a %s is %s long, but pattern %q matches only strings of %s: no string satisfies both", f.Str(), plural(length, "character"), p.Str(), what),
			"fix the pattern, or remove the format")
	}
}

// formatLength is the length, in characters, of every string valid in a
// format whose strings all have one length: a date is YYYY-MM-DD.
var formatLength = map[string]int64{"date": 10}

// patternInfo is what analysePattern can tell of the strings that a
// pattern matches (anywhere in them, as regexp.MatchString does).
type patternInfo struct {
	empty  bool     // no string matches
	minLen int64    // no string of fewer characters matches
	maxLen int64    // no string of more characters matches; -1 if unknown
	only   []string // if not nil, no string but these matches
}

// analysePattern analyses a pattern as the run-time validator compiles it,
// with regexp.Compile; ok is false if it does not compile.
//
// The analysis reads every zero-width assertion (^, $, \b, ...) as the
// empty string: the language it works out holds every substring that the
// pattern can match, and maybe more. That is sound for what it reports: no
// match, the length every match has at least, and — for a pattern that
// starts with \A or ^ and ends with \z or $ on every path, so that a
// match is the whole string — the length every matching string has at
// most and, when they are few, the strings themselves.
func analysePattern(pattern string) (info patternInfo, ok bool) {
	if _, err := regexp.Compile(pattern); err != nil {
		return patternInfo{}, false
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return patternInfo{}, false
	}
	a := analyser{memo: make(map[*syntax.Regexp]lang)}
	l := a.lang(re)
	info = patternInfo{empty: l.empty, minLen: l.min, maxLen: -1}
	if !l.empty && a.anchored(re, syntax.OpBeginText) && a.anchored(re, syntax.OpEndText) {
		info.maxLen = l.max
		if l.set != nil {
			info.only = slices.Sorted(slices.Values(l.set))
		}
	}
	return info, true
}

// Bounds of the analysis: lengths saturate at maxLangLen (a greater
// maximum is unknown), and the strings of a language are listed only when
// there are at most maxLangStrings of at most maxLangStringLen characters.
const (
	maxLangLen       = 1 << 40
	maxLangStrings   = 64
	maxLangStringLen = 64
)

// lang describes the language of a regular expression whose assertions
// are read as the empty string.
type lang struct {
	empty bool     // it holds no string; then the fields below are zero
	min   int64    // the length of its shortest strings
	max   int64    // the length of its longest strings, or -1 if unknown
	set   []string // its strings, distinct, or nil if unknown or too many
}

var emptyString = lang{set: []string{""}}

// analyser works out the lang of each node of a parsed pattern once.
type analyser struct {
	memo map[*syntax.Regexp]lang
}

func (a *analyser) lang(re *syntax.Regexp) lang {
	if l, ok := a.memo[re]; ok {
		return l
	}
	l := a.langOf(re)
	a.memo[re] = l
	return l
}

func (a *analyser) langOf(re *syntax.Regexp) lang {
	switch re.Op {
	case syntax.OpNoMatch:
		return lang{empty: true}
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return emptyString
	case syntax.OpLiteral:
		l := lang{min: int64(len(re.Rune)), max: int64(len(re.Rune)), set: []string{""}}
		for _, r := range re.Rune {
			runes := []rune{r}
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					runes = append(runes, f)
				}
			}
			l.set = product(l.set, runeStrings(runes))
		}
		return l
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return lang{empty: true}
		}
		l := lang{min: 1, max: 1}
		total := 0
		for i := 0; i < len(re.Rune) && total <= maxLangStrings; i += 2 {
			total += int(re.Rune[i+1]-re.Rune[i]) + 1
		}
		if total <= maxLangStrings {
			var runes []rune
			for i := 0; i < len(re.Rune); i += 2 {
				for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
					runes = append(runes, r)
				}
			}
			l.set = runeStrings(runes)
		}
		return l
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return lang{min: 1, max: 1}
	case syntax.OpCapture:
		return a.lang(re.Sub[0])
	case syntax.OpStar:
		return a.repeat(re.Sub[0], 0, -1)
	case syntax.OpPlus:
		return a.repeat(re.Sub[0], 1, -1)
	case syntax.OpQuest:
		return a.repeat(re.Sub[0], 0, 1)
	case syntax.OpRepeat:
		return a.repeat(re.Sub[0], re.Min, re.Max)
	case syntax.OpConcat:
		l := emptyString
		for _, sub := range re.Sub {
			s := a.lang(sub)
			if s.empty {
				return lang{empty: true}
			}
			l = lang{min: addLen(l.min, s.min), max: addMax(l.max, s.max), set: product(l.set, s.set)}
		}
		return l
	case syntax.OpAlternate:
		l := lang{empty: true}
		for _, sub := range re.Sub {
			s := a.lang(sub)
			switch {
			case s.empty:
			case l.empty:
				l = s
			default:
				l = lang{min: min(l.min, s.min), max: maxMax(l.max, s.max), set: union(l.set, s.set)}
			}
		}
		return l
	}
	// An operator this analysis does not know: anything.
	return lang{max: -1}
}

// repeat returns the lang of sub repeated from lo to hi times (hi -1: any
// number of times).
func (a *analyser) repeat(sub *syntax.Regexp, lo, hi int) lang {
	s := a.lang(sub)
	switch {
	case s.empty && lo > 0:
		return lang{empty: true}
	case s.empty || s.max == 0:
		return emptyString
	}
	l := lang{min: mulLen(s.min, lo), max: -1}
	if hi < 0 || s.max < 0 {
		return l
	}
	l.max = mulMax(s.max, hi)
	if s.set == nil {
		return l
	}
	// The strings of sub^k for k from lo to hi. sub has a string of at
	// least a character, so sub^k runs over maxLangStringLen within that
	// many steps.
	power := []string{""} // the strings of sub^k
	for k := 0; ; k++ {
		switch {
		case k == lo:
			l.set = power
		case k > lo:
			l.set = union(l.set, power)
		}
		if k == hi || (k >= lo && l.set == nil) {
			return l
		}
		if power = product(power, s.set); power == nil {
			l.set = nil
			return l
		}
	}
}

// anchored says whether every match of re starts at the start of the text
// (op is syntax.OpBeginText) or ends at its end (syntax.OpEndText): every
// way through re meets the assertion before (after) it matches a
// character.
func (a *analyser) anchored(re *syntax.Regexp, op syntax.Op) bool {
	switch re.Op {
	case op:
		return true
	case syntax.OpCapture:
		return a.anchored(re.Sub[0], op)
	case syntax.OpConcat:
		subs := slices.Clone(re.Sub)
		if op == syntax.OpEndText {
			slices.Reverse(subs)
		}
		for _, sub := range subs {
			if a.anchored(sub, op) {
				return true
			}
			if a.lang(sub).max != 0 {
				return false
			}
		}
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if !a.anchored(sub, op) {
				return false
			}
		}
		return true
	}
	return false
}

// runeStrings returns the runes as one-character strings, or nil if they
// are more than maxLangStrings or none.
func runeStrings(runes []rune) []string {
	if len(runes) == 0 || len(runes) > maxLangStrings {
		return nil
	}
	out := make([]string, 0, len(runes))
	for _, r := range runes {
		if s := string(r); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// product returns each string of x followed by each of y, or nil if either
// is nil or the result runs over maxLangStrings or maxLangStringLen.
func product(x, y []string) []string {
	if x == nil || y == nil || len(x)*len(y) > maxLangStrings*maxLangStrings {
		return nil
	}
	var out []string
	for _, s := range x {
		for _, t := range y {
			st := s + t
			if utf8.RuneCountInString(st) > maxLangStringLen {
				return nil
			}
			if !slices.Contains(out, st) {
				if len(out) == maxLangStrings {
					return nil
				}
				out = append(out, st)
			}
		}
	}
	return out
}

// union returns the strings of x and y, or nil if either is nil or they
// run over maxLangStrings.
func union(x, y []string) []string {
	if x == nil || y == nil {
		return nil
	}
	out := slices.Clone(x)
	for _, t := range y {
		if !slices.Contains(out, t) {
			if len(out) == maxLangStrings {
				return nil
			}
			out = append(out, t)
		}
	}
	return out
}

func addLen(x, y int64) int64 { return min(x+y, maxLangLen) }

func mulLen(x int64, k int) int64 {
	if k > 0 && x > maxLangLen/int64(k) {
		return maxLangLen
	}
	return x * int64(k)
}

// addMax, mulMax and maxMax work on maximum lengths, where -1 is unknown
// and so is a length beyond maxLangLen.
func addMax(x, y int64) int64 {
	if x < 0 || y < 0 || x+y > maxLangLen {
		return -1
	}
	return x + y
}

func mulMax(x int64, k int) int64 {
	if x < 0 || (k > 0 && x > maxLangLen/int64(k)) {
		return -1
	}
	return x * int64(k)
}

func maxMax(x, y int64) int64 {
	if x < 0 || y < 0 {
		return -1
	}
	return max(x, y)
}
