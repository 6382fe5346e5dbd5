package bolt_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// TestStoreInUse: a store another Open has open is refused at once with
// an error that says so (it said "timeout").
func TestStoreInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = bolt.Open(path)
	if !errors.Is(err, journal.ErrInUse) || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("a second Open = %v, want ErrInUse", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := bolt.Open(path)
	if err != nil {
		t.Fatalf("Open once the first is closed: %v", err)
	}
	again.Close()
}
