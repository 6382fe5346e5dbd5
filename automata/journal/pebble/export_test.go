package pebble

import "testing"

// LeaveLogAtClose makes Close, until the test ends, leave pebble's
// memtable in its log unflushed, as a process killed after its Appends
// leaves it: a test makes such a store with it.
func LeaveLogAtClose(t testing.TB) {
	flushAtClose = false
	t.Cleanup(func() { flushAtClose = true })
}
