// Package modeltest checks the laws of the modelling method on an agent's
// pure machine, with inputs drawn from the agent's input schemas: the
// run-time half of the fuzz target FuzzTransitions that agentgen generate
// writes beside the glue of every agent (impl/agent/fuzz.gen_test.go).
//
// A fuzz input is decoded, deterministically, into a sequence of at most
// 16 inputs (Sequence): each takes a byte that chooses its type among the
// inputs of every actor, then the bytes its value needs, drawn from its
// JSON Schema — enums, consts, minimum and maximum (exclusive too),
// multipleOf, lengths, patterns (from their syntax tree), formats,
// required and optional properties, nullable types, nested objects,
// arrays (minItems, maxItems, uniqueItems) and maps, allOf, oneOf and
// $refs to $defs — and is kept when the agent's own decoder (DecodeInput)
// accepts it. An exhausted input answers zeros, the smallest choices, so
// the fuzzer's minimiser, which shortens the bytes, shortens the sequence
// and simplifies its values.
//
// Run applies the sequence to the initial state twice and checks, in this
// order at each input (Law):
//
//	no panic                     Initial, Admit, Transition and Invariant
//	                             return
//	own state only               the state of every actor but the one
//	                             that dispatched the input is unchanged
//	                             (each actor's StateOf, as JSON)
//	codec                        the state encodes as JSON, and decodes and
//	                             encodes again to the same bytes (checked
//	                             on the first and last state, and when the
//	                             last fails, at every input to find where)
//	invariant                    the Model's Invariant returns nil
//	determinism                  the second run computes the same state,
//	                             as JSON, at every position, and rejects
//	                             the same inputs
//
// An input the Model's Admit rejects is skipped, as the machine skips it.
// A Violation names the law, the input after which it broke and the
// sequence, one input a line ("3 user {...}") that ReadSequence reads
// back. Fuzz cuts the sequence down to the inputs that still break the
// law (Shrink) and fails the test with it; go's fuzzer saves the bytes
// that made it under testdata/fuzz/FuzzTransitions, where a plain go test
// runs them again. A panic "not implemented: ..." of a stub agentgen wrote
// skips the sequence instead (Violation.Stub): a new agent's tests pass
// before its functions are written. The seed corpus, which a plain go
// test runs, is the empty sequence and each input type once, with its
// smallest value.
//
// It is not a property-based test of what the agent should do: that is
// what the invariants are for, written by hand in the agent's
// impl/invariants.
package modeltest
