package bolt_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
	bbolt "go.etcd.io/bbolt"
)

// TestFleetConformance runs the fleet conformance suite, the store suite
// on each agent and the rules across agents, on the bbolt fleet: a file per
// fleet name.
func TestFleetConformance(t *testing.T) {
	dir := t.TempDir()
	storetest.RunFleet(t, func(t testing.TB, name string) journal.Fleet {
		f, err := bolt.OpenFleet(filepath.Join(dir, name+".db"))
		if err != nil {
			t.Fatal(err)
		}
		return f
	})
}

func openFleet(t testing.TB, path string) *bolt.Fleet {
	t.Helper()
	f, err := bolt.OpenFleet(path)
	if err != nil {
		t.Fatalf("OpenFleet: %v", err)
	}
	return f
}

func closeFleet(t testing.TB, f *bolt.Fleet) {
	t.Helper()
	if err := f.Close(); err != nil {
		t.Fatalf("fleet Close: %v", err)
	}
}

// fleetAgent creates agent id of f and opens its Store.
func fleetAgent(t testing.TB, f *bolt.Fleet, id string) journal.Store {
	t.Helper()
	if err := f.Create(id, journal.AgentInfo{Owner: "owner-" + id, Created: time.Unix(1, 0).UTC()}); err != nil {
		t.Fatalf("Create(%q): %v", id, err)
	}
	s, err := f.Open(id)
	if err != nil {
		t.Fatalf("Open(%q): %v", id, err)
	}
	return s
}

// fleetRecords are records from..to of an agent, each of size bytes.
func fleetRecords(from, to uint64, size int) []journal.Record {
	var rs []journal.Record
	for seq := from; seq <= to; seq++ {
		rs = append(rs, journal.Record{Seq: seq, Data: []byte(fmt.Sprintf("%0*d", size, seq))})
	}
	return rs
}

func fleetSeqs(t testing.TB, s journal.Store) []uint64 {
	t.Helper()
	var seqs []uint64
	if err := s.Scan(0, func(r journal.Record) error { seqs = append(seqs, r.Seq); return nil }); err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return seqs
}

// TestFleetSharesCommits: the Machines of many agents, each with several
// producers, dispatch at once; their Appends share bbolt transactions, so
// the fleet commits fewer of them than it has Appends.
func TestFleetSharesCommits(t *testing.T) {
	const agents, producers, perProducer = 16, 4, 25
	f := openFleet(t, filepath.Join(t.TempDir(), "fleet.db"))
	defer closeFleet(t, f)
	machines := make([]*journal.Machine[state, input], agents)
	for i := range machines {
		m, err := journal.Open(fleetAgent(t, f, fmt.Sprintf("agent-%02d", i)), model, journal.Options[state, input]{Codec: codec(), SnapshotEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		machines[i] = m
	}
	before := f.Stats()
	var wg sync.WaitGroup
	for _, m := range machines {
		for p := range producers {
			wg.Go(func() {
				for i := range perProducer {
					if err := m.Dispatch(context.Background(), input{Note: fmt.Sprintf("p%d-%d", p, i)}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	after := f.Stats()
	commits, appends, records := after.Commits-before.Commits, after.Appends-before.Appends, after.Records-before.Records
	t.Logf("%d inputs of %d agents: %d Appends in %d bbolt transactions (%.1f Appends, %.1f inputs a commit)",
		agents*producers*perProducer, agents, appends, commits, float64(appends)/float64(commits), float64(records)/float64(commits))
	if records != agents*producers*perProducer {
		t.Errorf("the fleet committed %d records, want %d", records, agents*producers*perProducer)
	}
	if commits >= appends {
		t.Errorf("%d Appends took %d transactions: the agents' Appends shared none", appends, commits)
	}
	for i, m := range machines {
		if got := m.Seq(); got != producers*perProducer {
			t.Errorf("agent %d is at seq %d, want %d", i, got, producers*perProducer)
		}
		mustClose(t, m)
	}
}

// holdCommits holds up the fleet's commits until the returned function is
// called with how many Appends are to make the next commit: once that many
// are queued, the commits go on, and those make one. An agent appends
// enough to grow the file's map, and bbolt grows it only once no read
// transaction is open, while a Scan of another agent holds one open. The
// two agents are created here, and closed once the commits go on.
func holdCommits(t *testing.T, f *bolt.Fleet) (goOn func(appends int)) {
	t.Helper()
	reader, big := fleetAgent(t, f, "reader"), fleetAgent(t, f, "big")
	if err := reader.Append(fleetRecords(1, 1, 10)); err != nil {
		t.Fatal(err)
	}
	scanning, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		err := reader.Scan(0, func(journal.Record) error {
			close(scanning)
			<-release
			return journal.ErrStop
		})
		if err != nil {
			t.Error(err)
		}
	})
	<-scanning
	base, _ := bolt.FleetQueue(f)
	wg.Go(func() {
		if err := big.Append(fleetRecords(1, 64, 64<<10)); err != nil { // 4 MiB
			t.Error(err)
		}
	})
	// big's commit is under way, waiting for the map, once the commit
	// loop has taken it.
	waitQueue(t, f, func(enqueued, taken int64) bool { return enqueued == base+1 && taken == enqueued })
	return func(appends int) {
		waitQueue(t, f, func(enqueued, taken int64) bool { return enqueued == base+1+int64(appends) })
		close(release)
		wg.Wait()
		reader.Close()
		big.Close()
	}
}

// waitQueue waits until ok holds of the fleet's queue counts.
func waitQueue(t *testing.T, f *bolt.Fleet, ok func(enqueued, taken int64) bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if ok(bolt.FleetQueue(f)) {
			return
		}
		if time.Now().After(deadline) {
			enqueued, taken := bolt.FleetQueue(f)
			t.Fatalf("the fleet's queue is stuck at %d queued, %d taken", enqueued, taken)
		}
	}
}

// TestFleetGapFailsOnlyItsAgent: an Append with a gap in its seqs,
// committed in the same transaction as other agents' Appends, fails alone.
func TestFleetGapFailsOnlyItsAgent(t *testing.T) {
	f := openFleet(t, filepath.Join(t.TempDir(), "fleet.db"))
	defer closeFleet(t, f)
	bad := fleetAgent(t, f, "bad")
	if err := bad.Append(fleetRecords(1, 3, 10)); err != nil {
		t.Fatal(err)
	}
	good := make([]journal.Store, 8)
	for i := range good {
		good[i] = fleetAgent(t, f, fmt.Sprintf("good-%d", i))
		if err := good[i].Append(fleetRecords(1, 1, 10)); err != nil {
			t.Fatal(err)
		}
	}

	goOn := holdCommits(t, f)
	before := f.Stats()
	var wg sync.WaitGroup
	errs := make([]error, len(good)+1)
	for i, s := range append([]journal.Store{bad}, good...) {
		wg.Go(func() {
			seq := uint64(2)
			if s == bad {
				seq = 5 // 4 is next
			}
			errs[i] = s.Append(fleetRecords(seq, seq+1, 10))
		})
	}
	goOn(len(good) + 1)
	wg.Wait()
	after := f.Stats()

	if err := errs[0]; err == nil || !strings.Contains(err.Error(), "append seq 5, expected 4") {
		t.Errorf("the Append with a gap = %v, want the error append seq 5, expected 4", err)
	}
	for i, err := range errs[1:] {
		if err != nil {
			t.Errorf("agent good-%d, committed with the gap: %v", i, err)
		}
		if got := fleetSeqs(t, good[i]); !reflect.DeepEqual(got, []uint64{1, 2, 3}) {
			t.Errorf("agent good-%d holds %v, want 1..3", i, got)
		}
	}
	if got := fleetSeqs(t, bad); !reflect.DeepEqual(got, []uint64{1, 2, 3}) {
		t.Errorf("the agent whose Append was refused holds %v, want 1..3 as before", got)
	}
	if commits, appends := after.Commits-before.Commits, after.Appends-before.Appends; commits != 2 || appends != int64(len(good))+1 {
		t.Errorf("%d transactions committed %d Appends, want 2 (big's, then the %d others in one) committing %d", commits, appends, len(good)+1, len(good)+1)
	}
	for _, s := range append([]journal.Store{bad}, good...) {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestFleetTwoAppendsOfAnAgentInOneCommit: an agent's small Append (to
// the log) and then its large one (which would go to its inputs at once)
// in one commit keep the journal's order: the large one follows the small
// one into the log.
func TestFleetTwoAppendsOfAnAgentInOneCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fleet.db")
	f := openFleet(t, path)
	s := fleetAgent(t, f, "a")
	if err := s.Append(fleetRecords(1, 1, 10)); err != nil {
		t.Fatal(err)
	}
	fleetSeqs(t, s) // moves record 1 to a's inputs: nothing of a's is left in the log
	goOn := holdCommits(t, f)
	before := f.Stats()
	var wg sync.WaitGroup
	queued, _ := bolt.FleetQueue(f)
	wg.Go(func() {
		if err := s.Append(fleetRecords(2, 2, 10)); err != nil {
			t.Error(err)
		}
	})
	waitQueue(t, f, func(enqueued, _ int64) bool { return enqueued == queued+1 }) // queued first
	wg.Go(func() {
		if err := s.Append(fleetRecords(3, 12, 1<<10)); err != nil { // 10 KiB
			t.Error(err)
		}
	})
	goOn(2)
	wg.Wait()
	if st := f.Stats(); st.Commits-before.Commits != 2 {
		t.Errorf("%d commits, want 2: big's, then both of a's Appends", st.Commits-before.Commits)
	}
	want := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	if got := fleetSeqs(t, s); !reflect.DeepEqual(got, want) {
		t.Errorf("a holds %v, want 1..12", got)
	}
	s.Close()
	closeFleet(t, f)
	f = openFleet(t, path)
	defer closeFleet(t, f)
	if s, err := f.Open("a"); err != nil {
		t.Errorf("Open(a) after a reopen: %v", err)
	} else {
		if got := fleetSeqs(t, s); !reflect.DeepEqual(got, want) {
			t.Errorf("a holds %v after a reopen, want 1..12", got)
		}
		s.Close()
	}
}

// TestFleetInUse: an agent's Store is one at a time; a fleet closes only
// once its agents' Stores are closed; a Store closed refuses every call.
func TestFleetInUse(t *testing.T) {
	f := openFleet(t, filepath.Join(t.TempDir(), "fleet.db"))
	s := fleetAgent(t, f, "a")
	if _, err := f.Open("a"); !errors.Is(err, journal.ErrInUse) {
		t.Fatalf("a second Open = %v, want ErrInUse", err)
	}
	if err := f.Close(); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("Close with a's Store open = %v, want an error naming it", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(fleetRecords(1, 1, 1)); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Append after Close = %v, want an error saying the Store is closed", err)
	}
	if err := s.Scan(0, func(journal.Record) error { return nil }); err == nil {
		t.Error("Scan after Close succeeded")
	}
	s, err := f.Open("a")
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s.Close()
	closeFleet(t, f)
	if _, err := f.Open("a"); err == nil {
		t.Error("Open on a closed fleet succeeded")
	}
}

// TestFleetAndStoreFilesAreNotMixedUp: a fleet's file opened as one
// store, or a store's as a fleet, is refused with an error that says which
// it is; it is not damage.
func TestFleetAndStoreFilesAreNotMixedUp(t *testing.T) {
	dir := t.TempDir()
	fleetPath, storePath := filepath.Join(dir, "fleet.db"), filepath.Join(dir, "store.db")
	f := openFleet(t, fleetPath)
	fleetAgent(t, f, "a").Close()
	closeFleet(t, f)
	s, err := bolt.Open(storePath)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	var ce *journal.CorruptError
	if _, err := bolt.Open(fleetPath); err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), "open it with bolt.OpenFleet") {
		t.Errorf("Open of a fleet = %v, want an error, not a *CorruptError, saying to open it with OpenFleet", err)
	}
	if _, err := bolt.OpenFleet(storePath); err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), "open it with bolt.Open") {
		t.Errorf("OpenFleet of a store = %v, want an error, not a *CorruptError, saying to open it with Open", err)
	}
	// Both still open as what they are.
	closeFleet(t, openFleet(t, fleetPath))
	if s, err = bolt.Open(storePath); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// damageFleet changes the fleet file at path, closed, with bbolt, as a
// damaged disk or another program would leave it.
func damageFleet(t *testing.T, path string, change func(tx *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(change); err != nil {
		t.Fatal(err)
	}
}

// agentBucket is the bucket of agent id in the fleet's bucket name.
func agentBucket(tx *bbolt.Tx, name, id string) *bbolt.Bucket {
	return tx.Bucket([]byte(name)).Bucket([]byte(id))
}

// newFleetOf writes a fleet at path with the given agents, each holding
// inputs 1..n of size bytes.
func newFleetOf(t *testing.T, path string, n uint64, size int, ids ...string) {
	t.Helper()
	f := openFleet(t, path)
	defer closeFleet(t, f)
	for _, id := range ids {
		s := fleetAgent(t, f, id)
		if err := s.Append(fleetRecords(1, n, size)); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
}

// TestFleetDamagedAgentAlone: damage to one agent that bbolt does not
// see is that agent's alone. The fleet opens; Open of the agent is a
// *CorruptError naming it, and so is Info when its meta is damaged; List
// lists the others and then reports it; Delete removes it; the other agents
// are untouched.
func TestFleetDamagedAgentAlone(t *testing.T) {
	setMeta := func(meta string) func(tx *bbolt.Tx) error {
		return func(tx *bbolt.Tx) error { return tx.Bucket([]byte("agents")).Put([]byte("A"), []byte(meta)) }
	}
	for _, c := range []struct {
		name    string
		damage  func(tx *bbolt.Tx) error
		want    string // in the error of Open
		badInfo bool   // Info and List report it
		listed  bool   // List has it
	}{
		{"meta not JSON", setMeta(`{"owner":"ann","created":"2026-`), "is not an AgentInfo", true, false},
		{"meta with a field of another type", setMeta(`{"owner":7,"created":"2026-01-01T00:00:00Z"}`), "is not an AgentInfo", true, false},
		{"meta without its time", setMeta(`{"owner":"ann"}`), "has no created time", true, false},
		{"meta lost", func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("agents")).Delete([]byte("A"))
		}, "has journal buckets but no meta", true, false},
		{"a bucket for the meta", func(tx *bbolt.Tx) error {
			agents := tx.Bucket([]byte("agents"))
			if err := agents.Delete([]byte("A")); err != nil {
				return err
			}
			_, err := agents.CreateBucket([]byte("A"))
			return err
		}, "holds a bucket under its id, not its meta", true, false},
		{"journal cut short", func(tx *bbolt.Tx) error {
			c := agentBucket(tx, "agent-inputs", "A").Cursor()
			c.Last()
			return c.Delete()
		}, "last record is seq 19", false, true},
		{"snapshots bucket lost", func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("agent-snapshots")).DeleteBucket([]byte("A"))
		}, "bucket snapshots is missing", false, true},
		{"a key of another length", func(tx *bbolt.Tx) error {
			return agentBucket(tx, "agent-inputs", "A").Put([]byte("short"), []byte("x"))
		}, "a key of 5 bytes, expected 8", false, true},
		{"a bucket among the records", func(tx *bbolt.Tx) error {
			_, err := agentBucket(tx, "agent-quarantine", "A").CreateBucket([]byte("0123456789abcdef"))
			return err
		}, "a bucket inside bucket quarantine", false, true},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fleet.db")
			newFleetOf(t, path, 20, 10, "0", "A", "B")
			damageFleet(t, path, c.damage)

			f := openFleet(t, path)
			defer closeFleet(t, f)
			var ce *journal.CorruptError
			if _, err := f.Open("A"); !errors.As(err, &ce) || !strings.Contains(err.Error(), `agent "A"`) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Open(A) = %v, want a *CorruptError naming agent \"A\" and saying %q", err, c.want)
			}
			_, err := f.Info("A")
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
				if err := s.Append(fleetRecords(21, 21, 10)); err != nil {
					t.Errorf("Append to %s: %v", id, err)
				}
				if got := fleetSeqs(t, s); len(got) != 21 {
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
			s := fleetAgent(t, f, "A") // created again, new
			if got := fleetSeqs(t, s); len(got) != 0 {
				t.Errorf("A created again holds %v", got)
			}
			s.Close()
		})
	}
}

// TestFleetDamagedPagesNameTheAgent: damage to the pages in one agent's
// part of the file refuses the whole fleet (bbolt's own open would trip on
// it), with a *CorruptError that names the agent, and leaves the file as it
// was.
func TestFleetDamagedPagesNameTheAgent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fleet.db")
	newFleetOf(t, path, 200, 100, "A", "B") // 20 KB a journal: pages of its own
	var root uint64
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *bbolt.Tx) error {
		root = uint64(agentBucket(tx, "agent-inputs", "B").RootPage())
		return nil
	})
	db.Close()
	if root == 0 {
		t.Fatal("agent B's journal is inline; expected pages of its own")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := int(root)*os.Getpagesize() + 8 // the page header's flags
	binary.NativeEndian.PutUint16(data[at:], 0x10)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = bolt.OpenFleet(path)
	var ce *journal.CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `bucket inputs of agent "B"`) || !strings.Contains(err.Error(), fmt.Sprintf("page %d", root)) {
		t.Fatalf("OpenFleet = %v, want a *CorruptError naming page %d of agent B's inputs", err, root)
	}
	if after, _ := os.ReadFile(path); string(after) != string(data) {
		t.Error("the failed OpenFleet changed the file")
	}
}

// TestFleetLogMovedEveryCommit runs the fleet conformance suite with a
// log that is moved to the agents after every commit.
func TestFleetLogMovedEveryCommit(t *testing.T) {
	dir := t.TempDir()
	storetest.RunFleet(t, func(t testing.TB, name string) journal.Fleet {
		f, err := bolt.OpenFleetWith(filepath.Join(dir, name+".db"), bolt.FleetOptions{LogBytes: 1})
		if err != nil {
			t.Fatal(err)
		}
		return f
	})
}

// crashCopy copies the file of the open fleet at path, as a crash would
// leave it now: every Append that returned is in it, some still in the log.
func crashCopy(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(t.TempDir(), "crashed.db")
	if err := os.WriteFile(crashed, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return crashed
}

// logged writes a fleet whose agents a and b hold inputs 1..10 in its log
// (appended one by one, and nothing moved), crashes it, and returns the
// crashed file.
func logged(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fleet.db")
	f := openFleet(t, path)
	defer closeFleet(t, f)
	a, b := fleetAgent(t, f, "a"), fleetAgent(t, f, "b")
	defer a.Close()
	defer b.Close()
	for seq := uint64(1); seq <= 10; seq++ {
		for _, s := range []journal.Store{a, b} {
			if err := s.Append(fleetRecords(seq, seq, 10)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if st := f.Stats(); st.Moves != 0 {
		t.Fatalf("the log was moved %d times, want none before the crash", st.Moves)
	}
	return crashCopy(t, path)
}

// TestFleetLogAfterACrash: what a crash left in the log is in its
// agents' journals when the fleet opens again.
func TestFleetLogAfterACrash(t *testing.T) {
	f := openFleet(t, logged(t))
	defer closeFleet(t, f)
	for _, id := range []string{"a", "b"} {
		s, err := f.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		if got := fleetSeqs(t, s); !reflect.DeepEqual(got, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
			t.Errorf("agent %s holds %v after the crash, want 1..10", id, got)
		}
		if err := s.Append(fleetRecords(11, 11, 10)); err != nil {
			t.Errorf("agent %s: Append after the crash: %v", id, err)
		}
		s.Close()
	}
}

// TestFleetDamagedLogEntry: a log entry that does not check out is its
// agent's damage alone: the other agent's entries are moved and it opens;
// the damaged agent is refused, naming the entry, until Delete removes it.
func TestFleetDamagedLogEntry(t *testing.T) {
	path := logged(t)
	damageFleet(t, path, func(tx *bbolt.Tx) error {
		log := tx.Bucket([]byte("log"))
		c := log.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if string(k[8:]) == "a" && binary.BigEndian.Uint64(k) > 6 {
				v = append([]byte(nil), v...)
				v[len(v)-1] ^= 0x20
				return log.Put(append([]byte(nil), k...), v)
			}
		}
		return errors.New("no entry of agent a")
	})
	f := openFleet(t, path)
	defer closeFleet(t, f)
	var ce *journal.CorruptError
	if _, err := f.Open("a"); !errors.As(err, &ce) || !strings.Contains(err.Error(), `agent "a": log entry`) || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("Open(a) = %v, want a *CorruptError naming its log entry", err)
	}
	s, err := f.Open("b")
	if err != nil {
		t.Fatalf("Open(b) beside the damaged agent: %v", err)
	}
	if got := fleetSeqs(t, s); len(got) != 10 {
		t.Errorf("agent b holds %v, want 1..10", got)
	}
	s.Close()
	if err := f.Delete("a"); err != nil {
		t.Fatalf("Delete(a): %v", err)
	}
	s = fleetAgent(t, f, "a")
	if got := fleetSeqs(t, s); len(got) != 0 {
		t.Errorf("a created again holds %v", got)
	}
	s.Close()
}

// fleetDmgAgents are the agents of the damaged fleets, each of which
// acknowledged dmgInputs inputs.
var fleetDmgAgents = []string{"ann", "bob", "cy"}

// fleetDmgBases builds two fleets and returns their files' bytes: as a crash
// right after the last acknowledgement leaves it (the last inputs in the
// log, no snapshot), and closed after three runs (snapshots, the log moved).
func fleetDmgBases(t *testing.T) [][]byte {
	dir := t.TempDir()
	var bases [][]byte
	for i, runs := range []int{1, 3} {
		path := filepath.Join(dir, fmt.Sprintf("base-%d.db", i))
		f := openFleet(t, path)
		for run := range runs {
			var machines []*journal.Machine[dmgState, dmgInput]
			for _, id := range fleetDmgAgents {
				if run == 0 {
					if err := f.Create(id, journal.AgentInfo{Owner: id}); err != nil {
						t.Fatal(err)
					}
				}
				s, err := f.Open(id)
				if err != nil {
					t.Fatal(err)
				}
				m, err := journal.Open(s, dmgModel, dmgOptions())
				if err != nil {
					t.Fatal(err)
				}
				machines = append(machines, m)
			}
			var wg sync.WaitGroup
			for _, m := range machines {
				wg.Go(func() { dmgDispatch(t, m, run*dmgInputs/runs, (run+1)*dmgInputs/runs) })
			}
			wg.Wait()
			if runs == 1 {
				bases = append(bases, crashBytes(t, path))
			}
			for _, m := range machines {
				dmgClose(t, m)
			}
		}
		closeFleet(t, f)
		if runs > 1 {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			bases = append(bases, data)
		}
	}
	return bases
}

func crashBytes(t *testing.T, path string) []byte {
	data, err := os.ReadFile(crashCopy(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// fleetDmgOutcome opens a fleet of the bytes data at path and each of its
// agents as a supervisor would, and says what became of them: the fleet
// refused, or for each agent "ok" (every input), "refused" (a *CorruptError
// from Open, or from the Machine's Open), or a failure: "FAIL <what>".
func fleetDmgOutcome(path string, data []byte) string {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "FAIL setup: " + err.Error()
	}
	var ce *journal.CorruptError
	f, err := bolt.OpenFleet(path)
	if err != nil {
		after, _ := os.ReadFile(path)
		switch {
		case !errors.As(err, &ce):
			return "FAIL not-corrupt-error: OpenFleet: " + err.Error()
		case !bytes.Equal(after, data):
			return "FAIL changed-the-file: OpenFleet failed but wrote"
		}
		return "fleet refused"
	}
	defer f.Close()
	var outcome []string
	for _, id := range fleetDmgAgents {
		s, err := f.Open(id)
		if err != nil {
			if !errors.As(err, &ce) {
				return fmt.Sprintf("FAIL not-corrupt-error: Open(%s): %v", id, err)
			}
			outcome = append(outcome, "refused")
			continue
		}
		opts := dmgOptions()
		opts.Logger = slog.New(slog.DiscardHandler) // snapshots passed over: counted as ok
		m, err := journal.Open(s, dmgModel, opts)
		switch {
		case err != nil && !errors.As(err, &ce):
			s.Close()
			return fmt.Sprintf("FAIL not-corrupt-error: journal.Open(%s): %v", id, err)
		case err != nil:
			s.Close()
			outcome = append(outcome, "refused")
			continue
		}
		ok := m.Seq() == dmgInputs && reflect.DeepEqual(m.Current(), dmgFold(dmgInputs))
		m.Close(context.Background())
		if !ok {
			return fmt.Sprintf("FAIL silently-dropped: agent %s opened at seq %d, but %d inputs were acknowledged", id, m.Seq(), dmgInputs)
		}
		outcome = append(outcome, "ok")
	}
	return strings.Join(outcome, " ")
}

// TestDamagedFleetIsAnErrorOrIntact damages fleets at random, seeded
// (JOURNAL_DAMAGE_SEED=<seed> repeats a run) as TestDamagedStoreIsAnErrorOrIntact
// damages stores, and opens each fleet and each of its agents. The fleet is
// refused with a *CorruptError and its file unchanged, or it opens, and each
// agent then opens with every acknowledged input or is refused with a
// *CorruptError. Never a crash (which ends the test), never a silent loss.
func TestDamagedFleetIsAnErrorOrIntact(t *testing.T) {
	const perBase = 90
	seed := uint64(time.Now().UnixNano())
	if s, ok := os.LookupEnv("JOURNAL_DAMAGE_SEED"); ok {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("JOURNAL_DAMAGE_SEED=%q: %v", s, err)
		}
		seed = n
	}
	bases := fleetDmgBases(t)
	path := filepath.Join(t.TempDir(), "case.db")
	for i, base := range bases {
		if got := fleetDmgOutcome(path, base); got != "ok ok ok" {
			t.Fatalf("undamaged base %d: %s", i, got)
		}
	}
	counts := map[string]int{}
	var failures []string
	for i, c := range dmgCases(seed, bases, perBase) {
		o := fleetDmgOutcome(path, c.apply(bases[c.base]))
		if strings.HasPrefix(o, "FAIL") {
			failures = append(failures, fmt.Sprintf("case %d (base %d, %v): %s", i, c.base, c, o))
			o = "FAIL"
		} else if o != "fleet refused" && strings.Contains(o, "refused") {
			o = "some agents refused, the rest ok"
		}
		counts[o]++
	}
	t.Logf("seed %d: %d cases: %v", seed, 2*perBase, counts)
	if len(failures) > 0 {
		t.Errorf("seed %d (JOURNAL_DAMAGE_SEED=%d repeats it): %d cases failed:\n%s", seed, seed, len(failures), strings.Join(failures, "\n"))
	}
}
