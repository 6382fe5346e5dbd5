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
// append of several records (a group commit) is one atomic batch (server
// 2.12 or later; the stream allows atomic publish): all or none, as the
// journal requires. A request that times out is sent again with the same
// message ids until the server answers, so that a record whose
// acknowledgement was lost is neither stored twice nor reported as not
// stored; if no answer comes within three timeouts the store fences itself
// rather than guess.
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
// store does.
package jetstream
