package journal_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
)

// TestTelemetryCountsTheJournal: a durable machine traced and measured
// (automata.WithTelemetry, through journal.Open) after a scripted run of
// 4 producers: the inputs applied are the journal's records, the inputs of
// the commits add up to them, a commit is a store Append (an fsync), and
// each input's span says so with its "committed" event; and the inputs
// time travel replays record nothing.
func TestTelemetryCountsTheJournal(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	store, err := bolt.Open(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	counting := &countingStore{Store: store}
	m, err := journal.Open(counting, model, journal.Options[state, input]{Codec: codec(), SnapshotEvery: -1},
		automata.WithTelemetry[state, input](tp, mp))
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, m)
	const producers, each = 4, 50
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				if err := m.Dispatch(context.Background(), input{Note: string(rune('a'+p)) + string(rune('0'+i%10))}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	seq := int64(m.Seq())
	if seq != producers*each {
		t.Fatalf("journal seq %d", seq)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var applied, commits, committed, timed int64
	for _, sm := range rm.ScopeMetrics {
		for _, metric := range sm.Metrics {
			switch data := metric.Data.(type) {
			case metricdata.Sum[int64]:
				if metric.Name == "moora.inputs" {
					for _, p := range data.DataPoints {
						if v, _ := p.Attributes.Value(attribute.Key("moora.input.outcome")); v.AsString() == "applied" {
							applied += p.Value
						}
					}
				}
			case metricdata.Histogram[int64]:
				if metric.Name == "moora.commit.inputs" {
					for _, p := range data.DataPoints {
						commits += int64(p.Count)
						committed += p.Sum
					}
				}
			case metricdata.Histogram[float64]:
				if metric.Name == "moora.commit.duration" {
					for _, p := range data.DataPoints {
						timed += int64(p.Count)
					}
				}
			}
		}
	}
	if applied != seq || committed != seq || commits != counting.appends.Load() || timed != commits || counting.records.Load() != seq {
		t.Errorf("applied %d, committed %d in %d commits (%d timed); the journal: %d records in %d appends, seq %d",
			applied, committed, commits, timed, counting.records.Load(), counting.appends.Load(), seq)
	}
	ended := spans.Ended()
	withCommit := 0
	seqs := map[int64]bool{}
	for _, s := range ended {
		for _, e := range s.Events() {
			if e.Name == "committed" {
				withCommit++
			}
		}
		for _, a := range s.Attributes() {
			if a.Key == "moora.input.seq" {
				seqs[a.Value.AsInt64()] = true
			}
		}
	}
	if len(ended) != int(seq) || withCommit != int(seq) {
		t.Errorf("%d spans, %d with a committed event, for %d inputs", len(ended), withCommit, seq)
	}
	for n := int64(1); n <= seq; n++ {
		if !seqs[n] {
			t.Errorf("no span says moora.input.seq %d; %d spans say one", n, len(seqs))
			break
		}
	}
	if _, err := m.StateAt(uint64(seq / 2)); err != nil {
		t.Fatal(err)
	}
	if n := len(spans.Ended()); n != len(ended) {
		t.Errorf("time travel recorded %d spans", n-len(ended))
	}
}

// BenchmarkDurableTelemetry is BenchmarkDurableDispatch's one producer,
// with automata.WithTelemetry off and on (the SDK, exporting nowhere).
func BenchmarkDurableTelemetry(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			store, err := bolt.Open(filepath.Join(b.TempDir(), "agent.db"))
			if err != nil {
				b.Fatal(err)
			}
			var opts []automata.Option[state, input]
			if on {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter())))
				defer tp.Shutdown(context.Background())
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				opts = append(opts, automata.WithTelemetry[state, input](tp, mp))
			}
			m, err := journal.Open(store, model, journal.Options[state, input]{Codec: codec(), SnapshotEvery: -1}, opts...)
			if err != nil {
				b.Fatal(err)
			}
			in := input{Note: "a note of a typical length for a chat message"}
			b.ReportAllocs()
			for b.Loop() {
				if err := m.Dispatch(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			mustClose(b, m)
		})
	}
}
