package journal_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/moora-go/moora/automata/internal/chattest/decl"
	"github.com/moora-go/moora/automata/internal/chattest/impl/agent"
	"github.com/moora-go/moora/automata/internal/frame"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// BenchmarkDurableDispatch: producers goroutines each dispatch and wait for
// the disk; b.N inputs in all. Reports inputs/s and fsyncs (Appends) per
// input.
func BenchmarkDurableDispatch(b *testing.B) {
	for _, producers := range []int{1, 64} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			store, err := bolt.Open(filepath.Join(b.TempDir(), "agent.db"))
			if err != nil {
				b.Fatal(err)
			}
			counting := &countingStore{Store: store}
			m, err := journal.Open(counting, model, journal.Options[state, input]{Codec: codec(), SnapshotEvery: -1})
			if err != nil {
				b.Fatal(err)
			}
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
			b.ReportMetric(float64(counting.appends.Load())/float64(b.N), "fsyncs/input")
			mustClose(b, m)
		})
	}
}

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

// BenchmarkRecover: open-to-ready time of a store holding 1,000,000
// starter-model inputs with a snapshot every 10,000 (two kept, as
// KeepSnapshots' default leaves them). "clean": the last snapshot is at the
// last input, as Close leaves it. "crash": the process died just before the
// snapshot at 1,000,000, so 9,999 inputs are replayed after the one at
// 990,000.
func BenchmarkRecover(b *testing.B) {
	const total, every = 1_000_000, 10_000
	codec := starterCodec()
	for _, tc := range []struct {
		name      string
		snapshots []int // seqs
		journal   int   // last journaled seq
	}{
		{"clean", []int{total - every, total}, total},
		{"crash", []int{total - 2*every, total - every}, total - 1},
	} {
		b.Run(tc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "starter.db")
			buildStarterStore(b, path, codec, tc.journal, tc.snapshots)
			b.ResetTimer()
			for b.Loop() {
				store, err := bolt.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				m, err := journal.Open(store, starter, journal.Options[decl.AgentState, decl.AgentInput]{Codec: codec, SkipCloseSnapshot: true})
				if err != nil {
					b.Fatal(err)
				}
				if m.Seq() != uint64(tc.journal) {
					b.Fatalf("recovered %d inputs, want %d", m.Seq(), tc.journal)
				}
				b.StopTimer()
				if err := m.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// buildStarterStore writes what a run of the starter model would leave: the
// journal of inputs 1..last and the snapshots at the given seqs.
func buildStarterStore(b *testing.B, path string, codec journal.Codec[decl.AgentState, decl.AgentInput], last int, snapshots []int) {
	b.Helper()
	store, err := bolt.Open(path)
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
