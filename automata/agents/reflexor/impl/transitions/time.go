package transitions

import (
	"slices"

	"github.com/moora-go/moora/automata"
)

// stale reports whether an input stamped ts is older than the state it
// would change, whose newest input was stamped updatedAt. Time does not run
// backwards: such an input is rejected and changes nothing. (The server
// stamps every input when it arrives, so this happens only to inputs
// stamped elsewhere, such as replayed by hand.)
func stale(ts, updatedAt int64) bool { return ts < updatedAt }

// replaced returns a copy of s with s[i] replaced by x: the state given to
// a transition is never written into.
func replaced[E any](s []E, i int, x E) []E {
	s = slices.Clone(s)
	s[i] = x
	return s
}

// appended appends x to s in amortized O(1), without writing into memory
// an older state can reach (automata.Append).
func appended[E any](s []E, x ...E) []E { return automata.Append(s, x...) }
