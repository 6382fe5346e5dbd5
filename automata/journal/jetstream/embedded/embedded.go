// Package embedded runs a NATS server with JetStream inside the process:
// for demos (a durable agent on JetStream with nothing to install) and for
// tests (a real server, not a mock, started in milliseconds under a
// temporary directory).
//
//	srv, err := embedded.Start(embedded.Options{Dir: "data/nats"})
//	...
//	defer srv.Shutdown()
//	nc, err := srv.Connect() // in-process: no socket
//
// With Options.Listen the server also listens on a loopback port (URL), so
// that other processes on the machine can connect; it never listens beyond
// the loopback interface. A production deployment runs nats-server as a
// service instead, and connects with nats.Connect(url).
//
// OpenAgent is a program's -nats flag: it opens one agent's journal on the
// server at a URL, or on a server it starts in the process, and claims the
// agent, waiting out the lease of a crashed earlier run.
package embedded

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Options configure an embedded server.
type Options struct {
	// Dir is where JetStream keeps its files. Required.
	Dir string
	// Listen makes the server listen on 127.0.0.1 (Port, or a free port
	// when 0) for clients of other processes.
	Listen bool
	Port   int
	// Name names the server (default: a generated one).
	Name string
	// Cluster, when not empty, makes the server one node of a cluster
	// named ClusterName listening for routes on ClusterPort of 127.0.0.1
	// and connecting to the other nodes' route URLs in Routes.
	ClusterName string
	ClusterPort int
	Routes      []string
	// SyncInterval, if positive, makes the server fsync its files every
	// SyncInterval instead of at every write (nats-server's
	// sync_interval, whose default is 2 minutes): an acknowledged write
	// survives a crash of the process, not of the machine, unless a
	// cluster replicates it. Zero: every write is fsync'd before it is
	// acknowledged (sync_always), as the bbolt store's commits are.
	SyncInterval time.Duration
}

// Server is a running embedded server. It holds a lock of its Dir (on
// Unix) until Shutdown: a second server on the same files, in this process
// or another, fails to start. nats-server keeps no such lock, and two
// servers writing one store would corrupt it.
type Server struct {
	*server.Server
	lock   *os.File
	unlock sync.Once
}

// Start starts a server and waits until it accepts connections. Unless
// Options.SyncInterval says otherwise, every write JetStream acknowledges
// has been fsync'd to Dir (sync_always), as the bbolt store's commits are:
// an acknowledged input survives a power cut of a single-node deployment.
func Start(o Options) (*Server, error) {
	if o.Dir == "" {
		return nil, errors.New("embedded: Options.Dir is required")
	}
	lock, err := lockDir(o.Dir)
	if err != nil {
		return nil, err
	}
	unlock := func() {
		if lock != nil {
			lock.Close()
		}
	}
	opts := &server.Options{
		ServerName:   o.Name,
		JetStream:    true,
		StoreDir:     o.Dir,
		SyncAlways:   o.SyncInterval <= 0,
		SyncInterval: max(o.SyncInterval, 0),
		DontListen:   !o.Listen,
		Host:         "127.0.0.1",
		Port:         o.Port,
		NoSigs:       true,
		NoLog:        true,
	}
	if o.Listen && o.Port == 0 {
		opts.Port = server.RANDOM_PORT
	}
	if o.ClusterName != "" {
		opts.Cluster = server.ClusterOpts{Name: o.ClusterName, Host: "127.0.0.1", Port: o.ClusterPort}
		for _, r := range o.Routes {
			opts.Routes = append(opts.Routes, server.RoutesFromStr(r)...)
		}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("embedded: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		s.WaitForShutdown()
		unlock()
		return nil, errors.New("embedded: the server did not get ready in 30s")
	}
	return &Server{Server: s, lock: lock}, nil
}

// Connect connects to the server in-process, without a socket.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	nc, err := nats.Connect("", append([]nats.Option{nats.InProcessServer(s.Server)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("embedded: connecting: %w", err)
	}
	return nc, nil
}

// URL is the loopback URL of a server started with Listen.
func (s *Server) URL() string { return s.ClientURL() }

// Shutdown stops the server, waits until it has, and lets go of its Dir.
func (s *Server) Shutdown() {
	s.Server.Shutdown()
	s.Server.WaitForShutdown()
	s.unlock.Do(func() {
		if s.lock != nil {
			s.lock.Close()
		}
	})
}

// FreePorts returns n distinct free TCP ports of 127.0.0.1, for the nodes
// of a cluster started in one process.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("embedded: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
