package modelgen

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/gen/decl"
	"github.com/moora-go/moora/modelgen/internal/gen/graph"
	"github.com/moora-go/moora/modelgen/internal/gen/impl"
	"github.com/moora-go/moora/modelgen/internal/implscan"
	gensync "github.com/moora-go/moora/modelgen/internal/sync"
	"github.com/moora-go/moora/modelgen/internal/typecheck"
)

// Header is the first line of every file agentgen owns. It matches Go's
// convention for generated files (^// Code generated .* DO NOT EDIT\.$).
const Header = gen.Header

// The printers' output, from package gen.
type (
	// File is one generated file.
	File = gen.File
	// A Generator produces one set of files from a model. Generate runs a
	// list of them; each owns the directories it names.
	Generator = gen.Generator
	// Output is the result of running generators: the files and the
	// directories whose owned files they manage.
	Output = gen.Output
	// StubData is what the stub templates (templates/stub/*.go.tmpl)
	// receive.
	StubData = impl.StubData
)

// Decl generates the decl/ package: the Go declarations of the model.
var Decl Generator = decl.Generator

// Impl returns the generator of impl/: the glue of impl/agent,
// impl/initials/initials.gen.go and impl/transitions/transitions.gen.go,
// and a stub for each hand-written function (ImplFuncs) that scan did not
// find. A nil scan finds nothing: every stub is generated. No stubs are
// generated for a package scan could not parse, because a function hidden
// behind the syntax error would be defined twice.
func Impl(scan *ImplScan) Generator { return impl.New(scan) }

// Generate runs the generators (by default Decl) on a model, one after the
// other. Generated code is gofmt'ed and byte-identical across runs. It
// fails with ErrNoPackage when the model has no package path.
func Generate(m *Model, gens ...Generator) (*Output, error) {
	if len(gens) == 0 {
		gens = []Generator{Decl}
	}
	return gen.Generate(m, gens...)
}

// Stub renders the stub of a hand-written function from its template.
func Stub(m *Model, fn *ImplFunc) ([]byte, error) { return impl.Stub(m, fn) }

// GraphFormats are the formats WriteGraph writes.
var GraphFormats = graph.Formats

// WriteGraph writes the actor graph of m: one node per actor, labelled with
// its state and context, and one edge per observation, labelled with the
// observed properties; format is mermaid or dot.
func WriteGraph(w io.Writer, m *Model, format string) error { return graph.Write(w, m, format) }

// What ScanImpl finds in the hand-written code, from package implscan.
type (
	// ImplScan is what ScanImpl found in impl/.
	ImplScan = implscan.ImplScan
	// Finding is one thing ScanImpl reports about the hand-written code.
	Finding = implscan.Finding
	// FindingKind says what ScanImpl found.
	FindingKind = implscan.FindingKind
)

// The kinds of findings. All but NotImplemented are errors: agentgen check
// fails on them.
const (
	Orphan         = implscan.Orphan
	WrongSignature = implscan.WrongSignature
	Unparsable     = implscan.Unparsable
	NotImplemented = implscan.NotImplemented
	BuildError     = implscan.BuildError
)

// TypeCheck is what TypeCheckImpl found, from package typecheck.
type TypeCheck = typecheck.Result

// MaxTypeErrors is the most errors TypeCheckImpl reports.
const MaxTypeErrors = typecheck.MaxErrors

// TypeCheckImpl type-checks the packages of decl/ and impl/ under dir, the
// spec's directory, as they are on disk, with the go command
// (golang.org/x/tools/go/packages): the code go build would refuse there,
// as findings of kind BuildError at file:line:col, with the paths relative
// to dir. An error on a name of package decl that is not there (a field, a
// type) says which change of the spec removed it when the plan's history
// tells: "state.Acks undefined (type decl.StateOfDesk has no field or
// method Acks): version 2 of the spec removed state property acks and
// added acknowledgements". Errors in the files of scan's orphans, wrong
// signatures and unparsable files are left out, and while there are any,
// so are errors in the generated files (the glue that calls a function
// declared wrongly): they follow from those findings.
//
// Without a go command on PATH, or outside a Go module, it type-checks
// nothing and says why in TypeCheck.Skipped. A module it cannot load (a
// dependency missing from the module cache with GOPROXY=off, a go.sum
// without an entry) is a finding without a position, as go build fails on
// it too.
func TypeCheckImpl(ctx context.Context, dir string, scan *ImplScan, plan *VersionPlan) (*TypeCheck, error) {
	reported := make(map[string]bool)
	if scan != nil {
		for _, f := range scan.Findings {
			if f.Kind == Orphan || f.Kind == WrongSignature || f.Kind == Unparsable {
				reported[f.Path] = true
			}
		}
	}
	skip := func(path string) bool {
		return reported[path] || len(reported) > 0 && generated(filepath.Join(dir, filepath.FromSlash(path)))
	}
	return typecheck.Check(ctx, dir, skip, plan)
}

// generated says whether a file starts with Header: agentgen's.
func generated(file string) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	return strings.TrimSpace(line) == Header
}

// ScanImpl reads the hand-written code under dir/impl (dir is the spec's
// directory) with go/parser only, without type checking, so that code that
// does not compile, or does not parse, never stops generation. It looks at
// the non-test .go files of impl/initials and impl/transitions that do not
// carry the generated header and that the go command builds on this system
// (build constraints and _GOOS/_GOARCH file names are honoured as go build
// honours them, with no extra tags: a file behind //go:build ignore
// declares nothing), and finds:
//
//   - the hand-written functions of the model (ImplFuncs), in whichever file
//     of their package they are; a function declared other than as
//     ImplFunc.Signature says is WrongSignature, at its position. A stub's
//     file that exists without its function is WrongSignature too, at the
//     function that is there instead (an input renamed in the spec and in
//     the file name, but not yet in the code), at its build constraint when
//     the go command does not build it, or else at the package clause;
//   - orphans: files that declare none of the model's functions but an
//     initial state or a transition for an actor or input the model no
//     longer has: an exported func() decl.StateOfX or func(decl.StateOfX,
//     decl.T) decl.StateOfX where decl declares no StateOfX or T, such as
//     the transition of an input since removed or renamed, reported at that
//     function. A helper that takes or returns a state of the model is no
//     orphan. An orphan file that declares a name the other files of its
//     package (tests included) use is in Kept;
//   - stubs whose body still panics "not implemented" (NotImplemented,
//     a warning);
//   - files that do not parse (Unparsable); their package gets no new stubs
//     until they do.
//
// A missing impl/ is not an error: everything is to be created.
//
// Like Generate, it fails with ErrNoPackage when the model has no package
// path.
func ScanImpl(dir string, m *Model) (*ImplScan, error) { return implscan.Scan(dir, m) }

// Files on disk, from package sync.
type (
	// Change is one file Write creates, rewrites or deletes.
	Change = gensync.Change
	// ChangeKind says what Write did to a file.
	ChangeKind = gensync.ChangeKind
	// Drift is one difference Compare found between the output and disk.
	Drift = gensync.Drift
	// DriftKind says how a file differs.
	DriftKind = gensync.DriftKind
	// Move is one file Prune moved.
	Move = gensync.Move
)

// The changes Write makes.
const (
	Created = gensync.Created
	Updated = gensync.Updated
	Deleted = gensync.Deleted
)

// The kinds of drift Compare reports.
const (
	Modified = gensync.Modified // the bytes differ
	Missing  = gensync.Missing  // the file is not on disk
	Extra    = gensync.Extra    // an owned file on disk is no longer generated
)

// ErrNotGenerated is returned by Plan, Write and Compare when a file at
// the path of an owned file does not carry the header: a person wrote it.
var ErrNotGenerated = gensync.ErrNotGenerated

// Plan returns the changes Write would make under dir, the spec's
// directory, without making them.
func Plan(dir string, out *Output) ([]Change, error) { return gensync.Plan(dir, out) }

// Write makes the files under dir match the output and returns the changes
// it made: all of them or none.
func Write(dir string, out *Output) ([]Change, error) { return gensync.Write(dir, out) }

// Compare reports how the files under dir differ from the output:
// modified (with a unified diff), missing and extra files.
func Compare(dir string, out *Output) ([]Drift, error) { return gensync.Compare(dir, out) }

// Prune moves the orphan files of a scan, but those in ImplScan.Kept, out
// of their packages into impl/_pruned/<package>/ under dir, all of them or
// none, and returns the moves sorted by source.
func Prune(dir string, scan *ImplScan) ([]Move, error) { return gensync.Prune(dir, scan) }
