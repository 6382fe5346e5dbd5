package automata_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata"
)

type doc struct {
	Title string
	Tags  map[string]bool
	Items []item
	Note  *string
}

type item struct {
	ID   int
	Refs []int
}

func TestCheckPure(t *testing.T) {
	note := "n"
	initial := func() doc {
		return doc{Tags: map[string]bool{"a": true}, Items: make([]item, 1, 8), Note: &note}
	}
	counter := 0
	tests := []struct {
		name       string
		transition func(doc, string) doc
		wantInPath string // "" means pure
		wantInWhat string
	}{
		{
			name: "pure copy-on-write",
			transition: func(d doc, in string) doc {
				tags := make(map[string]bool, len(d.Tags)+1)
				for k, v := range d.Tags {
					tags[k] = v
				}
				tags[in] = true
				d.Tags = tags
				d.Items = append(d.Items[:len(d.Items):len(d.Items)], item{ID: len(d.Items)})
				return d
			},
		},
		{
			name:       "append into shared backing array",
			transition: func(d doc, in string) doc { d.Items = append(d.Items, item{ID: 7}); return d },
			wantInPath: "state.Items[1].ID",
			wantInWhat: "append wrote into a backing array",
		},
		{
			name:       "map written in place",
			transition: func(d doc, in string) doc { d.Tags[in] = true; return d },
			wantInPath: "state.Tags",
			wantInWhat: "mutated",
		},
		{
			name:       "element of a shared slice written in place",
			transition: func(d doc, in string) doc { d.Items[0].Refs = []int{1}; return d },
			wantInPath: "state.Items[0].Refs",
			wantInWhat: "mutated",
		},
		{
			name:       "through a pointer",
			transition: func(d doc, in string) doc { *d.Note = in; return d },
			wantInPath: "state.Note",
			wantInWhat: "mutated",
		},
		{
			name:       "reads outside state (not deterministic)",
			transition: func(d doc, in string) doc { counter++; d.Title = strings.Repeat("x", counter); return d },
			wantInPath: "state.Title",
			wantInWhat: "not deterministic",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := automata.Definition[doc, string]{Initial: initial, Transition: tt.transition}
			err := automata.CheckPure(def, "x", "y")
			if tt.wantInPath == "" {
				if err != nil {
					t.Fatalf("pure transition reported: %v", err)
				}
				return
			}
			var ie *automata.ImpurityError
			if !errors.As(err, &ie) {
				t.Fatalf("CheckPure = %v, want an *ImpurityError", err)
			}
			if ie.Index != 0 || ie.Input != "x" {
				t.Errorf("blamed input #%d %v, want #0 x", ie.Index, ie.Input)
			}
			if !strings.HasPrefix(ie.Path, tt.wantInPath) || !strings.Contains(ie.What, tt.wantInWhat) {
				t.Errorf("got path %q, what %q; want path prefix %q and %q", ie.Path, ie.What, tt.wantInPath, tt.wantInWhat)
			}
		})
	}
}

// TestWithPurityCheckStopsNamingTheInput: an impure transition in a running
// machine stops it, with the input and the mutated location in the error.
func TestWithPurityCheckStopsNamingTheInput(t *testing.T) {
	def := automata.Definition[[]int, int]{
		Initial:    func() []int { return make([]int, 0, 4) },
		Transition: func(s []int, in int) []int { return append(s, in) },
	}
	m := automata.NewMoore(def, func(s []int) int { return len(s) }, automata.WithPurityCheck[[]int, int]())
	err := m.Dispatch(42)
	var ie *automata.ImpurityError
	if !errors.As(err, &ie) {
		t.Fatalf("Dispatch = %v, want an error wrapping *ImpurityError", err)
	}
	if ie.Input != 42 || ie.Path != "state[0]" {
		t.Fatalf("blamed input %v at %s, want 42 at state[0]", ie.Input, ie.Path)
	}
	if !strings.Contains(ie.Error(), "input 42") {
		t.Errorf("message does not name the input: %v", ie)
	}
	if !errors.Is(m.Err(), err) || !errors.Is(m.Close(context.Background()), err) {
		t.Errorf("Err() = %v and Close = %v, want the error Dispatch returned", m.Err(), err)
	}
}
