package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/moora-go/moora/automata/agents/reflexor"
	"github.com/moora-go/moora/automata/httpbridge"
	"github.com/moora-go/moora/automata/journal/bolt"
	"github.com/moora-go/moora/examples/internal/httprun"
)

// runUsers is run with -users: Reflexor for many people (reflexor.Fleet),
// every conversation an agent by id in -data/agents.db, each as cfg says.
// The operator's token is -token, or the one kept in -data/token; the key
// that signs the people's identities is kept in -data/session-key, so that
// after a restart everyone is still who they were.
func runUsers(dataDir, addr, token string, cfg reflexor.Config, node int, ports clusterPorts, stdout io.Writer) error {
	if token == "" {
		var err error
		if token, err = httpbridge.TokenFile(filepath.Join(dataDir, "token")); err != nil {
			return err
		}
	}
	key, err := httpbridge.TokenFile(filepath.Join(dataDir, "session-key"))
	if err != nil {
		return err
	}
	fcfg := reflexor.FleetConfig{Agent: cfg, Token: token, SessionKey: []byte(key)}
	var c *clusterNode
	if node != 0 {
		// One of three processes sharing the conversations, each
		// running one node of an embedded JetStream cluster.
		if c, err = startClusterNode(dataDir, node, ports, os.Stderr); err != nil {
			return err
		}
		defer c.close()
		fcfg.Fleet, fcfg.Peers = c.fleet, c.fleet
	} else if fcfg.Fleet, err = bolt.OpenFleet(filepath.Join(dataDir, "agents.db")); err != nil {
		return err
	}
	f, err := reflexor.NewFleet(fcfg)
	if err != nil {
		return err // NewFleet closed the fleet
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return errors.Join(err, f.Close(context.Background()))
	}
	if c != nil {
		if err := c.serve("http://"+l.Addr().String()+"/api", f); err != nil {
			return errors.Join(err, l.Close(), f.Close(context.Background()))
		}
	}
	fmt.Fprintf(stdout, "Reflexor: http://%s/?token=%s\n", l.Addr(), token)
	fmt.Fprintf(os.Stderr, "reflexor: every page opened with that URL is a person of its own; the operator's panels: http://%s/panel/?token=%s\n", l.Addr(), token)
	srv := newServer(f.Handler())
	srv.RegisterOnShutdown(f.CloseStreams)
	ctx, stop := signalContext()
	defer stop()
	if c != nil {
		// The peers hear that this process is leaving before its server
		// stops taking connections.
		signalled := ctx
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-signalled.Done()
			c.leave()
			cancel()
		}()
	}
	err = httprun.Until(ctx, srv, l)
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(err, f.Close(closeCtx))
}
