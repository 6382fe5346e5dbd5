package spec

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Severity tells errors from warnings.
type Severity uint8

const (
	// Error makes a spec invalid.
	Error Severity = iota
	// Warning reports a likely modelling mistake (methodology step 3). With
	// the strict option it becomes an error.
	Warning
)

// A Diagnostic is one problem found in a spec: where, which spec element,
// what is wrong and, for model checks, how to fix it. Its string form is
//
//	file:line:col: [warning: ]element: message[; hint]
type Diagnostic struct {
	Pos      Pos
	Severity Severity
	Element  string // the spec element, like observations.user.llm.userMessages
	Message  string
	Hint     string // what to do about it; may be empty
}

func (d *Diagnostic) Error() string { return d.String() }

func (d *Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.Pos.String())
	b.WriteString(": ")
	if d.Severity == Warning {
		b.WriteString("warning: ")
	}
	if d.Element != "" {
		b.WriteString(d.Element)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	if d.Hint != "" {
		b.WriteString("; ")
		b.WriteString(d.Hint)
	}
	return b.String()
}

// Diagnostics is a list of diagnostics sorted by position. As an error it is
// one diagnostic per line.
type Diagnostics []*Diagnostic

func (ds Diagnostics) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// Sort sorts the diagnostics by position, then severity, element and
// message.
func (ds Diagnostics) Sort() {
	slices.SortStableFunc(ds, func(a, b *Diagnostic) int {
		return cmp.Or(
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col),
			cmp.Compare(a.Severity, b.Severity),
			strings.Compare(a.Element, b.Element),
			strings.Compare(a.Message, b.Message),
		)
	})
}

// AsDiagnostics returns the diagnostics carried by err: a Diagnostics list
// or a single *Diagnostic, possibly wrapped. It returns nil for other errors.
func AsDiagnostics(err error) Diagnostics {
	var ds Diagnostics
	if errors.As(err, &ds) {
		return ds
	}
	var d *Diagnostic
	if errors.As(err, &d) {
		return Diagnostics{d}
	}
	return nil
}

// Diags collects diagnostics against a source: each names the spec
// element at a JSON Pointer and is placed at its value or its key.
type Diags struct {
	Src  *Source
	List Diagnostics
}

// At reports an error about the value at ptr.
func (d *Diags) At(ptr, msg, hint string) {
	d.add(d.Src.pos(ptr), Error, ptr, msg, hint)
}

// AtKey reports an error about the key naming the value at ptr.
func (d *Diags) AtKey(ptr, msg, hint string) {
	d.add(d.Src.keyPos(ptr), Error, ptr, msg, hint)
}

// WarnKey reports a warning about the key or list item at ptr.
func (d *Diags) WarnKey(ptr, msg, hint string) {
	d.add(d.Src.keyPos(ptr), Warning, ptr, msg, hint)
}

// MaxDiagnostics is how many diagnostics a spec gets at most: a spec with
// more problems than that gets the first ones and a last one saying that
// there are more, so that a hostile spec (50,000 values each wrong) does
// not cost memory and time for each.
const MaxDiagnostics = 100

func (d *Diags) add(pos Pos, sev Severity, ptr, msg, hint string) {
	switch {
	case len(d.List) > MaxDiagnostics:
		return
	case len(d.List) == MaxDiagnostics:
		d.List = append(d.List, &Diagnostic{Pos: pos, Severity: sev, Message: fmt.Sprintf("more than %d problems; the first %d are above", MaxDiagnostics, MaxDiagnostics)})
		return
	}
	elem := ""
	if ptr != "" {
		elem = ElementName(ptr)
	}
	d.List = append(d.List, &Diagnostic{Pos: pos, Severity: sev, Element: elem, Message: msg, Hint: hint})
}

// Errors counts the diagnostics that are errors.
func (d *Diags) Errors() int {
	n := 0
	for _, x := range d.List {
		if x.Severity == Error {
			n++
		}
	}
	return n
}
