package modelgen

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/model"
)

func TestFormatErrorShowsNumberedSource(t *testing.T) {
	_, err := gen.FormatSource("decl/x.go", []byte("package decl\n\nfunc {\n"))
	if err == nil {
		t.Fatal("formatting invalid Go succeeded")
	}
	for _, want := range []string{"formatting decl/x.go: ", "    1  package decl\n", "    3  func {\n"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestGenerateNeedsAPackagePath(t *testing.T) {
	m, err := loadBytes("agent.yaml", []byte("version: 1\nactors: [a]\nobservations: {a: {a: {n: {type: integer}}}}\ninputs: {a: {inc: {type: object}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	m.PackageNote = "there is no go.mod in /nowhere or above"
	_, err = generateModel(m)
	if !errors.Is(err, model.ErrNoPackage) {
		t.Fatalf("Generate without a package path: %v, want model.ErrNoPackage", err)
	}
	const want = "no Go package path for the spec: there is no go.mod in /nowhere or above; add a package key with the import path of the spec's directory, or put the spec inside a Go module"
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
}

func TestPackageFromGoMod(t *testing.T) {
	tests := []struct {
		name, gomod, want string
	}{
		{"plain", "module example.com/app\n\ngo 1.26\n", "example.com/app"},
		{"quoted", "module \"example.com/quoted\"\n", "example.com/quoted"},
		{"comment", "// the app\nmodule example.com/app // main module\n", "example.com/app"},
		{"modules is not module", "modules x\nmodule example.com/real\n", "example.com/real"},
		{"none", "go 1.26\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := modulePath([]byte(tc.gomod)); got != tc.want {
				t.Errorf("modulePath = %q, want %q", got, tc.want)
			}
		})
	}
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"go.mod": "module example.com/app\n", "agents/chat/agent.yaml": ""})
	if got, note := packageFromGoMod(dir + "/agents/chat"); got != "example.com/app/agents/chat" {
		t.Errorf("packageFromGoMod = %q (%s)", got, note)
	}
	if got, _ := packageFromGoMod(dir); got != "example.com/app" {
		t.Errorf("packageFromGoMod at the module root = %q", got)
	}
}

// TestDerivedPackageInvalid checks that a spec in a directory whose import
// path, derived from go.mod, the go command would reject does not load: it
// would generate code that does not build.
func TestDerivedPackageInvalid(t *testing.T) {
	for _, tc := range []struct{ dir, why string }{
		{"My Agent", "invalid char ' '"},
		{"Café", "invalid char 'é'"},
		{"a@b", "invalid char '@'"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			dir := t.TempDir()
			spec := filepath.Join(dir, "agents", tc.dir, "agent.yaml")
			writeTree(t, dir, map[string]string{
				"go.mod":                           "module example.com/app\n",
				"agents/" + tc.dir + "/agent.yaml": "version: 1\nactors: [user]\n",
			})
			m, err := loadFile(spec)
			if err == nil {
				t.Fatalf("loaded, with package %q", m.Package)
			}
			ds := asDiagnostics(err)
			if len(ds) != 1 {
				t.Fatalf("want one diagnostic, got %v", err)
			}
			want := fmt.Sprintf("%s:1:1: the import path of the spec's directory, example.com/app/agents/%s (derived from %s), is not a valid Go import path: %s; rename the directory, as the go command cannot build a package there",
				spec, tc.dir, filepath.Join(dir, "go.mod"), tc.why)
			if got := ds[0].String(); got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}
