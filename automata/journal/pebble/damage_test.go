package pebble_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
	"github.com/moora-go/moora/automata/journal/pebble"

	pdb "github.com/cockroachdb/pebble/v2"
)

const damageChildEnv = "PEBBLE_DAMAGE_CHILD"

func damageOptions() journal.Options[storetest.State, storetest.Input] {
	return journal.Options[storetest.State, storetest.Input]{Codec: journal.JSON[storetest.State, storetest.Input](nil), SnapshotEvery: 40}
}

// fleetAgents are the agents of a damaged fleet.
var fleetAgents = []string{"a0", "a1", "a2"}

// TestDamageChild is the process in which TestDamagedStoreIsAnErrorOrIntact
// opens a damaged store, or fleet and each of its agents, and reads the
// whole journal, so that a crash (a panic that escapes, an exit of
// pebble's) is seen as one. It prints a line a journal: "ok <n>" with the
// number of inputs the Machine recovered, after checking its state is the
// fold of its journal and its inputs the first n dispatched, "bad <what>"
// if they are not, or "error <message>": the Open, or a read of the journal
// after it, met the damage. A fleet that does not open is one error line.
func TestDamageChild(t *testing.T) {
	dir := os.Getenv(damageChildEnv)
	if dir == "" {
		t.Skip("the child process of TestDamagedStoreIsAnErrorOrIntact")
	}
	oneLine := func(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }
	if os.Getenv(damageChildEnv+"_FLEET") == "" {
		s, err := pebble.Open(dir)
		if err != nil {
			fmt.Printf("error %v\n", oneLine(err))
			return
		}
		fmt.Println(checkJournal(s))
		return
	}
	f, err := pebble.OpenFleet(dir)
	if err != nil {
		fmt.Printf("error %v\n", oneLine(err))
		return
	}
	for _, id := range fleetAgents {
		s, err := f.Open(id)
		if err != nil {
			fmt.Printf("error %v\n", oneLine(err))
			continue
		}
		fmt.Println(checkJournal(s))
	}
	if err := f.Close(); err != nil {
		fmt.Printf("error closing the fleet: %v\n", oneLine(err))
	}
}

// checkJournal opens a Machine on s, reads its whole journal and says what
// it found (see TestDamageChild); it closes s.
func checkJournal(s journal.Store) string {
	m, err := journal.Open(s, storetest.Model, damageOptions())
	if err != nil {
		s.Close()
		return "error " + strings.ReplaceAll(err.Error(), "\n", " ")
	}
	defer m.Close(context.Background())
	entries, err := m.Inputs(1, m.Seq())
	if err != nil {
		// Met by the read: an error, not a loss.
		return "error " + strings.ReplaceAll(err.Error(), "\n", " ")
	}
	var ins []storetest.Input
	for _, e := range entries {
		ins = append(ins, e.Input)
	}
	switch {
	case !reflect.DeepEqual(m.Current(), storetest.Fold(ins)):
		return "bad the recovered state is not the fold of the journal"
	case !slices.Equal(ins, storetest.Notes(0, len(ins))):
		return fmt.Sprintf("bad the journal's %d inputs are not the first %d dispatched", len(ins), len(ins))
	}
	return fmt.Sprintf("ok %d", len(ins))
}

// damageBase is a store to damage: its directory's files, and what a
// damaged copy may lose without an error.
type damageBase struct {
	fleet bool // a fleet of fleetAgents, each with total inputs
	files map[string][]byte
	total int // the inputs dispatched, every one acknowledged
	// wal is the write-ahead log the last inputs went to, and tail the
	// offset in it where the last Append's record starts: damage at or past
	// it, or a cut there, is what a crash during that write leaves.
	wal  string
	tail int64
	// logTail is where the append log's last entry starts, in a store
	// whose database lost its last Appends (lose), which only the append
	// log holds: damage at or past it is what a crash during that write
	// leaves; 0 when the database lost nothing.
	logTail int64
}

// newDamageBase dispatches total inputs to a new store in dir, flushing
// pebble's memtable to a table after flushAt of them (0: never), and
// closes it, the rest left in pebble's log. With lose, the database of
// the store (not a fleet) then loses its last lose Appends, as pebble's
// log written without a sync does in a crash (see loseTail): the append
// log alone holds them.
func newDamageBase(t *testing.T, dir string, total, flushAt, lose int, fleet bool) damageBase {
	t.Helper()
	// The records past flushAt stay in pebble's log, as a process killed
	// after its Appends leaves them (Close would write them to a table).
	pebble.LeaveLogAtClose(t)
	last := 1
	if lose > 0 {
		last = lose
	}
	closeSnapshot := true
	dispatchTo := func(s journal.Store, from, to int) {
		opts := damageOptions()
		opts.SkipCloseSnapshot = !closeSnapshot // none past what the database keeps
		m, err := journal.Open(s, storetest.Model, opts)
		if err != nil {
			t.Fatal(err)
		}
		storetest.DispatchAll(t, m, storetest.Notes(from, to))
		storetest.MustClose(t, m)
	}
	dispatch := func(from, to int) {
		if !fleet {
			s, err := pebble.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			dispatchTo(s, from, to)
			return
		}
		f, err := pebble.OpenFleet(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range fleetAgents {
			if from == 0 {
				if err := f.Create(id, journal.AgentInfo{Owner: "ann", Created: time.Unix(1, 0).UTC()}); err != nil {
					t.Fatal(err)
				}
			}
			s, err := f.Open(id)
			if err != nil {
				t.Fatal(err)
			}
			dispatchTo(s, from, to)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if flushAt > 0 {
		dispatch(0, flushAt)
		db, err := pdb.Open(dir, &pdb.Options{Logger: quiet{}})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	} else {
		flushAt = 0
	}
	dispatch(flushAt, total-last)
	wal, size := newestWAL(t, dir)
	closeSnapshot = lose == 0
	dispatch(total-last, total)
	if w, _ := newestWAL(t, dir); w != wal {
		// The last Open began a new log: the last Append's record is
		// where that one's records start.
		wal, size = w, 0
	}
	base := damageBase{fleet: fleet, files: map[string][]byte{}, total: total, wal: wal, tail: size}
	if lose > 0 {
		loseTail(t, dir, uint64(total), uint64(lose))
		offsets, _ := logEntries(t, dir)
		base.logTail = int64(offsets[len(offsets)-1])
	}
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Name() == "LOCK" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		base.files[rel] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// newestWAL returns the name of the newest write-ahead log of dir, and its
// size.
func newestWAL(t *testing.T, dir string) (string, int64) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no write-ahead log in %s (%v)", dir, err)
	}
	slices.Sort(logs)
	fi, err := os.Stat(logs[len(logs)-1])
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Base(logs[len(logs)-1]), fi.Size()
}

type quiet struct{}

func (quiet) Infof(string, ...any)  {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// damageCase is one damage: a byte of a file flipped, or the file cut.
type damageCase struct {
	file string
	at   int64
	cut  bool
	mask byte
}

func (c damageCase) String() string {
	if c.cut {
		return fmt.Sprintf("%s cut at %d", c.file, c.at)
	}
	return fmt.Sprintf("%s byte %d ^ %#x", c.file, c.at, c.mask)
}

// TestDamagedStoreIsAnErrorOrIntact damages real stores at random, seeded
// (PEBBLE_DAMAGE_SEED repeats a run): a byte of one of the directory's
// files (pebble's and the snapshots') flipped, or the file cut short, on
// a store whose records are all in the write-ahead log, on one whose
// first 150 are in a table, and on one whose database lost its last 10
// Appends, which only the append log holds (as after a crash). Each
// damaged copy is opened in a child process, and must be refused with an
// error, or open with every input and a state that is their fold; or,
// where the damage is in the newest log at or past the record of the last
// Append, or cuts that log, or is in the last entry of an append log that
// holds what the database lost (what a crash during a write leaves), open
// with the inputs before the lost ones, in order, nothing else lost
// (counted as tail-lost). The same on fleets of three agents, each agent's journal
// judged on its own: a damaged fleet is refused, or each agent opens
// intact, is refused alone, or lost its log's tail. No case may crash.
func TestDamagedStoreIsAnErrorOrIntact(t *testing.T) {
	seed := uint64(rand.Int64())
	if s := os.Getenv("PEBBLE_DAMAGE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("PEBBLE_DAMAGE_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	const total = 300
	bases := []damageBase{
		newDamageBase(t, filepath.Join(t.TempDir(), "wal"), total, 0, 0, false),
		newDamageBase(t, filepath.Join(t.TempDir(), "table"), total, 150, 0, false),
		newDamageBase(t, filepath.Join(t.TempDir(), "fleet-wal"), total, 0, 0, true),
		newDamageBase(t, filepath.Join(t.TempDir(), "fleet-table"), total, 150, 0, true),
		newDamageBase(t, filepath.Join(t.TempDir(), "lost"), total, 150, 10, false),
	}
	counts := map[string]int{}
	const cases = 200
	for i := range cases {
		base := bases[i%len(bases)]
		names := make([]string, 0, len(base.files))
		for name := range base.files {
			if len(base.files[name]) > 0 {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		c := damageCase{file: names[rng.IntN(len(names))]}
		c.at = rng.Int64N(int64(len(base.files[c.file])))
		c.cut = rng.IntN(3) == 0
		c.mask = byte(1 << rng.IntN(8))
		dir := t.TempDir()
		for name, data := range base.files {
			if name == c.file {
				data = slices.Clone(data)
				if c.cut {
					data = data[:c.at]
				} else {
					data[c.at] ^= c.mask
				}
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestDamageChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), damageChildEnv+"="+dir)
		if base.fleet {
			cmd.Env = append(cmd.Env, damageChildEnv+"_FLEET=1")
		}
		out, err := cmd.Output()
		var lines []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "error ") || strings.HasPrefix(l, "bad ") {
				lines = append(lines, l)
			}
		}
		want := 1
		if base.fleet && !(len(lines) == 1 && strings.HasPrefix(lines[0], "error ")) {
			want = len(fleetAgents)
		}
		if err != nil || len(lines) != want {
			var stderr []byte
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				stderr = ee.Stderr
			}
			t.Fatalf("case %d (%v): the child crashed: %v\n%s%s", i, c, err, out, stderr)
		}
		tailDamage := c.file == base.wal && c.at >= base.tail || c.file == base.wal && c.cut ||
			base.logTail > 0 && c.file == appendLog && !c.cut && c.at >= base.logTail
		outcome := ""
		for j, line := range lines {
			switch {
			case strings.HasPrefix(line, "bad "):
				t.Fatalf("case %d (%v), journal %d: %s", i, c, j, line)
			case strings.HasPrefix(line, "error "):
				outcome += "refused "
			case line == fmt.Sprintf("ok %d", base.total):
				outcome += "intact "
			case tailDamage:
				n, _ := strconv.Atoi(strings.TrimPrefix(line, "ok "))
				if n > base.total {
					t.Fatalf("case %d (%v), journal %d: %s, more than the %d dispatched", i, c, j, line, base.total)
				}
				outcome += "tail-lost "
			default:
				t.Fatalf("case %d (%v), journal %d: opened with %s of %d inputs: lost silently", i, c, j, line, base.total)
			}
		}
		if base.fleet {
			outcome = "fleet: " + outcome
		}
		counts[strings.TrimSpace(outcome)]++
	}
	t.Logf("%d cases: %v", cases, counts)
}
