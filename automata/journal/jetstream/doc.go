// Package jetstream keeps the journal of durable agents on NATS JetStream,
// so that agents outlive the machine they run on: any host connected to the
// same JetStream can take an agent over, replay it from its newest snapshot,
// and restart the jobs its state calls for.
//
// # The store
//
// Store is a journal.Store. Every agent has a subject in one shared stream
// (Config.Stream, subjects <Config.Subject>.in.<agent>); each journal
// record is one message holding the record's frame, with its sequence
// number in the Moora-Seq header. Snapshots are objects <agent>/<seq> of an
// Object Store bucket (Config.Snapshots), which chunks them, so a state may
// be larger than a message.
//
// Every append carries the stream sequence of the last message on the
// agent's subject as the store knows it (Nats-Expected-Last-Subject-
// Sequence): an append after someone else's write fails, and the store is
// then fenced (ErrFenced; Fenced, Err) and refuses every later write. An
// append of several records (a group commit) is one message holding them
// all (headers Moora-Seq, the first's number, and Moora-Count; see
// MessageRecords), stored whole or not at all, as the journal requires;
// one too large for a message (over 1,000 records or 512 KiB) is an atomic
// batch (server 2.12 or later; the stream allows atomic publish). A Prune
// whose first record kept is inside a group keeps the group's message and
// writes the number below which records are gone on
// <Config.Subject>.floor.<agent>; a Quarantine of the journal's last
// record, inside a group, appends the group's other records as one that
// replaces it (Moora-Replaces) before deleting it, which the next Open
// finishes if the store stopped in between. Each Append's message ids are
// its own, and a request that times out is sent again with the same ones
// until the server answers, so that a record whose acknowledgement was
// lost is neither stored twice nor reported as not stored: a cluster, or an
// atomic batch, answers that the copy is a duplicate; a single server
// refuses it for the expected last sequence, which it checks first, and
// the store then finds its own last message id at the end of the subject
// (where another's fences it). If no answer comes within three timeouts,
// or one that says nothing of the first request, the store fences itself
// rather than guess.
//
// With Config.CombineAppends, the appends of many agents that wait at the
// same time on one connection, each one message, go to the server as one
// atomic batch: each message keeps its subject, its expected last subject
// sequence and its message id, and the batch is stored whole or not at
// all, so every agent's append is fenced as it would be alone. A batch
// that is refused (one of its agents fenced, too many batches in flight)
// stored nothing, and each of its appends is then sent alone by its own
// store, which decides it for that agent only; one whose answer does not
// come is looked for, append by append, as the last message of each
// subject with its message id, and sent alone where it is not there (and
// looked for again if that is refused because the subject moved on). One
// combined batch per connection and stream is in flight at a time; an
// append that waits alone is sent alone. A server that fsyncs every write
// fsyncs such a batch once (see "Speed").
//
// The rules of the journal package hold unchanged: Dispatch returns nil
// once JetStream has acknowledged the record (on a single server, set
// sync_always, as the embedded server does, for the fsync that the bbolt
// store makes; on a cluster, a majority of replicas has it), an error means
// it is not in the journal, a damaged record stops Open with a
// *journal.CorruptError, and Quarantine copies the record to
// <Config.Subject>.quarantine.<agent> before deleting it. A message on an
// agent's subject that is neither a record nor an owner-epoch record is a
// *journal.CorruptError (Kind 0) naming the stream, the message and what is
// wrong with its headers.
//
// The store passes the journal's store conformance suite, as the bbolt
// store does, on a single embedded server and on an embedded three-node
// cluster with every stream and bucket replicated three times.
//
// # One owner per agent, fenced by writing
//
// Claim makes a process the owner of an agent. Ownership is a key of the
// leases bucket (Config.Leases), created only if absent, which expires
// Config.TTL after its last write; the owner renews it every TTL/4. A
// lease alone does not stop a process that was paused (SIGSTOP, a long GC,
// a frozen VM) and wakes up believing it still owns the agent, so the new
// owner then fences the journal by writing: it appends an owner-epoch
// record (headers Moora-Epoch, the lease's revision; Moora-Owner;
// Moora-Last, the journal's last sequence number then) with the expected
// last subject sequence. The old owner's next append carries an older
// expected sequence and fails (JetStream's wrong-last-sequence error, code
// 10071, or 10164 on a replicated stream): its store is fenced, and a Host
// drops the agent, cancelling its jobs, whose late results are refused and
// never journaled. Epoch records are not journal records: Scan passes over
// them, and the journal's frame format is the bbolt store's, unchanged.
//
// An owner also stops by itself: its store refuses to write once TTL*3/4
// has passed on the monotonic clock since the start of the last renewal
// that succeeded, which is before the lease can expire on the server; and
// the store is fenced as soon as that time passes, so a Host drops the
// agent without waiting for a write to fail.
//
// ClaimWait claims an agent whose lease another owner holds by waiting for
// the lease to be released or to expire: a program that runs one agent and
// is restarted after a crash waits out its earlier run's lease. The
// examples' -nats flag is embedded.OpenAgent, which connects to a server
// and calls ClaimWait, or starts one in the process, on files it locks, and
// calls Takeover: Claim for a caller that knows the holder is dead, which
// deletes the lease instead of waiting for it (the owner-epoch record still
// fences a holder that is alive after all). OpenAgent is in package
// embedded so that a program importing only this package does not link
// nats-server.
//
// # Hosts
//
// A Host runs many agents: those listed in the agents bucket (Host.Add)
// whose lease it holds. It claims every agent whose lease expires or is
// released, at once when the expiry's delete marker reaches its watch and
// otherwise within TTL/4 or so; opens the journal.Machine, which replays
// the newest snapshot and the journal after it; and the jobs that the state
// calls for start again, at least once, under the same keys: pass
// automata.JobKey to the LLM or tool as the idempotency key. Host.Close
// closes every agent (a snapshot each) and releases their leases, so that
// other hosts take them over without waiting for the TTL.
//
// Agents are addressed by id. Host.Dispatch to an agent that another host
// runs is refused with a *NotOwnerError naming the owner; a Host does not
// route requests itself. A front end sends to the owner (Host.Owner) and,
// on a *NotOwnerError, retries the host it names; or it uses a Fleet, whose
// agents are activated where they are first used and routed to (below).
// Claiming is first come, first served: a host that starts first claims
// every orphan.
//
// # Fleets
//
// Fleet is a journal.Fleet: the agents of a Config by id, each a key of the
// key-value bucket Config.Fleet holding its journal.AgentInfo as JSON, and
// each journal the Store on its subject. OpenFleet names the process (the
// owner in the leases it takes). Create writes the key only if absent;
// Open claims the agent (Claim: the lease and the owner-epoch record), so
// that an agent is open in one process at a time, and fails with
// journal.ErrInUse while it is open in this fleet or another process holds
// its lease (the error wraps the *NotOwnerError naming it); its store, a
// *FleetStore with Fenced and Err, releases the lease on Close. Info
// decodes the key strictly: anything but what Create wrote is a
// *journal.CorruptError naming the agent. The keys are read from the
// bucket stream's leader, so an agent is found as soon as Create returns.
//
// List sorts: the bucket gives its keys in the order they were written, so
// List holds every id after the one it starts from (64 bytes at most each)
// before calling fn with the first, and then reads one key per agent; an
// agent whose key is damaged is passed over, and its *journal.CorruptError
// returned at the end.
// Delete takes the agent's lease and removes its messages (journal and
// quarantine, one purge), its snapshots, oldest first, and its key, last:
// a Delete that stops midway leaves the agent listed, and Delete again
// finishes it. The agents of a Fleet are not those of the Hosts' bucket
// (Config.Agents); the fleet passes the journal's fleet conformance
// suite, on a single server and on a three-node cluster.
//
// # Many processes behind one API
//
// A Fleet shared by several processes, each with a registry over it
// (automata/registry) and an HTTP front (automata/httpbridge's Fleet with
// FleetConfig.Peers set to the jetstream Fleet), is one service: a client
// may send any request to any process.
//
//   - Activation is ownership. The registry activates an agent through
//     Fleet.Open, which claims its lease, and deactivates it by closing its
//     store, which releases the lease: one process has an agent active at a
//     time, the one that used it first. A process whose store is fenced
//     (another took the agent) deactivates it at once.
//   - Each process advertises where it serves (Advertise: a key of the
//     bucket Config.Hosts, renewed every TTL/4, gone TTL after the last
//     renewal), and a request for an agent that another process has active
//     is proxied there (Locate), streams included.
//   - A process that is dead is known by its address refusing connections
//     while it has not said it is leaving: the agent is taken from it at
//     once (Evict deletes the lease; the claim that follows fences it,
//     should it be alive after all) and activated where the request came
//     in. One that takes connections and answers nothing (paused, frozen),
//     or has no advertisement (lapsed), keeps its agents until its lease
//     expires, within TTL. A process shutting down calls Leave first: its
//     peers then wait for it to release its agents rather than take them.
//   - An agent whose owner died with jobs in flight comes back when its
//     lease expires: every process watches for that (WatchOrphans) and one
//     activates it, which starts those jobs again.
//
// What a client sees while its agent moves. A request in flight at the
// process that is killed is cut off: the client gets no answer, or a 502
// from the process it sent it to, which says the request may or may not
// have been applied. A request that is safe to send again is sent again by
// the front instead, to wherever the agent is then: a GET (a state stream
// resumes from its Last-Event-ID with the deltas it missed), and an input
// whose id (httpbridge.Config.InputID) the journal keeps, which the new
// owner answers as a duplicate if the dead one had journaled it. Requests
// that arrive meanwhile wait for the agent to be active again: a fraction
// of a second after a SIGKILL, and at most TTL and half a second after a
// pause. Nothing acknowledged is lost, nothing is applied
// twice, and a paused owner that wakes up is fenced before it can append.
//
// Measured by TestChaosAcrossProcesses (three host processes on a
// three-node cluster, the stream and buckets replicated three times, TTL
// 2 s; 200 agents activated by their first request, 50 clients following
// one each through the state stream of a host picked at random, six
// writers posting notes through hosts picked at random, each note sent
// until acknowledged; a host killed with SIGKILL and restarted every 1.5
// to 3 s, 20 rounds):
//
//	go test -run TestChaosAcrossProcesses -v ./automata/journal/jetstream/
//
//	20 rounds: 9,062 posts, 9,049 notes acknowledged, 0 not; 13 posts got
//	no answer (sent to the host killed) and were sent again; 9,089 notes
//	journaled, 2,337 owner-epoch records; 0 acknowledged lost, 0 journaled
//	twice, 0 appends by a fenced owner; followers: 2,224 deltas, 0
//	resyncs, 0 broken, each holding what a fresh snapshot shows; failover
//	(SIGKILL of an agent's owner to the next input acknowledged through
//	another host) p50 89 ms, p99 168 ms
//
// (2-core machine, without the race detector; with it, p50 508 ms and p99
// 1.05 s). On a machine starved of CPU the same invariants hold and the
// fleet slows down: run beside four processes that keep a core busy each,
// with the race detector,
//
//	CHAOS_BUSY=4 go test -race -run TestChaosAcrossProcesses -v ./automata/journal/jetstream/
//
//	20 rounds: 712 posts, 676 notes acknowledged, 0 not; the posts not
//	answered 200: 2 with 503 and Retry-After (sent again), 34 cut off;
//	0 acknowledged lost, 0 journaled twice, 0 appends by a fenced owner;
//	followers: 0 broken; failover p50 4.1 s, p99 41 s; the slowest note
//	acknowledged 49 s after its first POST; 363 s in all
//
// (leases lapse when their owner cannot renew them in time, and agents
// move more often: 2,632 owner-epoch records against about 2,400 on an
// idle machine). A routed request waits for an owner that still holds the
// agent's lease (httpbridge's FleetConfig.MaxRouteWait): before it did,
// the same run took 655 s, 46 posts were answered 503, and failover was
// p50 6.8 s, p99 48 s. .ci/run runs it five times in a row, 8 rounds each.
// TestPausedOwnerAcrossProcesses pauses an owner with SIGSTOP: the
// next input through another host was acknowledged 2.53 s after the pause,
// with a TTL of 2 s.
//
// Killing a process that also runs a node of the cluster (as
// reflexor -users -cluster does) adds the cluster's own failover: the
// streams whose leader was on that node elect another, a few seconds
// during which requests wait for Config.Timeout and are answered 503 with
// Retry-After (their errors wrap journal.ErrUnavailable).
//
// # Limits
//
// A group commit of more than 1,000 records or 512 KiB is an atomic batch,
// which the server limits to 1,000 messages (max_batch_size) and to 50
// batches in flight per stream (the stores of a connection take turns, 32
// at a time, with the combined batches of CombineAppends): a group commit beyond 1,000 records is refused, and its
// inputs are rejected (Dispatch returns the error; nothing is journaled).
// A record must fit in the server's max_payload (1 MB by default). Only the
// journal's last record can be quarantined out of a group commit (the
// journal.Machine quarantines no other). Snapshots are
// listed by reading the names of every object in the bucket, all agents'
// (about KeepSnapshots per agent). Scan finds where to start by bisection
// on the agent's subject, then reads it one request per message, from the
// stream's leader.
//
// # Speed
//
// Durable inputs per second, each Dispatch waiting for its acknowledgement,
// on an embedded single server (R1, every write fsync'd) and on the bbolt
// store in the same run, one agent:
//
//	go test -run XXX -bench DurableDispatch -benchtime 3s -count 2 ./automata/journal/jetstream/
//
// on this project's 2-core machine (load average 1.2):
//
//	producers=1    bbolt   2,094-3,379 inputs/s   JetStream   3,977-4,285 inputs/s   ratio 1.18-2.05
//	producers=64   bbolt 103,829-104,727 inputs/s  JetStream 112,162-114,377 inputs/s  ratio 1.07-1.10
//
// One producer costs about the same: a fsync each. With 64 both commit
// about 50 inputs per fsync, JetStream as one message each.
//
// Many agents, each with its own producers (BenchmarkFleetDurableInputs:
// 1,000 agents; the embedded sides are bolt.Fleet, one file for all, and
// pebble.Fleet, one directory, the default backend), on a server that
// fsyncs every write, with Config.CombineAppends, and on one that fsyncs
// every two minutes, nats-server's default, where an acknowledged input
// survives a crash of the server's process but not of the machine, unless
// a cluster replicates it, without it:
//
//	go test -run XXX -bench 'FleetDurableInputs/agents=1000,producers=4' -benchtime 20000x -count 3 ./automata/journal/jetstream/
//	go test -run XXX -bench 'FleetDurableInputs/agents=1000,producers=1$' -benchtime 20000x -count 2 ./automata/journal/jetstream/
//
// on the same machine (load average 0.9-1.9; inputs/s, and in parentheses
// the ratio to bbolt's and to pebble's of the same run):
//
//	              bbolt            pebble           JetStream, fsync each write,          JetStream, fsync every 2 min
//	                                                CombineAppends
//	producers=4   135,582-170,598  122,239-169,389  36,511-81,728 (0.25-0.48, 0.30-0.48)  74,003-100,541 (0.50-0.74, 0.59-0.73)
//	producers=1   110,265-110,589   70,495-90,213   30,159-36,132 (0.27-0.33, 0.40-0.43)  50,796-55,354  (0.46-0.50, 0.56-0.79)
//
// In an earlier pair of runs (bbolt alone beside it) the same figures of
// producers=4 were 0.40-0.51 and 0.39-0.79 of bbolt's, and three more of
// producers=4 alone 0.35-0.44 and 0.52-0.62. The machine's load moves
// these a lot: with another test suite keeping both cores busy (load
// average 4), two runs gave 0.17-0.40 and 0.38-0.46.
//
// Each append its own message (without CombineAppends), the server that
// fsyncs every write did 12,815-16,639 inputs/s with 4 producers an agent
// (0.055-0.061 of bbolt's) and 4,273-5,008 with 1 (0.017-0.025).
//
// What bounds it: the stream's store applies one message at a time. With
// every write fsync'd and each append its own message, that is a fsync per
// message, about 4,000 to 5,000 a second on this disk, whatever the agent;
// each message is one agent's group commit (3.3 inputs with 4 producers an
// agent), while the bbolt fleet commits every agent's inputs in one
// transaction, one fsync for thousands. So the appends of the agents that
// wait together are one atomic batch (CombineAppends), which the server
// stores with one fsync: hundreds of agents' commits a fsync. Without the
// fsync the bound is the server's work per message on the two cores it
// shares with the 4,000 producers, and there a combined batch, which the
// server stages (on disk, for an R1 stream) before it commits it, costs
// more than it saves: with CombineAppends the 4-producer figure on that
// server was 0.30-0.35 of bbolt's, against 0.38-0.58 without in the same
// two runs. Spreading
// the agents over several streams, each with its own files (measured with
// 8, 16 and 64 streams, agents by a hash of their id), did not come near:
// concurrent fsyncs of 16 files scale about 7 times on this disk, but the
// server's fsync'd messages stopped at about 10,000 a second whatever the
// number of streams (0.12-0.14 of bbolt's, against 0.06 on one stream),
// and the default sync gained nothing. Before a group commit was one
// message (an atomic batch, staged message by message, at most 50 in
// flight a stream) the 4-producer figures were 1,062 and 1,724 inputs/s.
//
// Failover, from the owner's SIGKILL to the first job restarted by another
// host: BenchmarkFailover runs b.N rounds of TestFailoverAcrossProcesses
// (three host processes on an embedded server, a 1 s TTL, the owner killed
// at a random moment of an 800 ms job) and reports p50 and p99 over them:
//
//	go test -run XXX -bench Failover -benchtime 20x -count 3 ./automata/journal/jetstream/
//
// on the same machine (load average 2.0-6.0):
//
//	p50 1.06-1.15 s   p99 1.27-1.30 s   (three runs of 20 rounds; the p99 of 20 is the slowest)
//
// The lease expires at most TTL after the last renewal, which was up to
// TTL/4 before the kill; the rest is the expiry marker reaching the other
// hosts, the claim, the epoch record, the replay and the job's start.
package jetstream
