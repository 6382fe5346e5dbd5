package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/examples/react/decl"
	"github.com/moora-go/moora/examples/react/impl/transitions"
)

// TestVersion1JournalsOpen: the fleet in testdata/v1 was written by the
// command under version 1 of the spec (before task trees of any depth,
// recovery and the configuration), with `react -terminal`: run-1 and run-2
// finished, run-3 ended in error by maxFailures; each agent has a snapshot.
// Under the current version (3), with the built-in configuration (which lets a run
// recover twice), each opens with its run as it ended: the snapshot brought
// up by impl/migrations, the error of run-3 over (a run of version 1 did
// not recover), and none given the configuration, as none is in progress.
func TestVersion1JournalsOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agents.db")
	copyFile(t, "testdata/v1/agents.db", path)
	fleet, err := bolt.OpenFleet(path)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := openRuns(runsConfig{Fleet: fleet, Work: testWork(t, never), Config: builtin})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := errors.Join(rs.close(context.Background()), fleet.Close()); err != nil {
			t.Error(err)
		}
	}()
	want := map[string]struct {
		outcome decl.RunRecordOutcome
		text    string
	}{
		"run-1": {decl.RunRecordOutcomeFinished, "compute 1+2: 3\ncount words in notes.txt: 26"},
		"run-2": {decl.RunRecordOutcomeFinished, "compute 2*(3+4): 14"},
		"run-3": {decl.RunRecordOutcomeError, "3 tool calls in a row failed, maxFailures"},
	}
	for id, w := range want {
		a, release, err := rs.get(context.Background(), id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		m := a.Machine()
		s := m.Current()
		r := record(s, id)
		if r.Outcome != w.outcome || !strings.Contains(r.Answer+r.Error, w.text) {
			t.Errorf("%s: run %+v", id, r)
		}
		if transitions.Recovering(s.Phase, s.RunID, s.Runs) || !Idle(s) || s.Config.Digest != "" || m.Version() != decl.SpecVersion {
			t.Errorf("%s: phase %s, idle %v, configuration %q, version %d", id, s.Phase, Idle(s), s.Config.Digest, m.Version())
		}
		// Replay from the journal, past the snapshot, comes to the same.
		replayed, err := m.StateAt(m.Seq())
		if err != nil || record(replayed, id).Outcome != w.outcome {
			t.Errorf("%s: replayed %+v, %v", id, record(replayed, id), err)
		}
		release()
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
