package httpbridge_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/moora-go/moora/internal/tsctest"
)

// TestClientTypes: client.d.ts declares every function client.js exports,
// and a page's use of the client over Reflexor's generated types
// type-checks, posting only the user's inputs as a client sends them and
// reading the view as the user's context (testdata/typed/sample.ts, whose
// expected errors must be errors).
func TestClientTypes(t *testing.T) {
	js, err := os.ReadFile("client.js")
	if err != nil {
		t.Fatal(err)
	}
	dts, err := os.ReadFile("client.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	exports := regexp.MustCompile(`(?m)^export (?:async )?function (\w+)`).FindAllSubmatch(js, -1)
	if len(exports) < 2 {
		t.Fatalf("client.js exports %d functions", len(exports))
	}
	for _, e := range exports {
		if !regexp.MustCompile(`(?m)^export function ` + string(e[1]) + `[<(]`).Match(dts) {
			t.Errorf("client.d.ts does not declare %s, which client.js exports", e[1])
		}
	}
	if out, ok := tsctest.Check(t, "testdata/typed", "sample.ts"); !ok {
		t.Fatalf("tsc failed:\n%s", out)
	}
}
