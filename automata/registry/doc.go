// Package registry runs agents by id: one durable agent per conversation,
// thousands in one process, each activated on its first use and deactivated
// when idle, as Orleans runs virtual actors. An agent exists by id whether or
// not it is active; exactly one activation of an id runs in a registry.
//
//	fleet, err := bolt.OpenFleet(filepath.Join(dir, "agents.db")) // many agents, one file
//	reg, err := registry.New(registry.Config[decl.AgentState, decl.AgentInput]{
//		Fleet: fleet,
//		Open: func(id string, s journal.Store) (*journal.Machine[decl.AgentState, decl.AgentInput], error) {
//			return journal.Open(s, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
//				Codec: journal.JSON[decl.AgentState](decl.DecodeInput),
//			}, agent.WithJobs(jobs))
//		},
//	})
//	id, err := reg.Create("", owner)             // a new agent, a random id
//	seq, err := reg.Dispatch(ctx, id, input)     // activates it if need be
//	a, release, err := reg.Get(ctx, id)          // hold it: a.Machine()
//	defer release()
//
// # Activation
//
// Get activates an agent that is not active: Config.Open opens its durable
// machine on its store in the fleet, which recovers its state from the newest
// snapshot and the journal after it, and starts the jobs that state calls for.
// Concurrent Gets of one id wait for one activation. A Get holds a lease,
// released by the function it returns: an agent with a lease held is not
// deactivated, except by Delete or Close.
//
// # Deactivation
//
// An agent is idle when no lease is held on it and no job of its runs
// (journal.Machine.Jobs). One idle for Config.IdleTimeout (default 5 minutes)
// is deactivated: its machine is closed — its jobs, none running, have
// nothing to cancel; a snapshot is taken, so the next activation replays
// nothing; its store is closed — and it leaves memory. A job in flight keeps
// its agent active however long it runs. Config.MaxActive (default 1,000)
// caps the agents active at once: activating one more deactivates the least
// recently used idle one, or waits for one being deactivated already; when
// every active agent is in use, Get fails with ErrTooManyActive (an HTTP
// front answers 503 with Retry-After).
//
// Nothing acknowledged is lost across a deactivation: an input acknowledged by
// the journal is in the snapshot or in the journal after it, and the next
// input for the agent activates it again. An agent whose machine failed
// (fail-stop) is taken out at its next Get and activated again from its
// journal.
//
// A deactivated agent costs no memory in the registry: nothing of it is kept
// but its id's place in the fleet.
//
// # Speed
//
// Measured with
//
//	go test -run XXX -bench FleetOf10000 -benchtime 1x ./automata/registry/
//
// on this project's 2-core machine (AMD EPYC, Go 1.26, shared): 10,000 agents
// of the tests' small model in one bbolt file (bolt.OpenFleet), each a
// snapshot of 10 inputs and 5 inputs after it. Activating one — its info and
// store from the fleet, the newest snapshot decoded, the 5 inputs replayed, a
// Get's lease — took 21 µs at the median and 79 µs at the 99th percentile
// the first time, 24 and 99 µs the next, the file in the page cache (one
// run). (The first activation took 398 µs while a Scan moved the agent's
// latest inputs out of the fleet's shared log, a commit with its fsync;
// it now reads them there.) The live heap grew by 3.5 KB per active agent
// (its machine, its store, the registry's entry), and by 52 bytes per agent
// once all were deactivated again: the fleet's index of the entries the
// agents have in its log, which BoltFleetOptions.LogBytes bounds. An idle
// agent costs its place in the file, not memory. The commit of many agents'
// inputs together is measured in package automata/journal.
//
// # Across processes
//
// Over a fleet that several processes share (automata/journal/jetstream's
// Fleet), activating an agent claims it for this process and deactivating
// it releases it; a Get of an agent another process has active fails with
// an error wrapping journal.ErrInUse (and the jetstream *NotOwnerError
// naming the holder), which an HTTP front routes (automata/httpbridge,
// FleetConfig.Peers). A store that another process fences (it took the
// agent) makes the registry deactivate the agent at once: its jobs are
// cancelled, and its leases' machine answers errors (Stats.Fenced counts
// these).
//
// # Owners
//
// Every agent has an owner, the identity that created it (Create's owner,
// kept in the fleet's journal.AgentInfo). Get and Delete do not check it;
// Owned, ListOwned and DeleteOwned do, for an HTTP front (automata/httpbridge's
// Fleet) that lets a caller see and touch only its own agents. An id may be
// deleted and created again for another owner: a front checks the owner of
// the activation Get returns (Agent.Info), and deletes with DeleteOwned.
package registry
