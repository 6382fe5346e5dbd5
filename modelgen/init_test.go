package modelgen

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestInitBuildsWithEveryPublicPackage: a new agent's go.mod already
// requires what every public package of the runtime needs (go list
// github.com/moora-go/moora/automata/... but internal ones), so that code
// importing any of them builds offline, with go.mod read-only: no go mod
// tidy, no network. buildsWith, which init tidies for, names every public
// package outside automata/agents (whose agents need nothing more).
func TestInitBuildsWithEveryPublicPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the runtime's packages in a new module")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOWORK", "off")
	t.Setenv("GOPROXY", "off") // init's tidy, too: never the network
	goCmd := func(dir, flags string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS="+flags)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := goCmd(root, "", "list", toolkitModule+"/automata/...")
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var public, libraries []string
	for _, p := range strings.Fields(out) {
		if strings.Contains(p+"/", "/internal/") {
			continue
		}
		public = append(public, p)
		if !strings.HasPrefix(p, toolkitModule+"/automata/agents/") {
			libraries = append(libraries, p)
		}
	}
	if got := slices.Sorted(slices.Values(buildsWith)); !slices.Equal(got, libraries) {
		t.Errorf("buildsWith is\n\t%s\nwant the public packages outside automata/agents:\n\t%s", strings.Join(got, "\n\t"), strings.Join(libraries, "\n\t"))
	}

	dir := filepath.Join(t.TempDir(), "agent")
	if _, err := Init(dir, InitOptions{Toolkit: root}); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	src := "package main\n\nimport (\n"
	for _, p := range public {
		src += "\t_ \"" + p + "\"\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "public.go"), []byte(src+")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := goCmd(dir, "-mod=readonly", "build", "./..."); err != nil {
		t.Fatalf("a new agent importing all %d public packages: go build ./... offline: %v\n%s\ngo.mod:\n%s", len(public), err, out, gomod)
	}
	// Each package alone, as an agent that imports just it loads it.
	for _, p := range public {
		if out, err := goCmd(dir, "-mod=readonly", "list", "-deps", "-f", "{{if .Error}}{{.Error}}{{end}}", p); err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("go list -deps %s offline in a new agent: %v\n%s", p, err, out)
		}
	}
	if after, err := os.ReadFile(filepath.Join(dir, "go.mod")); err != nil || !bytes.Equal(after, gomod) {
		t.Errorf("go.mod changed (%v):\n%s\nwas:\n%s", err, after, gomod)
	}
}
