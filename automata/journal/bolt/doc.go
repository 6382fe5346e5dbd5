// Package bolt is an embedded backend of package journal: the journal of
// one agent (Open) or of many (OpenFleet) in one go.etcd.io/bbolt file,
// ACID, with no server, and no dependency but bbolt. It is the store of
// every example, whose journals checked in as replay corpora are bbolt
// files (the agents agentgen init --spec makes are on package pebble, at one
// fdatasync a commit where bbolt makes two; package journal compares them):
//
//	store, err := bolt.Open(filepath.Join(dir, "agent.db")) // dir must exist
//	...
//	m, err := journal.Open(store, agent.Definition(), opts)
//
// A Store commits each Append as one bbolt transaction, so one fsync commits
// a whole group of inputs. A Fleet keeps many agents in one file and commits
// the Appends of all of them together. Both pass the conformance suite that
// every backend of package journal passes.
//
// # Damage
//
// Damage to the bbolt file itself (meta pages, page headers, the tree, a
// truncated file) is a *journal.CorruptError with Kind 0, naming the file, the page,
// its offset and what was expected; never a crash. Open reads and checks
// the whole file before bbolt maps it, and a later fault on the map (the file
// changed under the process, a disk read error) is an error from the call
// that met it. bbolt keeps two meta pages and silently falls back to the
// older when the newer is damaged, which would open the store one
// transaction behind; Open refuses that, and OpenWith with
// Options.AcceptRollback is the operator's way through. A failed Open
// writes nothing: only a new (absent or empty) file is initialised. What no
// check can see is a disk that acknowledges a write and then loses it,
// leaving an older, intact version of a meta page or of the page that holds
// the buckets.
//
// # Many agents in one file
//
// OpenFleet keeps the journals of many agents in one bbolt file, a Fleet
// of them by id: Create (with a journal.AgentInfo: owner, time created), Open (the
// agent's Store, one at a time), Info, List and Delete.
//
//	fleet, err := bolt.OpenFleet(filepath.Join(dir, "agents.db"))
//	...
//	err = fleet.Create("ann-1", journal.AgentInfo{Owner: "ann", Created: time.Now()})
//	store, err := fleet.Open("ann-1") // journal.ErrInUse while it is open
//	m, err := journal.Open(store, agent.Definition(), opts)
//
// The layout: bucket agents holds each agent's AgentInfo, as JSON, under its
// id; buckets agent-inputs, agent-snapshots and agent-quarantine hold, under
// the id, the agent's journal buckets, with the records a Store keeps;
// and bucket log holds small Appends on their way to their agents. A fleet's
// file is not a store's: Open refuses it, and OpenFleet a store's,
// saying which it is.
//
// One commit for all agents: each agent's Machine groups its concurrent
// inputs into one Append, as on a Store, and the fleet groups the
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
// FleetOptions.LogBytes (16 MiB); an agent's share before its Prune or
// Quarantine; and the whole log when the fleet opens (what a crash left
// there) and closes. A Scan writes nothing: it reads the agent's records
// where they are, its inputs and then its entries in the log, so that
// activating an agent (its journal replayed) costs no commit. Fleet.Stats counts commits, Appends and moves.
// Snapshots, prunes, quarantines, creates and deletes are transactions of
// their own.
//
// Isolation: an agent's records are its own, and a damaged one stops that
// agent's Open as on a store, and no other agent. Damage to the file that
// bbolt does not see is found as the fleet opens and confined to its agent:
// a meta that does not decode strictly as a journal.AgentInfo, a key or bucket its
// journal never holds, a journal cut short, a log entry that does not check
// out. Open of that agent is then a *journal.CorruptError naming it, List lists the
// others and then reports it (when its meta is what is damaged), Delete
// removes it, and every other agent works as before. Damage to the pages
// themselves (a page header, a page reached twice, keys out of order)
// refuses the whole fleet with a *journal.CorruptError that names the agent whose
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
//	go test -run XXX -bench FleetDurableInputs -benchtime 3s ./automata/journal/bolt
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
package bolt
