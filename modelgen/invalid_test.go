package modelgen

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestInvalidSpecs loads each spec of testdata/invalid/*.txtar and compares
// the diagnostics, line by line, with the archive's "want" file. The spec is
// the archive's agent.yaml or agent.json; a "why" comment at the top of the
// archive says what the case is about. -update rewrites "want".
func TestInvalidSpecs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 25 {
		t.Fatalf("found %d invalid specs, want at least 25", len(files))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var spec, want *txtar.File
			for i := range ar.Files {
				switch f := &ar.Files[i]; f.Name {
				case "agent.yaml", "agent.json":
					spec = f
				case "want":
					want = f
				}
			}
			if spec == nil || want == nil {
				t.Fatalf("%s needs an agent.yaml or agent.json and a want file", file)
			}
			_, err = loadBytes(spec.Name, spec.Data)
			if err == nil {
				t.Fatalf("%s loaded without error", spec.Name)
			}
			if asDiagnostics(err) == nil {
				t.Fatalf("error is not a list of diagnostics: %v", err)
			}
			got := err.Error() + "\n"
			if *update {
				want.Data = []byte(got)
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !bytes.Equal([]byte(got), want.Data) {
				t.Errorf("diagnostics differ\ngot:\n%swant:\n%s", got, want.Data)
			}
		})
	}
}
