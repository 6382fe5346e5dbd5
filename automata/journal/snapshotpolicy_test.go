package journal_test

import (
	"context"
	"math/bits"
	"path/filepath"
	"testing"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// TestSnapshotsFollowTheInputsBytes: with a snapshot due every input, a
// state that grows with every input is written again only once the inputs
// since the last snapshot take as many bytes as it did, so that the
// snapshots of a conversation of n inputs number about log2(n) and weigh
// about as much as the journal, instead of n snapshots weighing n² (what
// snapshots cost each input grew with the state).
func TestSnapshotsFollowTheInputsBytes(t *testing.T) {
	const inputs = 2_000
	path := filepath.Join(t.TempDir(), "starter.db")
	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := journal.Open(store, starter, journal.Options[decl.AgentState, decl.AgentInput]{
		Codec: starterCodec(), SnapshotEvery: 1, KeepSnapshots: inputs, SkipCloseSnapshot: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= inputs; i++ {
		if err := m.Dispatch(context.Background(), starterMessage(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if store, err = bolt.Open(path); err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	snapshots := 0
	if err := store.Snapshots(func(journal.Record) error { snapshots++; return nil }); err != nil {
		t.Fatal(err)
	}
	jbytes, sbytes, err := store.Size()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d inputs: %d snapshots of %d bytes in all; the journal %d bytes", inputs, snapshots, sbytes, jbytes)
	if most := 2 * bits.Len(inputs); snapshots < 2 || snapshots > most {
		t.Errorf("%d snapshots, want 2 to %d", snapshots, most)
	}
	if sbytes > 4*jbytes {
		t.Errorf("the snapshots weigh %d bytes, more than 4 times the journal's %d", sbytes, jbytes)
	}
}
