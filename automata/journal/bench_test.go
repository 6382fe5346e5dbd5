package journal_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/internal/frame"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// BenchmarkDurableDispatch: producers goroutines each dispatch and wait for
// the disk; b.N inputs in all, on each embedded backend. Reports inputs/s
// and Appends per input (each a commit, one or two fdatasyncs).
func BenchmarkDurableDispatch(b *testing.B) {
	for _, producers := range []int{1, 64} {
		for _, be := range backends {
			b.Run(fmt.Sprintf("backend=%s,producers=%d", be.name, producers), func(b *testing.B) {
				m, counting := openBenchMachine(b, filepath.Join(b.TempDir(), "agent"+be.suffix))
				in := input{Note: "a note of a typical length for a chat message"}
				var next atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				var wg sync.WaitGroup
				for range producers {
					wg.Go(func() {
						for next.Add(1) <= int64(b.N) {
							if err := m.Dispatch(context.Background(), in); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "inputs/s")
				b.ReportMetric(float64(counting.appends.Load())/float64(b.N), "appends/input")
				mustClose(b, m)
			})
		}
	}
}

// openBenchMachine opens a Machine of the test model, with no snapshots,
// on a new store at path (openStore), counting its Appends.
func openBenchMachine(b *testing.B, path string) (*journal.Machine[state, input], *countingStore) {
	store, err := openStore(path)
	if err != nil {
		b.Fatal(err)
	}
	counting := &countingStore{Store: store}
	m, err := journal.Open(counting, model, journal.Options[state, input]{Codec: codec(), SnapshotEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	return m, counting
}

// BenchmarkDiskFloor measures, in one run, the floor of a durable input on
// this disk and each embedded backend's one producer against it. The floor
// is the write of one input's record (its frame, as the journal writes it)
// in place, into a file whose blocks are allocated (1 MiB, the size of
// pebble's append log), and an fdatasync, which
// then flushes that data and no file metadata. Beside it, "append": the
// same record written at the end of a file, which grows, so that each
// fdatasync flushes its size too; and "floor-again", the floor on a
// file of its own, whose ratio to the floor says how far two runs of the
// same thing part in the run (the precision of every other ratio of it).
// Each backend holds an agent with a history
// (historyInputs inputs, dispatched by 64 producers before the timing: a
// pebble database then writes to a recycled log file, as it does after its
// first minutes) and dispatches to its Machine one input at a time, each
// waiting for the disk. They take turns in rounds of 100, b.N of each in
// all, each round in an order drawn afresh, so that the machine's noise,
// and what each side leaves the disk doing, falls on every one alike.
// Beside them,
// "starter": the starter agent as agentgen generates it, on pebble, with the
// same history, whose generated decl.DecodeInput validates each input
// against its JSON Schema (the model's inputs go through plain JSON).
// Reports each one's rate and each backend's ratios to both floors, and
// to the floor also the median of its rounds' ratios to the floor's.
func BenchmarkDiskFloor(b *testing.B) {
	const (
		round         = 100
		historyInputs = 100_000
	)
	in := input{Note: "a note of a typical length for a chat message"}
	payload, err := codec().EncodeInput(in)
	if err != nil {
		b.Fatal(err)
	}
	record := frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 1, UnixNano: 1, Payload: payload})
	// The floor's file is as large as pebble's append log: the smaller
	// the range a disk's in-place writes keep to, the faster they sync
	// here (a 64 MiB file made the floor 10-15% slower).
	const fileBytes = 1 << 20
	dir := b.TempDir()
	// allocated creates a file of fileBytes, written and synced: its
	// blocks are allocated.
	allocated := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		if _, err := f.Write(make([]byte, fileBytes)); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		return f
	}
	file := allocated("floor")
	grown, err := os.Create(filepath.Join(b.TempDir(), "append"))
	if err != nil {
		b.Fatal(err)
	}
	defer grown.Close()
	var off int64
	fdatasync := func(f *os.File) {
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
	}
	type side struct {
		name     string
		dispatch func()
		elapsed  time.Duration
		rounds   []time.Duration // each round's
	}
	// floor writes the record in place into f, an allocated file of
	// fileBytes, at *off, and syncs it.
	floor := func(f *os.File, off *int64) func() {
		return func() {
			if _, err := f.WriteAt(record, *off); err != nil {
				b.Fatal(err)
			}
			*off = (*off + int64(len(record))) % (fileBytes - 4096)
			fdatasync(f)
		}
	}
	sides := []*side{{name: "floor", dispatch: floor(file, &off)}, {name: "append", dispatch: func() {
		if _, err := grown.Write(record); err != nil {
			b.Fatal(err)
		}
		fdatasync(grown)
	}}}
	// The floor again, on a file of its own: how far two runs of the same
	// thing part in this run, the precision of its ratios.
	var againOff int64
	sides = append(sides, &side{name: "floor-again", dispatch: floor(allocated("floor-again"), &againOff)})
	// The Machine on a store that is the floor itself: its Append writes
	// the records in place into an allocated file and syncs, and keeps
	// nothing else; what the Machine costs above the disk.
	fm, err := journal.Open(&floorStore{Store: emptyStore{}, f: allocated("machine-floor"), size: fileBytes - 4096}, model, journal.Options[state, input]{Codec: codec(), SnapshotEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer mustClose(b, fm)
	sides = append(sides, &side{name: "machine", dispatch: func() {
		if err := fm.Dispatch(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}})
	for _, be := range backends {
		m, _ := openBenchMachine(b, filepath.Join(b.TempDir(), "agent"+be.suffix))
		defer mustClose(b, m)
		var wg sync.WaitGroup
		for p := range 64 {
			wg.Go(func() {
				for i := p; i < historyInputs; i += 64 {
					if err := m.Dispatch(context.Background(), in); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		sides = append(sides, &side{name: be.name, dispatch: func() {
			if err := m.Dispatch(context.Background(), in); err != nil {
				b.Fatal(err)
			}
		}})
	}
	// The starter agent, as agentgen generates it, on pebble: its inputs
	// journal through the generated decl.DecodeInput, which validates each
	// against its JSON Schema, where the model's go through plain JSON.
	starterStore, err := openStore(filepath.Join(b.TempDir(), "starter.pebble"))
	if err != nil {
		b.Fatal(err)
	}
	sm, err := journal.Open(starterStore, starter, journal.Options[decl.AgentState, decl.AgentInput]{Codec: starterCodec(), SnapshotEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := sm.Close(context.Background()); err != nil {
			b.Error(err)
		}
	}()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for i := next.Add(1); i <= historyInputs; i = next.Add(1) {
				if err := sm.Dispatch(context.Background(), starterMessage(int(i))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	sides = append(sides, &side{name: "starter", dispatch: func() {
		if err := sm.Dispatch(context.Background(), starterMessage(int(next.Add(1)))); err != nil {
			b.Fatal(err)
		}
	}})
	// Each round takes the sides in an order of its own, drawn from a
	// seeded source: a side that leaves the disk busy (the appending
	// file's metadata, bbolt's growing file, pebble's own log and
	// compactions in the background) slows whichever comes next, and a
	// fixed order, or one that only rotates, has each side follow the same
	// one nearly every time (the floor's second run, always after
	// "append", made 0.91-0.98 of the first).
	order := make([]int, len(sides))
	for i := range order {
		order[i] = i
	}
	shuffle := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for done := 0; done < b.N; done += round {
		shuffle.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			s := sides[i]
			start := time.Now()
			for range min(round, b.N-done) {
				s.dispatch()
			}
			d := time.Since(start)
			s.elapsed += d
			s.rounds = append(s.rounds, d)
		}
	}
	b.StopTimer()
	rate := func(s *side) float64 { return float64(b.N) / s.elapsed.Seconds() }
	// The median over the rounds of a side's rate to the floor's in the
	// same round: a burst of the disk's noise that falls on a few rounds
	// of one side moves it less than it moves the ratio of the totals.
	median := func(s *side) float64 {
		ratios := make([]float64, len(s.rounds))
		for i, d := range s.rounds {
			ratios[i] = sides[0].rounds[i].Seconds() / d.Seconds()
		}
		slices.Sort(ratios)
		return ratios[len(ratios)/2]
	}
	b.ReportMetric(rate(sides[0]), "floor-syncs/s")
	b.ReportMetric(rate(sides[1]), "append-syncs/s")
	b.ReportMetric(rate(sides[2])/rate(sides[0]), "floor-again/floor")
	b.ReportMetric(median(sides[2]), "floor-again/floor-median")
	for _, s := range sides[3:] {
		if s.name != "machine" {
			b.ReportMetric(rate(s)/rate(sides[3]), s.name+"/machine")
		}
		b.ReportMetric(rate(s), s.name+"-inputs/s")
		b.ReportMetric(rate(s)/rate(sides[0]), s.name+"/floor")
		b.ReportMetric(median(s), s.name+"/floor-median")
		b.ReportMetric(rate(s)/rate(sides[1]), s.name+"/append")
	}
}

// floorStore is a Store whose Append writes the records' bytes in place
// into f, an allocated file of size bytes, and syncs it; it keeps nothing
// to read back (emptyStore).
type floorStore struct {
	journal.Store
	f    *os.File
	size int64
	off  int64
}

func (s *floorStore) Append(records []journal.Record) error {
	for _, r := range records {
		if s.off+int64(len(r.Data)) > s.size {
			s.off = 0
		}
		if _, err := s.f.WriteAt(r.Data, s.off); err != nil {
			return err
		}
		s.off += int64(len(r.Data))
	}
	return syscall.Fdatasync(int(s.f.Fd()))
}

func (s *floorStore) Close() error { return nil }

// emptyStore holds nothing.
type emptyStore struct{}

func (emptyStore) Append([]journal.Record) error                 { return nil }
func (emptyStore) Scan(uint64, func(journal.Record) error) error { return nil }
func (emptyStore) PutSnapshot(journal.Record) error              { return nil }
func (emptyStore) Snapshots(func(journal.Record) error) error    { return nil }
func (emptyStore) Prune(uint64, uint64, uint64) error            { return nil }
func (emptyStore) Quarantine(uint64) error                       { return nil }
func (emptyStore) Close() error                                  { return nil }

// starter is the runtime's chat test agent (automata/internal/chattest,
// generated into decl/ and impl/): storage and recovery are measured on it.
var starter = agent.Definition()

func starterCodec() journal.Codec[decl.AgentState, decl.AgentInput] {
	return journal.JSONGob[decl.AgentState](decl.DecodeInput)
}

// starterMessage is the i-th message of a conversation: the user's and the
// llm's in turn.
func starterMessage(i int) decl.AgentInput {
	id := fmt.Sprintf("msg-%07d", i)
	const content = "a chat message of a typical length, some sixty characters."
	ts := 1_700_000_000_000 + int64(i)
	if i%2 == 1 {
		return decl.SendAssiMessage{ID: id, Content: content, Timestamp: ts}
	}
	return decl.SendUserMessage{ID: id, Content: content, Timestamp: ts}
}

// TestStorageGrowsWithInputsNotState reports the bytes stored per input of
// a conversation of 100, 10,000 and 100,000 messages, snapshots every 1,000
// (two kept) and the journal compacted. A full checkpoint per input would
// store a quadratic total; the journal stores each input once.
func TestStorageGrowsWithInputsNotState(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,000 inputs")
	}
	perInput := map[int]float64{}
	for _, n := range []int{100, 10_000, 100_000} {
		path := filepath.Join(t.TempDir(), "starter.db")
		store, err := bolt.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		m, err := journal.Open(store, starter, journal.Options[decl.AgentState, decl.AgentInput]{
			Codec: starterCodec(), SnapshotEvery: 1_000, KeepSnapshots: 2, Compact: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		var inputBytes int64
		var wg sync.WaitGroup
		var next atomic.Int64
		for range 16 {
			wg.Go(func() {
				for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
					in := starterMessage(i)
					data, _ := starterCodec().EncodeInput(in)
					atomic.AddInt64(&inputBytes, int64(len(data)))
					if err := m.Dispatch(context.Background(), in); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if err := m.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		store, err = bolt.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		jbytes, sbytes, err := store.Size()
		store.Close()
		if err != nil {
			t.Fatal(err)
		}
		perInput[n] = float64(jbytes+sbytes) / float64(n)
		t.Logf("%7d messages: %6.1f bytes stored per input (input itself %.1f; journal %d B, snapshots %d B)",
			n, perInput[n], float64(inputBytes)/float64(n), jbytes, sbytes)
	}
	// Flat: the per-input cost at 100,000 messages is no more than a small
	// constant factor of the cost at 10,000 (a full checkpoint per input
	// would make it 10 times larger).
	if perInput[100_000] > 1.5*perInput[10_000] {
		t.Errorf("bytes per input grow with the conversation: %.1f at 10,000, %.1f at 100,000", perInput[10_000], perInput[100_000])
	}
}

// BenchmarkRecover: open-to-ready time of a store holding the starter
// model's inputs, 100,000 with a snapshot every 1,000 and 1,000,000 with
// one every 10,000 (two kept, as KeepSnapshots' default leaves them), on
// each backend. "clean": the last snapshot is at the last input, as Close
// leaves it. "crash": the process died just before the last snapshot, so
// every input after the one before it is replayed (999 and 9,999).
//
// Each recovery is a restarted process's: this test binary run again
// (TestRecoverChild) on a copy of the store as its writer closed it (made,
// and synced, before it starts), timing itself from the store's Open to
// the Machine's return, so that what it finds is what a restart finds: a
// heap of its own, nothing in it of the benchmark or of the recovery
// before, and pebble's work left to do at its first Open. (Timed in the
// benchmark's process, an Open's time depends on what the garbage
// collector owes when it begins: on how much the work before it
// allocated.) The four stores of a size are recovered in turn, each op
// once each, in an order drawn afresh from a seeded source, so that the
// machine's noise falls on all alike. Reports each one's time and its
// store's Open's, and pebble's time to bbolt's (a ratio in one run), and
// to that also the median of its ops' ratios. ns/op is the four
// recoveries' sum. The child processes run with the benchmark's GOMAXPROCS
// and none of its other flags: -benchmem's figures and the profiles are
// the benchmark's own process's, which copies the stores and waits.
func BenchmarkRecover(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []struct{ total, every int }{{100_000, 1_000}, {1_000_000, 10_000}} {
		b.Run(fmt.Sprintf("inputs=%d", size.total), func(b *testing.B) {
			codec := starterCodec()
			type side struct {
				name, path string
				built      string // the store as its writer closed it
				last       int
				ops, opens []time.Duration
			}
			var sides []*side
			for _, tc := range []struct {
				name      string
				snapshots []int // seqs
				journal   int   // last journaled seq
			}{
				{"clean", []int{size.total - size.every, size.total}, size.total},
				{"crash", []int{size.total - 2*size.every, size.total - size.every}, size.total - 1},
			} {
				for _, be := range backends {
					s := &side{name: be.name + "-" + tc.name, path: filepath.Join(b.TempDir(), "starter"+be.suffix), last: tc.journal}
					s.built = filepath.Join(b.TempDir(), "starter"+be.suffix)
					buildStarterStore(b, s.built, codec, tc.journal, tc.snapshots)
					sides = append(sides, s)
				}
			}
			shuffle := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				shuffle.Shuffle(len(sides), func(i, j int) { sides[i], sides[j] = sides[j], sides[i] })
				for _, s := range sides {
					copyStore(b, s.built, s.path)
					opened, ready := recoverInChild(b, exe, s.path, s.last)
					s.opens, s.ops = append(s.opens, opened), append(s.ops, ready)
				}
			}
			named := make(map[string]*side)
			var sum float64
			for _, s := range sides {
				named[s.name] = s
				sum += meanMs(s.ops)
			}
			b.ReportMetric(sum*1e6, "ns/op")
			for _, s := range sides {
				b.ReportMetric(meanMs(s.ops), s.name+"-ms")
				b.ReportMetric(meanMs(s.opens), s.name+"-open-ms")
			}
			for _, tc := range []string{"clean", "crash"} {
				bolt, pebble := named["bolt-"+tc], named["pebble-"+tc]
				ratios := make([]float64, len(bolt.ops))
				for i := range bolt.ops {
					ratios[i] = pebble.ops[i].Seconds() / bolt.ops[i].Seconds()
				}
				slices.Sort(ratios)
				b.ReportMetric(meanMs(pebble.ops)/meanMs(bolt.ops), "pebble/bolt-"+tc)
				b.ReportMetric(ratios[len(ratios)/2], "pebble/bolt-"+tc+"-median")
			}
		})
	}
}

// meanMs is the mean of ds in milliseconds.
func meanMs(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum.Seconds() * 1e3 / float64(len(ds))
}

const recoverChildEnv = "JOURNAL_RECOVER_CHILD"

// TestRecoverChild is the restarted process of BenchmarkRecover, which runs
// this test binary again with recoverChildEnv set to the path of a store
// built with buildStarterStore (and recoverChildEnv_LAST to its last seq).
// It opens the store and the starter's Machine on it, checks that the
// Machine recovered every input, and prints on stdout
//
//	recovered <open> <ready>
//
// the nanoseconds from the start of the store's Open to its return, and to
// the Machine's.
func TestRecoverChild(t *testing.T) {
	path := os.Getenv(recoverChildEnv)
	if path == "" {
		t.Skip("the child process of BenchmarkRecover")
	}
	last, err := strconv.ParseUint(os.Getenv(recoverChildEnv+"_LAST"), 10, 64)
	if err != nil {
		t.Fatalf("%s is set (%s), so %s_LAST must be the store's last seq: %v", recoverChildEnv, path, recoverChildEnv, err)
	}
	codec := starterCodec()
	start := time.Now()
	store, err := openStore(path)
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Since(start)
	m, err := journal.Open(store, starter, journal.Options[decl.AgentState, decl.AgentInput]{Codec: codec, SkipCloseSnapshot: true})
	if err != nil {
		t.Fatal(err)
	}
	ready := time.Since(start)
	if m.Seq() != last {
		t.Fatalf("recovered %d inputs, want %d", m.Seq(), last)
	}
	fmt.Printf("recovered %d %d\n", opened, ready)
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// recoverInChild runs TestRecoverChild on the store at path, whose last
// input is last, and returns the times it reports.
func recoverInChild(tb testing.TB, exe, path string, last int) (opened, ready time.Duration) {
	tb.Helper()
	opened, ready, err := runRecoverChild(exe, path, last)
	if err != nil {
		tb.Fatal(err)
	}
	return opened, ready
}

// runRecoverChild is recoverInChild, failing with an error.
func runRecoverChild(exe, path string, last int) (opened, ready time.Duration, err error) {
	cmd := exec.Command(exe, "-test.run=^TestRecoverChild$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), recoverChildEnv+"="+path, fmt.Sprintf("%s_LAST=%d", recoverChildEnv, last),
		fmt.Sprintf("GOMAXPROCS=%d", runtime.GOMAXPROCS(0)))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("recovering %s in a child process: %v\n%s", path, err, out)
	}
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(line, "recovered "); ok {
			if _, err := fmt.Sscan(rest, &opened, &ready); err != nil {
				return 0, 0, fmt.Errorf("recovering %s in a child process: %q: %v", path, line, err)
			}
			return opened, ready, nil
		}
	}
	return 0, 0, fmt.Errorf("recovering %s in a child process: no time reported:\n%s", path, out)
}

// TestRecoverInAChildProcess: the restarted process that BenchmarkRecover
// times recovers a store of each backend after a crash (the inputs after
// its newest snapshot replayed) and reports its times; told to expect an
// input more than the store holds, it fails, saying so.
func TestRecoverInAChildProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	codec := starterCodec()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			built := filepath.Join(t.TempDir(), "starter"+be.suffix)
			path := filepath.Join(t.TempDir(), "starter"+be.suffix)
			buildStarterStore(t, built, codec, 2_999, []int{1_000, 2_000})
			copyStore(t, built, path)
			opened, ready := recoverInChild(t, exe, path, 2_999)
			if opened <= 0 || ready < opened {
				t.Errorf("the child reports the store's Open at %v and the Machine's at %v", opened, ready)
			}
			copyStore(t, built, path)
			if _, _, err := runRecoverChild(exe, path, 3_000); err == nil || !strings.Contains(err.Error(), "recovered 2999 inputs, want 3000") {
				t.Errorf("a child told to expect 3,000 inputs of 2,999: %v", err)
			}
		})
	}
}

// copyStore makes dst (removed first) a copy of the store at src, a bbolt
// file or a pebble directory, and syncs the file system, so that writing
// the copy back costs nothing to what is timed next.
func copyStore(b testing.TB, src, dst string) {
	if err := os.RemoveAll(dst); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(src)
	if err != nil {
		b.Fatal(err)
	}
	if fi.IsDir() {
		err = os.CopyFS(dst, os.DirFS(src))
	} else {
		err = copyFile(src, dst)
	}
	if err != nil {
		b.Fatal(err)
	}
	syscall.Sync()
}

// copyFile copies the file at src to dst, which it creates, a buffer at a
// time.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// buildStarterStore writes what a run of the starter model would leave: the
// journal of inputs 1..last and the snapshots at the given seqs.
func buildStarterStore(b testing.TB, path string, codec journal.Codec[decl.AgentState, decl.AgentInput], last int, snapshots []int) {
	b.Helper()
	store, err := openStore(path)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	state := starter.Initial()
	var batch []journal.Record
	for seq := 1; seq <= last; seq++ {
		in := starterMessage(seq)
		payload, err := codec.EncodeInput(in)
		if err != nil {
			b.Fatal(err)
		}
		batch = append(batch, journal.Record{Seq: uint64(seq), Data: frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: uint64(seq), UnixNano: int64(seq), Payload: payload})})
		state = starter.Transition(state, in)
		if len(batch) == 10_000 || seq == last {
			if err := store.Append(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
		if slices.Contains(snapshots, seq) {
			payload, err := codec.EncodeState(state)
			if err != nil {
				b.Fatal(err)
			}
			if err := store.PutSnapshot(journal.Record{Seq: uint64(seq), Data: frame.Append(nil, frame.Frame{Kind: frame.Snapshot, Seq: uint64(seq), Payload: payload})}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
