// Package tsctest type-checks TypeScript in tests with tsc, which npm ci
// installs at the root of the repository (package.json; .ci/run runs it).
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
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(file), "..", "..", "node_modules", ".bin", "tsc")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no tsc at %s (CI is set): run npm ci at the root of the repository", bin)
		}
		t.Skipf("no tsc at %s: run npm ci at the root of the repository", bin)
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
