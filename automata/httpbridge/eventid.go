package httpbridge

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/moora-go/moora/automata/internal/wire"
)

// eventID is the id of a state event: a sequence number, and for an agent
// without a journal the epoch of the bridge that numbered it.
type eventID struct {
	seq   uint64
	epoch string
}

func (id eventID) String() string {
	if id.epoch == "" {
		return strconv.FormatUint(id.seq, 10)
	}
	return strconv.FormatUint(id.seq, 10) + "-" + id.epoch
}

// maxEventIDLen bounds the Last-Event-ID the bridge reads: 20 digits, a dash
// and an epoch of 16 characters.
const maxEventIDLen = 40

// parseEventID reads a state event's id as the bridge writes it: decimal
// digits (the sequence number, no sign, no leading zero), then for an agent
// without a journal a dash and the epoch (lowercase hex).
func parseEventID(s string) (eventID, error) {
	if len(s) > maxEventIDLen {
		return eventID{}, fmt.Errorf("event id of %d bytes, over %d", len(s), maxEventIDLen)
	}
	num, epoch, hasEpoch := strings.Cut(s, "-")
	if num == "" {
		return eventID{}, errors.New("event id: missing sequence number")
	}
	if len(num) > 1 && num[0] == '0' {
		return eventID{}, fmt.Errorf("event id %q: leading zero", s)
	}
	for _, c := range []byte(num) {
		if c < '0' || c > '9' {
			return eventID{}, fmt.Errorf("event id %q: the sequence number is not decimal digits", s)
		}
	}
	seq, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return eventID{}, fmt.Errorf("event id %q: sequence number out of range", s)
	}
	if hasEpoch {
		if epoch == "" {
			return eventID{}, fmt.Errorf("event id %q: empty epoch after the dash", s)
		}
		for _, c := range []byte(epoch) {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return eventID{}, fmt.Errorf("event id %q: the epoch is not lowercase hex", s)
			}
		}
	}
	return eventID{seq: seq, epoch: epoch}, nil
}

// parseOffset reads a token stream event's id: a byte offset into the
// stream's text, in decimal.
func parseOffset(s string) (int, error) {
	if s == "" || len(s) > 12 {
		return 0, fmt.Errorf("stream offset %q: want 1 to 12 decimal digits", wire.Truncate(s, 40))
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("stream offset %q: not decimal digits", wire.Truncate(s, 40))
		}
		n = n*10 + int(c-'0')
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("stream offset %q: leading zero", s)
	}
	return n, nil
}
