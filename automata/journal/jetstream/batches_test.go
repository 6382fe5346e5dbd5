package jetstream_test

import (
	"context"
	"testing"

	"github.com/moora-go/moora/automata/journal/internal/storetest"
	"github.com/moora-go/moora/automata/journal/jetstream"
)

// TestManyAgentsBatchesAreAllAcknowledged: 200 agents with 4 producers
// each on one connection and stream, their Machines grouping inputs into
// atomic batches, more of them at once than the server takes in flight on
// a stream (50): every Dispatch is acknowledged. (Past 50 the server
// refused a batch's first message, which a publish without a reply does
// not hear, and the commit came back incomplete, err_code 10176: most
// producers' Dispatch failed.)
func TestManyAgentsBatchesAreAllAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("many agents")
	}
	_, nc := startServer(t, false)
	f, err := jetstream.OpenFleet(context.Background(), nc, jetstream.Config{}, "batches")
	if err != nil {
		t.Fatal(err)
	}
	// storetest.FleetRate fails the test on any failed Dispatch, and closes f.
	_, appends := storetest.FleetRate(t, f, 200, 4, 4000)
	if appends >= 1 {
		t.Logf("%.2f Appends an input: no batch was made, and the test proves nothing", appends)
	}
}
