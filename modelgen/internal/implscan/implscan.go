package implscan

import (
	"cmp"
	"errors"
	"fmt"
	"go/ast"
	gobuild "go/build"
	"go/build/constraint"
	"go/parser"
	"go/printer"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/model"
)

// FindingKind says what ScanImpl found.
type FindingKind uint8

// The kinds of findings. All but NotImplemented are errors: agentgen check
// fails on them.
const (
	// Orphan: a hand-written file with an initial state or a transition
	// for an actor or input that is no longer in the spec.
	Orphan FindingKind = iota
	// WrongSignature: a hand-written function that is not declared the way
	// the generated glue calls it, or a stub's file that lacks its function.
	WrongSignature
	// Unparsable: a file go/parser cannot read.
	Unparsable
	// NotImplemented: a stub that still panics "not implemented". A warning.
	NotImplemented
	// BuildError: what go build refuses in decl/ or impl/ (a type error,
	// a module it cannot load), found by type-checking the packages
	// (agentgen check), not by Scan.
	BuildError
	// UnreadProperty: a property of an input that the input's transition
	// never reads, so that what is sent for it is journaled and never
	// reaches the state. A warning (an error with --strict).
	UnreadProperty
)

func (k FindingKind) String() string {
	return [...]string{"orphan", "signature", "syntax", "not-implemented", "build", "unread"}[k]
}

// Finding is one thing ScanImpl reports about the hand-written code of
// impl/.
type Finding struct {
	Kind FindingKind
	// Path is slash-separated and relative to the spec's directory.
	Path      string
	Line, Col int
	Message   string
	// Func is the hand-written function concerned, for WrongSignature and
	// NotImplemented.
	Func *model.ImplFunc
}

// Warning says whether the finding is only a warning.
func (f *Finding) Warning() bool { return f.Kind == NotImplemented || f.Kind == UnreadProperty }

// String formats the finding as "path:line:col: [warning: ]message".
func (f *Finding) String() string {
	w := ""
	if f.Warning() {
		w = "warning: "
	}
	return fmt.Sprintf("%s:%d:%d: %s%s", f.Path, f.Line, f.Col, w, f.Message)
}

// ImplScan is what ScanImpl found in impl/.
type ImplScan struct {
	// Found holds the hand-written functions that need no stub, by package
	// and name ("transitions.SendUserMessage"): those declared in some file
	// of their package, and those whose stub's file exists without them
	// (reported as WrongSignature).
	Found map[string]bool
	// Broken holds the package directories (InitialsDir, TransitionsDir,
	// InvariantsDir) with a file that does not parse.
	Broken map[string]bool
	// Findings are sorted by path and position.
	Findings []*Finding
	// Kept holds the orphan files Prune leaves in place, by path, each with
	// the reason: something else in their package uses what they declare,
	// so that moving them would break the build.
	Kept map[string]string
}

// Errors counts the findings that are not warnings.
func (s *ImplScan) Errors() int {
	n := 0
	for _, f := range s.Findings {
		if !f.Warning() {
			n++
		}
	}
	return n
}

// Orphans lists the paths of the orphan files, sorted.
func (s *ImplScan) Orphans() []string {
	var ps []string
	for _, f := range s.Findings {
		if f.Kind == Orphan {
			ps = append(ps, f.Path)
		}
	}
	slices.Sort(ps)
	return slices.Compact(ps)
}

// Scan reads the hand-written code under dir/impl (dir is the spec's
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
// It fails with model.ErrNoPackage when the model has no package path.
func Scan(dir string, m *model.Model) (*ImplScan, error) {
	if err := m.NeedPackage(); err != nil {
		return nil, err
	}
	scan := &ImplScan{Found: make(map[string]bool), Broken: make(map[string]bool), Kept: make(map[string]string)}
	funcs := model.ImplFuncs(m)
	fset := token.NewFileSet()
	for _, pkgDir := range []string{model.InitialsDir, model.TransitionsDir} {
		files, err := parseDir(fset, dir, pkgDir, m.DeclPath(), scan)
		if err != nil {
			return nil, err
		}
		scan.match(fset, m, pkgDir, files, funcs)
	}
	// Package invariants: a function of the fuzz target declared in any
	// file of it needs no stub. Its signature is the compiler's to check.
	files, err := parseDir(fset, dir, model.InvariantsDir, m.DeclPath(), scan)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if f.test || f.excluded != "" {
			continue
		}
		for _, fd := range f.funcs {
			scan.Found[path.Base(model.InvariantsDir)+"."+fd.Name.Name] = true
		}
	}
	slices.SortStableFunc(scan.Findings, func(a, b *Finding) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return scan, nil
}

// implFile is one parsed hand-written file.
type implFile struct {
	path  string // slash, relative to the spec's directory
	ast   *ast.File
	decl  string // the name it imports decl/ as; "" when it does not
	funcs []*ast.FuncDecl
	// test is set for a _test.go file, which is read only for what it uses.
	test bool
	// excluded, when not empty, says why the go command does not build the
	// file: its build constraint or its name. Such a file declares nothing.
	excluded     string
	excludedLine int
}

func parseDir(fset *token.FileSet, dir, pkgDir, declImport string, scan *ImplScan) ([]*implFile, error) {
	entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(pkgDir)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var files []*implFile
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, ".go") ||
			strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			continue
		}
		rel := pkgDir + "/" + name
		src, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		if gen.IsOwned(src) {
			continue
		}
		if strings.HasSuffix(name, "_test.go") {
			// Read only for the names it uses: a file Prune moves must
			// declare nothing that the rest of the package uses.
			if f, _ := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution); f != nil {
				files = append(files, &implFile{path: rel, ast: f, test: true})
			}
			continue
		}
		if ok, err := gobuild.Default.MatchFile(filepath.Join(dir, filepath.FromSlash(pkgDir)), name); err == nil && !ok {
			why, line := exclusion(src)
			files = append(files, &implFile{path: rel, excluded: why, excludedLine: line})
			continue
		}
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			pos, msg := token.Position{Filename: rel, Line: 1, Column: 1}, err.Error()
			var list scanner.ErrorList
			if errors.As(err, &list) && len(list) > 0 {
				pos, msg = list[0].Pos, list[0].Msg
			}
			scan.Broken[pkgDir] = true
			scan.Findings = append(scan.Findings, &Finding{Kind: Unparsable, Path: rel, Line: pos.Line, Col: pos.Column,
				Message: fmt.Sprintf("cannot parse: %s; agentgen creates no stubs in %s until it can", msg, pkgDir)})
			if f == nil {
				continue
			}
		}
		file := &implFile{path: rel, ast: f, decl: importName(f, declImport)}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name != nil {
				file.funcs = append(file.funcs, fd)
			}
		}
		files = append(files, file)
	}
	return files, nil
}

// exclusion says why the go command does not build a file it matched
// against its build constraints and name, and on which line.
func exclusion(src []byte) (why string, line int) {
	for i, l := range strings.Split(string(src), "\n") {
		l = strings.TrimSpace(l)
		if constraint.IsGoBuild(l) {
			return "its build constraint " + l, i + 1
		}
		if l != "" && !strings.HasPrefix(l, "//") {
			break
		}
	}
	return "its file name, which names another operating system or architecture,", 1
}

// importName returns the name a file imports a package under: its explicit
// name or the last element of its path; "" when the file does not import it.
func importName(f *ast.File, importPath string) string {
	for _, spec := range f.Imports {
		if p, err := strconv.Unquote(spec.Path.Value); err != nil || p != importPath {
			continue
		}
		if spec.Name != nil {
			return spec.Name.Name
		}
		return path.Base(importPath)
	}
	return ""
}

// match relates the functions of one package to the files declaring them.
func (scan *ImplScan) match(fset *token.FileSet, m *model.Model, pkgDir string, files []*implFile, funcs []*model.ImplFunc) {
	type declared struct {
		file *implFile
		fd   *ast.FuncDecl
	}
	byName := make(map[string]declared)
	byPath := make(map[string]*implFile)
	for _, f := range files {
		if f.test {
			continue
		}
		byPath[f.path] = f
		if f.excluded != "" {
			continue
		}
		for _, fd := range f.funcs {
			if _, dup := byName[fd.Name.Name]; !dup {
				byName[fd.Name.Name] = declared{f, fd}
			}
		}
	}
	expected := make(map[string]bool)
	for _, fn := range funcs {
		if fn.Dir() == pkgDir {
			expected[fn.Name] = true
		}
	}
	claimed := make(map[*implFile]bool)
	add := func(kind FindingKind, file string, pos token.Pos, fn *model.ImplFunc, msg string) {
		p := token.Position{Line: 1, Column: 1}
		if pos.IsValid() {
			p = fset.Position(pos)
		}
		scan.Findings = append(scan.Findings, &Finding{Kind: kind, Path: file, Line: p.Line, Col: p.Column, Message: msg, Func: fn})
	}
	for _, fn := range funcs {
		if fn.Dir() != pkgDir {
			continue
		}
		what := "the initial state of actor " + fn.Actor.Name
		if fn.Input != nil {
			what = fmt.Sprintf("the transition of input %s (actor %s)", fn.Input.Name, fn.Actor.Name)
		}
		if d, ok := byName[fn.Name]; ok {
			scan.Found[fn.Package()+"."+fn.Name] = true
			claimed[d.file] = true
			if !signatureMatches(d.fd, d.file.decl, fn) {
				msg := fmt.Sprintf("%s is %s, which must be declared as %s", funcString(fset, d.fd), what, fn.Signature())
				if d.file.decl == "" {
					msg += fmt.Sprintf(", with decl the package %s, which this file does not import", m.DeclPath())
				}
				add(WrongSignature, d.file.path, d.fd.Pos(), fn, msg)
				continue
			}
			if call, lit := stubPanic(d.fd); call != nil {
				add(NotImplemented, d.file.path, call.Pos(), fn, fmt.Sprintf("func %s is still a stub: it panics %s; write its body", fn.Name, lit.Value))
				continue
			}
			for _, f := range unread(d.fd, fn.Input) {
				where := ""
				if m.Src != nil && f.Ptr != "" {
					where = " (" + m.Src.ValuePos(f.Ptr).String() + ")"
				}
				add(UnreadProperty, d.file.path, d.fd.Name.Pos(), fn, fmt.Sprintf("property %s of input %s%s is never read by func %s: what is sent for it is journaled but never reaches the state; read it (input.%s), or remove it from the spec",
					f.Name, fn.Input.Name, where, fn.Name, f.GoName))
			}
			continue
		}
		f, ok := byPath[fn.Path]
		if !ok {
			continue // missing: Impl generates the stub
		}
		scan.Found[fn.Package()+"."+fn.Name] = true
		claimed[f] = true
		if f.excluded != "" {
			scan.Findings = append(scan.Findings, &Finding{Kind: WrongSignature, Path: f.path, Line: f.excludedLine, Col: 1, Func: fn,
				Message: fmt.Sprintf("this file must declare %s: %s; it does, but %s keeps the go command from building it", what, fn.Signature(), f.excluded)})
			continue
		}
		if i := slices.IndexFunc(f.funcs, func(fd *ast.FuncDecl) bool { return !expected[fd.Name.Name] && stateFunc(fd, f.decl) }); i >= 0 {
			fd := f.funcs[i]
			add(WrongSignature, f.path, fd.Pos(), fn, fmt.Sprintf("%s is in the file of %s, which must be declared as %s",
				funcString(fset, fd), what, fn.Signature()))
			continue
		}
		add(WrongSignature, f.path, f.ast.Package, fn, fmt.Sprintf("this file must declare %s: %s", what, fn.Signature()))
	}
	known := declNames(m)
	for _, f := range files {
		if claimed[f] || f.test {
			continue
		}
		for _, fd := range f.funcs {
			if !orphanFunc(fd, f.decl, known) {
				continue
			}
			msg := fmt.Sprintf("orphan: %s returns a state but is no initial state or transition of %s (its actor or input was removed or renamed); ",
				funcString(fset, fd), gen.PathBase(m.File))
			if used := usedElsewhere(f, files); used != "" {
				scan.Kept[f.path] = used
				msg += "move its code or delete it; --prune cannot move this file: " + used + "; move the orphan out by hand"
			} else {
				msg += "move its code, delete the file, or run agentgen generate --prune to move the file to " + model.PrunedDir
			}
			add(Orphan, f.path, fd.Pos(), nil, msg)
			break
		}
	}
}

// declNames lists the names of package decl that the model declares and an
// initial state or a transition may take or return: the states, contexts
// and data types, inputs included.
func declNames(m *model.Model) map[string]bool {
	names := make(map[string]bool)
	for _, a := range m.Actors {
		names[a.Idents.State] = true
		names[a.Idents.Context] = true
	}
	for _, t := range m.Types {
		names[t.GoName] = true
	}
	return names
}

// orphanFunc says whether fd is an initial state or a transition for an
// actor or input the model no longer has: exported, declared as an initial
// state (func() decl.StateOfX) or a transition (func(decl.StateOfX, decl.T)
// decl.StateOfX), with a state or an input type that package decl no
// longer declares. A helper that takes or returns a state of the model is
// none.
func orphanFunc(fd *ast.FuncDecl, decl string, known map[string]bool) bool {
	if !stateFunc(fd, decl) {
		return false
	}
	state, _ := declType(fd.Type.Results.List[0].Type, decl)
	var params []ast.Expr
	for _, field := range fd.Type.Params.List {
		for range max(len(field.Names), 1) {
			params = append(params, field.Type)
		}
	}
	switch len(params) {
	case 0:
		return !known[state]
	case 2:
		in, ok := declType(params[1], decl)
		if first, _ := declType(params[0], decl); first != state || !ok {
			return false
		}
		return !known[state] || !known[in]
	}
	return false
}

// usedElsewhere says which name declared in f the other files of its
// package (tests included, generated files not: they are regenerated
// without orphans) use, and where; "" when none. Identifiers are
// compared by name, without type checking, so a local of the same name
// counts as a use: the answer errs towards keeping a file in place.
func usedElsewhere(f *implFile, files []*implFile) string {
	declared := make(map[string]bool)
	for _, d := range f.ast.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.Name != "init" && d.Name.Name != "_" {
				declared[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					declared[spec.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						if n.Name != "_" {
							declared[n.Name] = true
						}
					}
				}
			}
		}
	}
	for _, g := range files {
		if g == f || g.ast == nil || g.excluded != "" {
			continue
		}
		var used string
		ast.Inspect(g.ast, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && used == "" && declared[id.Name] {
				used = id.Name
			}
			return used == ""
		})
		if used != "" {
			return fmt.Sprintf("%s, which it declares, is used in %s", used, g.path)
		}
	}
	return ""
}

// stateFunc says whether fd looks like an initial state or a transition:
// exported, returning one decl.StateOfX.
func stateFunc(fd *ast.FuncDecl, decl string) bool {
	if !fd.Name.IsExported() || decl == "" || fd.Type.Results == nil || len(fd.Type.Results.List) != 1 || len(fd.Type.Results.List[0].Names) > 1 {
		return false
	}
	name, ok := declType(fd.Type.Results.List[0].Type, decl)
	return ok && strings.HasPrefix(name, model.StatePrefix)
}

// declType returns the name of a type expression that names a type of the
// decl package, imported as decl.
func declType(e ast.Expr, decl string) (string, bool) {
	if decl == "." {
		id, ok := e.(*ast.Ident)
		if !ok {
			return "", false
		}
		return id.Name, true
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok || x.Name != decl {
		return "", false
	}
	return sel.Sel.Name, true
}

// signatureMatches says whether fd is declared as fn must be.
func signatureMatches(fd *ast.FuncDecl, decl string, fn *model.ImplFunc) bool {
	if decl == "" || fd.Type.TypeParams != nil {
		return false
	}
	state := fn.Actor.Idents.State
	want := []string{}
	if fn.Input != nil {
		want = []string{state, fn.Input.Decl.GoName}
	}
	types := func(fl *ast.FieldList) ([]string, bool) {
		var out []string
		if fl == nil {
			return out, true
		}
		for _, field := range fl.List {
			name, ok := declType(field.Type, decl)
			if !ok {
				return nil, false
			}
			for range max(len(field.Names), 1) {
				out = append(out, name)
			}
		}
		return out, true
	}
	params, ok := types(fd.Type.Params)
	if !ok || !slices.Equal(params, want) {
		return false
	}
	results, ok := types(fd.Type.Results)
	return ok && slices.Equal(results, []string{state})
}

// unread returns the properties of in that the transition fd never reads:
// no selector input.Field names them. A transition that uses its input
// otherwise (passes it on, copies it, switches on it) is taken to read
// every property. A transition without a name for its input reads none.
func unread(fd *ast.FuncDecl, in *model.Input) []*model.Field {
	if in == nil || fd.Body == nil || fd.Type.Params == nil {
		return nil
	}
	var names []*ast.Ident
	for _, p := range fd.Type.Params.List {
		names = append(names, p.Names...)
	}
	if len(names) != 2 {
		return nil // unnamed parameters: nothing to go by
	}
	input := names[1].Name
	read := make(map[string]bool)
	whole := false
	if input != "_" {
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == input {
					read[n.Sel.Name] = true
					return false
				}
			case *ast.Ident:
				if n.Name == input {
					whole = true
				}
			}
			return !whole
		})
	}
	if whole {
		return nil
	}
	var fs []*model.Field
	for _, f := range in.Decl.Fields {
		if !read[f.GoName] {
			fs = append(fs, f)
		}
	}
	return fs
}

// stubPanic returns the first panic("not implemented...") call in the body
// of fd and its string literal, or nil.
func stubPanic(fd *ast.FuncDecl) (*ast.CallExpr, *ast.BasicLit) {
	if fd.Body == nil {
		return nil, nil
	}
	var call *ast.CallExpr
	var lit *ast.BasicLit
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if call != nil {
			return false
		}
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if id, ok := c.Fun.(*ast.Ident); !ok || id.Name != "panic" || len(c.Args) != 1 {
			return true
		}
		l, ok := c.Args[0].(*ast.BasicLit)
		if !ok || l.Kind != token.STRING {
			return true
		}
		if s, err := strconv.Unquote(l.Value); err == nil && strings.HasPrefix(s, "not implemented") {
			call, lit = c, l
		}
		return true
	})
	return call, lit
}

// funcString prints a function's declaration without its body:
// "func SendUserMessage(state decl.StateOfUser, input decl.SendUserMessage) decl.StateOfUser".
func funcString(fset *token.FileSet, fd *ast.FuncDecl) string {
	var b strings.Builder
	if err := printer.Fprint(&b, fset, &ast.FuncDecl{Name: fd.Name, Type: fd.Type}); err != nil {
		return "func " + fd.Name.Name
	}
	return b.String()
}
