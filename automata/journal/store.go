package journal

// Store keeps a journal of input records and a set of snapshot records. It
// stores the bytes it is given; checksums and meaning are the Machine's. A
// Store is used by one Machine at a time, from several goroutines.
//
// The interface is small on purpose, so that a distributed backend can
// replace the embedded bbolt one (package bolt) without touching the Machine.
type Store interface {
	// Append stores journal records, which carry consecutive sequence
	// numbers following the last stored one, all or none, durably: when
	// Append returns nil the records survive a crash.
	Append(records []Record) error
	// Scan calls fn with each journal record whose Seq is at least from,
	// in order of Seq, until fn returns an error (which Scan returns).
	// The record's Data is only valid during the call.
	Scan(from uint64, fn func(Record) error) error
	// PutSnapshot stores a snapshot record durably.
	PutSnapshot(Record) error
	// Snapshots calls fn with each snapshot record, newest first, until fn
	// returns an error (which Snapshots returns; ErrStop ends the walk
	// without one). Data is only valid during the call.
	Snapshots(fn func(Record) error) error
	// Prune deletes snapshots older than snapshotsBefore, but the one at
	// keepSnapshot (0: none; a fork keeps the snapshot it starts from, the
	// base of its history), and journal records older than inputsBefore
	// (0 deletes none).
	Prune(snapshotsBefore, keepSnapshot, inputsBefore uint64) error
	// Quarantine moves the journal record at seq out of the journal,
	// keeping its bytes where an operator can find them.
	Quarantine(seq uint64) error
	// Close releases the store.
	Close() error
}
