package httpbridge_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/httpbridge"
)

// TestTokenFile: the first call makes a token and keeps it, mode 0600; the
// next calls return the same one; a file someone emptied is an error naming
// it, left as it is.
func TestTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	first, err := httpbridge.TokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(first) {
		t.Fatalf("token %q, want 32 hex digits", first)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", info.Mode().Perm())
	}
	again, err := httpbridge.TokenFile(path)
	if err != nil || again != first {
		t.Fatalf("second call = %q, %v; want the kept token %q", again, err, first)
	}

	other := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(other, []byte("  my-own-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := httpbridge.TokenFile(other); err != nil || got != "my-own-token" {
		t.Fatalf("a token someone wrote = %q, %v; want it as written, trimmed", got, err)
	}

	empty := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := httpbridge.TokenFile(empty); err == nil || !strings.Contains(err.Error(), empty) || !strings.Contains(err.Error(), "holds no token") {
		t.Fatalf("an empty token file = %v, want an error naming it", err)
	}
	if data, _ := os.ReadFile(empty); string(data) != "\n" {
		t.Errorf("the empty token file was changed to %q", data)
	}

	if _, err := httpbridge.TokenFile(filepath.Join(t.TempDir(), "no-such-dir", "token")); err == nil || !strings.Contains(err.Error(), "keeping the token") {
		t.Fatalf("a token file in a missing directory = %v, want an error", err)
	}
}

// TestTokenFileRace: programs that start at once on one data directory all
// get the same token, and none sees a file half written.
func TestTokenFileRace(t *testing.T) {
	for range 20 {
		path := filepath.Join(t.TempDir(), "token")
		const n = 8
		tokens := make(chan string, n)
		errs := make(chan error, n)
		for range n {
			go func() {
				tok, err := httpbridge.TokenFile(path)
				tokens <- tok
				errs <- err
			}()
		}
		var first string
		for i := range n {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
			tok := <-tokens
			if i == 0 {
				first = tok
			} else if tok != first {
				t.Fatalf("two programs got the tokens %q and %q", first, tok)
			}
		}
		if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
			t.Fatalf("the directory holds %d files, want the token alone", len(entries))
		}
	}
}
