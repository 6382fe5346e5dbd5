package model

import (
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"unicode/utf8"
)

// TestDecimal: numbers in JSON syntax compare exactly, and floor and ceil
// are right on both sides of zero, without float64's rounding.
func TestDecimal(t *testing.T) {
	order := []string{"-1e400", "-12.5", "-12", "-1.5", "-1", "-0.5", "-1e-400", "0", "-0.0", "0e7", "1e-400", "0.3",
		"0.3000000000000000000000000000000000000001", "1", "1.0", "10E-1", "1.5", "12", "120e-1", "123", "9007199254740993", "1e19", "1e400"}
	// Equal neighbours in order: -0.0, 0e7 and 0; 1, 1.0 and 10E-1; 12 and 120e-1.
	equal := map[[2]string]bool{{"0", "-0.0"}: true, {"-0.0", "0e7"}: true, {"0", "0e7"}: true, {"1", "1.0"}: true, {"1.0", "10E-1"}: true, {"1", "10E-1"}: true, {"12", "120e-1"}: true}
	for i, a := range order {
		da, ok := parseDecimal(a)
		if !ok {
			t.Fatalf("parseDecimal(%q) failed", a)
		}
		for j, b := range order {
			db, _ := parseDecimal(b)
			want := 0
			switch {
			case equal[[2]string{a, b}] || equal[[2]string{b, a}] || i == j:
			case i < j:
				want = -1
			default:
				want = 1
			}
			if got := da.cmp(db); got != want {
				t.Errorf("cmp(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
	for _, tc := range []struct {
		lit         string
		floor, ceil string
		integer     bool
	}{
		{"0", "0", "0", true},
		{"1.5", "1", "2", false},
		{"-1.5", "-2", "-1", false},
		{"-2", "-2", "-2", true},
		{"1e-400", "0", "1", false},
		{"-1e-400", "-1", "0", false},
		{"120e-1", "12", "12", true},
		{"9223372036854775807", "9223372036854775807", "9223372036854775807", true},
		{"9223372036854775807.5", "9223372036854775807", "9223372036854775808", false},
		{"1e400", "100000000000000000000", "100000000000000000000", true},
		{"-1e400", "-100000000000000000000", "-100000000000000000000", true},
	} {
		d, ok := parseDecimal(tc.lit)
		if !ok {
			t.Fatalf("parseDecimal(%q) failed", tc.lit)
		}
		if got := d.floor().String(); got != tc.floor {
			t.Errorf("floor(%s) = %s, want %s", tc.lit, got, tc.floor)
		}
		if got := d.ceil().String(); got != tc.ceil {
			t.Errorf("ceil(%s) = %s, want %s", tc.lit, got, tc.ceil)
		}
		if got := d.isInteger(); got != tc.integer {
			t.Errorf("isInteger(%s) = %v, want %v", tc.lit, got, tc.integer)
		}
	}
	for _, bad := range []string{"", "-", "1.", ".5", "1e", "1e+-2", "0x10", "1e" + strconv.Itoa(maxDecimalExp+1), "NaN", "--1"} {
		if _, ok := parseDecimal(bad); ok {
			t.Errorf("parseDecimal(%q) succeeded", bad)
		}
	}
}

// TestRangeHasMultiple compares rangeHasMultiple with a search over the
// multiples, for bounds and steps in tenths on both sides of zero.
func TestRangeHasMultiple(t *testing.T) {
	tenths := func(k int64) string { return new(big.Rat).SetFrac64(k, 10).FloatString(1) }
	for _, step := range []int64{1, 2, 3, 5, 7, 10, 15, 25, 30} {
		m, _ := parseDecimal(tenths(step))
		for lo := int64(-32); lo <= 32; lo += 3 {
			for hi := lo; hi <= lo+31; hi += 2 {
				for _, excl := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
					if lo == hi && (excl[0] || excl[1]) {
						continue // reported by checkNumberRange before
					}
					want := false
					for k := lo; k <= hi; k++ {
						if k%step == 0 && (k != lo || !excl[0]) && (k != hi || !excl[1]) {
							want = true
						}
					}
					dl, _ := parseDecimal(tenths(lo))
					dh, _ := parseDecimal(tenths(hi))
					got, known := rangeHasMultiple(bound{d: dl, exclusive: excl[0]}, bound{d: dh, exclusive: excl[1]}, m)
					if !known || got != want {
						t.Errorf("multiple of %s in %s..%s (exclusive %v) = %v (known %v), want %v", tenths(step), tenths(lo), tenths(hi), excl, got, known, want)
					}
				}
			}
		}
	}
	// Far apart numbers: decided without arithmetic, or left unknown.
	for _, tc := range []struct {
		lo, hi, m    string
		found, known bool
	}{
		{"1", "9", "1e300", false, true},
		{"-9", "-1", "1e999999", false, true},
		{"1", "2", "1e-999999", false, false},
		{"1", "2", "1e-300", true, true},
		{"0", "1e-999999", "1", true, true},
	} {
		dl, _ := parseDecimal(tc.lo)
		dh, _ := parseDecimal(tc.hi)
		m, _ := parseDecimal(tc.m)
		found, known := rangeHasMultiple(bound{d: dl}, bound{d: dh}, m)
		if found != tc.found || known != tc.known {
			t.Errorf("multiple of %s in %s..%s = %v (known %v), want %v (known %v)", tc.m, tc.lo, tc.hi, found, known, tc.found, tc.known)
		}
	}
}

// TestIntegerStep: the integer multiples of m are the multiples of
// integerStep(m), found here by search.
func TestIntegerStep(t *testing.T) {
	for _, lit := range []string{"1", "2", "10", "0.5", "2.5", "0.3", "0.25", "1.2", "0.125", "7.5", "0.04", "3e2"} {
		m, _ := parseDecimal(lit)
		r, _ := new(big.Rat).SetString(lit)
		want := int64(0)
		for k := int64(1); want == 0; k++ {
			if v := new(big.Rat).Mul(r, big.NewRat(k, 1)); v.IsInt() {
				want = v.Num().Int64()
			}
		}
		if got := integerStep(m); got.Int64() != want {
			t.Errorf("integerStep(%s) = %s, want %d", lit, got, want)
		}
	}
}

// TestAnalysePattern: what analysePattern tells of a pattern, and what it
// does not (an unanchored pattern has no longest match; a multi-line ^
// does not anchor).
func TestAnalysePattern(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    patternInfo
	}{
		{`[^\s\S]`, patternInfo{empty: true, maxLen: -1}},
		{`a[^\x00-\x{10FFFF}]|[^\s\S]+`, patternInfo{empty: true, maxLen: -1}},
		{`^a$`, patternInfo{minLen: 1, maxLen: 1, only: []string{"a"}}},
		{`^a?$`, patternInfo{maxLen: 1, only: []string{"", "a"}}},
		{`\Aa?\z`, patternInfo{maxLen: 1, only: []string{"", "a"}}},
		{`a`, patternInfo{minLen: 1, maxLen: -1}},
		{`a?`, patternInfo{maxLen: -1}},
		{`^a`, patternInfo{minLen: 1, maxLen: -1}},
		{`a$`, patternInfo{minLen: 1, maxLen: -1}},
		{`(?m)^a$`, patternInfo{minLen: 1, maxLen: -1}},
		{`^a|b$`, patternInfo{minLen: 1, maxLen: -1}},
		{`^a$|^bc$`, patternInfo{minLen: 1, maxLen: 2, only: []string{"a", "bc"}}},
		{`^(?:x|y)(?:z)?$()`, patternInfo{minLen: 1, maxLen: 2, only: []string{"x", "xz", "y", "yz"}}},
		{`^(?i)ab$`, patternInfo{minLen: 2, maxLen: 2, only: []string{"AB", "Ab", "aB", "ab"}}},
		{`^\bx\b$`, patternInfo{minLen: 1, maxLen: 1, only: []string{"x"}}},
		{`^[ab]{2,3}$`, patternInfo{minLen: 2, maxLen: 3, only: []string{"aa", "aaa", "aab", "ab", "aba", "abb", "ba", "baa", "bab", "bb", "bba", "bbb"}}},
		{`^\d{4}-\d\d-\d\d$`, patternInfo{minLen: 10, maxLen: 10}},
		{`^.{2,}$`, patternInfo{minLen: 2, maxLen: -1}},
		{`^(a{30}){30}$`, patternInfo{minLen: 900, maxLen: 900}},
		{`^(?:a*)*$`, patternInfo{maxLen: -1}},
		{`^(?:()*)*$`, patternInfo{only: []string{""}}},
	} {
		got, ok := analysePattern(tc.pattern)
		if !ok {
			t.Errorf("analysePattern(%q) failed", tc.pattern)
			continue
		}
		if got.empty != tc.want.empty || got.minLen != tc.want.minLen || got.maxLen != tc.want.maxLen || !slices.Equal(got.only, tc.want.only) {
			t.Errorf("analysePattern(%q) = %+v, want %+v", tc.pattern, got, tc.want)
		}
	}
	for _, bad := range []string{`(`, `^(?:a{1000}){1000}$`} {
		if _, ok := analysePattern(bad); ok {
			t.Errorf("analysePattern(%q) accepted a pattern that does not compile", bad)
		}
	}
}

// FuzzAnalysePattern checks that what analysePattern tells of a pattern
// holds for every string the pattern matches: it never rules out a string
// that matches. Run it with
//
//	go test -run '^$' -fuzz=FuzzAnalysePattern -fuzztime=60s -fuzzminimizetime=2s ./modelgen/internal/model
//
// (the minimizer would otherwise spend a minute on each new input).
func FuzzAnalysePattern(f *testing.F) {
	for _, seed := range [][2]string{
		{`^a?$`, "a"}, {`a`, "xay"}, {`^(?i)ab$`, "aB"}, {`(?m)^a$`, "b\na"}, {`^a$|^bc$`, "bc"},
		{`\bx\b`, "x y"}, {`^[ab]{2,3}$`, "bab"}, {`^\d{4}-\d\d-\d\d$`, "2024-01-31"}, {`(?s)^.{2}$`, "\n\n"},
		{`^(?:x|y)(?:z)?$()`, "yz"}, {`^\pL+$`, "é"}, {`^(?U)a+?b$`, "aab"}, {`^[^a]$`, "\xff"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return
		}
		info, ok := analysePattern(pattern)
		if !ok {
			t.Fatalf("analysePattern(%q) failed on a pattern that compiles", pattern)
		}
		if !re.MatchString(s) {
			return
		}
		n := int64(utf8.RuneCountInString(s))
		switch {
		case info.empty:
			t.Fatalf("pattern %q matches %q, but analysePattern says it matches nothing", pattern, s)
		case n < info.minLen:
			t.Fatalf("pattern %q matches %q of %d characters, but analysePattern says at least %d", pattern, s, n, info.minLen)
		case info.maxLen >= 0 && n > info.maxLen:
			t.Fatalf("pattern %q matches %q of %d characters, but analysePattern says at most %d", pattern, s, n, info.maxLen)
		case info.only != nil && !slices.Contains(info.only, s):
			t.Fatalf("pattern %q matches %q, but analysePattern says only %q", pattern, s, info.only)
		}
	})
}
