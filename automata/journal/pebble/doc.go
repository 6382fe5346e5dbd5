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
// Every block pebble writes carries a checksum. Open and OpenFleet read
// every key and value before they return, so a damaged table is found then,
// as a *journal.CorruptError naming the directory; and so is a key no
// journal holds, or a journal that does not end where its last Append left
// it (each Append records its last seq beside the records). A panic of
// pebble is a *journal.CorruptError from the call that met it, after which
// the database refuses every call. A record of the write-ahead log whose
// checksum fails, with a valid record after it, is corruption; a damaged
// last record of the log is indistinguishable from a write the process
// died in, and pebble drops it, as it must for a crash: the one place where
// damage can lose an acknowledged commit without an error (bbolt's
// equivalent, a damaged newer meta page, is refused; see package bolt).
package pebble
