package modelgen

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/gen/migrations"
	"github.com/moora-go/moora/modelgen/internal/implscan"
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/versions"
)

// Generate loads the spec file and writes beside it what it makes: decl/,
// the glue of impl/, a stub for each hand-written function and migration
// that is missing, and the spec's history with a new version when its data
// shapes changed (with Options.Amend, the newest version replaced). With
// Options.Prune it then moves the orphans of impl/ into PrunedDir.
//
// The report lists the files written, the orphans moved, the new version
// and its changes of data shapes, and what the scans of impl/ and of the
// migrations found. Hand-written files are never overwritten. A run that
// wrote the files but found code in impl/ the build will fail on fails all
// the same, with StatusDrift, so that go generate stops there.
func Generate(file string, opts Options) (*Report, error) {
	r := &Report{Spec: file}
	m, err := load(r, file, opts.Strict)
	if err != nil {
		return r, err
	}
	dir := filepath.Dir(file)
	g, err := generateAll(r, m, file, opts.Amend)
	if err != nil {
		return r, err
	}
	changes, err := writeFiles(dir, g.out)
	if err != nil {
		r.Status = StatusError
		return r, fmt.Errorf("writing the generated files (nothing was changed): %w", err)
	}
	for _, c := range changes {
		r.Written = append(r.Written, FileChange{Path: filepath.Join(dir, filepath.FromSlash(c.Path)), Kind: c.Kind.String()})
	}
	pruned := make(map[string]bool)
	if opts.Prune {
		if err := prune(r, dir, g.scan, pruned); errors.Is(err, errKept) {
			return r, nil
		} else if err != nil {
			return r, err
		}
	}
	plan := g.plan
	r.Version, r.NewVersion, r.Amended = plan.Current, plan.New && len(plan.Pending) > 0, plan.Amended
	for _, c := range plan.Pending {
		r.Changes = append(r.Changes, shapeChange(plan.Pos(nil, c), c))
	}
	if r.NewVersion {
		step := plan.Steps[len(plan.Steps)-1]
		r.MigrationsDir = filepath.Join(dir, filepath.FromSlash(migrations.Dir))
		// A stub to write, not only renames to review.
		for _, fn := range migrations.Funcs(plan, g.declared) {
			if fn.From == step.From && !g.declared[fn.Name] && fn.RenamedFrom == "" {
				r.MigrationsFile = filepath.Join(r.MigrationsDir, filepath.Base(fn.Path))
				break
			}
		}
		r.SnapshotNote = step.StateChanged && !step.State && !step.StateDecodes && !step.StateConverts
	}
	problems := 0
	for _, f := range g.scan.Findings {
		if pruned[f.Path] {
			continue
		}
		r.Findings = append(r.Findings, finding(dir, f, false))
		if !f.Warning() {
			problems++
		}
	}
	if err := scanMigrations(r, dir, plan); err != nil {
		return r, err
	}
	if problems > 0 {
		hint := "fix them"
		if slices.ContainsFunc(g.scan.Findings, func(f *implscan.Finding) bool { return !pruned[f.Path] && f.Kind == implscan.Orphan }) {
			hint = "fix them, or move the orphans with agentgen generate --prune"
		}
		r.Status = StatusDrift
		return r, fmt.Errorf("the generated files are written, but %s in impl/ will stop the build: %s", plural(problems, "problem"), hint)
	}
	r.Status = StatusUpToDate
	return r, nil
}

// prune moves the orphans of scan, and records in r and in pruned what it
// moved and what it left in place. Orphans left in place fail the run,
// with StatusDrift and a nil error: the report says it all.
func prune(r *Report, dir string, scan *implscan.ImplScan, pruned map[string]bool) error {
	moves, err := pruneFiles(dir, scan)
	if err != nil {
		r.Status = StatusError
		return fmt.Errorf("moving the orphans (the generated files were written, no orphan was moved): %w", err)
	}
	for _, mv := range moves {
		pruned[mv.From] = true
		r.Moved = append(r.Moved, Move{From: filepath.Join(dir, filepath.FromSlash(mv.From)), To: filepath.Join(dir, filepath.FromSlash(mv.To))})
	}
	if len(scan.Kept) == 0 {
		return nil
	}
	for _, from := range slices.Sorted(maps.Keys(scan.Kept)) {
		pruned[from] = true
		r.Moved = append(r.Moved, Move{From: filepath.Join(dir, filepath.FromSlash(from)), Reason: scan.Kept[from]})
	}
	for _, f := range scan.Findings {
		if !pruned[f.Path] {
			r.Findings = append(r.Findings, finding(dir, f, false))
		}
	}
	r.Status = StatusDrift
	return errKept
}

// errKept stops Generate after prune left orphans in place.
var errKept = errors.New("orphans left in place")

// scanMigrations puts into r the migrations of the plan that are missing
// or still stubs.
func scanMigrations(r *Report, dir string, plan *versions.Plan) error {
	migrs, err := migrations.Scan(dir, plan)
	if err != nil {
		r.Status = StatusError
		return err
	}
	for _, f := range migrs {
		finding := Finding{Path: filepath.Join(dir, filepath.FromSlash(f.Path)), Line: f.Line, Col: f.Col, Kind: "migration", Message: f.Message}
		if f.Review {
			finding.Warning = true
			r.Findings = append(r.Findings, finding)
			continue
		}
		r.Migrations = append(r.Migrations, finding)
	}
	return nil
}

// generatedFiles is what Generate writes and Check compares: the files in
// memory, and what they were made from.
type generatedFiles struct {
	out  *gen.Output
	scan *implscan.ImplScan
	plan *versions.Plan
	// declared are the functions impl/migrations declared before
	// anything was written.
	declared map[string]bool
}

// generateAll reads the spec's history, scans impl/, and generates decl/,
// impl/ and the history in memory. The problems of an invalid history go
// into r.History.
func generateAll(r *Report, m *model.Model, file string, amend bool) (*generatedFiles, error) {
	g, err := generateFiles(m, file, amend)
	if err != nil {
		r.Status = StatusError
		if ds := asDiagnostics(err); ds != nil {
			r.Status, r.History = StatusInvalid, diagnostics(ds, false)
		}
	}
	return g, err
}

func generateFiles(m *model.Model, file string, amend bool) (*generatedFiles, error) {
	dir := filepath.Dir(file)
	hist, err := versions.Read(historyFile(file))
	if err != nil {
		return nil, err
	}
	if len(hist.Versions) == 0 {
		if err := lostHistory(file); err != nil {
			return nil, err
		}
	}
	plan, err := planVersions(hist, m, amend)
	if err != nil {
		return nil, err
	}
	scan, err := scanImpl(dir, m)
	if err != nil {
		return nil, err
	}
	declared, err := migrations.Declared(dir)
	if err != nil {
		return nil, err
	}
	out, err := generateModel(m, declGen, implGen(scan), versionsGen(plan, filepath.Base(historyFile(file)), declared), tsGen(plan))
	if err != nil {
		return nil, err
	}
	return &generatedFiles{out: out, scan: scan, plan: plan, declared: declared}, nil
}

// lostHistory says why a spec without a history file is not a new spec,
// when it can tell: another spec's history beside it (the spec was
// renamed), or a decl/ generated from a later version than 1 (the history
// was deleted). Starting again at version 1 would read the journals of
// those versions as version 1.
func lostHistory(file string) error {
	dir := filepath.Dir(file)
	others, _ := filepath.Glob(filepath.Join(dir, "*.history.json"))
	if len(others) > 0 {
		return fmt.Errorf("%s has no history %s, but %s is here: if the spec was renamed, rename its history too, or its journals will be read as version 1 of a new history", file, filepath.Base(historyFile(file)), others[0])
	}
	if v := declVersion(dir); v > 1 {
		return fmt.Errorf("%s has no history %s, but decl/ was generated from version %d of the spec: restore the history (from version control), or the journals of versions 1 to %d will be read as version 1 of a new history", file, filepath.Base(historyFile(file)), v, v)
	}
	return nil
}

// declVersion is the SpecVersion constant of the decl/ generated under
// dir, or 0 when there is none, it does not parse, or it is not an
// integer.
func declVersion(dir string) int {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "decl", "version.go"), nil, parser.SkipObjectResolution)
	if err != nil {
		return 0
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if name.Name != "SpecVersion" || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.INT {
					v, _ := strconv.Atoi(lit.Value)
					return v
				}
			}
		}
	}
	return 0
}
