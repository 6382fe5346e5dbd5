package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLongName: a 5,000-character actor name is an error at its line and
// column, from every command that reads the spec, and generate writes
// nothing (before names were limited, it failed writing
// impl/initials/<name>.go: "file name too long", with no position).
func TestLongName(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	long := strings.Repeat("a", 5000)
	writeFile(t, "go.mod", "module example.com/long\n\ngo 1.26\n")
	writeFile(t, "agent.yaml", "version: 1\nactors: [user, "+long+"]\nobservations:\n  user:\n    "+long+": {x: {type: string}}\ninputs:\n  "+long+":\n    inc: {type: object}\n")
	want := `agent.yaml:2:16: actors[1]: name "` + long[:32] + `…" is 5000 characters long, longer than the 64 a name may be`
	for _, args := range [][]string{{"generate"}, {"validate"}, {"check"}, {"graph"}} {
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		if code == 0 {
			t.Errorf("agentgen %s: exit 0", args[0])
		}
		if !strings.HasPrefix(stderr.String(), want) {
			t.Errorf("agentgen %s: stderr\n%.400s\nwant it to start with\n%s", args[0], stderr.String(), want)
		}
		if len(stderr.String()) > 4000 {
			t.Errorf("agentgen %s: %d bytes of errors for one long name: the name is not abbreviated", args[0], stderr.Len())
		}
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "go.mod" && e.Name() != "agent.yaml" {
			t.Errorf("generate wrote %s", e.Name())
		}
	}
}

// TestOversizedSpec: a spec file of more than the most a spec may have (256 KiB) is an
// error that names the limit, at the file's first line, from every command
// that reads a spec, --against included; agentgen reads no more of it than
// the limit (the file here is a sparse 50 MB).
func TestOversizedSpec(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	writeFile(t, "go.mod", "module example.com/big\n\ngo 1.26\n")
	writeFile(t, "agent.yaml", "version: 1\nactors: [user]\n")
	writeFile(t, "small.yaml", "version: 1\nactors: [user]\nobservations: {user: {user: {n: {type: integer}}}}\ninputs: {user: {inc: {type: object}}}\n")
	if err := os.Truncate("agent.yaml", 50<<20); err != nil {
		t.Fatal(err)
	}
	want := "agent.yaml:1:1: the spec has more than 262144 bytes (256 KiB), the most a spec may have\n"
	for _, args := range [][]string{{"generate"}, {"validate"}, {"check"}, {"graph"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code == 0 {
			t.Errorf("agentgen %s: exit 0", args[0])
		}
		if !strings.HasPrefix(stderr.String(), want) {
			t.Errorf("agentgen %s: stderr\n%.400s\nwant it to start with\n%s", args[0], stderr.String(), want)
		}
	}
	var stdout, stderr bytes.Buffer
	run([]string{"generate", "-f", "small.yaml"}, &stdout, &stderr)
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"check", "-f", "small.yaml", "--against", "agent.yaml"}, &stdout, &stderr); code != exitBroken {
		t.Errorf("check --against an oversized spec: exit %d, want %d; stderr:\n%s", code, exitBroken, stderr.Bytes())
	}
	if want := "agentgen: --against agent.yaml: " + want; !strings.HasSuffix(stderr.String(), want) {
		t.Errorf("check --against an oversized spec: stderr\n%s\nwant\n%s", stderr.Bytes(), want)
	}
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
