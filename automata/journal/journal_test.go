package journal_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pdb "github.com/cockroachdb/pebble/v2"
	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
	"github.com/moora-go/moora/automata/journal/pebble"
	bbolt "go.etcd.io/bbolt"
)

// The test model, shared with the conformance suite: a log of notes, and
// requests that jobs answer.
type (
	state = storetest.State
	input = storetest.Input
)

var model = storetest.Model

func jobKey(request int) string { return fmt.Sprintf("req-%d", request) }

// answering returns the jobs of the model: one per pending request, which
// answers it after delay.
func answering(delay time.Duration, started func(key string)) func(state) map[string]automata.Job[input] {
	return func(s state) map[string]automata.Job[input] {
		jobs := make(map[string]automata.Job[input], len(s.Pending))
		for _, r := range s.Pending {
			jobs[jobKey(r)] = func(ctx context.Context, dispatch automata.Dispatch[input]) error {
				if started != nil {
					started(automata.JobKey(ctx))
				}
				select {
				case <-time.After(delay):
				case <-ctx.Done():
					return ctx.Err()
				}
				dispatch(input{Answer: r})
				return nil
			}
		}
		return jobs
	}
}

func codec() journal.Codec[state, input] { return journal.JSON[state, input](nil) }

func openAt(t testing.TB, path string, opts journal.Options[state, input], options ...automata.Option[state, input]) (*journal.Machine[state, input], error) {
	t.Helper()
	store, err := openStore(path)
	if err != nil {
		t.Fatalf("open the store: %v", err)
	}
	if opts.Codec == nil {
		opts.Codec = codec()
	}
	m, err := journal.Open(store, model, opts, options...)
	if err != nil {
		store.Close()
	}
	return m, err
}

func mustOpen(t testing.TB, path string, opts journal.Options[state, input], options ...automata.Option[state, input]) *journal.Machine[state, input] {
	t.Helper()
	m, err := openAt(t, path, opts, options...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return m
}

// The helpers shared with the conformance suite.
var (
	fold        = storetest.Fold
	notes       = storetest.Notes
	dispatchAll = storetest.DispatchAll
	mustClose   = storetest.MustClose
)

type logBuffer = storetest.LogBuffer

// backends are the embedded backends the package's tests and benchmarks
// that say so run on: a path ending in one of their suffixes is a store of
// that backend (openStore).
var backends = []struct{ name, suffix string }{{"bolt", ".db"}, {"pebble", ".pebble"}}

// openStore opens the store at path: a pebble directory if path ends in
// ".pebble", a bbolt file otherwise.
func openStore(path string) (journal.Store, error) {
	if strings.HasSuffix(path, ".pebble") {
		return pebble.Open(path)
	}
	return bolt.Open(path)
}

// quietPebble keeps pebble's own lines out of the test's output.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// countingStore counts the Appends (each one fsync in bbolt).
type countingStore struct {
	journal.Store
	appends, records atomic.Int64
}

func (c *countingStore) Append(rs []journal.Record) error {
	c.appends.Add(1)
	c.records.Add(int64(len(rs)))
	return c.Store.Append(rs)
}

// rewriteRecord changes a stored journal record in place with change, as a
// damaged disk would.
func rewriteRecord(t *testing.T, path string, bucket string, seq uint64, change func([]byte) []byte) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		key := make([]byte, 8)
		for i := range 8 {
			key[7-i] = byte(seq >> (8 * i))
		}
		v := b.Get(key)
		if v == nil {
			return fmt.Errorf("no record %d in %s", seq, bucket)
		}
		return b.Put(key, change(bytes.Clone(v)))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// deleteSnapshots deletes the snapshots with seq >= from, as if the process
// had crashed before taking them.
func deleteSnapshots(t *testing.T, path string, from uint64) {
	t.Helper()
	if strings.HasSuffix(path, ".pebble") {
		// A store's snapshot keys: 's' and the seq (see package pebble).
		db, err := pdb.Open(path, &pdb.Options{Logger: quietPebble{}})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.DeleteRange(append([]byte("s"), binary.BigEndian.AppendUint64(nil, from)...), []byte("t"), pdb.Sync); err != nil {
			t.Fatal(err)
		}
		return
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		c := tx.Bucket([]byte("snapshots")).Cursor()
		for k, _ := c.Last(); k != nil && binary.BigEndian.Uint64(k) >= from; k, _ = c.Last() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDamagedLastRecordIsCorruptUnlessRepaired: with bbolt a committed
// record cannot be torn, so a damaged last record was acknowledged. Open
// refuses it with a *CorruptError, writing nothing; the operator's repair
// option moves it to quarantine, with a warning, and the machine goes on.
func TestDamagedLastRecordIsCorruptUnlessRepaired(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	m := mustOpen(t, path, journal.Options[state, input]{SnapshotEvery: -1})
	dispatchAll(t, m, notes(0, 12))
	mustClose(t, m)
	deleteSnapshots(t, path, 0)                                                         // crashed: no snapshot was taken
	rewriteRecord(t, path, "inputs", 12, func(v []byte) []byte { return v[:len(v)-3] }) // cut short

	before := fileSum(t, path)
	_, err := openAt(t, path, journal.Options[state, input]{SnapshotEvery: -1})
	var ce *journal.CorruptError
	if !errors.As(err, &ce) || ce.Seq != 12 || !strings.Contains(err.Error(), "QuarantineCorruptTail") {
		t.Fatalf("Open with a damaged last record = %v, want a *CorruptError for 12 that names the repair option", err)
	}
	if fileSum(t, path) != before {
		t.Fatal("the failed Open changed the store file")
	}

	var logs logBuffer
	m, err = openAt(t, path, journal.Options[state, input]{SnapshotEvery: -1, Logger: logs.Logger(), QuarantineCorruptTail: true})
	if err != nil {
		t.Fatalf("Open with QuarantineCorruptTail: %v", err)
	}
	if got, want := m.Current(), fold(notes(0, 11)); !reflect.DeepEqual(got, want) {
		t.Errorf("state = %v, want the first 11 inputs", got.Notes)
	}
	if !strings.Contains(logs.String(), "quarantine") || !strings.Contains(logs.String(), "seq=12") {
		t.Errorf("no warning naming seq 12:\n%s", logs.String())
	}
	dispatchAll(t, m, notes(100, 101))
	if m.Seq() != 12 {
		t.Errorf("next input got seq %d, want 12", m.Seq())
	}
	mustClose(t, m)
	// The damaged bytes are kept, not destroyed.
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bbolt.Tx) error {
		if n := tx.Bucket([]byte("quarantine")).Stats().KeyN; n != 1 {
			t.Errorf("quarantine holds %d records, want 1", n)
		}
		return nil
	})
}

// fileSum is the SHA-256 of a file's bytes.
func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// flipBit flips one bit of a stored record in the store file itself, at
// byte at of the record's value, as a bad sector would. bbolt's
// copy-on-write leaves stale copies of old pages in the file; every copy of
// the record's bytes is flipped, so that the live one certainly is.
func flipBit(t *testing.T, path, bucket string, seq uint64, at int) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var value []byte
	db.View(func(tx *bbolt.Tx) error {
		value = bytes.Clone(tx.Bucket([]byte(bucket)).Get(binary.BigEndian.AppendUint64(nil, seq)))
		return nil
	})
	db.Close()
	if value == nil {
		t.Fatalf("no record %d in %s", seq, bucket)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flipped := 0
	for i := 0; ; {
		j := bytes.Index(data[i:], value)
		if j < 0 {
			break
		}
		data[i+j+at] ^= 0x10
		flipped++
		i += j + len(value)
	}
	if flipped == 0 {
		t.Fatalf("record %d's bytes are not in the file", seq)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestBitFlipInTheMiddleStopsOpenNamingTheSeq(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	m := mustOpen(t, path, journal.Options[state, input]{SnapshotEvery: -1})
	dispatchAll(t, m, notes(0, 20))
	mustClose(t, m)
	deleteSnapshots(t, path, 0)       // crashed: recovery reads the journal
	flipBit(t, path, "inputs", 8, 20) // in input 8's payload

	before, _ := os.ReadFile(path)
	_, err := openAt(t, path, journal.Options[state, input]{})
	var ce *journal.CorruptError
	if !errors.As(err, &ce) || ce.Seq != 8 || ce.Kind != journal.KindInput {
		t.Fatalf("Open = %v, want a CorruptError for input record 8", err)
	}
	if !strings.Contains(err.Error(), "record 8") || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("error does not say where and what: %v", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("a failed Open changed the store file")
	}
}

func TestDamagedSnapshotFallsBackToAnOlderOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	opts := journal.Options[state, input]{SnapshotEvery: 5, KeepSnapshots: 3}
	m := mustOpen(t, path, opts)
	ins := notes(0, 12)
	dispatchAll(t, m, ins)
	mustClose(t, m)                       // snapshots at 5, 10 and 12
	flipBit(t, path, "snapshots", 12, 30) // in the snapshot's payload

	var logs logBuffer
	opts.Logger = logs.Logger()
	m, err := openAt(t, path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer mustClose(t, m)
	if got := m.Current(); !reflect.DeepEqual(got, fold(ins)) {
		t.Errorf("state rebuilt from the older snapshot differs: %v", got.Notes)
	}
	if !strings.Contains(logs.String(), "damaged snapshot") || !strings.Contains(logs.String(), "seq=12") {
		t.Errorf("no warning naming the snapshot at 12:\n%s", logs.String())
	}
}

func TestDamagedSnapshotWithoutJournalIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	opts := journal.Options[state, input]{SnapshotEvery: -1, KeepSnapshots: 1, Compact: true}
	m := mustOpen(t, path, opts)
	dispatchAll(t, m, notes(0, 12))
	mustClose(t, m) // one snapshot at 12; the journal before it compacted away
	flipBit(t, path, "snapshots", 12, 30)
	_, err := openAt(t, path, opts)
	var ce *journal.CorruptError
	if !errors.As(err, &ce) || ce.Kind != journal.KindSnapshot || ce.Seq != 12 {
		t.Fatalf("Open = %v, want a CorruptError for snapshot 12", err)
	}
}

func mustInputs(t *testing.T, m *journal.Machine[state, input]) []journal.Entry[input] {
	t.Helper()
	entries, err := m.Inputs(0, m.Seq())
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func TestVerifyReplayCatchesANondeterministicTransition(t *testing.T) {
	var calls atomic.Int64
	clocky := automata.Definition[state, input]{
		Initial: model.Initial,
		Transition: func(s state, in input) state {
			// Reads something outside the state and input: the
			// result differs between the live run and a replay.
			s.Notes = append(slices.Clip(s.Notes), fmt.Sprint(in.Note, calls.Add(1)))
			return s
		},
	}
	store, err := bolt.Open(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 10)
	m, err := journal.Open(store, clocky, journal.Options[state, input]{
		Codec: codec(), SnapshotEvery: 5, VerifyReplay: true,
		OnError: func(err error) { errs <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	dispatchAll(t, m, notes(0, 4))
	mustClose(t, m) // the snapshot at Close replays 1..4 from the initial state
	select {
	case err := <-errs:
		if !errors.Is(err, journal.ErrNondeterministic) || !strings.Contains(err.Error(), "replaying inputs 1..4 from the snapshot at 0 does not reproduce the state at 4") {
			t.Fatalf("OnError got %v, want ErrNondeterministic for the snapshots at 0 and 4", err)
		}
	default:
		t.Fatal("the nondeterministic transition was not reported")
	}
}

func TestVerifyReplayAcceptsAPureTransition(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	var reported []error
	m := mustOpen(t, path, journal.Options[state, input]{
		SnapshotEvery: 3, VerifyReplay: true,
		OnError: func(err error) { reported = append(reported, err) },
	})
	dispatchAll(t, m, notes(0, 10))
	mustClose(t, m)
	if len(reported) > 0 {
		t.Fatalf("a pure transition was reported: %v", reported)
	}
}

func TestJobAnswersAreJournaledAndStaleOnesDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	release := make(chan struct{})
	stale := make(chan struct{})
	jobs := func(s state) map[string]automata.Job[input] {
		m := map[string]automata.Job[input]{}
		for _, r := range s.Pending {
			m[jobKey(r)] = func(ctx context.Context, dispatch automata.Dispatch[input]) error {
				if r == 1 {
					dispatch(input{Answer: 1})
					return nil
				}
				<-release // r == 2: answered after its request was withdrawn
				dispatch(input{Note: "stale"})
				close(stale)
				return nil
			}
		}
		return m
	}
	events := make(chan automata.Event[state, input], 100)
	m := mustOpen(t, path, journal.Options[state, input]{}, automata.WithJobs(jobs), automata.WithEvents(func(e automata.Event[state, input]) { events <- e }))
	dispatchAll(t, m, []input{{Request: 1}, {Request: 2}})
	waitEvent(t, events, automata.EffectCompleted, "req-1")
	dispatchAll(t, m, []input{{Answer: 2}}) // withdraws request 2: its job is cancelled
	waitEvent(t, events, automata.EffectCancelled, "req-2")
	close(release)
	<-stale
	mustClose(t, m)

	m = mustOpen(t, path, journal.Options[state, input]{})
	defer mustClose(t, m)
	var journaled []input
	for _, e := range mustInputs(t, m) {
		journaled = append(journaled, e.Input)
	}
	// Job 1's answer may come before or after request 2; the set is fixed:
	// the live job's answer is in, the cancelled job's note is not.
	key := func(in input) string { return fmt.Sprintf("%+v", in) }
	got := slices.Sorted(func(yield func(string) bool) {
		for _, in := range journaled {
			if !yield(key(in)) {
				return
			}
		}
	})
	want := []string{key(input{Answer: 1}), key(input{Answer: 2}), key(input{Request: 1}), key(input{Request: 2})}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("journal = %+v, want exactly %v (the job's answer in, the stale note out)", journaled, want)
	}
}

func waitEvent(t *testing.T, events <-chan automata.Event[state, input], kind automata.EventKind, key string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-events:
			if e.Kind == kind && e.Key == key {
				return
			}
		case <-timeout:
			t.Fatalf("no %v event for %s", kind, key)
		}
	}
}

func TestDispatchAfterCloseFails(t *testing.T) {
	m := mustOpen(t, filepath.Join(t.TempDir(), "agent.db"), journal.Options[state, input]{})
	mustClose(t, m)
	if err := m.Dispatch(context.Background(), input{Note: "late"}); !errors.Is(err, automata.ErrClosed) {
		t.Fatalf("Dispatch after Close = %v, want ErrClosed", err)
	}
	mustClose(t, m) // twice is fine
}

// TestReadsAfterCloseSayClosed: once Close has closed the store, Inputs and
// StateAt fail with ErrClosed, not only with the store's own error, so that
// a reader racing Close (a devpanel) can tell shutdown from damage.
func TestReadsAfterCloseSayClosed(t *testing.T) {
	m := mustOpen(t, filepath.Join(t.TempDir(), "agent.db"), journal.Options[state, input]{})
	dispatchAll(t, m, notes(0, 3))
	mustClose(t, m)
	if _, err := m.Inputs(0, 3); !errors.Is(err, automata.ErrClosed) {
		t.Errorf("Inputs after Close = %v, want ErrClosed", err)
	}
	if _, err := m.StateAt(2); !errors.Is(err, automata.ErrClosed) {
		t.Errorf("StateAt after Close = %v, want ErrClosed", err)
	}
}

func TestOpenRequiresACodec(t *testing.T) {
	store, err := bolt.Open(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := journal.Open(store, model, journal.Options[state, input]{}); err == nil {
		t.Fatal("Open without a Codec succeeded")
	}
}
