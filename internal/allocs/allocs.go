// Package allocs measures what a function allocates, for the tests that
// assert that a cost does not grow with a history: the bytes one call
// allocates, the least of several calls, since what else runs allocates
// too.
package allocs

import "runtime"

// Bytes returns the bytes f allocates (on the whole heap, so run it where
// nothing else allocates much).
func Bytes(f func()) uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	f()
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc - before
}

// Least returns the least of 5 measures.
func Least(measure func() uint64) uint64 {
	m := measure()
	for range 4 {
		m = min(m, measure())
	}
	return m
}
