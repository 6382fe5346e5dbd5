//go:build !race

package automata_test

const raceEnabled = false
