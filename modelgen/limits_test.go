package modelgen

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestNestingLimit checks the nesting limit the package doc states: values
// nested maxDepth levels deep load, one level more is an error at the value
// that crosses it, in both syntaxes.
func TestNestingLimit(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("nested at most %d levels deep", maxDepth); !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(string(doc), "//", "")), " "), want) {
		t.Errorf("the package doc does not say %q", want)
	}
	for _, tc := range []struct {
		name, file string
		depth      int
		tooDeep    bool
	}{
		{"yaml at the limit", "agent.yaml", maxDepth, false},
		{"yaml past the limit", "agent.yaml", maxDepth + 1, true},
		{"json at the limit", "agent.json", maxDepth, false},
		{"json past the limit", "agent.json", maxDepth + 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The root object is level 0, the value of "actors" level 1.
			nested := strings.Repeat("[", tc.depth) + strings.Repeat("]", tc.depth)
			spec := `{"version": 1, "actors": ` + nested + `}`
			_, err := LoadBytes(tc.file, []byte(spec))
			if err == nil {
				t.Fatal("loaded without error")
			}
			got := err.Error()
			tooDeep := strings.Contains(got, fmt.Sprintf("nested deeper than %d levels", maxDepth))
			if tooDeep != tc.tooDeep {
				t.Fatalf("nesting error: %v, want %v; got:\n%s", tooDeep, tc.tooDeep, got)
			}
			if tc.tooDeep {
				col := len(`{"version": 1, "actors": `) + tc.depth
				if want := fmt.Sprintf("%s:1:%d: ", tc.file, col); !strings.HasPrefix(got, want) {
					t.Errorf("got %q, want it at %s", got, want)
				}
			}
		})
	}
}
