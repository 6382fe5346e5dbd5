// Package pebble is an embedded backend of package journal on
// github.com/cockroachdb/pebble: the journal of one agent (Open) or of many
// (OpenFleet) in one directory, with no server. It keeps the same Store and
// Fleet contracts as package bolt and passes the same conformance suite.
//
//	store, err := pebble.Open(filepath.Join(dir, "agent")) // a directory
//	...
//	m, err := journal.Open(store, agent.Definition(), opts)
//
// # One sync per commit
//
// A bbolt commit writes its pages and syncs, then writes its meta page and
// syncs again: two fdatasyncs an Append. Pebble writes a batch to its
// write-ahead log and syncs that once; the log's files are recycled, so the
// sync flushes data pages only. Batches committed at the same time (the
// Appends of many agents of a Fleet) share one sync. One producer waiting
// for each input is then bounded by the disk's fdatasync rate alone.
//
// # Damage
//
// Every block pebble writes carries a checksum, which it checks on every
// read: a damaged table is a *journal.CorruptError naming the directory from
// the read that meets it (a Machine's Open replaying the journal, a Scan, a
// compaction of pebble's own), after which the database refuses every call
// but Close. Open checks that the journal ends where its last Append left
// it (each Append records its last seq beside its records), in two reads,
// so that opening costs what replaying from the newest snapshot costs, not
// a read of the whole history. A panic of pebble is a *journal.CorruptError
// from the call that met it. A record of the write-ahead log whose
// checksum fails, with a valid record after it, is corruption; a damaged
// last record of the log is indistinguishable from a write the process
// died in, and pebble drops it, as it must for a crash: the one place where
// damage can lose an acknowledged commit without an error (bbolt's
// equivalent, a damaged newer meta page, is refused; see package bolt).
package pebble
