package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/moora-go/moora/automata/journal/jetstream/embedded"
	"github.com/nats-io/nats.go"
)

// openStore opens the agent's journal: the bbolt file in dataDir when
// natsURL is empty; otherwise the agent's journal on NATS JetStream at
// natsURL, or on a server embedded in this process, keeping its files in
// dataDir/nats, when natsURL is "embedded". On JetStream the process claims
// the agent (one owner at a time), waiting for the lease of a crashed
// earlier run to expire. release closes what openStore started, after the
// store is closed.
func openStore(dataDir, natsURL, agentID string, log io.Writer) (store journal.Store, release func(), err error) {
	if natsURL == "" {
		s, err := journal.OpenBolt(filepath.Join(dataDir, "agent.db"))
		return s, func() {}, err
	}
	var nc *nats.Conn
	var srv *embedded.Server
	if natsURL == "embedded" {
		if srv, err = embedded.Start(embedded.Options{Dir: filepath.Join(dataDir, "nats")}); err != nil {
			return nil, nil, err
		}
		nc, err = srv.Connect()
	} else {
		nc, err = nats.Connect(natsURL)
	}
	release = func() {
		if nc != nil {
			nc.Close()
		}
		if srv != nil {
			srv.Shutdown()
		}
	}
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("connecting to NATS: %w", err)
	}
	host, _ := os.Hostname()
	owner := fmt.Sprintf("%s-%d", host, os.Getpid())
	cfg := jetstream.Config{}
	deadline := time.Now().Add(15 * time.Second) // the default TTL, and some
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := jetstream.Claim(ctx, nc, cfg, agentID, owner)
		cancel()
		var notOwner *jetstream.NotOwnerError
		if errors.As(err, &notOwner) && time.Now().Before(deadline) {
			fmt.Fprintf(log, "  [waiting for the lease of %s on agent %s to expire]\n", notOwner.Owner, agentID)
			time.Sleep(2 * time.Second)
			continue
		}
		if err != nil {
			release()
			return nil, nil, err
		}
		return s, release, nil
	}
}
