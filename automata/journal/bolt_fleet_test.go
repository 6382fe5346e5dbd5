package journal_test

import (
	"path/filepath"
	"testing"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
)

// TestBoltFleetConformance runs the fleet conformance suite, the store suite
// on each agent and the rules across agents, on the bbolt fleet: a file per
// fleet name.
func TestBoltFleetConformance(t *testing.T) {
	dir := t.TempDir()
	storetest.RunFleet(t, func(t testing.TB, name string) journal.Fleet {
		f, err := journal.OpenBoltFleet(filepath.Join(dir, name+".db"))
		if err != nil {
			t.Fatal(err)
		}
		return f
	})
}
