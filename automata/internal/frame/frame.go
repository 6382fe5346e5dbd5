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
//	            the next (0x40) that a digest follows the version
//	checksum    4 bytes, CRC-32C (Castagnoli) of everything after it
//	seq         uvarint
//	time        varint, Unix nanoseconds
//	version     uvarint, 2 or more: the spec version (only with the high bit)
//	digest      8 bytes, little-endian: a digest of the state after the
//	            input (only with 0x40; see journal.Options.Digests)
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
// digested, the bit that says a digest follows.
const (
	versioned = 0x80
	digested  = 0x40
)

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
	Payload   []byte // aliases the decoded bytes
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
	dst = append(dst, kind, 0, 0, 0, 0)
	dst = binary.AppendUvarint(dst, f.Seq)
	dst = binary.AppendVarint(dst, f.UnixNano)
	if f.Version > 1 {
		dst = binary.AppendUvarint(dst, uint64(f.Version))
	}
	if f.HasDigest {
		dst = binary.LittleEndian.AppendUint64(dst, f.Digest)
	}
	dst = binary.AppendUvarint(dst, uint64(len(f.Payload)))
	dst = append(dst, f.Payload...)
	sum := crc32.Checksum(dst[start+header:], castagnoli)
	binary.LittleEndian.PutUint32(dst[start+1:], sum)
	return dst
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
	kind := data[0] &^ (versioned | digested)
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
	size, n := binary.Uvarint(rest)
	if n <= 0 {
		return Frame{}, fmt.Errorf("%w: bad payload length", ErrBad)
	}
	rest = rest[n:]
	if size != uint64(len(rest)) {
		return Frame{}, fmt.Errorf("%w: payload length %d, but %d bytes follow", ErrBad, size, len(rest))
	}
	return Frame{Kind: kind, Seq: seq, UnixNano: nanos, Version: uint32(version), HasDigest: hasDigest, Digest: digest, Payload: rest}, nil
}
