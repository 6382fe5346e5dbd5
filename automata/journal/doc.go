// Package journal makes an automata machine durable: every input is
// journaled before it is applied, snapshots are taken now and then, and Open
// rebuilds the state as the newest snapshot plus a replay of the journal
// after it. Because transitions are pure, that is the state exactly; and
// because effects and jobs are derived from state, the rebuilt machine
// restarts exactly the work its state calls for. An agent survives crashes,
// restarts and redeploys without losing acknowledged work.
//
//	store, err := journal.OpenBolt(filepath.Join(dir, "agent.db")) // dir must exist
//	...
//	m, err := journal.Open(store, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
//		Codec: journal.JSONGob[decl.AgentState](decl.DecodeInput),
//	}, agent.WithEffects(effects), agent.WithJobs(jobs), automata.WithAdmission(stamp))
//	...
//	err = m.Dispatch(ctx, input) // nil: on disk and applied; an error: not journaled
//
// (ExampleOpen runs it.)
//
// A durable machine is an automata machine with a write-ahead journal
// (automata.WithCommitter): Open takes the same automata options as
// automata.New — effects, jobs, events, admission, the purity check — and
// they behave the same. Fail-stop too: a panic in a transition, subscriber
// or effect stops the machine (Err, Done; see the automata package), and
// the inputs journaled before it are applied by the next Open. Done closes
// when the machine fails, or when Close has finished (snapshot taken, store
// closed), so a supervisor may reopen the store as soon as it fires.
//
// A codec is user code too, but one that panics is not fail-stop: a panic
// in EncodeInput or DecodeInput while an input is admitted rejects that
// input (Dispatch returns the error); in a snapshot it is an error (OnError,
// or Close's); while Open reads a record it is an error naming the record,
// and not a *CorruptError, since the record is intact. Each is logged with
// its stack.
//
// # Admission and acknowledgement
//
// An input is journaled only once it has been admitted: the admission steps
// (automata.WithAdmission, which may stamp it with the time of arrival) have
// accepted it, it has survived the codec's round trip (encoded, then decoded
// and validated exactly as recovery will read it, so that an input that
// could not be read back is refused now, naming the field, rather than
// acknowledged and then fatal at every later Open), and its transition has
// returned. The transition is applied to the decoded input, so the live
// state is the one replay rebuilds.
//
// Dispatch returns nil only once the input is on disk (fsync'd) and applied.
// An error from Dispatch means the input is not in the journal and never
// will be, so a caller may retry without duplicating it: a rejected input,
// a closed or failed machine, a failed append, or ctx ending before the
// input was taken up for journaling (once taken up, Dispatch waits for the
// outcome). Concurrent Dispatch calls are group-committed: one store Append,
// one bbolt transaction, one fsync for every input that arrived while the
// previous group was being written. Inputs are applied in journal order, so
// the state after input n is always the fold of inputs 1..n.
//
// Effects and jobs dispatch through the journal too, without waiting for
// the disk (they run where waiting could deadlock); a job's inputs are
// dropped once its context is cancelled, before they are journaled, so the
// journal never holds an input the live machine did not apply. An input of
// theirs that is rejected is reported as an automata.InputRejected event,
// and a job whose input was rejected fails with an
// *automata.RejectedInputError and is started again at the next reconcile:
// a store that failed one append does not leave the agent waiting for a
// result it lost.
//
// # Jobs after a restart: at least once
//
// A job whose result was not journaled before a crash runs again after the
// restart, under the same key, because the restored state still calls for
// it. Delivery to the outside world is therefore at least once. The job's
// key (automata.JobKey(ctx)) is a function of state and the same across
// restarts: pass it to the LLM or tool as the idempotency key, and the far
// side can make it exactly once.
//
// # Snapshots and storage
//
// A snapshot of the state is taken in the background once SnapshotEvery
// inputs (default 10,000) have been journaled since the last one and take
// as many bytes as it did, and on Close. The second condition keeps the
// cost of snapshots per input proportional to the input, not to the state:
// a state that has grown large is written again only after as many bytes
// of new inputs, and the journal that Open replays after a snapshot is
// never much longer than the snapshot itself. KeepSnapshots (default 2) are
// kept; with Compact, journal records older than the oldest kept snapshot
// are deleted. Storage per input is the input's bytes plus about 25 bytes
// (the frame, and the key in bbolt) — it does not grow with the state, as a
// full checkpoint per input would; the snapshots add the size of the state a
// bounded number of times. TestStorageGrowsWithInputsNotState measures it on
// the starter agent for a conversation of 100, 10,000 and 100,000 messages
// (JSONGob, snapshots every 1,000 inputs at the least, two kept,
// compacted): 254, 191 and 181 bytes stored per input, of which 144 are the
// input itself; the journal alone, before any compaction, is 169 bytes per
// input.
//
// # Records, corruption and recovery
//
// Every journal record and snapshot is a frame (see AppendFrame): a kind, a
// CRC-32C checksum, the sequence number, the time, the version of the spec
// it was written under and the payload. On Open:
//
//   - any damaged or missing journal record stops Open with a *CorruptError
//     naming its sequence number; nothing is skipped. That includes the last
//     record: a bbolt transaction is committed whole or not at all, so a
//     damaged last record was acknowledged, not torn by a crash. The
//     operator's repair path, Options.QuarantineCorruptTail, moves it to
//     the store's quarantine (kept, not destroyed) and goes on, with a
//     warning, for one Open set up on purpose;
//   - a damaged snapshot is passed over, with a warning, for an older one
//     when the journal still reaches back to it (the state is the same);
//     otherwise it is a *CorruptError too;
//   - a failed Open writes nothing to the store.
//
// Damage to the bbolt file itself (meta pages, page headers, the tree, a
// truncated file) is a *CorruptError with Kind 0, naming the file, the page,
// its offset and what was expected; never a crash. OpenBolt reads and checks
// the whole file before bbolt maps it, and a later fault on the map (the file
// changed under the process, a disk read error) is an error from the call
// that met it. bbolt keeps two meta pages and silently falls back to the
// older when the newer is damaged, which would open the store one
// transaction behind; OpenBolt refuses that, and OpenBoltWith with
// BoltOptions.AcceptRollback is the operator's way through. A failed OpenBolt
// writes nothing: only a new (absent or empty) file is initialised. What no
// check can see is a disk that acknowledges a write and then loses it,
// leaving an older, intact version of a meta page or of the page that holds
// the buckets.
//
// # Changing the spec of a durable agent
//
// A journal outlives the code that wrote it, and the spec changes in
// between: an input gains a required property, a state property is
// renamed. Each record and snapshot carries the version of the spec it was
// written under, and Open reads it under that version and brings it up to
// the current one, step by step, before it is applied. The versions come
// from Options.Versions or, by default, from the definition: agentgen
// records the spec's versions in the history file beside the spec, and the
// generated impl/agent.Definition() carries them (impl/agent.Versions(),
// a *migrate.History; see package automata/migrate and agentgen's "Versions
// of the spec"). What a change of the spec does to a journal:
//
//   - A compatible change (a new optional property, a new input type, a
//     widened enum or constraint): records of the older version are read as
//     they are. A new actor or observation changes the state's shape: a
//     snapshot of the older version is passed over, with a warning, and the
//     state is rebuilt by replaying the journal from an earlier snapshot
//     whose state no change has touched since, or from the start. When the
//     journal no longer reaches back (Compact), Open fails and says so: a
//     state migration for the step, optional for a compatible change, is
//     then what a compacted journal needs (agentgen generate says so). A
//     snapshot its codec cannot decode as its own version's state (gob, when
//     an interface field holds a type registered under another version's
//     name) is replayed over in the same way, never called corrupt.
//   - A breaking change (a new required property, a removed or renamed
//     property or input type, a changed type, a narrowed enum or
//     constraint, a changed state shape) has a migration, written by hand
//     in impl/migrations, which agentgen check insists on: an input of the
//     older version is decoded into its own version's types (decl/v1) and
//     migrated, and what the migration makes of it is validated by the
//     current version's schema, as a live input is (a migration that makes
//     an input the schema refuses stops Open, naming the migration); a
//     record of the older version was validated when it was journaled, and
//     its frame is checksummed. A migration may drop an input (of a removed
//     type, say),
//     which Open reports with a warning naming its sequence number and
//     type, and which stays in the journal (Inputs returns it with Dropped
//     set; StateAt and replay pass over it). A snapshot of the older version
//     is decoded into the older state and migrated, never decoded into a
//     state of another shape, so no field is silently dropped or zeroed;
//     without a state migration it is passed over for replay, as above.
//   - A code rollback: a record written under a version newer than the
//     binary's stops Open with a *migrate.VersionError that says so; no
//     older binary guesses what a newer version means. Run the newer binary
//     again (migrations only go forward). A snapshot of a newer version is
//     passed over, with a warning, when the journal reaches back to an older
//     one: a newer binary that opened the journal and wrote no record leaves
//     it to the older one.
//
// A record that does not decode under its own version is corrupt (a
// *CorruptError), and the error names the version; one that only the
// current version could not read is never called corrupt. A journal
// written before records carried versions reads as version 1, and one that
// stays at version 1 is written exactly as before (the version is in the
// frame only from version 2 on). New records are written under the current
// version; Entry.Version says which version each input was journaled under.
//
// Migrations cost little at Open: replaying 100,000 user messages of the
// persistent example journaled under version 1, each decoded, migrated to
// version 2 and validated, took 1.21 times as long as the same journal
// written under version 2 and decoded as it is (1.51-1.57 s against
// 1.24-1.30 s per Open, three runs each, one run, 2 cores), measured with
//
//	go test -run XXX -bench ReplayAcrossVersions -benchtime 3x -count 3 ./automata/agents/persistent/
//
// # Time travel and determinism
//
// StateAt(seq) rebuilds the state after any journaled input, and Inputs lists
// the journal with sequence numbers and times, for debugging and tests. With
// VerifyReplay, each snapshot is checked against a replay from the previous
// one; a transition that reads the clock or mutates shared state makes them
// differ and is reported as a *NondeterminismError.
//
// # Codecs
//
// A Codec turns inputs and states into bytes. JSON writes both as JSON;
// JSONGob journals inputs as JSON and snapshots the state with gob, whose
// decoding is about nine times faster for a large state. For a generated
// agent, pass decl.DecodeInput: inputs are an interface, their JSON carries
// the "type" discriminator, and DecodeInput validates each against its
// schema as it reads it back.
//
// # Stores
//
// Store is the small interface the Machine needs; OpenBolt gives the
// embedded default, one go.etcd.io/bbolt file (ACID, no server). A
// distributed backend implements the same seven methods: package
// automata/journal/jetstream keeps the journal on NATS JetStream, with one
// owner per agent and failover between hosts. Both pass the same store
// conformance suite.
//
// # Speed
//
// Measured with
//
//	go test -run XXX -bench 'DurableDispatch|Recover' -benchtime 3s -count 3 ./automata/journal/
//
// on this project's 2-core CI machine (AMD EPYC, Go 1.26), the disk's fsync
// taking about 0.33 ms and a bbolt commit two of them:
//
//	BenchmarkDurableDispatch/producers=1    2,350-2,620 inputs/s        1 fsync per input
//	BenchmarkDurableDispatch/producers=64  59,700-67,600 inputs/s      0.02 fsyncs per input (about 50 inputs per commit)
//	BenchmarkRecover/clean                  0.48-0.53 s  1,000,000 starter-agent inputs, snapshot at the last one
//	BenchmarkRecover/crash                  0.69-0.75 s  the same, crashed before the last snapshot: 9,999 inputs replayed
//
// (quiet machine, load average below 1.6; under a concurrent build, 64
// producers ran at 43,000-62,000 inputs/s, as each commit took longer.)
// Admission (the codec round trip of every input, the waiter of each
// Dispatch) did not cost more than the noise of this loaded machine: the
// time per input, new against old, median of the ratios of alternating
// pairs of runs, was 0.98× to 0.99× with 1 producer and 0.92× to 1.03× with
// 64 (three sets of six to ten pairs); the CPU time of 200,000 inputs from 64 producers was 1.07×
// (1.08-1.24 s against 1.03-1.09 s), the price of decoding each input
// once more before it is journaled (17 allocations per input instead of
// 10).
//
// Recovery is decoding the snapshot (a 1,000,000-message state, 82 MB as
// gob) and replaying the inputs after it, each decoded and validated by
// decl.DecodeInput; the replay is cheap because the starter's transitions
// append with automata.Append, in amortized O(1), where copying the message
// slice would make 9,999 inputs cost minutes.
//
// # Many agents in one file
//
// OpenBoltFleet keeps the journals of many agents in one bbolt file, a Fleet
// of them by id: Create (with an AgentInfo: owner, time created), Open (the
// agent's Store, one at a time), Info, List and Delete.
//
//	fleet, err := journal.OpenBoltFleet(filepath.Join(dir, "agents.db"))
//	...
//	err = fleet.Create("ann-1", journal.AgentInfo{Owner: "ann", Created: time.Now()})
//	store, err := fleet.Open("ann-1") // ErrInUse while it is open
//	m, err := journal.Open(store, agent.Definition(), opts)
//
// The layout: bucket agents holds each agent's AgentInfo, as JSON, under its
// id; buckets agent-inputs, agent-snapshots and agent-quarantine hold, under
// the id, the agent's journal buckets, with the records a BoltStore keeps;
// and bucket log holds small Appends on their way to their agents. A fleet's
// file is not a store's: OpenBolt refuses it, and OpenBoltFleet a store's,
// saying which it is.
//
// One commit for all agents: each agent's Machine groups its concurrent
// inputs into one Append, as on a BoltStore, and the fleet groups the
// Appends of all its agents. An Append that arrives while a commit is in
// flight joins the next one with every other that arrived meanwhile: one
// bbolt transaction, one fsync, no delay added. Each agent's records are
// checked inside it on their own (consecutive, following its journal) before
// any is written, so an Append refused fails alone and the others commit.
// Putting a few records in each of a thousand agents' inputs would make
// bbolt write two or three pages an agent, the path from the agent's last
// page up to the root; so an Append of less than 8 KiB goes to the log
// instead, one checksummed entry an Append, packed in commit order, a few
// pages for the whole commit. The log is moved to the agents' inputs, many
// records an agent in one transaction, once it holds
// BoltFleetOptions.LogBytes (16 MiB); an agent's share before its Prune or
// Quarantine; and the whole log when the fleet opens (what a crash left
// there) and closes. A Scan writes nothing: it reads the agent's records
// where they are, its inputs and then its entries in the log, so that
// activating an agent (its journal replayed) costs no commit. BoltFleet.Stats counts commits, Appends and moves.
// Snapshots, prunes, quarantines, creates and deletes are transactions of
// their own.
//
// Isolation: an agent's records are its own, and a damaged one stops that
// agent's Open as on a store, and no other agent. Damage to the file that
// bbolt does not see is found as the fleet opens and confined to its agent:
// a meta that does not decode strictly as an AgentInfo, a key or bucket its
// journal never holds, a journal cut short, a log entry that does not check
// out. Open of that agent is then a *CorruptError naming it, List lists the
// others and then reports it (when its meta is what is damaged), Delete
// removes it, and every other agent works as before. Damage to the pages
// themselves (a page header, a page reached twice, keys out of order)
// refuses the whole fleet with a *CorruptError that names the agent whose
// pages hold it: bbolt's own open walks every page of the file on a
// goroutine of its own, where such damage would crash the process, and
// opening the file without that walk would mean a free list written at
// every commit. After open, a fault on the map breaks the whole fleet, and
// bbolt panicking on one agent's pages breaks that agent's Store alone. Of
// random damage (TestDamagedFleetIsAnErrorOrIntact: a byte flipped or the
// file cut short, 180 cases over a fleet of three agents), about half
// opened with every input of every agent, about half refused the whole
// fleet, and 1 to 8 cases in a run refused one agent and opened the others;
// none crashed or lost an input silently.
//
// Limits: one process has the file open; an agent has one Store at a time;
// the fleet's Close fails while a Store is open. A Scan holds a read
// transaction while its callback runs (a Machine's Open replays inside one),
// and bbolt grows its map only once none is open, so a commit that needs a
// larger map waits for it, with every Append in that commit; the callbacks
// of Scan and Snapshots must not call the fleet. The log moved at
// LogBytes holds up the commits behind it while it is moved. An open Store
// takes 172 bytes of heap; an agent not open, none of its own but the index
// of what it has in the log, until that is moved (an open fleet of 10,000
// agents, its log moved, took 26 bytes an agent, bbolt's free list;
// BenchmarkFleetHeapPerAgent).
//
// Speed, measured with
//
//	go test -run XXX -bench FleetDurableInputs -benchtime 3s ./automata/journal
//
// on the 2-core machine of Speed above, 4,000 producers dispatching at once
// to real Machines on a fleet:
//
//	agents=1000,producers=4     372,200 inputs/s   0.00025 commits an input (about 975 agents' Appends a commit)
//	agents=1,producers=4000     441,500 inputs/s   0.00098 commits an input (about 1,000 inputs an Append)
//
// that is 0.84 times as fast spread over 1,000 agents as on one. The
// machine is shared and noisy; seven runs of that command, each case beside
// the other in one run, gave ratios of 0.68, 0.72, 0.82, 0.82, 0.84, 0.89
// and 0.92 (median 0.82), the thousand agents at 294,000-427,000 inputs/s;
// six more on the code as it is now, 0.63, 0.69, 0.83, 0.84, 0.85 and 0.86
// (median 0.835): one run in three falls below 0.8, where other work on
// the machine held up the thousand agents' goroutines.
// Before a commit takes the queue, its loop lets the goroutines that are
// ready to run go first, for as long as they add to the queue (at most 8
// turns of the scheduler): the Machines that are about to append then join
// this commit instead of the next. Without it a commit held about 29 agents'
// Appends, 0.009 commits an input, and four runs alternating with the above
// gave ratios of 0.49-0.71 (median 0.60). What is left of the gap is each
// Machine's cost per Append, which one agent pays once for 1,000 inputs and
// a thousand agents once for 4: with the fleet's commits made to write
// nothing, 1,000 agents ran at 312,000 inputs/s against 563,000 for one.
// Before the log, every Append went to its agent's inputs, and 1,000 agents
// ran at 137,000 inputs/s (0.29), each commit writing 2.5 pages an agent.
package journal
