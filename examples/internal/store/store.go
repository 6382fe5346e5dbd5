// Package store opens an example agent's journal as its -data and -nats
// flags say: a bbolt file, or NATS JetStream.
package store

import (
	"context"
	"path/filepath"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/automata/journal/jetstream/embedded"
)

// Open opens the agent's journal: the bbolt file agent.db in dataDir when
// natsURL is empty; otherwise the agent's journal on NATS JetStream at
// natsURL, or on a server in this process with its files in dataDir/nats
// when natsURL is "embedded" (embedded.OpenAgent). On JetStream the process
// claims the agent as its one owner, waiting for the lease of a crashed
// earlier run to expire; waiting, if set, is told who holds it each time
// Open finds it held. release closes what Open started, after the store is
// closed.
func Open(dataDir, natsURL, agentID string, waiting func(holder string)) (s journal.Store, release func(), err error) {
	if natsURL == "" {
		s, err := bolt.Open(filepath.Join(dataDir, "agent.db"))
		return s, func() {}, err
	}
	js, release, err := embedded.OpenAgent(context.Background(), embedded.AgentOptions{
		URL:     natsURL,
		Dir:     filepath.Join(dataDir, "nats"),
		Agent:   agentID,
		Waiting: waiting,
	})
	if err != nil {
		return nil, nil, err
	}
	return js, release, nil
}
