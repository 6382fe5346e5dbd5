package modelgen

import (
	"errors"
	"strings"
	"testing"
)

func TestFormatErrorShowsNumberedSource(t *testing.T) {
	_, err := formatSource("decl/x.go", []byte("package decl\n\nfunc {\n"))
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
	m, err := LoadBytes("agent.yaml", []byte("version: 1\nactors: [a]\nobservations: {a: {a: {n: {type: integer}}}}\ninputs: {a: {inc: {type: object}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	m.PackageNote = "there is no go.mod in /nowhere or above"
	_, err = Generate(m)
	if !errors.Is(err, ErrNoPackage) {
		t.Fatalf("Generate without a package path: %v, want ErrNoPackage", err)
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
