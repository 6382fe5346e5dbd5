package main

import (
	"fmt"
	"io"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/examples/internal/store"
)

// openStore opens the agent's journal (package store): the bbolt file in
// dataDir, or the agent's journal on NATS JetStream with -nats, saying on
// log when it waits for an earlier run's lease.
func openStore(dataDir, natsURL, agentID string, log io.Writer) (journal.Store, func(), error) {
	return store.Open(dataDir, natsURL, agentID, func(holder string) {
		fmt.Fprintf(log, "  [waiting for the lease of %s on agent %s to expire]\n", holder, agentID)
	})
}
