// Package pebble is the embedded backend of package journal at one sync per
// commit, on the committing goroutine: the journal of one agent (Open) or of many (OpenFleet) in a
// directory, a github.com/cockroachdb/pebble database, with no server. It
// keeps the Store and Fleet contracts of package bolt, passes the same
// conformance suite, and is the journal of the agents agentgen init --spec
// makes:
//
//	store, err := pebble.Open(filepath.Join(dir, "journal")) // a directory
//	...
//	m, err := journal.Open(store, agent.Definition(), opts)
//
// and for many agents:
//
//	fleet, err := pebble.OpenFleet(filepath.Join(dir, "agents")) // a directory
//	...
//	err = fleet.Create("ann-1", journal.AgentInfo{Owner: "ann", Created: time.Now()})
//	store, err := fleet.Open("ann-1") // ErrInUse while it is open
//
// # One sync per commit, on the Append's goroutine
//
// A bbolt commit writes its pages and syncs, then writes its meta page and
// syncs again: two fdatasyncs an Append. Here an Append is one pebble batch
// (its records, and its last seq as the journal's recorded end), made
// durable with one write and one fdatasync of the directory's append log
// ("appends", 1 MiB, its blocks allocated when it was made, so that the
// sync flushes that data and no metadata), on the Append's own goroutine,
// and then committed to pebble without a sync. A commit synced through
// pebble would hand the batch to pebble's log writer, a goroutine of its
// own, and wait for it to hand back: two wake-ups of another thread that
// cost one producer waiting for each input a tenth of its rate. Pebble's
// own log catches up in the background. Each batch also records its number
// in the append log, so that Open knows which of the log's batches pebble
// lost in a crash and applies them, in order, before anything reads the
// journal. The append log is written from its start; a batch that does not
// fit in what is left of it (every few thousand inputs) is committed
// through pebble with a sync instead, and the log starts again. Every other
// write (a snapshot, pruning, quarantine, a fleet's agents) is committed
// through pebble with a sync, which makes every batch before it durable in
// pebble too.
//
// Open writes nothing when it needs nothing: where pebble holds every
// batch of the log's round and the round reads to its end undamaged, the
// log goes on with that round; else Open applies what pebble lost and
// begins a new round, committed with a sync. Close writes pebble's
// memtable to a table, so that the next Open has no log of pebble's to
// replay and flush (which also set off a compaction that Open waited for):
// a store as Close left it opens at the cost of the reads of its
// recovery: 7-8 ms for 100,000 inputs, 10-11 ms for 1,000,000, where
// bbolt's Open takes 19-20 and 172-175, and a restarted process recovers
// in 0.77-0.89 of bbolt's time (BenchmarkRecover in package journal).
// After a crash, pebble replays its log, at most the memtable.
//
// Appends that arrive while a commit is in flight (the Appends of many
// agents of a Fleet, or of one agent's producers) share one batch and one
// sync: the Append that finds no commit in flight commits at once, on its
// goroutine, and the next group is committed by the first of those queued.
// The Machine on top groups an agent's concurrent inputs into one Append,
// as on every store.
//
// Snapshots are files of their own (snapshots/ in the directory, one a
// snapshot, its key holding its size): written once, synced, renamed into
// place, and read back mapped, as bbolt reads its pages. A state is large
// and written whole; through the tree it would be written again by each
// flush and compaction, and read back through the block cache with a copy
// and a checksum. Records are not compressed.
//
// # Damage
//
// Every block pebble writes carries a checksum, which it checks on every
// read: a damaged table is a *journal.CorruptError naming the directory from
// the read that meets it (a Machine's Open replaying the journal, a Scan, a
// compaction of pebble's own), after which the database refuses every call
// but Close. Open checks that the journal ends where its last Append left
// it, in two reads, so that opening costs what replaying from the newest
// snapshot costs, not a read of the whole history. A damaged snapshot file
// is given to the Machine as it is, whose checks refuse it and fall back to
// the snapshot before it, as on every store; a fault on its map (the file
// cut short under the process) is a *journal.CorruptError. A panic of
// pebble is a *journal.CorruptError from the call that met it.
//
// The append log's entries each carry their number and two CRC-32Cs, of
// the header and of the whole, salted with 8 random bytes that each round
// of the log draws and the database keeps: nothing an earlier round left,
// and no record's bytes, read as an entry of the round. Its
// last entry damaged, where pebble does not have its batch, is what a crash
// during that write leaves (the Append had not returned), and Open drops
// it; any other damage to an entry whose batch pebble does not have, or a
// round of the log that no longer reaches back to pebble's last batch, is a
// *journal.CorruptError, found by looking past the damage for the log's
// next entry. Damage to entries pebble has costs nothing; a log cut short
// or missing is refused. An Append whose write or sync of the log fails
// takes its entry out again (its header zeroed and synced) and fails; the
// store then refuses Appends until it is reopened, and if taking the entry
// out failed too, the error says the Append's outcome is unknown. A Close
// waits for a commit in flight.
//
// What pebble cannot see: a record of its write-ahead log whose checksum
// fails is corruption when a valid record follows it, but the log's last
// record damaged, or the log cut short, is what a crash during a write
// leaves, and pebble drops it, as it must for a crash. What the append log
// holds of the commits after the damage comes back from it; a commit it
// does not hold (a snapshot's key, a prune, the batch that began the
// append log's round) is then lost without an error: bbolt, which keeps the
// file's length in its meta page and two meta pages, refuses the
// equivalent damage (see package bolt). TestDamagedStoreIsAnErrorOrIntact
// damages stores and fleets at random (200 cases a run, on stores, fleets,
// and a store whose database lost its last Appends, which only the append
// log holds: in four runs, 25 to 28 percent refused, in whole or for an
// agent, the rest intact, none with a tail lost) and
// checks that nothing else is ever lost, and nothing crashes.
//
// Fleets confine damage to the agent it is found in where the database
// allows it: see Fleet.
//
// Limits: one process has the directory open (pebble locks it; a second
// Open in the same process is refused too); an agent has one Store at a
// time; a record or snapshot is at most MaxRecordBytes. Pebble's own
// settings are its defaults (a 4 MiB memtable, an 8 MiB block cache a
// database), but for compression, which is off.
package pebble
