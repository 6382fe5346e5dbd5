package calc

import (
	"strings"
	"testing"
)

func TestCalculate(t *testing.T) {
	cases := []struct{ expr, want, err string }{
		{"(2 + 3) * 4.5", "22.5", ""},
		{"1/3*3", "1", ""},
		{"1/3", "1/3", ""},
		{"-2 - -3", "1", ""},
		{"0.1 + 0.2", "0.3", ""},
		{"12345678901234567890 * 10", "123456789012345678900", ""},
		{"1 / (2 - 2)", "", "division by zero"},
		{"2 ** 3", "", "only numbers"},
		{"1 +", "", "not an arithmetic expression"},
		{"2 % 3", "", "% is not an arithmetic operator"},
		{"x + 1", "", "only numbers"},
		{"0x10 + 1", "", "0x10 is not a decimal number"},
		{`"a" + "b"`, "", `"a" is not a decimal number`},
		{"1e999999999", "", "out of range"},
		{strings.Repeat("9", 101), "", "longer than 100 characters"},
		{strings.Repeat("(", 600) + "1" + strings.Repeat(")", 600), "", "longer than 1000 characters"},
		{"1e299*1e299*1e299*1e299", "", "too large"},
		{"1e-299/1e299/1e299/1e299", "", "too large"},
	}
	for _, c := range cases {
		got, err := Calculate(c.expr)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Calculate(%.40q) = %q, %v; want an error saying %q", c.expr, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Calculate(%q) = %q, %v; want %q", c.expr, got, err, c.want)
		}
	}
}

// FuzzCalculate: any text is a result or an error, never a panic, and
// never slow (each number and result is bounded).
func FuzzCalculate(f *testing.F) {
	for _, s := range []string{"1+2", "(1/3)*3", "-(4.5e3)/7", "1e300*1e300", "((((1))))", "1/0", "a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		got, err := Calculate(expr)
		if err == nil && got == "" {
			t.Fatalf("Calculate(%q): no result and no error", expr)
		}
	})
}
