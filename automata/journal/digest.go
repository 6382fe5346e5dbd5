package journal

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
)

// DigestPolicy says which journal records carry a digest of the state after
// their input (Options.Digests). A digest is the first 8 bytes of the
// SHA-256 of the state's JSON.
type DigestPolicy int

const (
	// DigestNone: no record carries a digest; replay compares states at
	// the snapshots only.
	DigestNone DigestPolicy = iota
	// DigestEvery: every record carries one, and Replay names the very
	// input after which a state differs. Each costs an encoding of the
	// state as JSON and its hash: cheap for a state that stays small (a
	// conversation trimmed to a window), and growing with a state that
	// grows with the history (BenchmarkDigests measures it).
	DigestEvery
	// DigestSampled: a record carries one once the inputs since the last
	// digest take an eighth of the bytes of that state's JSON, so that
	// the cost per input follows the input's size however large the
	// state grows; a state up to 8 times its inputs' size is digested
	// after every input, and Replay names the input when one is; after a
	// longer gap, the span of inputs it lies in.
	DigestSampled
)

// digestShare is, for DigestSampled, the share of a state's JSON that the
// inputs since the last digest must take before the next.
const digestShare = 8

// digester decides which inputs' records carry a digest of the state after
// them, and computes it. It is owned by the goroutine that frames records.
type digester struct {
	since      int64 // bytes of inputs since the last digest
	stateBytes int64 // the size of the state's JSON at the last digest
}

// due adds an input of n bytes and says whether its record gets a digest
// under policy p.
func (d *digester) due(p DigestPolicy, n int) bool {
	switch p {
	case DigestEvery:
		return true
	case DigestSampled:
		d.since += int64(n)
		return d.since*digestShare >= d.stateBytes
	}
	return false
}

// digest returns the digest of state and resets the count.
func (d *digester) digest(state any) (uint64, error) {
	sum, size, err := stateDigest(state)
	if err != nil {
		return 0, err
	}
	d.since, d.stateBytes = 0, int64(size)
	return sum, nil
}

// stateDigest is the digest of a state: the first 8 bytes of the SHA-256 of
// its JSON, which encoding/json writes in one way only (map keys sorted),
// and in which a generated state writes a nil slice as an empty one, so
// that a state restored from a gob snapshot digests as the live one did.
// It returns the size of the JSON too. A state with its own MarshalJSON (as
// a generated one has) is written by it directly: encoding/json would
// check and compact its output again, which took more time than writing it.
func stateDigest(state any) (uint64, int, error) {
	var b []byte
	var err error
	if m, ok := state.(json.Marshaler); ok {
		b, err = m.MarshalJSON()
	} else {
		b, err = json.Marshal(state)
	}
	if err != nil {
		return 0, 0, err
	}
	sum := sha256.Sum256(b)
	return binary.LittleEndian.Uint64(sum[:8]), len(b), nil
}
