package jetstream

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/moora-go/moora/automata/journal"
	"github.com/nats-io/nats.go"
)

// A group commit (an Append of several records) is one message when its
// records fit: headers Moora-Seq (the first record's sequence number) and
// Moora-Count (how many, 2 or more), and as data each record's bytes
// preceded by their length as a uvarint. One message is stored whole or not
// at all, as the journal requires of an Append, and costs the server one
// write: where an atomic batch of the same records is staged message by
// message, and the server holds at most 50 batches in flight per stream.
// A group too large for one message is an atomic batch, as before.

const (
	hdrCount    = "Moora-Count"    // of a group: its number of records
	hdrReplaces = "Moora-Replaces" // of a group: the stream sequence of the group it replaces (Quarantine)
)

const (
	// maxGroupRecords bounds the records of one group message, as the
	// server bounds an atomic batch (1,000 messages).
	maxGroupRecords = 1000
	// maxGroupBytes bounds the data of one group message, well inside the
	// server's default max_payload (1 MB) with its headers.
	maxGroupBytes = 512 << 10
)

// packGroup returns the data of a group message of records, and false if
// they do not fit in one.
func packGroup(records []journal.Record) ([]byte, bool) {
	if len(records) > maxGroupRecords {
		return nil, false
	}
	n := 0
	for _, r := range records {
		n += binary.MaxVarintLen64 + len(r.Data)
	}
	if n > maxGroupBytes {
		return nil, false
	}
	data := make([]byte, 0, n)
	for _, r := range records {
		data = binary.AppendUvarint(data, uint64(len(r.Data)))
		data = append(data, r.Data...)
	}
	return data, true
}

// unpackGroup splits the data of a group message of count records, which
// must fill it exactly, and calls fn with each record's bytes (aliasing
// data) in order.
func unpackGroup(data []byte, count uint64, fn func(i uint64, rec []byte) error) error {
	rest := data
	for i := uint64(0); i < count; i++ {
		size, n := binary.Uvarint(rest)
		if n <= 0 {
			return &groupError{fmt.Sprintf("record %d of %d of the group: a bad length at byte %d", i+1, count, len(data)-len(rest))}
		}
		rest = rest[n:]
		if size > uint64(len(rest)) {
			return &groupError{fmt.Sprintf("record %d of %d of the group: %d bytes, but %d follow", i+1, count, size, len(rest))}
		}
		if err := fn(i, rest[:size]); err != nil {
			return err
		}
		rest = rest[size:]
	}
	if len(rest) != 0 {
		return &groupError{fmt.Sprintf("%d bytes after the %d records of the group", len(rest), count)}
	}
	return nil
}

// groupError is the data of a group message that is not its records.
type groupError struct{ what string }

func (e *groupError) Error() string { return e.what }

// MessageRecords returns the journal records that a message on an agent's
// journal subject holds: one for a record, several for a group commit,
// none for an owner-epoch record. The records' Data aliases data. A message
// that is none of these is an error saying what is wrong: for a tool that
// reads a journal's stream itself.
func MessageRecords(h nats.Header, data []byte) ([]journal.Record, error) {
	m, err := parseMessage(h)
	if err != nil {
		return nil, err
	}
	if m.kind != 'r' {
		return nil, nil
	}
	if m.count <= 1 {
		return []journal.Record{{Seq: m.seq, Data: data}}, nil
	}
	out := make([]journal.Record, 0, m.count)
	err = unpackGroup(data, m.count, func(i uint64, rec []byte) error {
		out = append(out, journal.Record{Seq: m.seq + i, Data: rec})
		return nil
	})
	return out, err
}

// groupHeaders sets the headers of a group message of count records from
// first on.
func groupHeaders(m *nats.Msg, first uint64, count int) {
	m.Header.Set(hdrSeq, strconv.FormatUint(first, 10))
	m.Header.Set(hdrCount, strconv.Itoa(count))
}
