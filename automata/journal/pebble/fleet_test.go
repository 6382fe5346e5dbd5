package pebble_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/pebble"

	pdb "github.com/cockroachdb/pebble/v2"
)

// records are journal records from to to, inclusive, of size bytes each.
func records(from, to uint64, size int) []journal.Record {
	var rs []journal.Record
	for seq := from; seq <= to; seq++ {
		rs = append(rs, journal.Record{Seq: seq, Data: []byte(fmt.Sprintf("%0*d", size, seq))})
	}
	return rs
}

func seqsOf(t *testing.T, s journal.Store) []uint64 {
	t.Helper()
	var seqs []uint64
	if err := s.Scan(0, func(r journal.Record) error { seqs = append(seqs, r.Seq); return nil }); err != nil {
		t.Fatal(err)
	}
	return seqs
}

// agentKey is the key of kind for agent id at seq, as package pebble lays
// it out (see Fleet).
func agentKey(kind byte, id string, seq uint64) []byte {
	k := append([]byte{kind, byte(len(id))}, id...)
	return binary.BigEndian.AppendUint64(k, seq)
}

// damageFleetDB changes the fleet's database in dir with change, as damage
// (or another program) would.
func damageFleetDB(t *testing.T, dir string, change func(db *pdb.DB) error) {
	t.Helper()
	db, err := pdb.Open(dir, &pdb.Options{Logger: quiet{}, ErrorIfNotExists: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := change(db); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFleetDamagedAgentAlone: damage to one agent's keys is that agent's
// alone. The fleet opens; Open of the agent is a *CorruptError naming it,
// and so is Info when its meta is damaged; List lists the others and then
// reports it; Delete removes it; the other agents are untouched.
func TestFleetDamagedAgentAlone(t *testing.T) {
	setMeta := func(meta string) func(db *pdb.DB) error {
		return func(db *pdb.DB) error { return db.Set([]byte("mA"), []byte(meta), pdb.Sync) }
	}
	for _, c := range []struct {
		name    string
		damage  func(db *pdb.DB) error
		want    string // in the error of Open
		badInfo bool   // Info and List report it
		listed  bool   // List has it
	}{
		{"meta not JSON", setMeta(`{"owner":"ann","created":"2026-`), "is not an AgentInfo", true, false},
		{"meta with a field of another type", setMeta(`{"owner":7,"created":"2026-01-01T00:00:00Z"}`), "is not an AgentInfo", true, false},
		{"meta without its time", setMeta(`{"owner":"ann"}`), "has no created time", true, false},
		{"meta lost", func(db *pdb.DB) error { return db.Delete([]byte("mA"), pdb.Sync) }, "has journal records but no meta", true, false},
		{"journal cut short", func(db *pdb.DB) error { return db.Delete(agentKey('i', "A", 20), pdb.Sync) }, "cut short: its last append ended at 20, its last record is 19", false, true},
		{"records past the end", func(db *pdb.DB) error { return db.Set(agentKey('i', "A", 21), []byte("x"), pdb.Sync) }, "records past its recorded end 20, up to 21", false, true},
		{"records but no end", func(db *pdb.DB) error { return db.Delete([]byte("e\x01A"), pdb.Sync) }, "records up to 20 but no recorded end", false, true},
		{"an end of another length", func(db *pdb.DB) error { return db.Set([]byte("e\x01A"), []byte("x"), pdb.Sync) }, "the recorded end holds 1 bytes", false, true},
		{"a key of another length", func(db *pdb.DB) error { return db.Set([]byte("i\x01Azz"), []byte("x"), pdb.Sync) }, "an input key of 5 bytes", false, true},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "fleet")
			f := newFleetOf(t, dir, "0", "A", "B")
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			damageFleetDB(t, dir, c.damage)

			f, err := pebble.OpenFleet(dir)
			if err != nil {
				t.Fatalf("OpenFleet beside one damaged agent: %v", err)
			}
			defer f.Close()
			var ce *journal.CorruptError
			if _, err := f.Open("A"); !errors.As(err, &ce) || !strings.Contains(err.Error(), `agent "A"`) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Open(A) = %v, want a *CorruptError naming agent \"A\" and saying %q", err, c.want)
			}
			_, err = f.Info("A")
			if c.badInfo && (!errors.As(err, &ce) || !strings.Contains(err.Error(), `agent "A"`)) {
				t.Errorf("Info(A) = %v, want a *CorruptError naming agent \"A\"", err)
			} else if !c.badInfo && err != nil {
				t.Errorf("Info(A) = %v, want its meta, which is intact", err)
			}
			var ids []string
			err = f.List("", func(id string, _ journal.AgentInfo) error { ids = append(ids, id); return nil })
			want := []string{"0", "A", "B"}
			switch {
			case !c.listed:
				want = []string{"0", "B"}
				if c.badInfo && c.name != "meta lost" && (!errors.As(err, &ce) || !strings.Contains(err.Error(), `agent "A"`)) {
					t.Errorf("List = %v, want a *CorruptError naming agent \"A\"", err)
				}
			case err != nil:
				t.Errorf("List = %v, want nil", err)
			}
			if !reflect.DeepEqual(ids, want) {
				t.Errorf("List called back with %v, want %v", ids, want)
			}
			for _, id := range []string{"0", "B"} {
				s, err := f.Open(id)
				if err != nil {
					t.Fatalf("Open(%s) beside the damaged agent: %v", id, err)
				}
				if err := s.Append(records(21, 21, 10)); err != nil {
					t.Errorf("Append to %s: %v", id, err)
				}
				if got := seqsOf(t, s); len(got) != 21 {
					t.Errorf("%s holds %d records, want 21", id, len(got))
				}
				s.Close()
			}
			if err := f.Delete("A"); err != nil {
				t.Fatalf("Delete of the damaged agent: %v", err)
			}
			if err := f.List("", func(string, journal.AgentInfo) error { return nil }); err != nil {
				t.Errorf("List after the damaged agent's Delete = %v", err)
			}
			if err := f.Create("A", journal.AgentInfo{Owner: "ann", Created: time.Unix(1, 0).UTC()}); err != nil {
				t.Fatalf("Create(A) again: %v", err)
			}
			s, err := f.Open("A")
			if err != nil {
				t.Fatalf("Open(A) created again: %v", err)
			}
			if got := seqsOf(t, s); len(got) != 0 {
				t.Errorf("A created again holds %v", got)
			}
			s.Close()
		})
	}
}

// newFleetOf makes a fleet in dir with agents ids, 20 records each, and a
// snapshot at 10.
func newFleetOf(t *testing.T, dir string, ids ...string) *pebble.Fleet {
	t.Helper()
	f, err := pebble.OpenFleet(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := f.Create(id, journal.AgentInfo{Owner: "ann", Created: time.Unix(1, 0).UTC()}); err != nil {
			t.Fatal(err)
		}
		s, err := f.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Append(records(1, 20, 10)); err != nil {
			t.Fatal(err)
		}
		if err := s.PutSnapshot(journal.Record{Seq: 10, Data: []byte("state at 10")}); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	return f
}

// TestFleetAndStoreAreNotMixedUp: a fleet's directory opened as a store is
// refused, and a store's as a fleet, each saying which it is; a directory
// that is no journal's is refused without a write.
func TestFleetAndStoreAreNotMixedUp(t *testing.T) {
	fleetDir, storeDir := filepath.Join(t.TempDir(), "fleet"), filepath.Join(t.TempDir(), "store")
	newFleetOf(t, fleetDir, "A").Close()
	s, err := pebble.Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := pebble.Open(fleetDir); err == nil || !strings.Contains(err.Error(), "it holds a fleet, not a store: open it with OpenFleet") {
		t.Errorf("Open of a fleet = %v", err)
	}
	if _, err := pebble.OpenFleet(storeDir); err == nil || !strings.Contains(err.Error(), "it holds a store, not a fleet: open it with Open") {
		t.Errorf("OpenFleet of a store = %v", err)
	}
	other := filepath.Join(t.TempDir(), "other")
	db, err := pdb.Open(other, &pdb.Options{Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	db.Set([]byte("k"), []byte("v"), pdb.Sync)
	db.Close()
	var ce *journal.CorruptError
	if _, err := pebble.Open(other); !errors.As(err, &ce) || !strings.Contains(err.Error(), "without the key that says it is a journal's") {
		t.Errorf("Open of another program's database = %v", err)
	}
	notPebble := t.TempDir()
	if err := writeFile(filepath.Join(notPebble, "notes.txt"), "not a database"); err != nil {
		t.Fatal(err)
	}
	if _, err := pebble.Open(notPebble); err == nil {
		t.Errorf("Open of a directory of other files succeeded")
	}
}

// TestStoreInUse: a store another Open has open is refused at once with an
// error wrapping ErrInUse; once it is closed, it opens.
func TestStoreInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent")
	s, err := pebble.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pebble.Open(dir); !errors.Is(err, journal.ErrInUse) {
		t.Fatalf("a second Open = %v, want ErrInUse", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := pebble.Open(dir)
	if err != nil {
		t.Fatalf("Open once the first is closed: %v", err)
	}
	again.Close()
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o600) }

// TestFleetSharesCommits: the Appends of many agents made at the same time
// share commits (one batch, one sync for several), and each agent has its
// own records, all of them, in order.
func TestFleetSharesCommits(t *testing.T) {
	f, err := pebble.OpenFleet(filepath.Join(t.TempDir(), "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const agents, appends = 50, 20
	stores := make([]journal.Store, agents)
	for i := range stores {
		id := fmt.Sprintf("agent-%02d", i)
		if err := f.Create(id, journal.AgentInfo{Owner: "ann", Created: time.Unix(1, 0).UTC()}); err != nil {
			t.Fatal(err)
		}
		if stores[i], err = f.Open(id); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Go(func() {
			for seq := uint64(1); seq <= appends; seq++ {
				if err := s.Append(records(seq, seq, 10)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	st := f.Stats()
	if st.Appends != agents*appends || st.Commits > st.Appends/2 {
		t.Errorf("stats %+v: want %d Appends in at most half as many commits", st, agents*appends)
	}
	for i, s := range stores {
		if got := seqsOf(t, s); len(got) != appends || got[0] != 1 || got[appends-1] != appends {
			t.Errorf("agent %d holds %v", i, got)
		}
		s.Close()
	}
	t.Logf("%d Appends in %d commits", st.Appends, st.Commits)
}
