package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/journal/pebble"
	"github.com/moora-go/moora/automata/journal/replay"
)

// A log of notes; changed writes note 3 twice.
var (
	model = automata.Definition[[]string, string]{
		Initial:    func() []string { return []string{} },
		Transition: func(s []string, in string) []string { return automata.Append(s, in) },
	}
	changed = automata.Definition[[]string, string]{
		Initial: model.Initial,
		Transition: func(s []string, in string) []string {
			if in == "note 3" {
				s = automata.Append(s, in)
			}
			return automata.Append(s, in)
		},
	}
	opts = journal.Options[[]string, string]{Codec: journal.JSON[[]string, string](nil)}
)

func record(t *testing.T, store journal.Store, n int) {
	t.Helper()
	o := opts
	o.Digests = journal.DigestEvery
	m, err := journal.Open(store, model, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if err := m.Dispatch(context.Background(), fmt.Sprintf("note %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func recordFile(t *testing.T, path string, n int) {
	t.Helper()
	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	record(t, store, n)
}

func recordPebble(t *testing.T, dir string, n int) {
	t.Helper()
	store, err := pebble.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	record(t, store, n)
}

func recordFleet(t *testing.T, path string, ids ...string) {
	t.Helper()
	fleet, err := bolt.OpenFleet(path)
	if err != nil {
		t.Fatal(err)
	}
	recordAgents(t, fleet, ids...)
}

func recordPebbleFleet(t *testing.T, dir string, ids ...string) {
	t.Helper()
	fleet, err := pebble.OpenFleet(dir)
	if err != nil {
		t.Fatal(err)
	}
	recordAgents(t, fleet, ids...)
}

// recordAgents records 5 notes in each agent ids, created in fleet, and
// closes it.
func recordAgents(t *testing.T, fleet journal.Fleet, ids ...string) {
	t.Helper()
	defer fleet.Close()
	for _, id := range ids {
		if err := fleet.Create(id, journal.AgentInfo{Owner: "test"}); err != nil {
			t.Fatal(err)
		}
		store, err := fleet.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		record(t, store, 5)
	}
}

func main(def automata.Definition[[]string, string], args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := replay.Main(def, opts, args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestMainOverFilesDirectoriesAndFleets(t *testing.T) {
	dir := t.TempDir()
	recordFile(t, filepath.Join(dir, "a.db"), 5)
	recordFile(t, filepath.Join(dir, "b.db"), 2) // never reaches note 3
	recordFleet(t, filepath.Join(dir, "fleet.db"), "ann", "bob")
	recordPebble(t, filepath.Join(dir, "data", "agent"), 5)
	recordPebbleFleet(t, filepath.Join(dir, "data", "agents"), "cy", "di")
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a journal"), 0o644)

	code, out, errs := main(model, dir)
	if code != replay.ExitIdentical || !strings.Contains(out, "agents 7, inputs 32, identical 7, diverged 0") {
		t.Fatalf("today's code: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"a.db:", "b.db:", "fleet.db#ann:", "fleet.db#bob:", "agent:", "agents#cy:", "agents#di:"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report does not name %s:\n%s", want, out)
		}
	}

	code, out, errs = main(changed, "-json", dir)
	if code != replay.ExitDiverged {
		t.Fatalf("changed code: exit %d, want 1\n%s%s", code, out, errs)
	}
	var rep struct {
		Journals []struct {
			Path       string
			Divergence *journal.Divergence
		}
		Summary replay.Summary
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Summary != (replay.Summary{Agents: 7, Inputs: 32, Identical: 1, Diverged: 6}) {
		t.Fatalf("summary %+v", rep.Summary)
	}
	for _, j := range rep.Journals {
		d := j.Divergence
		if strings.HasSuffix(j.Path, "b.db") != (d == nil) {
			t.Fatalf("%s: divergence %+v", j.Path, d)
		}
		if d != nil && (d.Seq != 3 || string(d.Input) != `"note 3"` || d.DiffAt != 5) {
			t.Fatalf("%s: divergence %+v, want at 3, diffed at the snapshot at 5", j.Path, d)
		}
	}

	// -accept rewrites what diverged, a fleet whole.
	code, out, errs = main(changed, "-accept", dir)
	if code != replay.ExitIdentical || !strings.Contains(out, "accepted 6") {
		t.Fatalf("-accept: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs = main(changed, dir); code != replay.ExitIdentical {
		t.Fatalf("after -accept: exit %d\n%s%s", code, out, errs)
	}
	fleet, err := bolt.OpenFleet(filepath.Join(dir, "fleet.db"))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := fleet.Info("bob"); err != nil || info.Owner != "test" {
		t.Fatalf("the accepted fleet's bob: %+v, %v; want its info kept", info, err)
	}
	fleet.Close()
	pfleet, err := pebble.OpenFleet(filepath.Join(dir, "data", "agents"))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := pfleet.Info("di"); err != nil || info.Owner != "test" {
		t.Fatalf("the accepted pebble fleet's di: %+v, %v; want its info kept", info, err)
	}
	pfleet.Close()
	for _, pattern := range []string{"*.accept", "*/*.accept", "*/*.old"} {
		if entries, _ := filepath.Glob(filepath.Join(dir, pattern)); len(entries) > 0 {
			t.Fatalf("left behind: %v", entries)
		}
	}
	// A pebble journal named on its own is replayed as one, not walked.
	if code, out, errs := main(changed, filepath.Join(dir, "data", "agent")); code != replay.ExitIdentical || !strings.Contains(out, "agents 1, inputs 5") {
		t.Fatalf("a pebble store named: exit %d\n%s%s", code, out, errs)
	}
}

func TestMainRefusesWhatIsNotAJournal(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbage, bytes.Repeat([]byte("not bbolt "), 1000), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no journal", nil, "no journal given"},
		{"missing file", []string{filepath.Join(dir, "missing.db")}, "no such file"},
		{"empty directory", []string{t.TempDir()}, "no journal (.db file or pebble directory)"},
		{"garbage", []string{garbage}, "garbage.db"},
		{"unknown flag", []string{"-frobnicate", dir}, "frobnicate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := main(model, tt.args...)
			t.Log(errs)
			if code != replay.ExitError || !strings.Contains(errs, tt.want) {
				t.Fatalf("exit %d, stderr %q (stdout %q); want 2 and %q", code, errs, out, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Fatal("replay created the missing journal")
	}
}
