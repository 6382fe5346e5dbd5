package pebble_test

import (
	"path/filepath"
	"testing"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
	"github.com/moora-go/moora/automata/journal/pebble"
)

// TestStoreConformance runs the store conformance suite, which every Store
// passes, on the pebble store: a directory per store name.
func TestStoreConformance(t *testing.T) {
	dir := t.TempDir()
	storetest.Run(t, func(t testing.TB, name string) journal.Store {
		s, err := pebble.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestFleetConformance runs the fleet conformance suite, the store suite
// on each agent and the rules across agents, on the pebble fleet: a
// directory per fleet name.
func TestFleetConformance(t *testing.T) {
	dir := t.TempDir()
	storetest.RunFleet(t, func(t testing.TB, name string) journal.Fleet {
		f, err := pebble.OpenFleet(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return f
	})
}
