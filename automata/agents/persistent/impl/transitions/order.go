package transitions

import (
	"slices"

	"github.com/moora-go/moora/automata"
)

// insertByTime returns msgs, kept sorted by timestamp, with m in its place:
// after the messages with the same or an earlier timestamp. A message newer
// than all the others (the usual case) is appended with automata.Append, in
// amortized O(1) and without touching memory the old state can reach; an
// older one costs a copy.
func insertByTime[M any](msgs []M, m M, timestamp func(M) int64) []M {
	ts := timestamp(m)
	if len(msgs) == 0 || timestamp(msgs[len(msgs)-1]) <= ts {
		return automata.Append(msgs, m)
	}
	i, _ := slices.BinarySearchFunc(msgs, ts, func(x M, t int64) int {
		if timestamp(x) <= t {
			return -1
		}
		return 1
	})
	return slices.Insert(slices.Clone(msgs), i, m)
}
