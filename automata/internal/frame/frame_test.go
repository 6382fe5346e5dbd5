package frame_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/internal/frame"
)

// FuzzJournalRecord: Decode never panics, rejects what Append did
// not produce, and reads back exactly what it did.
func FuzzJournalRecord(f *testing.F) {
	f.Add(frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 1, UnixNano: 1700000000000000000, Payload: []byte(`{"note":"hi"}`)}))
	f.Add(frame.Append(nil, frame.Frame{Kind: frame.Snapshot, Seq: 1 << 40, UnixNano: -1, Payload: nil}))
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Add([]byte{3, 1, 2, 3, 4, 5, 6, 7})
	f.Add(frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 9, UnixNano: 1, Version: 3, Payload: []byte(`{}`)}))
	f.Add(frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 9, UnixNano: 1, Version: 3, HasDigest: true, Digest: 1 << 63, Payload: []byte(`{}`)}))
	f.Add(frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 2, HasDigest: true, Digest: 7}))
	f.Add(frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 3, Version: 2, HasDigest: true, Job: "llm/1", Recorded: true, Payload: []byte(`{}`)}))
	f.Add(frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 4, Job: "tool/call-7", Payload: []byte(`{}`)}))
	f.Add(frame.Append(nil, frame.Frame{Kind: frame.Snapshot, Seq: 4, Fork: true, Answers: []frame.Answer{{Job: "llm/1", Payload: []byte(`{"reply":"x"}`)}, {Job: "t", Payload: nil}}, Payload: []byte(`{}`)}))
	f.Add(frame.Append(nil, frame.Frame{Kind: frame.Snapshot, Seq: 4, Fork: true, Payload: []byte(`{}`)}))
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := frame.Decode(data)
		if err != nil {
			return
		}
		again := frame.Append(nil, fr)
		if !bytes.Equal(again, data) {
			t.Fatalf("decoded %+v from %x, which encodes back as %x", fr, data, again)
		}
	})
}

func TestDecodeRejectsDamage(t *testing.T) {
	good := frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 42, UnixNano: 7, Payload: []byte("payload")})
	tests := []struct {
		name   string
		damage func([]byte) []byte
		want   string
	}{
		{"empty", func(b []byte) []byte { return nil }, "shorter than"},
		{"torn", func(b []byte) []byte { return b[:len(b)-2] }, "checksum mismatch"},
		{"bit flip in payload", func(b []byte) []byte { b[len(b)-1] ^= 4; return b }, "checksum mismatch"},
		{"bit flip in checksum", func(b []byte) []byte { b[2] ^= 1; return b }, "checksum mismatch"},
		{"unknown kind", func(b []byte) []byte { b[0] = 9; return b }, "unknown kind 9"},
		{"trailing bytes", func(b []byte) []byte { return append(b, 0) }, "checksum mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := frame.Decode(tt.damage(bytes.Clone(good)))
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tt.want)) {
				t.Fatalf("Decode = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	fr, err := frame.Decode(good)
	if err != nil || fr.Seq != 42 || fr.UnixNano != 7 || string(fr.Payload) != "payload" {
		t.Fatalf("Decode(good) = %+v, %v", fr, err)
	}
}

// TestFrameVersions: a frame of version 1 is written as frames were before
// versions (a journal that stays at version 1 is unchanged, and every old
// journal reads as version 1); a later version is carried in the frame.
func TestFrameVersions(t *testing.T) {
	old := []byte{1, 0, 0, 0, 0, 5, 14, 2, 'h', 'i'} // kind, checksum, seq 5, time 7, 2 bytes
	binary.LittleEndian.PutUint32(old[1:], crc32.Checksum(old[5:], crc32.MakeTable(crc32.Castagnoli)))
	for _, v := range []uint32{0, 1} {
		if got := frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 5, UnixNano: 7, Version: v, Payload: []byte("hi")}); !bytes.Equal(got, old) {
			t.Fatalf("version %d frames as %x, want %x as before versions", v, got, old)
		}
	}
	f, err := frame.Decode(old)
	if err != nil || f.Version != 1 || string(f.Payload) != "hi" {
		t.Fatalf("Decode(a frame without a version) = %+v, %v; want version 1", f, err)
	}
	v2 := frame.Append(nil, frame.Frame{Kind: frame.Snapshot, Seq: 5, UnixNano: 7, Version: 300, Payload: []byte("hi")})
	f, err = frame.Decode(v2)
	if err != nil || f.Version != 300 || f.Kind != frame.Snapshot || f.Seq != 5 || string(f.Payload) != "hi" {
		t.Fatalf("Decode(a frame of version 300) = %+v, %v", f, err)
	}
	// A version flag with a version below 2 is not a frame Append
	// writes.
	bad := []byte{1 | 0x80, 0, 0, 0, 0, 5, 14, 1, 2, 'h', 'i'}
	binary.LittleEndian.PutUint32(bad[1:], crc32.Checksum(bad[5:], crc32.MakeTable(crc32.Castagnoli)))
	if _, err := frame.Decode(bad); err == nil || !strings.Contains(err.Error(), "bad spec version") {
		t.Fatalf("Decode(version 1 flagged) = %v, want bad spec version", err)
	}
}

// TestFrameDigest: a digest is carried in the frame, and a frame without
// one is written as before digests.
func TestFrameDigest(t *testing.T) {
	plain := frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 5, UnixNano: 7, Payload: []byte("hi")})
	for _, v := range []uint32{1, 4} {
		d := frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 5, UnixNano: 7, Version: v, HasDigest: true, Digest: 0xdeadbeefcafe, Payload: []byte("hi")})
		f, err := frame.Decode(d)
		if err != nil || !f.HasDigest || f.Digest != 0xdeadbeefcafe || f.Version != max(v, 1) || string(f.Payload) != "hi" {
			t.Fatalf("Decode(a frame with a digest, version %d) = %+v, %v", v, f, err)
		}
		if len(d) != len(plain)+8+min(int(v)-1, 1) {
			t.Fatalf("a digest costs %d bytes, want 8", len(d)-len(plain))
		}
	}
	f, err := frame.Decode(plain)
	if err != nil || f.HasDigest {
		t.Fatalf("Decode(a frame without a digest) = %+v, %v", f, err)
	}
	// A digest flag with fewer than 8 bytes after it.
	bad := []byte{1 | 0x40, 0, 0, 0, 0, 5, 14, 1, 2}
	binary.LittleEndian.PutUint32(bad[1:], crc32.Checksum(bad[5:], crc32.MakeTable(crc32.Castagnoli)))
	if _, err := frame.Decode(bad); err == nil || !strings.Contains(err.Error(), "bad state digest") {
		t.Fatalf("Decode(a short digest) = %v, want bad state digest", err)
	}
}

// TestFrameJob: the key of the job that dispatched an input, and whether a
// record answered it, are carried in the frame; a frame without them is
// written as before job keys; a key out of bounds is not a frame.
func TestFrameJob(t *testing.T) {
	plain := frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 5, UnixNano: 7, Payload: []byte("hi")})
	for _, rec := range []bool{false, true} {
		d := frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 5, UnixNano: 7, Version: 3, HasDigest: true, Digest: 9, Job: "llm/turn-1", Recorded: rec, Payload: []byte("hi")})
		f, err := frame.Decode(d)
		if err != nil || f.Job != "llm/turn-1" || f.Recorded != rec || f.Version != 3 || f.Digest != 9 || string(f.Payload) != "hi" {
			t.Fatalf("Decode(a frame with a job key, recorded %v) = %+v, %v", rec, f, err)
		}
	}
	if f, err := frame.Decode(plain); err != nil || f.Job != "" || f.Recorded {
		t.Fatalf("Decode(a frame without a job key) = %+v, %v", f, err)
	}
	if d := frame.Append(nil, frame.Frame{Kind: frame.Input, Seq: 5, UnixNano: 7, Job: "k", Payload: []byte("hi")}); len(d) != len(plain)+2 {
		t.Fatalf("a job key of 1 byte costs %d bytes, want 2", len(d)-len(plain))
	}
	sum := func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[1:], crc32.Checksum(b[5:], crc32.MakeTable(crc32.Castagnoli)))
		return b
	}
	for name, bad := range map[string][]byte{
		"empty key":          sum([]byte{1 | 0x20, 0, 0, 0, 0, 5, 14, 0, 2, 'h', 'i'}),
		"key past the end":   sum([]byte{1 | 0x20, 0, 0, 0, 0, 5, 14, 9, 'k'}),
		"key over the limit": sum(append([]byte{1 | 0x20, 0, 0, 0, 0, 5, 14, 0x81, 0x04}, make([]byte, 513+1)...)),
		"recorded, no job":   sum([]byte{1 | 0x10, 0, 0, 0, 0, 5, 14, 2, 'h', 'i'}),
	} {
		if _, err := frame.Decode(bad); err == nil || !strings.Contains(err.Error(), "job") {
			t.Errorf("%s: Decode = %v, want an error about the job", name, err)
		}
	}
}

// TestFrameFork: a snapshot that starts a fork carries the answers of the
// conversation forked, and reads them back; damage to them is an error.
func TestFrameFork(t *testing.T) {
	answers := []frame.Answer{{Job: "llm/1", Payload: []byte(`{"reply":"x"}`)}, {Job: "tool/2", Payload: []byte{}}}
	d := frame.Append(nil, frame.Frame{Kind: frame.Snapshot, Seq: 12, Version: 2, Fork: true, Answers: answers, Payload: []byte("state")})
	f, err := frame.Decode(d)
	if err != nil || !f.Fork || len(f.Answers) != 2 || f.Answers[0].Job != "llm/1" || string(f.Answers[0].Payload) != `{"reply":"x"}` || f.Answers[1].Job != "tool/2" || len(f.Answers[1].Payload) != 0 || string(f.Payload) != "state" {
		t.Fatalf("Decode(a fork's snapshot) = %+v, %v", f, err)
	}
	empty := frame.Append(nil, frame.Frame{Kind: frame.Snapshot, Seq: 12, Fork: true, Payload: []byte("state")})
	if f, err := frame.Decode(empty); err != nil || !f.Fork || len(f.Answers) != 0 {
		t.Fatalf("Decode(a fork's snapshot without answers) = %+v, %v", f, err)
	}
	if f, err := frame.Decode(frame.Append(nil, frame.Frame{Kind: frame.Snapshot, Seq: 12, Payload: []byte("state")})); err != nil || f.Fork {
		t.Fatalf("Decode(a snapshot) = %+v, %v; want no fork", f, err)
	}
	for _, c := range []struct {
		f    frame.Frame
		want bool
	}{
		{frame.Frame{Kind: frame.Snapshot, Seq: 1, Fork: true}, true},
		{frame.Frame{Kind: frame.Snapshot, Seq: 1, Version: 3, HasDigest: true, Fork: true}, true},
		{frame.Frame{Kind: frame.Snapshot, Seq: 1, Version: 3}, false},
		{frame.Frame{Kind: frame.Input, Seq: 1, Job: "k"}, false},
	} {
		if got := frame.MayBeFork(frame.Append(nil, c.f)); got != c.want {
			t.Errorf("MayBeFork(%+v) = %v, want %v", c.f, got, c.want)
		}
	}
	if frame.MayBeFork(nil) {
		t.Error("MayBeFork(nothing) = true")
	}
	sum := func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[1:], crc32.Checksum(b[5:], crc32.MakeTable(crc32.Castagnoli)))
		return b
	}
	for name, bad := range map[string][]byte{
		"count past the end":   sum([]byte{2 | 0x20, 0, 0, 0, 0, 5, 14, 9, 0}),
		"empty key":            sum([]byte{2 | 0x20, 0, 0, 0, 0, 5, 14, 1, 0, 0, 0}),
		"payload past the end": sum([]byte{2 | 0x20, 0, 0, 0, 0, 5, 14, 1, 1, 'k', 7, 0}),
	} {
		if _, err := frame.Decode(bad); err == nil || !strings.Contains(err.Error(), "fork") {
			t.Errorf("%s: Decode = %v, want an error about the fork", name, err)
		}
	}
}
