package migrations

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moora-go/moora/modelgen/internal/versions"
)

// Finding is a migration that keeps the agent from reading its journal:
// missing, or still a stub.
type Finding struct {
	Path      string // slash-separated, relative to the spec's directory
	Line, Col int
	Message   string
	// Review says that the finding is a warning: a rename generate
	// offered, written, whose doc still asks for review.
	Review bool
}

// Scan reads the migrations of impl/migrations under dir (the spec's
// directory) with go/parser, and reports each migration of the plan that
// is missing from a file that exists (a missing file is generate's to
// create), or whose body still panics "not implemented". A file that does
// not parse is a finding too.
func Scan(dir string, p *versions.Plan) ([]Finding, error) {
	fset := token.NewFileSet()
	funcs := make(map[string]*ast.FuncDecl)
	where := make(map[string]string)
	files := make(map[string]bool) // parsed
	broken := make(map[string]bool)
	var out []Finding
	entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(Dir)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		rel := Dir + "/" + e.Name()
		f, err := parser.ParseFile(fset, filepath.Join(dir, filepath.FromSlash(rel)), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			var list scanner.ErrorList
			pos := token.Position{Line: 1, Column: 1}
			if errors.As(err, &list) && len(list) > 0 {
				pos = list[0].Pos
			}
			out = append(out, Finding{Path: rel, Line: pos.Line, Col: pos.Column, Message: fmt.Sprintf("does not parse: %v", err)})
			broken[rel] = true
			continue
		}
		files[rel] = true
		if ast.IsGenerated(f) {
			continue // ConversionsPath: generate's, not a person's
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				funcs[fd.Name.Name], where[fd.Name.Name] = fd, rel
			}
		}
	}
	declared := make(map[string]bool, len(funcs))
	for name := range funcs {
		declared[name] = true
	}
	fns := Funcs(p, declared)
	for _, s := range p.Steps {
		// An optional migration, once declared, is run: it may not be a
		// stub either.
		if name := stateFunc(s); s.StateChanged && !s.State && funcs[name] != nil {
			fns = append(fns, Func{Name: name, Path: where[name], From: s.From, What: "the state"})
		}
	}
	for _, fn := range fns {
		fd, ok := funcs[fn.Name]
		if !ok {
			// A missing file is generate's to create; a file that does
			// not parse is reported as such.
			if files[fn.Path] && !broken[fn.Path] {
				out = append(out, Finding{Path: fn.Path, Line: 1, Col: 1, Message: fmt.Sprintf("func %s is missing: the migration of %s from version %d to %d; write it (agentgen generate writes a stub only when the file is missing)", fn.Name, fn.What, fn.From, fn.From+1)})
			}
			continue
		}
		if fn.RenamedFrom != "" && fd.Doc != nil && strings.Contains(fd.Doc.Text(), reviewMark) {
			pos := fset.Position(fd.Pos())
			out = append(out, Finding{Path: where[fn.Name], Line: pos.Line, Col: pos.Column, Review: true,
				Message: fmt.Sprintf("func %s is a rename that generate offered (%s to %s); review it, then delete the %q paragraph of its doc", fn.Name, fn.RenamedFrom, fn.Field.Name, reviewMark)})
			continue
		}
		if msg, ok := stub(fd); ok {
			pos := fset.Position(fd.Pos())
			out = append(out, Finding{Path: where[fn.Name], Line: pos.Line, Col: pos.Column,
				Message: fmt.Sprintf("func %s is still a stub: it panics %q; write the migration of %s from version %d to %d: until then, a record of version %d that the journal reads (a replay after a crash, time travel) stops it", fn.Name, msg, fn.What, fn.From, fn.From+1, fn.From)})
		}
	}
	slices.SortFunc(out, func(a, b Finding) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return a.Line - b.Line
	})
	return out, nil
}

// reviewMark starts the paragraph of a rename's stub that asks for review.
const reviewMark = "Review:"

// Declared returns the names of the functions the files of impl/migrations
// under dir declare (a file that does not parse declares none).
func Declared(dir string) (map[string]bool, error) {
	names := make(map[string]bool)
	entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(Dir)))
	if errors.Is(err, fs.ErrNotExist) {
		return names, nil
	}
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, filepath.FromSlash(Dir), e.Name()), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil || ast.IsGenerated(f) {
			continue
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				names[fd.Name.Name] = true
			}
		}
	}
	return names, nil
}

// stub reports whether fd's body is one panic("not implemented...").
func stub(fd *ast.FuncDecl) (string, bool) {
	if fd.Body == nil || len(fd.Body.List) != 1 {
		return "", false
	}
	es, ok := fd.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return "", false
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return "", false
	}
	if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "panic" {
		return "", false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	msg, err := strconv.Unquote(lit.Value)
	if err != nil || !strings.HasPrefix(msg, "not implemented") {
		return "", false
	}
	return msg, true
}
