package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Record is one stored entry, journal record or snapshot: its sequence number
// and its framed bytes (see Frame). A Store keeps the bytes as they are.
type Record struct {
	Seq  uint64
	Data []byte
}

// Kind says what a frame holds.
type Kind byte

const (
	// KindInput frames a journaled input.
	KindInput Kind = 1
	// KindSnapshot frames a snapshot of the state after Seq inputs.
	KindSnapshot Kind = 2
)

func (k Kind) String() string {
	switch k {
	case KindInput:
		return "input"
	case KindSnapshot:
		return "snapshot"
	}
	return fmt.Sprintf("Kind(%d)", byte(k))
}

// A frame is, in order:
//
//	kind        1 byte; its high bit (0x80) says a version follows the time
//	checksum    4 bytes, CRC-32C (Castagnoli) of everything after it
//	seq         uvarint
//	time        varint, Unix nanoseconds
//	version     uvarint, 2 or more: the spec version (only with the high bit)
//	length      uvarint, of the payload
//	payload     length bytes
//
// The overhead is 5 bytes plus three varints (four from version 2 on):
// about 20 bytes per input. A frame without a version is of version 1: every
// journal written before records carried versions reads as version 1, and a
// journal that never leaves version 1 is written as it always was.
const frameHeader = 1 + 4

// versioned is the bit of the kind byte that says a version follows.
const versioned = 0x80

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Frame is a decoded frame.
type Frame struct {
	Kind     Kind
	Seq      uint64
	UnixNano int64
	// Version is the version of the agent's spec the payload was written
	// under (see Options.Versions); 0 is version 1.
	Version uint32
	Payload []byte // aliases the decoded bytes
}

// AppendFrame appends the frame of f to dst and returns the result.
func AppendFrame(dst []byte, f Frame) []byte {
	start := len(dst)
	kind := byte(f.Kind)
	if f.Version > 1 {
		kind |= versioned
	}
	dst = append(dst, kind, 0, 0, 0, 0)
	dst = binary.AppendUvarint(dst, f.Seq)
	dst = binary.AppendVarint(dst, f.UnixNano)
	if f.Version > 1 {
		dst = binary.AppendUvarint(dst, uint64(f.Version))
	}
	dst = binary.AppendUvarint(dst, uint64(len(f.Payload)))
	dst = append(dst, f.Payload...)
	sum := crc32.Checksum(dst[start+frameHeader:], castagnoli)
	binary.LittleEndian.PutUint32(dst[start+1:], sum)
	return dst
}

// ErrFrame is wrapped by every error of DecodeFrame.
var ErrFrame = errors.New("bad frame")

// DecodeFrame decodes one frame, which must fill data exactly. It checks the
// checksum before anything else, so a torn or bit-flipped frame is an error,
// never a wrong value. A frame without a version has Version 1.
func DecodeFrame(data []byte) (Frame, error) {
	if len(data) < frameHeader {
		return Frame{}, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrFrame, len(data), frameHeader)
	}
	kind := Kind(data[0] &^ versioned)
	if kind != KindInput && kind != KindSnapshot {
		return Frame{}, fmt.Errorf("%w: unknown kind %d", ErrFrame, data[0])
	}
	want := binary.LittleEndian.Uint32(data[1:])
	if got := crc32.Checksum(data[frameHeader:], castagnoli); got != want {
		return Frame{}, fmt.Errorf("%w: checksum mismatch (stored %08x, computed %08x)", ErrFrame, want, got)
	}
	rest := data[frameHeader:]
	seq, n := binary.Uvarint(rest)
	if n <= 0 {
		return Frame{}, fmt.Errorf("%w: bad sequence number", ErrFrame)
	}
	rest = rest[n:]
	nanos, n := binary.Varint(rest)
	if n <= 0 {
		return Frame{}, fmt.Errorf("%w: bad time", ErrFrame)
	}
	rest = rest[n:]
	version := uint64(1)
	if data[0]&versioned != 0 {
		version, n = binary.Uvarint(rest)
		if n <= 0 || version < 2 || version > math.MaxUint32 {
			return Frame{}, fmt.Errorf("%w: bad spec version", ErrFrame)
		}
		rest = rest[n:]
	}
	size, n := binary.Uvarint(rest)
	if n <= 0 {
		return Frame{}, fmt.Errorf("%w: bad payload length", ErrFrame)
	}
	rest = rest[n:]
	if size != uint64(len(rest)) {
		return Frame{}, fmt.Errorf("%w: payload length %d, but %d bytes follow", ErrFrame, size, len(rest))
	}
	return Frame{Kind: kind, Seq: seq, UnixNano: nanos, Version: uint32(version), Payload: rest}, nil
}
