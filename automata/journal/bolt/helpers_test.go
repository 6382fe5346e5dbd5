package bolt_test

import (
	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/internal/storetest"
)

// The test model of the journal's tests (see package storetest).
type (
	state = storetest.State
	input = storetest.Input
)

var (
	model     = storetest.Model
	mustClose = storetest.MustClose
)

func codec() journal.Codec[state, input] { return journal.JSON[state, input](nil) }
