package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/jetstream/embedded"
)

// openStore opens the agent's journal: the bbolt file in dataDir when
// natsURL is empty; otherwise the agent's journal on NATS JetStream at
// natsURL, or on a server embedded in this process, keeping its files in
// dataDir/nats, when natsURL is "embedded" (embedded.OpenAgent). On
// JetStream the process claims the agent (one owner at a time), waiting
// for the lease of a crashed earlier run to expire. release closes what
// openStore started, after the store is closed.
func openStore(dataDir, natsURL, agentID string, log io.Writer) (store journal.Store, release func(), err error) {
	if natsURL == "" {
		s, err := journal.OpenBolt(filepath.Join(dataDir, "agent.db"))
		return s, func() {}, err
	}
	s, release, err := embedded.OpenAgent(context.Background(), embedded.AgentOptions{
		URL:   natsURL,
		Dir:   filepath.Join(dataDir, "nats"),
		Agent: agentID,
		Waiting: func(holder string) {
			fmt.Fprintf(log, "  [waiting for the lease of %s on agent %s to expire]\n", holder, agentID)
		},
	})
	if err != nil {
		return nil, nil, err
	}
	return s, release, nil
}
