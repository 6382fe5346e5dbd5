// Package pebble is the embedded backend of package journal at one sync per
// commit: the journal of one agent (Open) or of many (OpenFleet) in a
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
// # One sync per commit
//
// A bbolt commit writes its pages and syncs, then writes its meta page and
// syncs again: two fdatasyncs an Append. Here an Append is one pebble batch
// (its records, and its last seq as the journal's recorded end), written to
// pebble's write-ahead log and synced once; pebble recycles its log files,
// so that after its first minutes an Append overwrites blocks the file has,
// and the sync flushes that data and no metadata. Batches committed at the
// same time (the Appends of many agents of a Fleet, or the group commits of
// one agent's producers) share one sync of the log. The Machine on top groups
// an agent's concurrent inputs into one Append, as on every store.
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
// What pebble cannot see: a record of its write-ahead log whose checksum
// fails is corruption when a valid record follows it, but the log's last
// record damaged, or the log cut short, is what a crash during a write
// leaves, and pebble drops it, as it must for a crash. The inputs of the
// commits after the damage are then lost without an error: bbolt, which
// keeps the file's length in its meta page and two meta pages, refuses the
// equivalent damage (see package bolt). TestDamagedStoreIsAnErrorOrIntact
// damages stores and fleets at random (160 cases a run: about a third
// refused, half intact, and the rest such a log's tail) and checks that
// nothing else is ever lost, and nothing crashes.
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
