package journal

import "fmt"

// Record is one stored entry, journal record or snapshot: its sequence number
// and its framed bytes. A Store keeps the bytes as they are.
type Record struct {
	Seq  uint64
	Data []byte
}

// Kind says what a record holds: an input or a snapshot.
type Kind byte

const (
	// KindInput is a journaled input.
	KindInput Kind = 1
	// KindSnapshot is a snapshot of the state after Seq inputs.
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
