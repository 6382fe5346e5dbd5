package automata

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"
)

// Append returns s with elems appended, as append does, but without ever
// writing into memory that another state can see: the pure append for
// transitions.
//
// A plain append writes into s's backing array when it has room, and that
// array may be shared with the previous state, or with a sibling state
// derived from the same one; a pure transition must not do that, so it must
// copy (append(slices.Clip(s), elems...)), which makes every input cost time
// proportional to the length of the slice: a long conversation makes every
// message slower to add. Append is amortized O(len(elems)) instead: the
// backing arrays it allocates remember how far they have been claimed, and
// Append writes past a slice's end only if nobody has claimed that room yet,
// that is, only for the first state to extend that slice. Every other state
// gets a copy. States built by Append therefore share memory safely, and
// CheckPure and WithPurityCheck accept it, while they reject a plain append
// into the same array.
//
// Slices that Append did not allocate (a literal, a decoded snapshot, a
// plain append's result) are copied on their first Append, into an array
// Append owns.
func Append[S ~[]E, E any](s S, elems ...E) S {
	n, k := len(s), len(elems)
	if k == 0 {
		return s
	}
	var zero E
	if unsafe.Sizeof(zero) == 0 {
		return append(s, elems...) // no memory to share
	}
	if n+k <= cap(s) {
		if c := claimOf(s); c != nil && c.n.CompareAndSwap(int64(n), int64(n+k)) {
			out := s[:n+k]
			copy(out[n:], elems)
			return out
		}
	}
	out := make(S, n+k, max(2*(n+k), 8))
	copy(out, s)
	copy(out[n:], elems)
	track(out, n+k)
	return out
}

// claim is how many elements of a backing array some slice built by Append
// reaches: the elements past it are free for the next Append.
type claim struct{ n atomic.Int64 }

// claims maps a weak pointer to the first byte of an Append-allocated
// backing array to its *claim. Entries leave when the array is collected.
// The keys are all weak.Pointer[byte], whatever the element type, so that
// the purity check can look arrays up through reflection.
var claims sync.Map

func claimOf[S ~[]E, E any](s S) *claim {
	if cap(s) == 0 {
		return nil
	}
	return claimAt(unsafe.Pointer(unsafe.SliceData(s)))
}

// claimAt returns the claim of the backing array whose first element is at
// first, or nil if Append did not allocate it (or first is inside it).
func claimAt(first unsafe.Pointer) *claim {
	c, ok := claims.Load(weak.Make((*byte)(first)))
	if !ok {
		return nil
	}
	return c.(*claim)
}

func track[S ~[]E, E any](s S, claimed int) {
	first := unsafe.SliceData(s)
	key := weak.Make((*byte)(unsafe.Pointer(first)))
	c := &claim{}
	c.n.Store(int64(claimed))
	claims.Store(key, c)
	runtime.AddCleanup(first, func(key weak.Pointer[byte]) { claims.Delete(key) }, key)
}
