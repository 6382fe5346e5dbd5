// Package typecheck type-checks an agent's decl/ and impl/ packages, and
// every package of the module that imports decl (the program that injects
// the effects and jobs, tests included), with the go command (through
// golang.org/x/tools/go/packages): what go build or go vet would refuse in
// them, each at its file:line:col, explained by the change of the spec that
// caused it where it can tell.
package typecheck

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/tools/go/packages"

	"github.com/moora-go/moora/modelgen/internal/evolve"
	"github.com/moora-go/moora/modelgen/internal/implscan"
	"github.com/moora-go/moora/modelgen/internal/names"
	"github.com/moora-go/moora/modelgen/internal/versions"
)

// MaxErrors is the most errors a type check reports; it says how many it
// left out.
const MaxErrors = 100

// Timeout bounds the go command a type check runs.
const Timeout = 5 * time.Minute

// Patterns are the packages a type check loads, relative to the spec's
// directory.
var Patterns = []string{"./decl/...", "./impl/..."}

// Result is what a type check found.
type Result struct {
	// Findings are the errors, of kind implscan.BuildError, with paths
	// relative to the spec's directory where they are under it; at most
	// MaxErrors. An error of the go command with no position (a missing
	// module, a go.sum without an entry) has no path and line.
	Findings []*implscan.Finding
	// More is how many errors were left out over MaxErrors.
	More int
	// Skipped says why the packages were not type-checked ("" when they
	// were): there is no go command, or no go.mod.
	Skipped string
	// Importers are the directories of the packages of the module,
	// besides decl/ and impl/, that import decl (or a package that does;
	// or whose tests do), type-checked with them, tests included:
	// relative to the spec's directory, "." for the directory itself.
	Importers []string
}

// Check type-checks the packages of decl/ and impl/ under dir, the spec's
// directory, and those of its module that import decl (Result.Importers),
// with their tests, as they are on disk. skip says which files (relative to dir)
// to leave the errors of unreported: those that follow from what a scan
// of impl/ already reported. plan, when
// not nil, explains an undefined name by the change of the spec that
// removed it.
func Check(ctx context.Context, dir string, skip func(path string) bool, plan *versions.Plan) (*Result, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return &Result{Skipped: "there is no go command on PATH"}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	gomod, err := goEnv(ctx, goTool, abs, "GOMOD")
	if err != nil {
		return nil, err
	}
	if gomod == "" || gomod == os.DevNull {
		return &Result{Skipped: abs + " is in no Go module (no go.mod here or above)"}, nil
	}
	importers, err := declImporters(ctx, goTool, abs, filepath.Dir(gomod))
	if err != nil {
		return nil, err
	}
	patterns := slices.Clone(Patterns)
	r := &Result{}
	for _, imp := range importers {
		patterns = append(patterns, imp.path)
		r.Importers = append(r.Importers, imp.dir)
	}
	cfg := &packages.Config{
		Context: ctx,
		Mode:    packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedImports,
		Dir:     abs,
		Tests:   true,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("type-checking %s: the go command took longer than %v", dir, Timeout)
		}
		return nil, fmt.Errorf("type-checking %s: %w", dir, err)
	}
	if len(pkgs) == 0 {
		// go/packages loads nothing, and says nothing, when the go command
		// refuses the module itself: "updates to go.mod needed", a go.sum
		// without an entry. Its message is the finding.
		cmd := exec.CommandContext(ctx, goTool, append([]string{"list"}, patterns...)...)
		cmd.Dir = abs
		out, err := cmd.CombinedOutput()
		if err == nil {
			return nil, fmt.Errorf("type-checking %s: the go command lists %s, but go/packages loads none of them", dir, strings.Join(patterns, " "))
		}
		r.Findings = append(r.Findings, &implscan.Finding{Kind: implscan.BuildError, Message: strings.TrimSpace(string(out))})
		return r, nil
	}
	seen := make(map[string]bool)
	add := func(f *implscan.Finding) {
		key := fmt.Sprintf("%s:%d:%d: %s", f.Path, f.Line, f.Col, f.Message)
		if (f.Path == "" || !skip(f.Path)) && !seen[key] {
			seen[key] = true
			r.Findings = append(r.Findings, f)
		}
	}
	// A dependency the go command cannot load (a module not required)
	// has its own error; the "could not import" of each package that
	// imports it says nothing more.
	broken := make(map[string]bool)
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if len(p.Errors) > 0 {
			broken[p.PkgPath] = true
		}
	})
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		typeErrors := slices.ContainsFunc(p.Errors, func(e packages.Error) bool { return e.Kind == packages.TypeError })
		for _, e := range p.Errors {
			if m := couldNotImport.FindStringSubmatch(e.Msg); m != nil && broken[m[1]] {
				continue
			}
			out, ok := strings.CutPrefix(e.Msg, "# ")
			if !ok || e.Kind != packages.ListError {
				add(finding(abs, e))
				continue
			}
			// The compiler's output for a package that does not build
			// ("# pkg" and a line per error), which type-checking the
			// package from source reports again, one error at a time.
			if typeErrors {
				continue
			}
			lines := strings.Split(out, "\n")
			for _, line := range lines[1:] {
				pos, msg, ok := compilerLine(line)
				if !ok {
					pos, msg = "", line
				}
				add(finding(abs, packages.Error{Pos: pos, Msg: msg, Kind: packages.ListError}))
			}
		}
	})
	slices.SortStableFunc(r.Findings, func(a, b *implscan.Finding) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	if len(r.Findings) > MaxErrors {
		r.More = len(r.Findings) - MaxErrors
		r.Findings = r.Findings[:MaxErrors]
	}
	if plan != nil {
		for _, f := range r.Findings {
			if why := explain(f.Message, plan); why != "" {
				f.Message += ": " + why
			}
		}
	}
	return r, nil
}

// importer is a package of the module, outside decl/ and impl/, that
// imports decl.
type importer struct {
	path string // its import path
	dir  string // its directory, relative to the spec's
}

// listed is what declImporters reads of go list.
type listed struct {
	ImportPath, Dir                 string
	Deps, TestImports, XTestImports []string
}

// declImporters lists the packages of the module whose root is modRoot,
// outside decl/ and impl/ under dir (the spec's directory), that import
// dir's decl, directly or through another package, or whose tests do: go
// list reads their imports without type-checking anything. None when dir
// has no decl package yet.
func declImporters(ctx context.Context, goTool, dir, modRoot string) ([]importer, error) {
	cmd := exec.CommandContext(ctx, goTool, "list", "-e", "-json=ImportPath,Dir,Deps,TestImports,XTestImports", "./...")
	cmd.Dir = modRoot
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			// The module itself is refused (go.mod needs updates):
			// the type check reports it.
			return nil, nil
		}
		return nil, fmt.Errorf("listing the packages of %s: %w", modRoot, err)
	}
	var pkgs []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("listing the packages of %s: %w", modRoot, err)
		}
		pkgs = append(pkgs, p)
	}
	declDir := filepath.Join(dir, "decl")
	var declPath string
	for _, p := range pkgs {
		if p.Dir == declDir {
			declPath = p.ImportPath
		}
	}
	if declPath == "" {
		return nil, nil
	}
	uses := make(map[string]bool) // the packages whose build imports decl
	for _, p := range pkgs {
		if slices.Contains(p.Deps, declPath) {
			uses[p.ImportPath] = true
		}
	}
	var found []importer
	for _, p := range pkgs {
		tests := slices.Concat(p.TestImports, p.XTestImports)
		if !uses[p.ImportPath] && !slices.ContainsFunc(tests, func(path string) bool { return path == declPath || uses[path] }) {
			continue
		}
		rel, err := filepath.Rel(dir, p.Dir)
		if err != nil {
			return nil, err
		}
		rel = filepath.ToSlash(rel)
		if rel == "decl" || rel == "impl" || strings.HasPrefix(rel, "decl/") || strings.HasPrefix(rel, "impl/") {
			continue // Patterns has them
		}
		found = append(found, importer{path: p.ImportPath, dir: rel})
	}
	return found, nil
}

// goEnv returns one variable of go env, run in dir.
func goEnv(ctx context.Context, goTool, dir, name string) (string, error) {
	cmd := exec.CommandContext(ctx, goTool, "env", name)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("go env %s in %s: %s", name, dir, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("go env %s in %s: %w", name, dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// finding makes a finding of a package error: its position made relative
// to dir when it is under it.
func finding(dir string, e packages.Error) *implscan.Finding {
	f := &implscan.Finding{Kind: implscan.BuildError, Message: e.Msg}
	file, line, col := splitPos(e.Pos)
	if file != "" {
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file) // the compiler's, relative to dir
		}
		if rel, err := filepath.Rel(dir, file); err == nil && !strings.HasPrefix(rel, "..") {
			file = rel
		}
		f.Path = filepath.ToSlash(file)
	}
	f.Line, f.Col = line, col
	return f
}

// compilerLine splits a line of the compiler's output, "file:line:col: msg".
func compilerLine(line string) (pos, msg string, ok bool) {
	for i := 0; i < len(line); {
		j := strings.Index(line[i:], ": ")
		if j < 0 {
			return "", "", false
		}
		pos, msg = line[:i+j], line[i+j+2:]
		if _, l, _ := splitPos(pos); l > 0 {
			return pos, msg, true
		}
		i += j + 2
	}
	return "", "", false
}

// splitPos splits "file:line:col" or "file:line"; a position without a
// line ("", "-") gives only what it has.
func splitPos(pos string) (file string, line, col int) {
	if pos == "" || pos == "-" {
		return "", 0, 0
	}
	rest := pos
	nums := make([]int, 0, 2)
	for range 2 {
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			break
		}
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil {
			break
		}
		nums = append(nums, n)
		rest = rest[:i]
	}
	slices.Reverse(nums)
	switch len(nums) {
	case 2:
		return rest, nums[0], nums[1]
	case 1:
		return rest, nums[0], 0
	}
	return pos, 0, 0
}

// The type errors explain understands: a field or method that is not
// there, a field in a composite literal that is not there, and a name of
// package decl that is not declared.
var (
	couldNotImport = regexp.MustCompile(`^could not import (\S+) `)
	noField        = regexp.MustCompile(`\(type (?:\*)?decl\.(\w+) has no field or method (\w+)`)
	unknownField   = regexp.MustCompile(`unknown field (\w+) in struct literal of type (?:\*)?decl\.(\w+)`)
	undefined      = regexp.MustCompile(`undefined: decl\.(\w+)`)
)

// explain says which change of the spec, since an earlier version of its
// history, removed the Go name a type error says is not there: "" when it
// cannot tell.
func explain(msg string, plan *versions.Plan) string {
	var field, typ string
	if m := noField.FindStringSubmatch(msg); m != nil {
		typ, field = m[1], m[2]
	} else if m := unknownField.FindStringSubmatch(msg); m != nil {
		field, typ = m[1], m[2]
	} else if m := undefined.FindStringSubmatch(msg); m != nil {
		typ = m[1]
	} else {
		return ""
	}
	// Newest first: the pending changes, then each step back.
	type step struct {
		to      int
		changes []evolve.Change
	}
	steps := []step{{to: plan.Current, changes: plan.Pending}}
	for i := len(plan.Steps) - 1; i >= 0; i-- {
		st := plan.Steps[i]
		if st.From+1 == plan.Current && len(plan.Pending) > 0 {
			continue // the pending changes are the newest step's
		}
		steps = append(steps, step{to: st.From + 1, changes: st.Changes})
	}
	for _, st := range steps {
		for _, c := range st.changes {
			if !c.Breaking || !removal(c.What) {
				continue
			}
			if field == "" {
				// An input type that is no longer there.
				if c.Path == "" && c.Input != "" && names.PascalCase(c.Input) == typ {
					return fmt.Sprintf("version %d of the spec removed input type %s", st.to, c.Input)
				}
				continue
			}
			last := c.Path[strings.LastIndexByte(c.Path, '/')+1:]
			if last == "" || names.FieldName(last) != field {
				continue
			}
			// A property of the input or the state itself is a field of
			// the input's type, or of the state's; one deeper, of a type
			// of its own.
			if top := strings.Count(c.Path, "/") == 1; top && c.Input != "" && names.PascalCase(c.Input) != typ ||
				top && c.Input == "" && !strings.HasPrefix(typ, "StateOf") && !strings.HasPrefix(typ, "ContextOf") && typ != "AgentState" {
				continue
			}
			what := "state property " + strings.TrimPrefix(c.Path, "/")
			if c.Input != "" {
				what = "property " + strings.TrimPrefix(c.Path, "/") + " of input " + c.Input
			}
			why := fmt.Sprintf("version %d of the spec removed %s", st.to, what)
			if added := addedBeside(st.changes, c); len(added) > 0 {
				why += " and added " + strings.Join(added, ", ")
			}
			return why
		}
	}
	return ""
}

// removal says whether a change's What is the removal of a property or an
// input type.
func removal(what string) bool {
	return what == "removed state property" || what == "removed property" || what == "removed input type"
}

// addedBeside lists the properties the same change added to the object a
// removed property was in: the likely new name of a renamed one.
func addedBeside(changes []evolve.Change, removed evolve.Change) []string {
	dir := removed.Path[:strings.LastIndexByte(removed.Path, '/')+1]
	var added []string
	for _, c := range changes {
		if c.Input != removed.Input || !strings.HasPrefix(c.Path, dir) || strings.Contains(c.Path[len(dir):], "/") || c.Path == removed.Path {
			continue
		}
		if strings.HasPrefix(c.What, "new ") && strings.HasSuffix(c.What, "property") {
			added = append(added, c.Path[len(dir):])
		}
	}
	return added
}
