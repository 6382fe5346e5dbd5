// Package journal makes an automata machine durable: every input is
// journaled before it is applied, snapshots are taken now and then, and Open
// rebuilds the state as the newest snapshot plus a replay of the journal
// after it. Because transitions are pure, that is the state exactly; and
// because effects and jobs are derived from state, the rebuilt machine
// restarts exactly the work its state calls for. An agent survives crashes,
// restarts and redeploys without losing acknowledged work.
//
//	store, err := bolt.Open(filepath.Join(dir, "agent.db")) // dir must exist
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
// Every journal record and snapshot is a frame: a kind, a
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
// How a backend finds damage to its own files is its own: see package bolt.
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
//     they are; a snapshot is decoded into the newer state as it is, or
//     converted by generated code where a Go type changed (a value optional
//     now). A new actor or observation changes the state's shape: a
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
//     constraint, a changed state shape) has a migration in
//     impl/migrations, generated field by field where it can be and written
//     by hand for the rest, which agentgen check insists on: an input of the
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
// differ and is reported as an error wrapping ErrNondeterministic.
//
// # Replay against new code
//
// A journal is a regression suite: Replay runs a journal through the
// transitions of today's code, reading its records as Open does (an input
// of an earlier version of the spec migrated, a dropped one passed over, a
// damaged one a *CorruptError), and compares, at every position it can, the
// state it computes with the state the recorded code produced: at each
// snapshot, and at each record that carries a digest of the state after it
// (Options.Digests: DigestEvery on every record, for a journal that is a
// test corpus or an agent whose state stays small; DigestSampled, whose
// cost per input follows the input's size, for the others). Its report
// names the first divergence: the input (its position, time, version and
// JSON), the JSON Patch of what today's transition did with it, and the
// JSON Patch from the recorded state to the replayed one, at that position
// when a snapshot is there and otherwise at the next snapshot; with sparse
// digests or none, the span of inputs the divergence lies in. Accept writes
// the journal again with today's states and digests: a deliberate change,
// accepted as a golden file is updated. agentgen replay runs both over
// journal files, directories of them and fleets' files (see package
// automata/journal/replay, and cmd/agentgen's "replay").
//
// A digest is the first 8 bytes of the SHA-256 of the state's JSON, carried
// in the record's frame behind a flag: a journal without digests, which
// every journal written before them is, is written and read as before, and
// is compared at its snapshots. A journal with digests is not readable by a
// binary older than them (it calls the record corrupt).
//
// Replay costs little more than recovery: on 100,000 starter-agent
// messages with sampled digests (99 of them) and no snapshot, Replay took
// 1.03-1.46 times as long as Open of the same journal (4.2-5.5 s against
// 3.8-4.1 s; 1.39-1.41 times its CPU time), the two run in turn, two runs
// of three, on the 2-core machine under a load average of 9, measured with
//
//	go test -run XXX -bench BenchmarkReplay -benchtime 3x -count 2 ./automata/journal/
//
// The digest of a state is an encoding of it: BenchmarkStateDigest measures
// 430-480 MB/s of JSON for a log of notes (16 µs for a 7 KB state), which
// DigestEvery spends on every input.
//
// # Forks: what if, at input N, something else had happened
//
// Machine.Fork(N, store) starts a new agent on an empty store from the
// state after input N of a conversation, which it leaves untouched: the fork
// then lives on its own, with its own inputs and the jobs its state calls
// for. Nothing of the journal is copied: the fork's store gets one snapshot
// record, of the state after N, and the inputs up to N stay the original's
// (a fleet's AgentInfo.Fork names it and N; registry.Fork creates a fork by
// id, and the devpanel forks from time travel). The fork's StateAt and
// Inputs reach from N on; before it, StateAt answers ErrBeforeFork. The
// snapshot Fork wrote is kept for the fork's life (Store.Prune's
// keepSnapshot), whatever snapshots follow.
//
// The snapshot also carries the record of what the original's jobs answered
// after N, up to its next input from outside a job: what the model said, and
// the tools, to the input forked at (journaled with their job keys, which
// Options.JobKeys writes). Until the fork departs from that record, a job
// its state calls for under a key that answered in the original is answered
// with what it answered then (automata.WithJobAnswers), as recorded (past
// the admission steps), and does not run: a fork at a user's message
// re-runs the reply without a call of the model. An input the record does
// not hold (the user's next message, or a job that ran for real) departs
// it, and from then on every job runs (Departed). Entry.Recorded says which
// inputs a record answered; a restart of a fork takes its record up where it
// was. The record is bounded: MaxForkAnswers inputs, MaxForkAnswerBytes.
//
// A fork costs its state, not its history: forking a conversation of 10,000
// inputs on bbolt wrote 132 bytes in 1/56 of the time a copy of its journal
// took (618,766 bytes), with a state of 100 bytes; with a state that keeps
// every note (344,687 bytes), 0.56 of the bytes in 0.18 of the time:
//
//	go test -run XXX -bench BenchmarkFork -benchmem ./automata/journal/
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
// Store is the small interface the Machine needs, and Fleet keeps the
// Stores of many agents by id. The backends are packages of their own, side
// by side, and pass the same conformance suite:
//
//   - automata/journal/pebble, the embedded default: a
//     github.com/cockroachdb/pebble database in a directory, for one agent
//     (pebble.Open) or for many (pebble.OpenFleet), at one fdatasync a
//     commit, which the commits of many agents share;
//   - automata/journal/bolt: one go.etcd.io/bbolt file (ACID, no server)
//     for one agent (bolt.Open) or for many (bolt.OpenFleet, whose commits
//     group the inputs of all its agents), at two fdatasyncs a commit, with
//     no other dependency, and stricter on damage (see "Which embedded
//     backend" below);
//   - automata/journal/jetstream: the journals on NATS JetStream, with one
//     owner per agent and failover between hosts.
//
// The package holds what every backend shares: the durable Machine, the
// Store and Fleet contracts, the codecs, and the errors (errors.go).
//
// # Speed
//
// Measured with
//
//	go test -run XXX -bench 'DurableDispatch/.*producers=64' -benchtime 3s ./automata/journal/
//	go test -run XXX -bench Recover -benchtime 20x -count 2 ./automata/journal/
//
// on this project's 2-core CI machine (AMD EPYC, Go 1.26), load average
// about 1, each backend in the same run; the disk's fdatasync takes about
// 0.15 ms, a bbolt commit makes two, a pebble commit one:
//
//	BenchmarkDurableDispatch/backend=bolt,producers=64      59,200 inputs/s   0.018 Appends per input (about 54 inputs an Append)
//	BenchmarkDurableDispatch/backend=pebble,producers=64   130,700 inputs/s   0.021 Appends per input
//
// BenchmarkRecover recovers a store of the starter agent's inputs, each
// time in a new process (the test binary run again, as a restarted agent
// is) on a copy of the store as its writer closed it, with the work pebble
// leaves for its first Open; the four stores of a size take turns, in an
// order drawn afresh each round: "clean", the last snapshot at the last
// input; "crash", the process died just before it, so that the inputs
// after the snapshot before are replayed (999 of 100,000, 9,999 of
// 1,000,000). Times in ms from the store's Open to the Machine's, two runs
// of 20 rounds, with the store's Open alone, and pebble's time to bbolt's
// in the same run (the mean; the median of the rounds' ratios beside it):
//
//	                          bbolt       (Open)   pebble     (Open)  pebble/bbolt
//	100,000 inputs, clean     62.9-69.3   19-20    55.8-58.8  7-8     0.85-0.89 (0.84-0.88)
//	100,000 inputs, crash     71.6-72.0   19-21    62.8-68.8  7-8     0.88-0.96 (0.88-0.95)
//	1,000,000 inputs, clean   1028-1144   172-175  796-877    10-11   0.77 (0.66-0.77)
//	1,000,000 inputs, crash   1395-1397   174-179  1049-1124  10-12   0.75-0.80 (0.73-0.74)
//
// bbolt's Open walks all its pages to find the free ones; pebble's reads
// its manifest, its own log and the append log's round. The rest, decoding
// the snapshot and replaying the inputs after it, is within about 10% on
// both: pebble's 8-12% slower at 100,000 inputs, 9-12% faster at 1,000,000.
// A restarted process takes 2 to 3.5 times what the same recovery took in
// the benchmark's own process, where it was timed until this version:
// there, the copy of the bbolt file, read whole into memory, raised the
// garbage collector's goal just before each bbolt recovery, which then ran
// without a collection while pebble's paid for one or two, and pebble took
// 0.98-1.09 of bbolt's time after a crash at 100,000 inputs (0.76-0.81 with
// the copy streamed): which process does the work, and what it did before,
// moves the ratio, so the figures above are a restart's. Pebble's Open used
// to write the append log's new salt with a sync each time, which the next
// Open replayed and flushed to a table, setting off a compaction that it
// waited for: reopened in a loop, pebble took 1.04-1.28 of bbolt's time.
// Open now writes nothing when it needs nothing, and Close flushes
// pebble's memtable (see package pebble).
//
// (In runs that alternated with the code before pebble's append log, 64
// producers made 129,000-134,000 inputs/s on pebble against 90,000-97,000
// before it.)
//
// One producer, against the disk's floor, in one run (BenchmarkDiskFloor:
// the floor, an appending write, the floor again on a file of its own, a
// Machine on the floor, each backend and the starter agent take turns, 100
// inputs at a time, each round in an order drawn afresh; the backends hold
// an agent with a history of 100,000 inputs), the command twice, eight
// runs:
//
//	go test -run XXX -bench DiskFloor -benchtime 10000x -count 4 ./automata/journal/
//
//	                      floor        append      floor again  Machine on the floor  bbolt       pebble      starter (pebble)
//	syncs or inputs/s     5,339-7,980  4,106-5,860              5,197-7,416           2,200-3,143 5,176-7,005 4,667-6,585
//	ratio to the floor    1            0.73-0.77   0.99-1.05    0.89-0.97             0.39-0.41   0.86-0.97   0.80-0.87
//	  median of rounds'   1                        0.99-1.05    0.91-0.94             0.38-0.40   0.86-0.89   0.79-0.84
//	ratio to append                    1                        1.21-1.28             0.52-0.55   1.15-1.26   1.08-1.14
//	ratio to the Machine                                        1                     0.42-0.45   0.92-1.00   0.85-0.91
//
// Four more runs on a later day (the command once, load average 1.1):
// pebble 0.85-0.90 of the floor (0.848 the lowest; the median of rounds
// 0.86-0.88), 0.92-0.97 of the Machine on the floor, which made 0.90-0.93;
// the floor again 1.00-1.02; bbolt 0.38-0.39; the starter 0.79-0.84.
//
// The floor is one input's record written in place into a file whose
// blocks are allocated (1 MiB, the size of pebble's append log; on a 64 MiB
// file the floor was 10-15% slower), and an fdatasync, which then flushes
// that data and no metadata; "append" writes it at the end of a file that
// grows, as a log that does not recycle its files must. The floor again is
// the precision of the run: the same thing on another file made 0.99-1.05
// of the floor (in rounds that only rotated, where it always came after
// "append", whose file's metadata leaves the disk busy, it made
// 0.93-0.98), so a ratio of 0.87 is not told from 0.90 by one run. The
// Machine on the floor is a Machine whose store's Append is the floor's
// write and sync and nothing else: what the Machine costs above the disk
// (admission, the codec's round trip, the frame, the transition, the
// answer). Pebble writes each Append to its append log in place and syncs
// it on the Append's goroutine, as the floor does, then commits it to
// pebble without a sync (see package pebble): it makes 0.92-1.00 of what
// the Machine on the floor makes. What parts both from the floor is the
// Machine's own work: 2.5 µs an input in a loop without syncs, several
// times that after each fdatasync, when the CPU comes back to cold caches.
// That is the benchmark's own model, whose inputs go through plain JSON
// (earlier, 20 runs of the command with -benchtime 3000x gave pebble
// 0.70-0.95 of the floor, median 0.88). The starter agent as agentgen
// generates it, on pebble, made 0.80-0.87 of the floor: its generated
// DecodeInput validates each input against its JSON Schema, on package
// inputjson's fast path (4.1 µs an input where the schema validator takes
// 24; before that path it made 0.67-0.68), and the JSON codec takes its
// generated MarshalJSON's output as it is (BenchmarkEncodeInput, -count 3:
// 0.77 µs against 2.0 through json.Marshal, which checks and compacts it
// again). Those 2 µs an input, saved in loops, did not move the starter
// beyond the precision of the runs (0.76-0.83 before them). Before the
// append log, when an Append was a commit synced through pebble (two
// hand-offs between goroutines, to pebble's log writer and back), pebble
// made 0.80-0.84 of a 64 MiB floor. bbolt's commit makes two fdatasyncs,
// its pages and then its meta page.
//
// Many agents (BenchmarkFleets, 4,000 producers, -benchtime 200000x -count
// 3, both backends in one run each; load average about 1):
//
//	agents=1000,producers=4   bbolt 116,900-154,800 inputs/s   pebble 140,700-146,400 (0.91-1.24)
//	agents=1,producers=4000   bbolt 175,000-243,000            pebble 203,500-262,700 (0.94-1.32)
//
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
// # Which embedded backend
//
// Package pebble is the default: agentgen init --spec writes agents on it,
// and the README's snippets show it. With one producer it makes 2.2 times
// bbolt's inputs/s (0.85-0.97 of the disk's floor in the runs above,
// 0.92-1.00 of what a Machine makes on the floor itself, 1.15-1.26 of an
// appending log), with 64 producers 2.2 times, a thousand agents about as
// many as bbolt's fleet (0.91-1.24), and a restarted process recovers a
// store as Close left it in 0.77-0.89 of bbolt's time, after a crash in
// 0.75-0.96 (see Speed). Both pass the same suite: the store and fleet
// conformance suites, SIGKILL crash tests (TestCrashRecovery, 25 kills, and
// TestForkSurvivesKill, 5, on each; on pebble, most kills leave pebble's own
// log short of the last Appends, which its append log restores), random
// damage to their files in child processes, and fuzzing of what they read
// back. Package bolt stays for three things pebble does not do: it refuses
// damage pebble cannot see (a file cut short, a damaged newer meta page,
// where pebble loses the commits after a cut or a damaged last record of its
// log that its append log does not hold; see both packages' Damage), it is
// one file with one dependency (pebble brings 24 modules into a program that
// imports it), and the journals checked in as the examples' replay corpora
// are bbolt files. Nothing moves a journal from one to the other by itself:
// Accept, from a Store of one to an empty Store of the other, copies it.
package journal
