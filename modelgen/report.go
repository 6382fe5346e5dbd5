package modelgen

import (
	"fmt"
	"path/filepath"

	"github.com/moora-go/moora/modelgen/internal/evolve"
	"github.com/moora-go/moora/modelgen/internal/implscan"
	"github.com/moora-go/moora/modelgen/internal/spec"
)

// Options configure Load, Graph, Generate and Check. Each reads the fields
// it names and ignores the others.
type Options struct {
	// Strict makes the modelling warnings errors. For Check, it also makes
	// errors of stubs that still panic "not implemented" and of a type
	// check that could not run.
	Strict bool
	// Amend (Generate), when the spec's data shapes changed, replaces the
	// newest version of its history instead of adding one: only for a
	// version that no agent ran, as no migration reads its journals.
	Amend bool
	// Prune (Generate) moves the orphan files of impl/ into impl/_pruned.
	Prune bool
	// Against (Check) also lists the changes of data shapes since this
	// spec: a file, or a git revision of the spec (main, HEAD~1). A
	// breaking one fails unless the history records that spec.
	Against string
	// TypeCheck (Check) type-checks decl/ and impl/ with the go command
	// when the generated files are up to date.
	TypeCheck bool
	// Format (Graph) is the graph's format: one of GraphFormats.
	Format string
}

// The statuses of a Report.
const (
	StatusUpToDate = "up-to-date" // the run succeeded; the generated files are up to date
	StatusDrift    = "drift"      // generated files or impl/ need work; Check: exit 1
	StatusInvalid  = "invalid"    // the spec (or an option) is invalid
	StatusError    = "error"      // something else failed: a file could not be read or written
)

// A Report is what a run of Load, Graph, Generate, Check or Init found and
// did, for a command to print as text or JSON. Every path in it is the
// spec's directory (for Init, the agent's) joined with the path relative
// to it, as a person running the command in the working directory reads
// it. Each function
// fills the fields it names; the others stay empty.
//
// A run that fails returns its report and an error, the sentence that says
// why (for an invalid spec, "agent.yaml is invalid: 2 errors"); a failed
// run that has nothing to add to its report returns a nil error and a
// Status other than StatusUpToDate.
type Report struct {
	// Spec is the spec file, as given.
	Spec string
	// Status is one of the Status constants.
	Status string
	// Diagnostics are the problems of the spec, or, when it is valid, its
	// modelling warnings (errors with Strict).
	Diagnostics []Diagnostic
	// History (Generate, Check) are the problems of the spec's history
	// file, when it is invalid.
	History []Diagnostic

	// Load: how many actors, observations, inputs and data types (the
	// declared types that are not inputs) the model has.
	Actors, Observations, Inputs, DataTypes int
	// Graph: the actor graph.
	Graph []byte

	// Written (Generate, Init) are the files written, in order: Kind is
	// created, updated or deleted. Files (Check) are the generated files
	// that differ from what Generate would write: Kind is modified (with
	// a diff), missing or extra.
	Written, Files []FileChange
	// Moved (Generate with Prune) are the orphans moved, and those left in
	// place (an empty To and the Reason).
	Moved []Move
	// Version (Generate) is the spec's version in its history;
	// NewVersion says whether this run added it, Amended whether it
	// replaced it. Changes are the changes of data shapes since the
	// previous version (Generate, Check), and, for Check, since
	// Options.Against (their Since is set).
	Version             int
	NewVersion, Amended bool
	Changes             []ShapeChange
	// MigrationsFile (Generate) is the file of the migrations a new
	// version needs, when it has a stub to write (a rename generate offered
	// is written); SnapshotNote says that its state
	// changed compatibly, which a compacted journal cannot replay over
	// without a state migration in MigrationsDir.
	MigrationsFile, MigrationsDir string
	SnapshotNote                  bool
	// Findings are what the scan of impl/ and, for Check, its type check
	// found. Migrations are the migrations of the history that are
	// missing, or still stubs.
	Findings, Migrations []Finding
	// TypeCheck (Check) is "done", or "skipped: " and the reason;
	// MoreBuildErrors is how many build errors were left out.
	TypeCheck       string
	MoreBuildErrors int
	// TypeChecked (Check) are the directories of the packages of the
	// module, besides decl/ and impl/, that import decl and were
	// type-checked with them (the program that injects the effects,
	// tests included), relative to the spec's: "." for its own.
	TypeChecked []string

	// Init: the stubs left to write; ToolkitSource is the source directory
	// of the toolkit a replace directive of the new go.mod builds against;
	// NoRequire is a go.mod around the agent that does not require the
	// toolkit.
	Stubs                    int
	ToolkitSource, NoRequire string
}

// A Diagnostic is one problem found in a spec: where, which spec element,
// what is wrong and, for model checks, how to fix it. Line and Col are
// 1-based (0 when unknown); Col counts characters. Its string form is
//
//	file:line:col: [warning: ]element: message[; hint]
type Diagnostic struct {
	File      string
	Line, Col int
	Warning   bool
	Element   string // the spec element, like observations.user.llm.userMessages
	Message   string
	Hint      string // what to do about it; may be empty
}

func (d Diagnostic) String() string {
	sd := spec.Diagnostic{Pos: spec.Pos{File: d.File, Line: d.Line, Col: d.Col}, Element: d.Element, Message: d.Message, Hint: d.Hint}
	if d.Warning {
		sd.Severity = spec.Warning
	}
	return sd.String()
}

// diagnostics converts the spec's diagnostics; asErrors makes warnings
// errors (Strict).
func diagnostics(ds spec.Diagnostics, asErrors bool) []Diagnostic {
	out := make([]Diagnostic, 0, len(ds))
	for _, d := range ds {
		out = append(out, Diagnostic{
			File: d.Pos.File, Line: d.Pos.Line, Col: d.Pos.Col, Warning: d.Severity == spec.Warning && !asErrors,
			Element: d.Element, Message: d.Message, Hint: d.Hint,
		})
	}
	return out
}

// A FileChange is one file written, or one that differs from what would be
// written.
type FileChange struct {
	Path string
	Kind string // created, updated, deleted; modified, missing, extra
	// Diff is the unified diff of a modified file.
	Diff []byte
	// History says the file is the spec's history, whose diff is a whole
	// version of the spec: the Changes say what it is.
	History bool
}

// A Move is an orphan file moved out of its package, or, with an empty To,
// left in place for Reason.
type Move struct {
	From, To string
	Reason   string
}

// A Finding is one thing found in the code of decl/ and impl/: Kind is
// orphan, signature (a function not declared as the spec requires), syntax
// (a file that does not parse), not-implemented (a stub that still panics),
// build (an error of the type check) or migration (one missing, or still a
// stub). Path is empty for a build error without
// a position; Line and Col are 0 when unknown.
type Finding struct {
	Path      string
	Line, Col int
	Kind      string
	Warning   bool
	Message   string
}

// finding converts an impl/ finding; strict makes a stub that panics "not
// implemented" an error.
func finding(dir string, f *implscan.Finding, strict bool) Finding {
	path := ""
	if f.Path != "" {
		path = filepath.Join(dir, filepath.FromSlash(f.Path))
	}
	return Finding{
		Path: path, Line: f.Line, Col: f.Col, Kind: f.Kind.String(),
		Warning: f.Warning() && !strict, Message: f.Message,
	}
}

// A ShapeChange is one difference between two versions of a spec's data
// shapes, breaking for replay or compatible, at its position in the spec.
// Input is the input it concerns ("" for the state), Path the property.
type ShapeChange struct {
	File      string
	Line, Col int
	Breaking  bool
	Input     string
	Path      string
	What      string
	Old, New  string // the shapes, "" when absent
	Since     string // the spec it is a change since, when not the history's
}

func shapeChange(pos spec.Pos, c evolve.Change) ShapeChange {
	return ShapeChange{File: pos.File, Line: pos.Line, Col: pos.Col, Breaking: c.Breaking, Input: c.Input, Path: c.Path, What: c.What, Old: c.Old, New: c.New}
}

// String formats the change as
//
//	file:line:col: breaking|compatible: state|input x path: what (old: o; new: n)[ [since s]]
func (c ShapeChange) String() string {
	kind := "compatible"
	if c.Breaking {
		kind = "breaking"
	}
	what := "state"
	if c.Input != "" {
		what = "input " + c.Input
	}
	if c.Path != "" {
		what += " " + c.Path
	}
	old, new := c.Old, c.New
	if old == "" {
		old = "absent"
	}
	if new == "" {
		new = "absent"
	}
	pos := spec.Pos{File: c.File, Line: c.Line, Col: c.Col}
	s := fmt.Sprintf("%s: %s: %s: %s (old: %s; new: %s)", pos, kind, what, c.What, old, new)
	if c.Since != "" {
		s += " [since " + c.Since + "]"
	}
	return s
}

// plural says how many of what there are: "1 error", "2 errors".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// count says how many errors and warnings there are.
func count(ds spec.Diagnostics) string {
	if len(ds) > spec.MaxDiagnostics {
		return fmt.Sprintf("more than %d problems", spec.MaxDiagnostics)
	}
	var errs, warns int
	for _, d := range ds {
		if d.Severity == spec.Warning {
			warns++
		} else {
			errs++
		}
	}
	switch {
	case errs > 0 && warns > 0:
		return plural(errs, "error") + " and " + plural(warns, "warning")
	case warns > 0:
		return plural(warns, "warning")
	}
	return plural(errs, "error")
}
