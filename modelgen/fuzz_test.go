package modelgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// FuzzLoadSpec feeds arbitrary documents to the loader. It must never
// panic; a document it rejects yields diagnostics with positions in it, and
// a document it accepts must generate Go code that formats.
func FuzzLoadSpec(f *testing.F) {
	specs, _ := filepath.Glob(filepath.Join("testdata", "*", "agent.*"))
	for _, p := range specs {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data, strings.HasSuffix(p, ".json"))
		}
	}
	archives, _ := filepath.Glob(filepath.Join("testdata", "invalid", "*.txtar"))
	for _, p := range archives {
		ar, err := txtar.ParseFile(p)
		if err != nil {
			continue
		}
		for _, file := range ar.Files {
			if strings.HasPrefix(file.Name, "agent.") {
				f.Add(file.Data, strings.HasSuffix(file.Name, ".json"))
			}
		}
	}
	f.Add([]byte("version: 1\nactors: [a]\n"), false)
	f.Add([]byte(`{"version":1,"actors":["a"],"observations":{"a":{"a":{"x":{"type":"integer"}}}}}`), true)
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		name := "agent.yaml"
		if isJSON {
			name = "agent.json"
		}
		checkValidateInPieces(t, name, data)
		m, err := LoadBytes(name, data)
		if err != nil {
			ds := AsDiagnostics(err)
			if len(ds) == 0 {
				t.Fatalf("error without diagnostics: %v", err)
			}
			for _, d := range ds {
				if d.Pos.File != name || d.Pos.Line < 1 || d.Message == "" {
					t.Fatalf("diagnostic without a position or message: %#v", d)
				}
			}
			return
		}
		if m == nil {
			t.Fatal("LoadBytes returned neither a model nor an error")
		}
		if m.Package == "" {
			m.Package = "example.com/fuzz"
		}
		if _, err := Generate(m); err != nil {
			t.Fatalf("a valid spec failed to generate: %v\n%s", err, data)
		}
	})
}
