package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
)

// TestStoreConformance runs the store conformance suite, which every Store
// passes, on the bbolt store.
func TestStoreConformance(t *testing.T) {
	dir := t.TempDir()
	storetest.Run(t, func(t testing.TB, name string) journal.Store {
		s, err := bolt.Open(filepath.Join(dir, name+".db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
