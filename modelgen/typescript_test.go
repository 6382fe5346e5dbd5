package modelgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moora-go/moora/internal/tsctest"
	"github.com/moora-go/moora/modelgen/internal/versions"
)

// typeScriptModules are the committed TypeScript modules of the golden
// specs and of the repository's agents, relative to modelgen.
func typeScriptModules(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, spec := range goldenCases(t) {
		ts := filepath.Join(filepath.Dir(spec), "agent.ts")
		if _, err := os.Stat(ts); err == nil {
			files = append(files, ts)
		}
	}
	files = append(files, "../automata/agents/persistent/agent.ts", "../automata/agents/reflexor/page/agent.ts", "../examples/react/agent.ts")
	return files
}

// TestTypeScriptCompiles type-checks, with tsc --strict, the TypeScript of
// every golden spec and of the repository's agents, and a program that uses
// every kind of type they have (testdata/typescript/sample.ts).
func TestTypeScriptCompiles(t *testing.T) {
	files := typeScriptModules(t)
	if len(files) < 9 {
		t.Fatalf("%d TypeScript modules, want the golden specs' and the three agents'", len(files))
	}
	if out, ok := tsctest.Check(t, ".", append(files, "testdata/typescript/sample.ts")...); !ok {
		t.Fatalf("tsc failed:\n%s", out)
	}
}

// TestTypeScriptCatchesARename: a spec change that renames a property makes
// the program that uses the old name fail to compile, at that name.
func TestTypeScriptCatchesARename(t *testing.T) {
	tsctest.TSC(t)
	tmp := t.TempDir()
	copyFile := func(from, to string) {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"optional-nullable", "three-actors", "maps"} {
		copyFile(filepath.Join("testdata", d, "agent.ts"), filepath.Join(tmp, d, "agent.ts"))
	}
	copyFile("testdata/typescript/sample.ts", filepath.Join(tmp, "typescript", "sample.ts"))
	// The oneof spec, its circle's radius renamed r.
	spec, err := os.ReadFile("testdata/oneof/agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	renamed := strings.ReplaceAll(string(spec), "radius", "r")
	if renamed == string(spec) {
		t.Fatal("the oneof spec has no radius to rename")
	}
	file := filepath.Join(tmp, "oneof", "agent.yaml")
	copyFile("testdata/oneof/agent.yaml", file)
	if err := os.WriteFile(file, []byte(renamed), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := loadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out, err := generateModel(m, tsGen(&versions.Plan{Current: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Files) != 1 || out.Files[0].Path != "agent.ts" {
		t.Fatalf("generated %d files, want agent.ts", len(out.Files))
	}
	if err := os.WriteFile(filepath.Join(tmp, "oneof", "agent.ts"), out.Files[0].Data, 0o644); err != nil {
		t.Fatal(err)
	}
	msg, ok := tsctest.Check(t, tmp, "typescript/sample.ts")
	if ok {
		t.Fatal("the sample compiles against a spec whose radius was renamed")
	}
	if !strings.Contains(msg, "typescript/sample.ts(13,") || !strings.Contains(msg, "'radius'") {
		t.Errorf("tsc does not fail at the use of radius:\n%s", msg)
	}
}
