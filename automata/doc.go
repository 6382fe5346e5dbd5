// Package automata is the runtime every moora agent runs on: pure Moore and
// Mealy machines, effects derived from state, and keyed job reconciliation.
package automata
