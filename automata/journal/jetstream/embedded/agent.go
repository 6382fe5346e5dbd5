package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/moora-go/moora/automata/journal/jetstream"
	"github.com/nats-io/nats.go"
)

// InProcess is the URL that makes OpenAgent start a server in the process
// instead of connecting to one: a program's -nats flag takes it beside real
// URLs.
const InProcess = "embedded"

// AgentOptions say where OpenAgent finds an agent's journal.
type AgentOptions struct {
	// URL is the NATS server's URL (nats://host:4222, or several, comma
	// separated), or InProcess: a server started in this process, with its
	// files in Dir, which no other process can reach. Required.
	URL string
	// Dir is where the InProcess server keeps its files; required with
	// it, unused otherwise.
	Dir string
	// Agent is the agent's id. Required.
	Agent string
	// Owner is this process's id in the lease and the owner-epoch record
	// (default: the host name and the process id).
	Owner string
	// Config names the JetStream resources (the zero value: the
	// defaults).
	Config jetstream.Config
	// Wait bounds how long OpenAgent waits, on a server at a URL, while
	// another owner holds the agent's lease (default: 3/2 of the TTL, see
	// jetstream.ClaimWait):
	// long enough to wait out the lease of an earlier run that crashed;
	// then it fails with the *jetstream.NotOwnerError naming the holder.
	Wait time.Duration
	// Waiting, if set, is called with the holder's id each time OpenAgent
	// finds the lease held, before it waits.
	Waiting func(holder string)
}

// OpenAgent opens the journal of one agent on NATS JetStream for a program
// that runs that agent alone, as the examples' -nats flag does: it connects
// to the server at o.URL and claims the agent (jetstream.ClaimWait),
// waiting for a crashed earlier owner's lease to expire; or it starts a
// server in the process (o.URL InProcess), which locks o.Dir, and takes the
// agent over at once (jetstream.Takeover): a lease in files no other
// process can open was left by an earlier run that died, so a restart after
// kill -9 does not wait. The store is the agent's one owner until it is
// closed; release closes the connection and stops the server OpenAgent
// started, after the store is closed (journal.Machine.Close closes it).
//
// OpenAgent is in this package, not in package jetstream, because it may
// start a server: a program that imports only package jetstream does not
// link nats-server, and one that names a -nats flag with an embedded mode
// opts into it by importing this package.
func OpenAgent(ctx context.Context, o AgentOptions) (store *jetstream.Store, release func(), err error) {
	if o.URL == "" {
		return nil, nil, errors.New("embedded: AgentOptions.URL is required: a NATS server's URL, or InProcess")
	}
	if o.Owner == "" {
		host, _ := os.Hostname()
		o.Owner = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	var srv *Server
	var nc *nats.Conn
	if o.URL == InProcess {
		if o.Dir == "" {
			return nil, nil, errors.New("embedded: AgentOptions.Dir is required for an in-process server")
		}
		if srv, err = Start(Options{Dir: o.Dir}); err != nil {
			return nil, nil, err
		}
		nc, err = srv.Connect(nats.Name(o.Owner))
	} else {
		nc, err = nats.Connect(o.URL, nats.Name(o.Owner))
		if err != nil {
			err = fmt.Errorf("embedded: connecting to NATS at %s: %w", o.URL, err)
		}
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
		return nil, nil, err
	}
	var s *jetstream.Store
	if srv != nil && locked {
		// The server is this process's, on files it holds the lock of:
		// a lease in them is an earlier process's, which died.
		s, err = jetstream.Takeover(ctx, nc, o.Config, o.Agent, o.Owner)
	} else {
		s, err = jetstream.ClaimWait(ctx, nc, o.Config, o.Agent, o.Owner, o.Wait, o.Waiting)
	}
	if err != nil {
		release()
		return nil, nil, err
	}
	return s, release, nil
}
