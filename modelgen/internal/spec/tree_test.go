package spec

import "testing"

func TestJSONInteger(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "12": true, "-12": true, "9223372036854775807": true,
		"": false, "-": false, "01": false, "-01": false, "+1": false, "1_000": false,
		"0x1F": false, "1e3": false, "9223372036854775808": false,
	} {
		if got := JSONInteger(s); got != want {
			t.Errorf("JSONInteger(%q) = %v, want %v", s, got, want)
		}
	}
}
