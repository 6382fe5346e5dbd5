package modelgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/moora-go/moora/modelgen/internal/evolve"
	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/gen/migrations"
	"github.com/moora-go/moora/modelgen/internal/implscan"
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/spec"
	gensync "github.com/moora-go/moora/modelgen/internal/sync"
	"github.com/moora-go/moora/modelgen/internal/typecheck"
	"github.com/moora-go/moora/modelgen/internal/versions"
)

// Check loads the spec file and compares what Generate would write with
// the files beside it, writing nothing. The report lists the changes of
// data shapes since the history's newest version (and since
// Options.Against), the migrations still to write, the generated files that
// are not up to date (with a diff), what the scan of impl/ found and, when
// the generated files are up to date and Options.TypeCheck is set, the
// errors the go command's type check of decl/ and impl/ finds.
//
// Any of these, but warnings, fails the run with StatusDrift and an error
// that sums them up; an invalid spec or history fails with StatusInvalid,
// anything else with StatusError.
func Check(file string, opts Options) (*Report, error) {
	r := &Report{Spec: file}
	m, err := load(r, file, opts.Strict)
	if err != nil {
		return r, err
	}
	dir := filepath.Dir(file)
	g, err := generateAll(r, m, file, false)
	if ds := asDiagnostics(err); ds != nil {
		return r, fmt.Errorf("%s is invalid: %s", historyFile(file), count(ds))
	}
	if err != nil {
		return r, err
	}
	c := &checker{r: r, opts: opts, file: file, dir: dir, m: m, g: g}
	for _, step := range []func() error{c.shapes, c.migrations, c.drift, c.impl, c.typeCheck} {
		if err := step(); err != nil {
			r.Status = StatusError
			return r, err
		}
	}
	if problems := c.problems(); len(problems) > 0 {
		r.Status = StatusDrift
		return r, fmt.Errorf("%s: %s", file, strings.Join(problems, "; "))
	}
	r.Status = StatusUpToDate
	return r, nil
}

// A checker is one run of Check: each stage adds to the report what it
// finds and keeps what problems needs.
type checker struct {
	r    *Report
	opts Options
	file string
	dir  string
	m    *model.Model
	g    *generatedFiles

	unrecorded []evolve.Change // breaking changes since Against that the history does not record
	migrs      int
	drifts     []gensync.Drift
	types      *typecheck.Result
}

// shapes lists the changes of data shapes: since the history's newest
// version, and since the spec given with Against.
func (c *checker) shapes() error {
	plan := c.g.plan
	for _, ch := range plan.Pending {
		c.r.Changes = append(c.r.Changes, shapeChange(plan.Pos(nil, ch), ch))
	}
	if c.opts.Against == "" {
		return nil
	}
	old, name, err := readAgainst(c.dir, c.file, c.opts.Against)
	if err != nil {
		return err
	}
	sp, err := c.m.Spec()
	if err != nil {
		return fmt.Errorf("decoding a spec that loaded: %w", err)
	}
	since := compareShapes(old, sp)
	for _, ch := range since {
		sc := shapeChange(plan.Pos(nil, ch), ch)
		sc.Since = name
		c.r.Changes = append(c.r.Changes, sc)
	}
	if !recorded(plan, old) {
		c.unrecorded = since
	}
	return nil
}

func (c *checker) migrations() error {
	if err := scanMigrations(c.r, c.dir, c.g.plan); err != nil {
		return err
	}
	c.migrs = len(c.r.Migrations)
	return nil
}

// reviews counts the renames that generate offered and that still ask for
// review.
func (c *checker) reviews() int {
	n := 0
	for _, f := range c.r.Findings {
		if f.Kind == "migration" && f.Warning {
			n++
		}
	}
	return n
}

// drift compares the generated files with the disk.
func (c *checker) drift() error {
	drift, err := compareFiles(c.dir, c.g.out)
	if err != nil {
		return err
	}
	c.drifts = drift
	for _, d := range drift {
		c.r.Files = append(c.r.Files, FileChange{
			Path: filepath.Join(c.dir, filepath.FromSlash(d.Path)), Kind: d.Kind.String(), Diff: d.Diff,
			History: d.Kind == gensync.Modified && d.Path == filepath.Base(historyFile(c.file)),
		})
	}
	return nil
}

func (c *checker) impl() error {
	for _, f := range c.g.scan.Findings {
		c.r.Findings = append(c.r.Findings, finding(c.dir, f, c.opts.Strict))
	}
	return nil
}

// typeCheck type-checks decl/ and impl/ as they are on disk: only when the
// generated files are up to date, as the errors against a stale decl/ are
// not the ones the next go build meets.
func (c *checker) typeCheck() error {
	c.types = &typecheck.Result{Skipped: "the generated files are not up to date; run agentgen generate"}
	switch {
	case !c.opts.TypeCheck:
		c.types.Skipped = "--typecheck=false"
	case len(c.drifts) == 0:
		types, err := typeCheckImpl(context.Background(), c.dir, c.g.scan, c.g.plan)
		if err != nil {
			return err
		}
		c.types = types
	}
	c.r.TypeCheck = "done"
	if c.types.Skipped != "" {
		c.r.TypeCheck = "skipped: " + c.types.Skipped
	}
	for _, f := range c.types.Findings {
		c.r.Findings = append(c.r.Findings, finding(c.dir, f, true))
	}
	c.r.MoreBuildErrors = c.types.More
	c.r.TypeChecked = c.types.Importers
	return nil
}

// problems sums up what fails the check, one phrase each.
func (c *checker) problems() []string {
	var problems []string
	plan := c.g.plan
	if n := countBreaking(plan.Pending); n > 0 {
		problems = append(problems, fmt.Sprintf("%s since version %d of the spec, which journals may hold, %s no migration; run agentgen generate, which records version %d and writes the stubs of its migrations", plural(n, "breaking change"), plan.Current-1, map[bool]string{true: "has", false: "have"}[n == 1], plan.Current))
	}
	if n := countBreaking(c.unrecorded); n > 0 {
		problems = append(problems, fmt.Sprintf("%s since %s, which the history (%s) does not record; no migration can read its journals", plural(n, "breaking change"), c.opts.Against, filepath.Base(historyFile(c.file))))
	}
	if c.migrs > 0 {
		problems = append(problems, plural(c.migrs, "migration")+" to write in "+filepath.Join(c.dir, filepath.FromSlash(migrations.Dir))+": until then, a journal that must replay a record of an earlier version stops at it")
	}
	problems = append(problems, driftProblems(c.g.out, c.drifts)...)
	kinds := make(map[implscan.FindingKind]int)
	for _, f := range c.g.scan.Findings {
		kinds[f.Kind]++
	}
	if n := kinds[implscan.WrongSignature]; n > 0 {
		problems = append(problems, plural(n, "hand-written function")+" not declared as the spec requires")
	}
	if n := kinds[implscan.Orphan]; n > 0 {
		problems = append(problems, plural(n, "orphan")+" in impl/; move or delete them, or run agentgen generate --prune")
	}
	if n := kinds[implscan.NotImplemented]; n > 0 && c.opts.Strict {
		if n == 1 {
			problems = append(problems, `1 stub still panics "not implemented"; write its body (--strict)`)
		} else {
			problems = append(problems, fmt.Sprintf(`%d stubs still panic "not implemented"; write their bodies (--strict)`, n))
		}
	}
	if n := kinds[implscan.UnreadProperty]; n > 0 && c.opts.Strict {
		if n == 1 {
			problems = append(problems, "1 input property that its transition never reads (--strict)")
		} else {
			problems = append(problems, fmt.Sprintf("%d input properties that their transitions never read (--strict)", n))
		}
	}
	if n := c.reviews(); n > 0 && c.opts.Strict {
		problems = append(problems, plural(n, "rename")+" that generate offered still to review in "+filepath.Join(c.dir, filepath.FromSlash(migrations.Dir))+" (--strict)")
	}
	if n := kinds[implscan.Unparsable]; n > 0 {
		problems = append(problems, plural(n, "file")+" in impl/ that "+map[bool]string{true: "does", false: "do"}[n == 1]+" not parse")
	}
	if n := len(c.types.Findings) + c.types.More; n > 0 {
		problems = append(problems, plural(n, "build error")+" in "+TypeCheckedCode(c.types.Importers))
	}
	if c.types.Skipped != "" && len(c.drifts) == 0 && c.opts.TypeCheck && c.opts.Strict {
		problems = append(problems, "decl/ and impl/ not type-checked (--strict): "+c.types.Skipped)
	}
	return problems
}

// TypeCheckedCode names the code a type check covers, for a message: decl/
// and impl/, and the packages that import decl (Report.TypeChecked).
func TypeCheckedCode(importers []string) string {
	switch len(importers) {
	case 0:
		return "decl/ and impl/"
	case 1:
		return "decl/, impl/ and the package that imports decl (" + importers[0] + ")"
	}
	if len(importers) > 3 {
		return fmt.Sprintf("decl/, impl/ and the %d packages that import decl (%s, …)", len(importers), strings.Join(importers[:3], ", "))
	}
	return fmt.Sprintf("decl/, impl/ and the %d packages that import decl (%s)", len(importers), strings.Join(importers, ", "))
}

// driftProblems says how many generated files are not up to date and how
// many hand-written ones are missing.
func driftProblems(out *gen.Output, drift []gensync.Drift) []string {
	owned := make(map[string]bool, len(out.Files))
	for _, f := range out.Files {
		owned[f.Path] = f.Owned
	}
	generated, stubs := 0, 0
	for _, d := range drift {
		if d.Kind == gensync.Missing && !owned[d.Path] {
			stubs++
		} else {
			generated++
		}
	}
	switch {
	case generated > 0 && stubs > 0:
		return []string{plural(generated, "generated file") + " not up to date and " + plural(stubs, "hand-written file") + " missing; run agentgen generate, which creates stubs for them"}
	case generated > 0:
		return []string{plural(generated, "generated file") + " not up to date; run agentgen generate"}
	case stubs > 0:
		return []string{plural(stubs, "hand-written file") + " missing; run agentgen generate, which creates stubs for them"}
	}
	return nil
}

func countBreaking(cs []evolve.Change) int {
	n := 0
	for _, c := range cs {
		if c.Breaking {
			n++
		}
	}
	return n
}

// readAgainst reads the spec Against names: a file, or else the spec at a
// git revision. It returns the spec and how to name it.
func readAgainst(dir, file, against string) (*spec.Spec, string, error) {
	data, err := readSpec(against)
	name := against
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("--against: %w", err)
		}
		cmd := exec.Command("git", "show", against+":./"+filepath.Base(file))
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if data, err = cmd.Output(); err != nil {
			return nil, "", fmt.Errorf("--against %s: not a file, and git show %s:./%s failed: %v: %s", against, against, filepath.Base(file), err, strings.TrimSpace(stderr.String()))
		}
		name = against + ":" + filepath.Base(file)
	}
	m, err := loadBytes(name, data)
	if err != nil {
		return nil, "", fmt.Errorf("--against %s: %w", against, err)
	}
	sp, err := m.Spec()
	if err != nil {
		return nil, "", err
	}
	return sp, name, nil
}

// recorded says whether the history of plan has a version with the data
// shapes of spec sp.
func recorded(plan *versions.Plan, sp *spec.Spec) bool {
	for _, v := range plan.History.Versions {
		vs, err := v.Spec()
		if err == nil && len(compareShapes(vs, sp)) == 0 {
			return true
		}
	}
	return false
}
