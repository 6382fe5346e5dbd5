package main

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTokenSurvivesARestart: without -token the service makes a token on
// its first run and keeps it in -data/token; after a SIGKILL the next run
// serves the same token, so that a page opened before is still let in.
func TestTokenSurvivesARestart(t *testing.T) {
	s := startService(t)
	s.token = "" // the service's own
	s.kill()
	s.start()
	first := s.printedToken
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(first) {
		t.Fatalf("the service printed the token %q, want 32 hex digits", first)
	}
	kept, err := os.ReadFile(filepath.Join(s.dir, "token"))
	if err != nil || strings.TrimSpace(string(kept)) != first {
		t.Fatalf("-data/token = %q, %v; want the printed token", kept, err)
	}
	s.kill()
	s.start()
	if s.printedToken != first {
		t.Fatalf("after a restart the token is %q, want the kept %q", s.printedToken, first)
	}
	for token, want := range map[string]int{first: http.StatusOK, "other": http.StatusUnauthorized} {
		req, _ := http.NewRequest("GET", "http://"+s.addr+"/agent/state", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /agent/state with token %q = %d, want %d", token, resp.StatusCode, want)
		}
	}
}
