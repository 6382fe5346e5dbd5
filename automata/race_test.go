//go:build race

package automata_test

// raceEnabled: the race detector allocates on its own account, which
// allocation counts must not be taken with.
const raceEnabled = true
