package registry_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/moora-go/moora/automata/registry"
)

// TestMetricsCountAgents: with a MeterProvider, a collection reads the
// registry's Stats: two agents activated and active, then one deactivated
// once idle.
func TestMetricsCountAgents(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	f := newFixture(t, registry.Config[state, input]{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), IdleTimeout: 40 * time.Millisecond})
	read := func() map[string]int64 {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch d := m.Data.(type) {
				case metricdata.Gauge[int64]:
					for _, p := range d.DataPoints {
						got[m.Name] += p.Value
					}
				case metricdata.Sum[int64]:
					for _, p := range d.DataPoints {
						got[m.Name] += p.Value
					}
				}
			}
		}
		return got
	}
	for _, id := range []string{"a", "b"} {
		f.create(t, id)
		f.dispatch(t, id, input{Note: "hi"})
	}
	if got := read(); got["moora.agents.active"] != 2 || got["moora.agents.activations"] != 2 || got["moora.agents.deactivations"] != 0 {
		t.Errorf("two agents in use: %v", got)
	}
	f.advance(time.Second) // the sweeper looks every 10 ms
	deadline := time.Now().Add(time.Minute)
	for f.reg.Stats().Deactivations < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := read(); got["moora.agents.active"] != 0 || got["moora.agents.deactivations"] != 2 {
		t.Errorf("both idle past the timeout: %v", got)
	}
}
