// Package frame is the format of a journal's records: how the durable
// machine of package journal frames each input and snapshot before a Store
// keeps the bytes. It is shared by the machine, the backends (bolt,
// jetstream) and their conformance suite, and is not part of any public API:
// a Store stores a journal.Record's bytes as they are and never needs to read
// them.
package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// The kinds of frame; journal.Kind has the same values.
const (
	// Input frames a journaled input.
	Input byte = 1
	// Snapshot frames a snapshot of the state after Seq inputs.
	Snapshot byte = 2
)

// A frame is, in order:
//
//	kind        1 byte; its high bit (0x80) says a version follows the time,
//	            the next (0x40) that a digest follows the version, the
//	            next (0x20) that a job key follows the digest, and the
//	            next (0x10) that the input was answered from a record
//	checksum    4 bytes, CRC-32C (Castagnoli) of everything after it
//	seq         uvarint
//	time        varint, Unix nanoseconds
//	version     uvarint, 2 or more: the spec version (only with the high bit)
//	digest      8 bytes, little-endian: a digest of the state after the
//	            input (only with 0x40; see journal.Options.Digests)
//	job         uvarint length, then that many bytes: the key of the job
//	            that dispatched the input (only with 0x20, on an input; see
//	            journal.Options.JobKeys), at most MaxJobKey bytes
//	answers     on a snapshot, 0x20 says that it starts a fork and carries
//	            what the jobs of the conversation forked answered after it:
//	            a uvarint count, then for each a job key as above and a
//	            uvarint length and that many bytes, an input's payload
//	length      uvarint, of the payload
//	payload     length bytes
//
// The overhead is 5 bytes plus three varints (four from version 2 on):
// about 20 bytes per input, and 8 more with a digest. A frame without a
// version is of version 1: every journal written before records carried
// versions reads as version 1, and a journal that never leaves version 1 is
// written as it always was. A frame without a digest is written as frames
// were before digests, so a journal that records none is unchanged.
const header = 1 + 4

// versioned is the bit of the kind byte that says a version follows;
// digested, the bit that says a digest follows; keyed, that a job key
// follows; recorded, that the input was answered from a record.
const (
	versioned = 0x80
	digested  = 0x40
	keyed     = 0x20
	recorded  = 0x10
	flags     = versioned | digested | keyed | recorded
)

// MaxJobKey is the longest job key a frame carries.
const MaxJobKey = 512

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Frame is a decoded frame.
type Frame struct {
	Kind     byte // Input or Snapshot
	Seq      uint64
	UnixNano int64
	// Version is the version of the agent's spec the payload was written
	// under (see journal.Options.Versions); 0 is version 1.
	Version uint32
	// HasDigest says that the frame carries Digest, a digest of the state
	// after the input it frames.
	HasDigest bool
	Digest    uint64
	// Job is the key of the job that dispatched the input, "" for none
	// (or not recorded); at most MaxJobKey bytes.
	Job string
	// Recorded says that the job's input was not its own: a fork
	// answered the job with what it answered in the conversation forked.
	Recorded bool
	// Answers, on a snapshot that starts a fork, are what the jobs of the
	// conversation forked answered after it (see journal.Machine.Fork);
	// Fork says it is such a snapshot, whether or not it has any.
	Fork    bool
	Answers []Answer
	Payload []byte // aliases the decoded bytes
}

// Answer is an input a job dispatched: its key and the input's payload
// (aliasing the decoded bytes).
type Answer struct {
	Job     string
	Payload []byte
}

// Append appends the frame of f to dst and returns the result.
func Append(dst []byte, f Frame) []byte {
	start := len(dst)
	kind := f.Kind
	if f.Version > 1 {
		kind |= versioned
	}
	if f.HasDigest {
		kind |= digested
	}
	if f.Job != "" || f.Fork {
		kind |= keyed
	}
	if f.Recorded {
		kind |= recorded
	}
	dst = append(dst, kind, 0, 0, 0, 0)
	dst = binary.AppendUvarint(dst, f.Seq)
	dst = binary.AppendVarint(dst, f.UnixNano)
	if f.Version > 1 {
		dst = binary.AppendUvarint(dst, uint64(f.Version))
	}
	if f.HasDigest {
		dst = binary.LittleEndian.AppendUint64(dst, f.Digest)
	}
	switch {
	case f.Kind == Snapshot && f.Fork:
		dst = binary.AppendUvarint(dst, uint64(len(f.Answers)))
		for _, a := range f.Answers {
			dst = appendBytes(dst, a.Job)
			dst = appendBytes(dst, a.Payload)
		}
	case f.Job != "":
		dst = appendBytes(dst, f.Job)
	}
	dst = binary.AppendUvarint(dst, uint64(len(f.Payload)))
	dst = append(dst, f.Payload...)
	sum := crc32.Checksum(dst[start+header:], castagnoli)
	binary.LittleEndian.PutUint32(dst[start+1:], sum)
	return dst
}

// appendBytes appends b with its length before it.
func appendBytes[B string | []byte](dst []byte, b B) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// cut takes a length and that many bytes off the front of rest; ok is false
// when they are not all there.
func cut(rest []byte) (b, after []byte, ok bool) {
	size, n := binary.Uvarint(rest)
	if n <= 0 || size > uint64(len(rest)-n) {
		return nil, rest, false
	}
	return rest[n : n+int(size)], rest[n+int(size):], true
}

// MayBeFork says, from its first byte alone, whether data may be a snapshot
// that starts a fork: a cheap look before Decode checks it whole.
func MayBeFork(data []byte) bool {
	return len(data) > 0 && data[0]&^flags == Snapshot && data[0]&keyed != 0
}

// ErrBad is wrapped by every error of Decode.
var ErrBad = errors.New("bad frame")

// Decode decodes one frame, which must fill data exactly. It checks the
// checksum before anything else, so a torn or bit-flipped frame is an error,
// never a wrong value. A frame without a version has Version 1.
func Decode(data []byte) (Frame, error) {
	if len(data) < header {
		return Frame{}, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrBad, len(data), header)
	}
	kind := data[0] &^ flags
	if kind != Input && kind != Snapshot {
		return Frame{}, fmt.Errorf("%w: unknown kind %d", ErrBad, data[0])
	}
	want := binary.LittleEndian.Uint32(data[1:])
	if got := crc32.Checksum(data[header:], castagnoli); got != want {
		return Frame{}, fmt.Errorf("%w: checksum mismatch (stored %08x, computed %08x)", ErrBad, want, got)
	}
	rest := data[header:]
	seq, n := binary.Uvarint(rest)
	if n <= 0 {
		return Frame{}, fmt.Errorf("%w: bad sequence number", ErrBad)
	}
	rest = rest[n:]
	nanos, n := binary.Varint(rest)
	if n <= 0 {
		return Frame{}, fmt.Errorf("%w: bad time", ErrBad)
	}
	rest = rest[n:]
	version := uint64(1)
	if data[0]&versioned != 0 {
		version, n = binary.Uvarint(rest)
		if n <= 0 || version < 2 || version > math.MaxUint32 {
			return Frame{}, fmt.Errorf("%w: bad spec version", ErrBad)
		}
		rest = rest[n:]
	}
	var digest uint64
	hasDigest := data[0]&digested != 0
	if hasDigest {
		if len(rest) < 8 {
			return Frame{}, fmt.Errorf("%w: bad state digest", ErrBad)
		}
		digest, rest = binary.LittleEndian.Uint64(rest), rest[8:]
	}
	var job string
	var answers []Answer
	fork := kind == Snapshot && data[0]&keyed != 0
	switch {
	case fork:
		count, n := binary.Uvarint(rest)
		// Each answer takes 3 bytes at the least.
		if n <= 0 || count > uint64(len(rest)-n)/3 {
			return Frame{}, fmt.Errorf("%w: bad count of a fork's answers", ErrBad)
		}
		rest = rest[n:]
		answers = make([]Answer, count)
		for i := range answers {
			key, after, ok := cut(rest)
			if !ok || len(key) == 0 || len(key) > MaxJobKey {
				return Frame{}, fmt.Errorf("%w: bad job key of a fork's answer %d", ErrBad, i)
			}
			payload, after, ok := cut(after)
			if !ok {
				return Frame{}, fmt.Errorf("%w: bad payload of a fork's answer %d", ErrBad, i)
			}
			answers[i], rest = Answer{Job: string(key), Payload: payload}, after
		}
	case data[0]&keyed != 0:
		key, after, ok := cut(rest)
		if !ok || len(key) == 0 || len(key) > MaxJobKey {
			return Frame{}, fmt.Errorf("%w: bad job key", ErrBad)
		}
		job, rest = string(key), after
	}
	if data[0]&recorded != 0 && job == "" {
		return Frame{}, fmt.Errorf("%w: answered from a record, but by no job", ErrBad)
	}
	size, n := binary.Uvarint(rest)
	if n <= 0 {
		return Frame{}, fmt.Errorf("%w: bad payload length", ErrBad)
	}
	rest = rest[n:]
	if size != uint64(len(rest)) {
		return Frame{}, fmt.Errorf("%w: payload length %d, but %d bytes follow", ErrBad, size, len(rest))
	}
	return Frame{Kind: kind, Seq: seq, UnixNano: nanos, Version: uint32(version), HasDigest: hasDigest, Digest: digest, Job: job, Recorded: data[0]&recorded != 0, Fork: fork, Answers: answers, Payload: rest}, nil
}
