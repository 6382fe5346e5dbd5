package model

import (
	"strconv"
	"testing"
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
