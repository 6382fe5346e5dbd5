package bolt_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
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

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	bbolt "go.etcd.io/bbolt"
)

// The model of the damage tests: the state is every note, in order, so that
// a lost or reordered input shows.
type dmgState struct {
	Notes []string `json:"notes"`
}

type dmgInput struct {
	Note string `json:"note"`
}

var dmgModel = automata.Definition[dmgState, dmgInput]{
	Initial: func() dmgState { return dmgState{} },
	Transition: func(s dmgState, in dmgInput) dmgState {
		s.Notes = automata.Append(s.Notes, in.Note)
		return s
	},
}

func dmgOptions() journal.Options[dmgState, dmgInput] {
	return journal.Options[dmgState, dmgInput]{Codec: journal.JSON[dmgState, dmgInput](nil)}
}

// dmgNote is input i: long enough that the journal spans several leaf pages
// under a branch, and the state's snapshot several overflow pages.
func dmgNote(i int) dmgInput {
	return dmgInput{Note: fmt.Sprintf("note %04d: %s", i, strings.Repeat("abcdefghij", 5))}
}

func dmgFold(n int) dmgState {
	s := dmgModel.Initial()
	for i := range n {
		s = dmgModel.Transition(s, dmgNote(i))
	}
	return s
}

// dmgInputs is how many inputs each store acknowledged.
const dmgInputs = 300

// dmgOpen opens the machine at path as an agent would.
func dmgOpen(path string) (*journal.Machine[dmgState, dmgInput], error) {
	store, err := bolt.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := journal.Open(store, dmgModel, dmgOptions())
	if err != nil {
		store.Close()
		return nil, err
	}
	return m, nil
}

func dmgDispatch(t testing.TB, m *journal.Machine[dmgState, dmgInput], from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := m.Dispatch(context.Background(), dmgNote(i)); err != nil {
			t.Fatalf("Dispatch(%d): %v", i, err)
		}
	}
}

func dmgClose(t testing.TB, m *journal.Machine[dmgState, dmgInput]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// dmgBases builds the undamaged stores, each holding dmgInputs acknowledged
// inputs, and returns their files' bytes:
//
//	journal    the bytes as a crash right after the last acknowledgement
//	           leaves them: no snapshot, recovery replays the whole journal
//	snapshots  three runs of 100 inputs, each closed (a snapshot each; the
//	           oldest pruned), so recovery starts from a snapshot
func dmgBases(t testing.TB, dir string) [][]byte {
	t.Helper()
	path := filepath.Join(dir, "journal.db")
	m, err := dmgOpen(path)
	if err != nil {
		t.Fatal(err)
	}
	dmgDispatch(t, m, 0, dmgInputs)
	journalOnly, err := os.ReadFile(path) // every input is on disk: this is what a crash leaves
	if err != nil {
		t.Fatal(err)
	}
	dmgClose(t, m)

	path = filepath.Join(dir, "snapshots.db")
	for run := range 3 {
		m, err := dmgOpen(path)
		if err != nil {
			t.Fatal(err)
		}
		dmgDispatch(t, m, run*dmgInputs/3, (run+1)*dmgInputs/3)
		dmgClose(t, m)
	}
	withSnapshots, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{journalOnly, withSnapshots}
}

var dmgBaseNames = []string{"journal", "snapshots"}

// dmgCase is one damage to one base store.
type dmgCase struct {
	base     int
	truncate bool  // cut the file to at bytes; otherwise XOR the byte at at with xor
	at       int64 // length, or offset
	xor      byte
	region   string
}

func (c dmgCase) String() string {
	if c.truncate {
		return fmt.Sprintf("%s: truncated to %d bytes", dmgBaseNames[c.base], c.at)
	}
	return fmt.Sprintf("%s: byte %d (page %d, byte %d: %s) ^= %#02x", dmgBaseNames[c.base], c.at, c.at/int64(os.Getpagesize()), c.at%int64(os.Getpagesize()), c.region, c.xor)
}

func (c dmgCase) apply(base []byte) []byte {
	if c.truncate {
		return slices.Clone(base[:c.at])
	}
	data := slices.Clone(base)
	data[c.at] ^= c.xor
	return data
}

// dmgCases draws perBase damages for each base from seed: truncations to a
// length in [1, size) — a 0-byte file is a new, empty store by design, not a
// damaged one — and byte flips at random offsets, weighted towards the bytes
// bbolt reads: a fifth in the meta of page 0 or 1, two fifths in the headers
// and element arrays at the start of the other pages, the rest anywhere.
func dmgCases(seed uint64, bases [][]byte, perBase int) []dmgCase {
	rng := rand.New(rand.NewPCG(seed, 0x6a6f75726e616c))
	pageSize := int64(os.Getpagesize())
	var cases []dmgCase
	for b, base := range bases {
		size := int64(len(base))
		for i := range perBase {
			c := dmgCase{base: b, xor: byte(1 + rng.IntN(255))}
			switch {
			case i < perBase/3:
				c.truncate, c.at = true, 1+rng.Int64N(size-1)
			case rng.IntN(5) == 0:
				c.at, c.region = rng.Int64N(2)*pageSize+16+rng.Int64N(64), "meta"
			case rng.IntN(3) < 2:
				c.at, c.region = (2+rng.Int64N(size/pageSize-2))*pageSize+rng.Int64N(256), "page start"
			default:
				c.at, c.region = rng.Int64N(size), "anywhere"
			}
			cases = append(cases, c)
		}
	}
	return cases
}

// dmgOutcome runs one case on a fresh copy of the file at path, and says
// what became of it: "refused by Open", "refused by Open", "opened with
// every input", or a failure: "FAIL <kind>: <what>".
func dmgOutcome(path string, data []byte) string {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "FAIL setup: " + err.Error()
	}
	before := sha256.Sum256(data)
	unchanged := func() bool {
		after, err := os.ReadFile(path)
		return err == nil && sha256.Sum256(after) == before
	}
	refused := func(by string, err error) string {
		var ce *journal.CorruptError
		switch {
		case !errors.As(err, &ce):
			return fmt.Sprintf("FAIL not-corrupt-error: %s: %v", by, err)
		case !unchanged():
			return fmt.Sprintf("FAIL changed-the-file: %s failed (%v) but changed the file", by, err)
		}
		return "refused by " + by
	}
	store, err := bolt.Open(path)
	if err != nil {
		return refused("Open", err)
	}
	m, err := journal.Open(store, dmgModel, dmgOptions())
	if err != nil {
		store.Close()
		return refused("Open", err)
	}
	defer m.Close(context.Background())
	if m.Seq() != dmgInputs {
		return fmt.Sprintf("FAIL silently-dropped: opened at seq %d, but %d inputs were acknowledged", m.Seq(), dmgInputs)
	}
	if !reflect.DeepEqual(m.Current(), dmgFold(dmgInputs)) {
		return "FAIL wrong-state: opened at every seq, but the state is not the fold of the inputs"
	}
	return "opened with every input"
}

const dmgChildEnv = "JOURNAL_DAMAGE_CHILD"

// TestDamageChild is the process in which TestDamagedStoreIsAnErrorOrIntact
// runs its cases, so that a crash (a bbolt panic on one of its own
// goroutines, a fault on the memory map) is one counted case, not the end of
// the test. It reports on stdout "start <i>" before case i and
// "done <i> <outcome>" after it.
func TestDamageChild(t *testing.T) {
	dir := os.Getenv(dmgChildEnv)
	if dir == "" {
		t.Skip("the child process of TestDamagedStoreIsAnErrorOrIntact")
	}
	seed, _ := strconv.ParseUint(os.Getenv(dmgChildEnv+"_SEED"), 10, 64)
	from, _ := strconv.Atoi(os.Getenv(dmgChildEnv + "_FROM"))
	perBase, _ := strconv.Atoi(os.Getenv(dmgChildEnv + "_PER_BASE"))
	var bases [][]byte
	for _, name := range dmgBaseNames {
		data, err := os.ReadFile(filepath.Join(dir, name+".base"))
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, data)
	}
	cases := dmgCases(seed, bases, perBase)
	path := filepath.Join(dir, "case.db")
	for i := from; i < len(cases); i++ {
		fmt.Printf("start %d\n", i)
		os.Remove(path)
		outcome := dmgOutcome(path, cases[i].apply(bases[cases[i].base]))
		fmt.Printf("done %d %s\n", i, strings.ReplaceAll(outcome, "\n", " "))
	}
}

// TestDamagedStoreIsAnErrorOrIntact damages real stores at random, seeded
// (JOURNAL_DAMAGE_SEED=<seed> repeats a run), and opens each as an agent
// would. Every case must end one of two ways: Open or Open returns a
// *CorruptError and the file's bytes are unchanged; or Open succeeds with
// every acknowledged input (Seq and the state are those of all of them).
// Never a crash, never a silent loss.
func TestDamagedStoreIsAnErrorOrIntact(t *testing.T) {
	const perBase = 120
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("JOURNAL_DAMAGE_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	bases := dmgBases(t, dir)
	for i, name := range dmgBaseNames {
		if err := os.WriteFile(filepath.Join(dir, name+".base"), bases[i], 0o600); err != nil {
			t.Fatal(err)
		}
		// The base itself opens with every input.
		if got := dmgOutcome(filepath.Join(dir, "check.db"), bases[i]); got != "opened with every input" {
			t.Fatalf("the undamaged %s store: %s", name, got)
		}
	}
	cases := dmgCases(seed, bases, perBase)

	outcomes := make([]string, len(cases))
	for from := 0; from < len(cases); {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDamageChild$", "-test.count=1")
		cmd.Env = append(os.Environ(),
			dmgChildEnv+"="+dir,
			fmt.Sprintf("%s_SEED=%d", dmgChildEnv, seed),
			fmt.Sprintf("%s_FROM=%d", dmgChildEnv, from),
			fmt.Sprintf("%s_PER_BASE=%d", dmgChildEnv, perBase))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		started := -1
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if n, ok := strings.CutPrefix(line, "start "); ok {
				started, _ = strconv.Atoi(n)
			} else if rest, ok := strings.CutPrefix(line, "done "); ok {
				n, outcome, _ := strings.Cut(rest, " ")
				i, _ := strconv.Atoi(n)
				outcomes[i] = outcome
				from = i + 1
			}
		}
		err = cmd.Wait()
		if from >= len(cases) {
			break
		}
		if started < from {
			t.Fatalf("the child process stopped before case %d: %v\n%s", from, err, stderr.String())
		}
		// The child died in case started: a crash.
		msg := stderr.String()
		if i := strings.Index(msg, "\ngoroutine "); i > 0 {
			msg = msg[:i] // the panic, without the stacks
		}
		outcomes[started] = "FAIL crashed: " + strings.TrimSpace(msg)
		from = started + 1
	}

	counts := map[string]int{}
	var failures []string
	for i, o := range outcomes {
		if strings.HasPrefix(o, "FAIL") {
			kind, _, _ := strings.Cut(o, ":")
			counts[kind]++
			failures = append(failures, fmt.Sprintf("case %d (%v): %s", i, cases[i], o))
			continue
		}
		counts[o]++
	}
	t.Logf("seed %d: %d cases: %v", seed, len(cases), counts)
	if n := len(failures); n > 0 {
		if n > 20 {
			failures = append(failures[:20], fmt.Sprintf("… and %d more", n-20))
		}
		t.Errorf("seed %d (JOURNAL_DAMAGE_SEED=%d repeats it): %d of %d cases failed: %v\n%s",
			seed, seed, n, len(cases), counts, strings.Join(failures, "\n"))
	}
}

// dmgMeta locates the bbolt meta pages of a store file written on this
// machine (page size: the OS's): the offset of each meta and its txid.
func dmgMeta(data []byte) (at [2]int, txid [2]uint64) {
	pageSize := os.Getpagesize()
	for p := range 2 {
		at[p] = p*pageSize + 16 // after the page header
		txid[p] = binary.NativeEndian.Uint64(data[at[p]+48:])
	}
	return at, txid
}

// dmgResum rewrites the meta at at's checksum, as bbolt would have written
// it: the damage is then a meta that checks out.
func dmgResum(data []byte, at int) {
	h := fnv.New64a()
	h.Write(data[at : at+56])
	binary.NativeEndian.PutUint64(data[at+56:], h.Sum64())
}

// dmgStore writes n acknowledged inputs to a new store at path, and returns
// the file's bytes as they are once the last Dispatch has returned (each
// Dispatch here is one commit, one bbolt transaction).
func dmgStore(t *testing.T, path string, n int) []byte {
	t.Helper()
	m, err := dmgOpen(path)
	if err != nil {
		t.Fatal(err)
	}
	dmgDispatch(t, m, 0, n)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dmgClose(t, m)
	return data
}

// dmgRefused opens data at path and requires Open to refuse it with a
// *CorruptError whose text holds each of want, leaving the file's bytes as
// they were.
func dmgRefused(t *testing.T, path string, data []byte, want ...string) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := bolt.Open(path)
	if err == nil {
		store.Close()
		t.Fatalf("Open succeeded, want a *CorruptError saying %q", want)
	}
	var ce *journal.CorruptError
	if !errors.As(err, &ce) || ce.Kind != 0 || ce.Seq != 0 {
		t.Fatalf("Open = %#v (%v), want a *CorruptError about the store itself", err, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error does not say %q: %v", w, err)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Errorf("the failed Open changed the file")
	}
}

// dmgSeq opens data (nil: the file as it is) at path with opts, and returns
// the machine's Seq.
func dmgSeq(t *testing.T, path string, data []byte, opts bolt.Options) uint64 {
	t.Helper()
	if data != nil {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	store, err := bolt.OpenWith(path, opts)
	if err != nil {
		t.Fatalf("OpenWith(%+v): %v", opts, err)
	}
	m, err := journal.Open(store, dmgModel, dmgOptions())
	if err != nil {
		store.Close()
		t.Fatalf("Open: %v", err)
	}
	defer dmgClose(t, m)
	if want := dmgFold(int(m.Seq())); !reflect.DeepEqual(m.Current(), want) {
		t.Errorf("the state is not the fold of the first %d inputs", m.Seq())
	}
	return m.Seq()
}

// TestStoreRefusesARollbackUnlessAccepted: bbolt keeps two meta pages and
// opens the newer valid one. Damage to the newer one would make it open the
// store one transaction behind, the last acknowledged input gone, with no
// word; Open refuses, and Options.AcceptRollback is the operator's
// way through. Damage to the older one is harmless: bbolt rewrites it at the
// next commit.
func TestStoreRefusesARollbackUnlessAccepted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.db")
	base := dmgStore(t, filepath.Join(dir, "base.db"), 10)
	at, txid := dmgMeta(base)
	newer, older := 0, 1
	if txid[1] > txid[0] {
		newer, older = 1, 0
	}
	if txid[newer] != txid[older]+1 {
		t.Fatalf("meta txids %v, expected two consecutive ones", txid)
	}

	t.Run("newer damaged", func(t *testing.T) {
		data := slices.Clone(base)
		data[at[newer]+20] ^= 0x40 // in the root bucket's page id
		dmgRefused(t, path, data, path, fmt.Sprintf("meta page %d", newer), "roll the store back", "AcceptRollback")
		if seq := dmgSeq(t, path, data, bolt.Options{AcceptRollback: true}); seq != 9 {
			t.Errorf("with AcceptRollback, Open is at seq %d, want 9: one transaction behind", seq)
		}
		// The commits since have rewritten the damaged page: the store
		// opens as it is now, without the option.
		if seq := dmgSeq(t, path, nil, bolt.Options{}); seq != 9 {
			t.Errorf("reopened at seq %d, want 9", seq)
		}
	})
	t.Run("newer's txid damaged to read one less than the older's", func(t *testing.T) {
		data := slices.Clone(base)
		binary.NativeEndian.PutUint64(data[at[newer]+48:], txid[older]-1)
		dmgRefused(t, path, data, "roll the store back")
	})
	t.Run("older copied over the newer", func(t *testing.T) {
		// Both meta pages check out, but the newer transaction is gone:
		// bbolt writes transaction t's meta to page t%2, so the copy is
		// told by its place.
		data := slices.Clone(base)
		copy(data[at[newer]:at[newer]+64], data[at[older]:])
		dmgRefused(t, path, data, "misdirected write", "roll the store back")
	})
	t.Run("older damaged", func(t *testing.T) {
		data := slices.Clone(base)
		data[at[older]+20] ^= 0x40
		if seq := dmgSeq(t, path, data, bolt.Options{}); seq != 10 {
			t.Errorf("Open is at seq %d, want 10", seq)
		}
	})
	t.Run("older's txid damaged", func(t *testing.T) {
		// It no longer reads as the older copy: refused, to be safe.
		data := slices.Clone(base)
		data[at[older]+48] ^= 0x10
		dmgRefused(t, path, data, "roll the store back")
	})
}

// TestStoreRollbackBoundary documents what the check cannot tell apart.
//
// A crash in the middle of writing the newer meta page (a torn sector) means
// its commit was not acknowledged, and bbolt's rollback is right. If the torn
// page kept the older bytes where the txid is, it reads as the older copy
// and the store opens one transaction behind, as it should. If it holds the
// new txid (here: all but the checksum was written), it is the same file as
// a meta page damaged after its commit was acknowledged, and Open
// refuses both; AcceptRollback opens it.
//
// A disk that acknowledges a write and then loses it, leaving the older,
// valid meta page in place, rolls the store back undetected: both meta pages
// check out, and nothing in the file records the lost transaction.
func TestStoreRollbackBoundary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.db")
	// before: 9 inputs acknowledged; after: the 10th committed, but the
	// crash comes while its meta page is being written.
	src := filepath.Join(dir, "src.db")
	m, err := dmgOpen(src)
	if err != nil {
		t.Fatal(err)
	}
	dmgDispatch(t, m, 0, 9)
	before, _ := os.ReadFile(src)
	dmgDispatch(t, m, 9, 10)
	after, _ := os.ReadFile(src)
	dmgClose(t, m)
	at, txid := dmgMeta(after)
	newer := 0
	if txid[1] > txid[0] {
		newer = 1
	}

	t.Run("torn, old txid", func(t *testing.T) {
		torn := slices.Clone(after)
		copy(torn[at[newer]+40:at[newer]+64], before[at[newer]+40:]) // pgid, txid, checksum: old
		if seq := dmgSeq(t, path, torn, bolt.Options{}); seq != 9 {
			t.Errorf("Open is at seq %d, want 9: the 10th was never acknowledged", seq)
		}
	})
	t.Run("torn, new txid", func(t *testing.T) {
		torn := slices.Clone(after)
		clear(torn[at[newer]+56 : at[newer]+64]) // the checksum never made it
		dmgRefused(t, path, torn, "roll the store back")
		if seq := dmgSeq(t, path, torn, bolt.Options{AcceptRollback: true}); seq != 9 {
			t.Errorf("with AcceptRollback, Open is at seq %d, want 9", seq)
		}
	})
	t.Run("lost write: undetected", func(t *testing.T) {
		lost := slices.Clone(after)
		copy(lost[at[newer]-16:at[newer]+64], before[at[newer]-16:]) // the whole page as it was
		if seq := dmgSeq(t, path, lost, bolt.Options{}); seq != 9 {
			t.Errorf("Open is at seq %d; this boundary is documented as opening at 9", seq)
		}
	})
}

// TestStoreRefusesATruncatedFile: a file shorter than the pages its meta
// counts would fault when bbolt maps it; Open reports it first.
func TestStoreRefusesATruncatedFile(t *testing.T) {
	dir := t.TempDir()
	base := dmgStore(t, filepath.Join(dir, "base.db"), 50)
	at, txid := dmgMeta(base)
	newer := 0
	if txid[1] > txid[0] {
		newer = 1
	}
	pgid := binary.NativeEndian.Uint64(base[at[newer]+40:])
	end := int(pgid) * os.Getpagesize()
	path := filepath.Join(dir, "agent.db")
	dmgRefused(t, path, base[:end-1], "truncated", fmt.Sprintf("the file is %d bytes", end-1))
	dmgRefused(t, path, base[:os.Getpagesize()+20], "truncated")
	if seq := dmgSeq(t, path, base[:end], bolt.Options{}); seq != 50 {
		t.Errorf("cut right after its last page, the store opens at %d, want 50", seq)
	}
}

// TestStoreInitialisesOnlyANewFile: Open creates the buckets of a new
// store; an existing file without them is damage, and is not written.
func TestStoreInitialisesOnlyANewFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		make func(path string) // nil: no file
	}{
		{"absent", nil},
		{"empty", func(path string) { os.WriteFile(path, nil, 0o600) }},
		{"initialised by bbolt, never committed to", func(path string) {
			db, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".db")
			if c.make != nil {
				c.make(path)
			}
			if seq := dmgSeq(t, path, nil, bolt.Options{}); seq != 0 {
				t.Fatalf("a new store at seq %d", seq)
			}
			m, err := dmgOpen(path)
			if err != nil {
				t.Fatalf("reopening the new store: %v", err)
			}
			dmgDispatch(t, m, 0, 3)
			dmgClose(t, m)
		})
	}

	t.Run("another program's bbolt file", func(t *testing.T) {
		path := filepath.Join(dir, "other.db")
		db, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *bbolt.Tx) error {
			b, _ := tx.CreateBucket([]byte("settings"))
			return b.Put([]byte("colour"), []byte("blue"))
		})
		db.Close()
		data, _ := os.ReadFile(path)
		dmgRefused(t, path, data, `no bucket "inputs"`)
	})
	t.Run("a store that lost a bucket", func(t *testing.T) {
		path := filepath.Join(dir, "lost.db")
		dmgStore(t, path, 5)
		db, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket([]byte("quarantine")) }); err != nil {
			t.Fatal(err)
		}
		db.Close()
		data, _ := os.ReadFile(path)
		dmgRefused(t, path, data, `no bucket "quarantine"`)
	})
}

// TestStoreRefusesAJournalCutShort: a journal whose last records are gone
// (here deleted behind the store's back, as a lost leaf page or a branch
// pointing at a stale copy would leave it) is told from one that was never
// longer, by the seq the last append recorded.
func TestStoreRefusesAJournalCutShort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.db")
	dmgStore(t, path, 20)
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		c := tx.Bucket([]byte("inputs")).Cursor()
		for range 2 {
			c.Last()
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	dmgRefused(t, path, data, "last record is seq 18", "recorded seq 20")
}

// TestStoreFaultOnTheMapIsAnError: a file truncated under an open store
// faults (SIGBUS) when bbolt reads the lost pages; the store returns a
// *CorruptError instead, then refuses every call but Close.
func TestStoreFaultOnTheMapIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	store, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var records []journal.Record
	for seq := uint64(1); seq <= 200; seq++ {
		records = append(records, journal.Record{Seq: seq, Data: bytes.Repeat([]byte{byte(seq)}, 100)})
	}
	if err := store.Append(records); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(2*os.Getpagesize())); err != nil { // another process
		t.Fatal(err)
	}
	err = store.Scan(0, func(journal.Record) error { return nil })
	var ce *journal.CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Scan of a truncated store = %v, want a *CorruptError naming the file", err)
	}
	if err := store.Append(records[:1]); !errors.As(err, &ce) {
		t.Errorf("Append after the fault = %v, want the *CorruptError", err)
	}
	if _, _, err := store.Size(); !errors.As(err, &ce) {
		t.Errorf("Size after the fault = %v, want the *CorruptError", err)
	}
}

// TestStoreCallbackPanicIsNotTheStores: a panic in the caller's Scan callback
// is the caller's, passed on as it is; the store goes on working.
func TestStoreCallbackPanicIsNotTheStores(t *testing.T) {
	store, err := bolt.Open(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Append([]journal.Record{{Seq: 1, Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	type boom struct{}
	func() {
		defer func() {
			if v := recover(); v != (boom{}) {
				t.Errorf("recovered %v, want the callback's own panic", v)
			}
		}()
		store.Scan(0, func(journal.Record) error { panic(boom{}) })
	}()
	n := 0
	if err := store.Scan(0, func(journal.Record) error { n++; return nil }); err != nil || n != 1 {
		t.Errorf("Scan after the callback's panic = %v, %d records; want nil, 1", err, n)
	}
}
