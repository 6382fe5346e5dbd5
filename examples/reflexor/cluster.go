package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/moora-go/moora/automata/agents/reflexor"
	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/moora-go/moora/automata/journal/jetstream/embedded"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// The default ports of the three-node cluster of -cluster, on 127.0.0.1:
// node n (1 to 3) takes clients on clusterClientPort+n and its peers'
// routes on clusterRoutePort+n (-cluster-ports).
const (
	clusterNodes      = 3
	clusterClientPort = 4230
	clusterRoutePort  = 6230
)

// clusterConfig names the conversations' resources on the cluster: each
// replicated on the three nodes; a request the cluster does not answer
// within 3 s (its leader was on a node that died) is made again, or
// answered 503, rather than held for the default 10 s.
var clusterConfig = jetstream.Config{Replicas: clusterNodes, Timeout: 3 * time.Second}

// clusterPorts are the bases of the cluster's ports (-cluster-ports).
type clusterPorts struct{ client, route int }

// clusterNode is this process's share of a three-process deployment on one
// machine (-cluster n): node n of an embedded JetStream cluster, the
// conversations' fleet on it, replicated three times, and, once serving,
// its address advertised and the orphans of dead processes activated.
type clusterNode struct {
	srv   *embedded.Server
	nc    *nats.Conn
	fleet *jetstream.Fleet
	stop  context.CancelFunc
}

// orphanWorkers bound the activations of orphans at once, and orphanQueue
// those waiting: a dead process's conversations beyond them wait for their
// next request.
const (
	orphanWorkers = 8
	orphanQueue   = 1024
)

// startClusterNode starts node n, its files in dataDir/nats-n, and waits
// for the cluster to have a JetStream leader, which takes two of the three
// nodes: the first process started waits for a second.
func startClusterNode(dataDir string, n int, ports clusterPorts, log io.Writer) (*clusterNode, error) {
	if n < 1 || n > clusterNodes {
		return nil, fmt.Errorf("-cluster %d: want 1, 2 or 3", n)
	}
	var routes []string
	for i := 1; i <= clusterNodes; i++ {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports.route+i))
	}
	srv, err := embedded.Start(embedded.Options{
		Dir: filepath.Join(dataDir, fmt.Sprintf("nats-%d", n)), Name: fmt.Sprintf("node-%d", n),
		Listen: true, Port: ports.client + n, ClusterName: "reflexor", ClusterPort: ports.route + n, Routes: routes,
	})
	if err != nil {
		return nil, fmt.Errorf("node %d of the JetStream cluster: %w", n, err)
	}
	c := &clusterNode{srv: srv}
	if c.nc, err = srv.Connect(); err != nil {
		srv.Shutdown()
		return nil, err
	}
	if err := waitForLeader(c.nc, n, log); err != nil {
		c.close()
		return nil, err
	}
	// The owner id is new at each start: a restarted node is a new
	// process to its peers, which may have taken its conversations over.
	b := make([]byte, 4)
	rand.Read(b)
	owner := fmt.Sprintf("node-%d-%s", n, hex.EncodeToString(b))
	// A cluster that has just formed may leave a request unanswered
	// (its stream being created by another node, a leader moving): each
	// attempt is short, and made again for two minutes.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c.fleet, err = jetstream.OpenFleet(ctx, c.nc, clusterConfig, owner)
		cancel()
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			c.close()
			return nil, err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitForLeader waits, up to two minutes, until JetStream answers.
func waitForLeader(nc *nats.Conn, n int, log io.Writer) error {
	j, err := js.New(nc)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for said := false; ; {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := j.AccountInfo(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the JetStream cluster has no leader after two minutes (are two of the three nodes running?): %w", err)
		}
		if !said {
			fmt.Fprintf(log, "reflexor: node %d is waiting for another node of the cluster to start (-cluster 1, 2 and 3)\n", n)
			said = true
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// serve advertises url as where this process serves the conversations'
// API, and activates the conversations whose process died.
func (c *clusterNode) serve(url string, f *reflexor.Fleet) error {
	// Tried again, as OpenFleet is, while the cluster settles.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		err := c.fleet.Advertise(url)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return err
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	orphans := make(chan string, orphanQueue)
	for range orphanWorkers {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case id := <-orphans:
					f.Activate(ctx, id) // one process wins; the others find it taken
				}
			}
		}()
	}
	return c.fleet.WatchOrphans(ctx, func(id string) {
		select {
		case orphans <- id:
		default: // activated by its next request
		}
	})
}

// leave says that this process is leaving, as its shutdown begins: its
// peers wait for its conversations to be released rather than take them
// from it while it finishes with them.
func (c *clusterNode) leave() {
	if err := c.fleet.Leave(); err != nil {
		fmt.Fprintf(os.Stderr, "reflexor: %v\n", err)
	}
}

// close stops watching for orphans and stops the node, once
// reflexor.Fleet.Close has released the conversations and closed the fleet.
func (c *clusterNode) close() {
	if c.stop != nil {
		c.stop()
	}
	if c.nc != nil {
		c.nc.Close()
	}
	c.srv.Shutdown()
}
