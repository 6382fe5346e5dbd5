package modelgen

import (
	"path/filepath"
	"testing"
)

// TestSampleIsCurrent keeps internal/sample/decl, the generated package the
// run-time tests use, equal to a fresh generation; -update rewrites it. Its
// spec has no package key: the path comes from this module's go.mod.
func TestSampleIsCurrent(t *testing.T) {
	spec := filepath.Join("internal", "sample", "agent.yaml")
	m := mustLoad(t, spec)
	if want := "github.com/moora-go/moora/modelgen/internal/sample"; m.Package != want {
		t.Errorf("package path = %q, want %q (%s)", m.Package, want, m.PackageNote)
	}
	out, err := generateModel(m)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(spec)
	if *update {
		if _, err := writeFiles(dir, out); err != nil {
			t.Fatal(err)
		}
	}
	drift, err := compareFiles(dir, out)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range drift {
		t.Errorf("%s: %s (run go test ./modelgen -run TestSampleIsCurrent -update)\n%s", d.Path, d.Kind, d.Diff)
	}
}
