package storetest

import (
	"fmt"
	"slices"

	"github.com/moora-go/moora/automata"
)

// State is the state of the test model that the journal's tests and this
// suite share: a log of notes, and requests that jobs answer.
type State struct {
	Notes   []string `json:"notes"`
	Pending []int    `json:"pending"` // requests waiting for a job's answer
	Answers []string `json:"answers"`
}

// Input is an input of the test model: a note, a request or an answer.
type Input struct {
	Note    string `json:"note,omitempty"`
	Request int    `json:"request,omitempty"`
	Answer  int    `json:"answer,omitempty"` // answers a request
}

// Model is the definition of the test model.
var Model = automata.Definition[State, Input]{
	Initial: func() State { return State{} },
	Transition: func(s State, in Input) State {
		switch {
		case in.Note != "":
			s.Notes = automata.Append(s.Notes, in.Note)
		case in.Request != 0:
			s.Pending = automata.Append(s.Pending, in.Request)
		case in.Answer != 0:
			if i := slices.Index(s.Pending, in.Answer); i >= 0 {
				s.Pending = slices.Delete(slices.Clone(s.Pending), i, i+1)
				s.Answers = automata.Append(s.Answers, fmt.Sprintf("answer-%d", in.Answer))
			}
		}
		return s
	},
}
