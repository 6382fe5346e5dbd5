package persistent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/moora-go/moora/automata/agents/persistent/decl"
	v1 "github.com/moora-go/moora/automata/agents/persistent/decl/v1"
	"github.com/moora-go/moora/automata/agents/persistent/impl/agent"
	"github.com/moora-go/moora/automata/internal/frame"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// BenchmarkReplayAcrossVersions opens a journal of 100,000 user messages
// and no snapshot, so that Open replays every record: written under
// version 1 of the spec, each is read through the migrations to the
// current version (impl/migrations: SendUserMessageFromV1), against the
// same journal written under the current version, read as it is. ns/op is
// one Open; the ratio of the two is the cost of the migration.
func BenchmarkReplayAcrossVersions(b *testing.B) {
	const n = 100_000
	for _, version := range []int{decl.SpecVersion, 1} {
		b.Run(fmt.Sprintf("records=v%d", version), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "agent.db")
			writeMessages(b, path, n, version)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				store, err := bolt.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				m, err := journal.Open(store, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
					Codec: journal.JSONGob[decl.AgentState](decl.DecodeInput), SnapshotEvery: -1, SkipCloseSnapshot: true,
				})
				if err != nil {
					b.Fatal(err)
				}
				if got := len(m.Current().UserMessages); got != n {
					b.Fatalf("%d messages after replay, want %d", got, n)
				}
				if err := m.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}

// writeMessages writes a journal of n user messages under the given
// version of the spec, as that version's agent journals them.
func writeMessages(b *testing.B, path string, n, version int) {
	store, err := bolt.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	var batch []journal.Record
	for i := 1; i <= n; i++ {
		msg := v1.UserMessage{ID: fmt.Sprintf("user-%d", i), Content: "count the words of a message of a typical length", Timestamp: int64(i)}
		var in any = v1.SendUserMessage{Message: msg}
		if version != 1 {
			in = decl.SendUserMessage{Message: decl.UserMessage{ID: msg.ID, Content: msg.Content, Timestamp: msg.Timestamp, Channel: "terminal"}}
		}
		payload, err := json.Marshal(in)
		if err != nil {
			b.Fatal(err)
		}
		seq := uint64(i)
		batch = append(batch, journal.Record{Seq: seq, Data: frame.Append(nil, frame.Frame{
			Kind: frame.Input, Seq: seq, UnixNano: int64(i), Version: uint32(version), Payload: payload})})
		if len(batch) == 10_000 || i == n {
			if err := store.Append(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}
