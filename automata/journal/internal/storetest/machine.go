package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
)

// The suite's model, under the short names its tests use.
type (
	state = State
	input = Input
)

var model = Model

// Fold is the state of the test model after ins.
func Fold(ins []Input) State {
	s := model.Initial()
	for _, in := range ins {
		s = model.Transition(s, in)
	}
	return s
}

// Notes are the inputs of notes from to to-1, numbered as a Machine's
// records are in the suite.
func Notes(from, to int) []Input {
	var ins []input
	for i := from; i < to; i++ {
		ins = append(ins, input{Note: fmt.Sprintf("note-%04d", i)})
	}
	return ins
}

// noteRecords are the journal records of Notes(from-1, to), as a Machine
// writes them.
func noteRecords(from, to uint64) []journal.Record {
	var rs []journal.Record
	for seq := from; seq <= to; seq++ {
		rs = append(rs, record(seq, fmt.Sprintf(`{"note":"note-%04d"}`, seq-1)))
	}
	return rs
}

// LogBuffer collects slog output, for assertions on what was logged.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Logger returns a logger writing text into l.
func (l *LogBuffer) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// countingStore counts Appends and the records they carry.
type countingStore struct {
	journal.Store
	appends, records atomic.Int64
}

func (c *countingStore) Append(rs []journal.Record) error {
	c.appends.Add(1)
	c.records.Add(int64(len(rs)))
	return c.Store.Append(rs)
}

func openMachine(t testing.TB, s journal.Store, opts journal.Options[state, input], options ...automata.Option[state, input]) (*journal.Machine[state, input], error) {
	t.Helper()
	if opts.Codec == nil {
		opts.Codec = journal.JSON[state, input](nil)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return journal.Open(s, model, opts, options...)
}

func mustOpen(t testing.TB, open Opener, name string, opts journal.Options[state, input], options ...automata.Option[state, input]) *journal.Machine[state, input] {
	t.Helper()
	s := open(t, name)
	m, err := openMachine(t, s, opts, options...)
	if err != nil {
		s.Close()
		t.Fatalf("Open: %v", err)
	}
	return m
}

// MustClose closes m, failing t if Close fails or takes 30 s.
func MustClose(t testing.TB, m *journal.Machine[State, Input]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// DispatchAll dispatches ins to m, failing t on the first error.
func DispatchAll(t testing.TB, m *journal.Machine[State, Input], ins []Input) {
	t.Helper()
	for _, in := range ins {
		if err := m.Dispatch(context.Background(), in); err != nil {
			t.Fatalf("Dispatch(%+v): %v", in, err)
		}
	}
}

func mustInputs(t testing.TB, m *journal.Machine[state, input]) []input {
	t.Helper()
	entries, err := m.Inputs(0, m.Seq())
	if err != nil {
		t.Fatal(err)
	}
	var ins []input
	for _, e := range entries {
		ins = append(ins, e.Input)
	}
	return ins
}

// dump is everything a store holds, for "a failed Open writes nothing".
func dump(t testing.TB, s journal.Store) string {
	t.Helper()
	var b strings.Builder
	for _, r := range scan(t, s, 0) {
		fmt.Fprintf(&b, "j %d %x\n", r.Seq, r.Data)
	}
	for _, r := range snapshots(t, s) {
		fmt.Fprintf(&b, "s %d %x\n", r.Seq, r.Data)
	}
	return b.String()
}

func testMachineReopen(t *testing.T, open Opener) {
	name := newName(t)
	opts := journal.Options[state, input]{SnapshotEvery: 7}
	m := mustOpen(t, open, name, opts)
	ins := Notes(0, 30)
	DispatchAll(t, m, ins)
	MustClose(t, m)

	m = mustOpen(t, open, name, opts)
	defer MustClose(t, m)
	if got := m.Current(); !reflect.DeepEqual(got, Fold(ins)) {
		t.Fatalf("reopened state = %v, want the fold of the inputs", got.Notes)
	}
	if m.Seq() != 30 {
		t.Errorf("Seq() = %d, want 30", m.Seq())
	}
	if got := mustInputs(t, m); !reflect.DeepEqual(got, ins) {
		t.Fatalf("journaled inputs = %v, want the inputs dispatched", got)
	}
	entries, err := m.Inputs(1, 30)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		if e.Seq != uint64(i+1) || e.Time.IsZero() {
			t.Fatalf("entry %d = %+v, want seq %d with the time it was journaled", i, e, i+1)
		}
	}
	for _, seq := range []uint64{0, 1, 6, 7, 8, 21, 29, 30} {
		got, err := m.StateAt(seq)
		if err != nil {
			t.Fatalf("StateAt(%d): %v", seq, err)
		}
		if want := Fold(ins[:seq]); !reflect.DeepEqual(got, want) {
			t.Errorf("StateAt(%d) = %v, want %v", seq, got.Notes, want.Notes)
		}
	}
	DispatchAll(t, m, Notes(30, 31))
	if m.Seq() != 31 {
		t.Errorf("Seq() after one more input = %d, want 31", m.Seq())
	}
}

func testMachineGroups(t *testing.T, open Opener) {
	const producers, each = 32, 10
	counting := &countingStore{Store: open(t, newName(t))}
	m, err := openMachine(t, counting, journal.Options[state, input]{})
	if err != nil {
		counting.Close()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				if err := m.Dispatch(context.Background(), input{Note: fmt.Sprintf("%d/%d", p, i)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	appends, recs := counting.appends.Load(), counting.records.Load()
	if got := len(mustInputs(t, m)); got != producers*each {
		t.Errorf("journal holds %d inputs, want %d", got, producers*each)
	}
	MustClose(t, m)
	if recs != producers*each {
		t.Fatalf("%d records appended, want %d", recs, producers*each)
	}
	if appends >= recs/2 {
		t.Fatalf("%d appends for %d inputs: concurrent dispatches were not grouped", appends, recs)
	}
}

// crashed fills the store called name with the records of Notes(0, n) and
// no snapshot, as a process that died after acknowledging them leaves it,
// with change applied to the record at seq.
func crashed(t testing.TB, open Opener, name string, n, seq uint64, change func([]byte) []byte) {
	t.Helper()
	s := open(t, name)
	rs := noteRecords(1, n)
	rs[seq-1].Data = change(bytes.Clone(rs[seq-1].Data))
	mustAppend(t, s, rs)
	mustCloseStore(t, s)
}

func testDamagedLastRecord(t *testing.T, open Opener) {
	name := newName(t)
	crashed(t, open, name, 12, 12, func(v []byte) []byte { return v[:len(v)-3] })

	s := open(t, name)
	before := dump(t, s)
	_, err := openMachine(t, s, journal.Options[state, input]{SnapshotEvery: -1})
	var ce *journal.CorruptError
	if !errors.As(err, &ce) || ce.Seq != 12 || ce.Kind != journal.KindInput || !strings.Contains(err.Error(), "QuarantineCorruptTail") {
		t.Fatalf("Open with a damaged last record = %v, want a *CorruptError for input 12 that names the repair option", err)
	}
	if dump(t, s) != before {
		t.Fatal("the failed Open changed the store")
	}
	mustCloseStore(t, s)

	var logs LogBuffer
	s = open(t, name)
	m, err := openMachine(t, s, journal.Options[state, input]{SnapshotEvery: -1, QuarantineCorruptTail: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		s.Close()
		t.Fatalf("Open with QuarantineCorruptTail: %v", err)
	}
	if got, want := m.Current(), Fold(Notes(0, 11)); !reflect.DeepEqual(got, want) {
		t.Errorf("state = %v, want the first 11 inputs", got.Notes)
	}
	if !strings.Contains(logs.String(), "quarantine") || !strings.Contains(logs.String(), "seq=12") {
		t.Errorf("no warning naming seq 12:\n%s", logs.String())
	}
	DispatchAll(t, m, Notes(100, 101))
	if m.Seq() != 12 {
		t.Errorf("next input got seq %d, want 12", m.Seq())
	}
	MustClose(t, m)
	m = mustOpen(t, open, name, journal.Options[state, input]{SnapshotEvery: -1})
	defer MustClose(t, m)
	if got, want := mustInputs(t, m), append(Notes(0, 11), Notes(100, 101)...); !reflect.DeepEqual(got, want) {
		t.Fatalf("journal after the repair = %v, want %v", got, want)
	}
}

func testDamagedMiddle(t *testing.T, open Opener) {
	name := newName(t)
	crashed(t, open, name, 20, 8, func(v []byte) []byte { v[len(v)-4] ^= 0x10; return v })
	s := open(t, name)
	defer mustCloseStore(t, s)
	before := dump(t, s)
	for _, repair := range []bool{false, true} { // the repair is for the last record only
		_, err := openMachine(t, s, journal.Options[state, input]{QuarantineCorruptTail: repair})
		var ce *journal.CorruptError
		if !errors.As(err, &ce) || ce.Seq != 8 || ce.Kind != journal.KindInput {
			t.Fatalf("Open (repair %v) = %v, want a CorruptError for input record 8", repair, err)
		}
		if !strings.Contains(err.Error(), "record 8") || !strings.Contains(err.Error(), "checksum") {
			t.Errorf("error does not say where and what: %v", err)
		}
		if dump(t, s) != before {
			t.Fatal("a failed Open changed the store")
		}
	}
}

// testWrongSeq: an intact frame stored under another sequence number (a
// record moved or duplicated) is damage too.
func testWrongSeq(t *testing.T, open Opener) {
	name := newName(t)
	crashed(t, open, name, 6, 4, func([]byte) []byte { return noteRecords(3, 3)[0].Data })
	s := open(t, name)
	defer mustCloseStore(t, s)
	_, err := openMachine(t, s, journal.Options[state, input]{})
	var ce *journal.CorruptError
	if !errors.As(err, &ce) || ce.Seq != 4 || !strings.Contains(err.Error(), "stored under 4") {
		t.Fatalf("Open = %v, want a CorruptError for record 4 saying what it holds", err)
	}
}

func testDamagedSnapshotFallsBack(t *testing.T, open Opener) {
	name := newName(t)
	opts := journal.Options[state, input]{SnapshotEvery: 5, KeepSnapshots: 3}
	m := mustOpen(t, open, name, opts)
	ins := Notes(0, 12)
	DispatchAll(t, m, ins)
	MustClose(t, m) // snapshots at 5, 10 and 12

	s := open(t, name)
	damageNewestSnapshot(t, s, 12)
	var logs LogBuffer
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	m, err := openMachine(t, s, opts)
	if err != nil {
		s.Close()
		t.Fatalf("Open: %v", err)
	}
	defer MustClose(t, m)
	if got := m.Current(); !reflect.DeepEqual(got, Fold(ins)) {
		t.Errorf("state rebuilt from the older snapshot differs: %v", got.Notes)
	}
	if !strings.Contains(logs.String(), "damaged snapshot") || !strings.Contains(logs.String(), "seq=12") {
		t.Errorf("no warning naming the snapshot at 12:\n%s", logs.String())
	}
}

func testDamagedSnapshotWithoutJournal(t *testing.T, open Opener) {
	name := newName(t)
	opts := journal.Options[state, input]{SnapshotEvery: -1, KeepSnapshots: 1, Compact: true}
	m := mustOpen(t, open, name, opts)
	DispatchAll(t, m, Notes(0, 12))
	MustClose(t, m) // one snapshot at 12, the journal before it compacted away

	s := open(t, name)
	defer mustCloseStore(t, s)
	damageNewestSnapshot(t, s, 12)
	_, err := openMachine(t, s, opts)
	var ce *journal.CorruptError
	if !errors.As(err, &ce) || ce.Kind != journal.KindSnapshot || ce.Seq != 12 {
		t.Fatalf("Open = %v, want a CorruptError for snapshot 12", err)
	}
}

// testReplayProperty: whatever the inputs and however often snapshots are
// taken, the state Open rebuilds after a crash (no snapshot at Close) equals
// a full replay of the journal and the live state.
func testReplayProperty(t *testing.T, open Opener) {
	seeds := 12
	if testing.Short() {
		seeds = 4
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		name := newName(t)
		opts := journal.Options[state, input]{SnapshotEvery: 1 + rng.IntN(20), KeepSnapshots: 1 + rng.IntN(3), SkipCloseSnapshot: true}
		m := mustOpen(t, open, name, opts)
		var ins []input
		for range rng.IntN(80) {
			var in input
			switch rng.IntN(3) {
			case 0:
				in.Note = fmt.Sprintf("n%d", rng.IntN(1000))
			case 1:
				in.Request = 1 + rng.IntN(30)
			default:
				in.Answer = 1 + rng.IntN(30)
			}
			ins = append(ins, in)
		}
		DispatchAll(t, m, ins)
		live := m.Current()
		MustClose(t, m)
		m = mustOpen(t, open, name, opts)
		full := Fold(mustInputs(t, m))
		recovered := m.Current()
		MustClose(t, m)
		if !reflect.DeepEqual(recovered, full) || !reflect.DeepEqual(live, full) || !reflect.DeepEqual(full, Fold(ins)) {
			t.Fatalf("seed %d (snapshot every %d): recovered, full replay and live state differ", seed, opts.SnapshotEvery)
		}
	}
}

func testJobsRestart(t *testing.T, open Opener) {
	name := newName(t)
	started := make(chan string, 10)
	jobs := automata.WithJobs(func(s state) map[string]automata.Job[input] {
		jobs := map[string]automata.Job[input]{}
		for _, r := range s.Pending {
			jobs[fmt.Sprintf("req-%d", r)] = func(ctx context.Context, _ automata.Dispatch[input]) error {
				started <- automata.JobKey(ctx)
				<-ctx.Done()
				return ctx.Err()
			}
		}
		return jobs
	})
	m := mustOpen(t, open, name, journal.Options[state, input]{}, jobs)
	DispatchAll(t, m, []input{{Request: 7}})
	if k := <-started; k != "req-7" {
		t.Fatalf("started %q, want req-7", k)
	}
	MustClose(t, m) // cancels the job, which never answered

	m = mustOpen(t, open, name, journal.Options[state, input]{}, jobs)
	defer MustClose(t, m)
	select {
	case k := <-started:
		if k != "req-7" {
			t.Fatalf("restarted %q, want req-7", k)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the job the restored state calls for did not start")
	}
}

// damageNewestSnapshot flips a bit in the payload of the newest snapshot,
// which must be at seq, by putting every snapshot back, that one damaged.
func damageNewestSnapshot(t testing.TB, s journal.Store, seq uint64) {
	t.Helper()
	all := snapshots(t, s)
	if len(all) == 0 || all[0].Seq != seq {
		t.Fatalf("snapshots at %v, want the newest at %d", seqs(all), seq)
	}
	all[0].Data[len(all[0].Data)-5] ^= 0x10
	if err := s.Prune(seq+1, 0, 0); err != nil {
		t.Fatal(err)
	}
	if got := snapshots(t, s); len(got) != 0 {
		t.Fatalf("Prune(%d, 0) left snapshots %v", seq+1, seqs(got))
	}
	for _, r := range slices.Backward(all) {
		if err := s.PutSnapshot(r); err != nil {
			t.Fatal(err)
		}
	}
}
