package modelgen

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/moora-go/moora/modelgen/internal/evolve"
	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/gen/decl"
	"github.com/moora-go/moora/modelgen/internal/gen/impl"
	"github.com/moora-go/moora/modelgen/internal/gen/migrations"
	"github.com/moora-go/moora/modelgen/internal/gen/typescript"
	"github.com/moora-go/moora/modelgen/internal/implscan"
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/spec"
	gensync "github.com/moora-go/moora/modelgen/internal/sync"
	"github.com/moora-go/moora/modelgen/internal/typecheck"
	"github.com/moora-go/moora/modelgen/internal/versions"
)

// The stages behind Generate and Check, each a thin call of the internal
// package that does the work: load (load.go), read and plan the history
// (versions), scan impl/ (implscan), generate in memory (gen and its
// printers), compare with or write to disk (sync), scan the migrations and
// type-check (typecheck).

// header is the first line of every file agentgen owns. It matches Go's
// convention for generated files (^// Code generated .* DO NOT EDIT\.$).
const header = gen.Header

// PrunedDir is where Generate with Options.Prune moves orphans, relative to
// the spec's directory; the go command ignores it.
const PrunedDir = "impl/_pruned"

// declGen generates the decl/ package: the Go declarations of the model.
var declGen gen.Generator = decl.Generator

// implGen returns the generator of impl/: the glue of impl/agent,
// impl/initials/initials.gen.go and impl/transitions/transitions.gen.go,
// and a stub for each hand-written function (model.ImplFuncs) that scan did
// not find. A nil scan finds nothing: every stub is generated. No stubs are
// generated for a package scan could not parse, because a function hidden
// behind the syntax error would be defined twice.
func implGen(scan *implscan.ImplScan) gen.Generator { return impl.New(scan) }

// versionsGen returns the generator of a plan's files: the history file
// (historyFile, relative to the spec's directory), the packages of earlier
// versions that migrations read (decl/v1), impl/agent/versions.go, and a
// stub for each migration to write (impl/migrations/v1_to_v2.go). declared
// are the functions impl/migrations declares: a state migration for a step
// whose state changed compatibly is optional, and used when declared.
func versionsGen(p *versions.Plan, historyFile string, declared map[string]bool) gen.Generator {
	return migrations.New(p, historyFile, declared)
}

// tsGen returns the generator of the spec's TypeScript module, when its
// spec names one (typescript: web/agent.ts), of the plan's version.
func tsGen(p *versions.Plan) gen.Generator { return typescript.New(p.Current) }

// generateModel runs the generators (by default declGen) on a model, one
// after the other. Generated code is gofmt'ed and byte-identical across
// runs. It fails with model.ErrNoPackage when the model has no package
// path.
func generateModel(m *model.Model, gens ...gen.Generator) (*gen.Output, error) {
	if len(gens) == 0 {
		gens = []gen.Generator{declGen}
	}
	return gen.Generate(m, gens...)
}

// historyFile returns the history file of a spec file: agent.yaml's is
// agent.history.json beside it.
func historyFile(specFile string) string { return versions.File(specFile) }

// planVersions plans the history of the spec of m, from the history h read
// beside it: the spec is its newest version, a new one when its data shapes
// changed, or, with amend, the newest one replaced (for a version that no
// agent ran, and so no journal holds).
func planVersions(h *versions.History, m *model.Model, amend bool) (*versions.Plan, error) {
	return versions.NewPlan(h, m, amend)
}

// compareShapes returns the changes of data shapes from spec old to spec
// new, each breaking for replay or compatible.
func compareShapes(old, new *spec.Spec) []evolve.Change { return evolve.Compare(old, new) }

// scanImpl reads the hand-written code under dir/impl (dir is the spec's
// directory) with go/parser only; package implscan says what it finds.
func scanImpl(dir string, m *model.Model) (*implscan.ImplScan, error) { return implscan.Scan(dir, m) }

// typeCheckImpl type-checks the packages of decl/ and impl/ under dir, the
// spec's directory, as they are on disk, with the go command (package
// typecheck). Errors in the files of scan's orphans, wrong signatures and
// unparsable files are left out, and while there are any, so are errors in
// the generated files (the glue that calls a function declared wrongly):
// they follow from those findings.
func typeCheckImpl(ctx context.Context, dir string, scan *implscan.ImplScan, plan *versions.Plan) (*typecheck.Result, error) {
	reported := make(map[string]bool)
	if scan != nil {
		for _, f := range scan.Findings {
			if f.Kind == implscan.Orphan || f.Kind == implscan.WrongSignature || f.Kind == implscan.Unparsable {
				reported[f.Path] = true
			}
		}
	}
	skip := func(path string) bool {
		return reported[path] || len(reported) > 0 && generated(filepath.Join(dir, filepath.FromSlash(path)))
	}
	return typecheck.Check(ctx, dir, skip, plan)
}

// generated says whether a file starts with header: agentgen's.
func generated(file string) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	return strings.TrimSpace(line) == header
}

// planFiles returns the changes writeFiles would make under dir, the
// spec's directory, without making them.
func planFiles(dir string, out *gen.Output) ([]gensync.Change, error) { return gensync.Plan(dir, out) }

// writeFiles makes the files under dir match the output and returns the
// changes it made: all of them or none.
func writeFiles(dir string, out *gen.Output) ([]gensync.Change, error) {
	return gensync.Write(dir, out)
}

// compareFiles reports how the files under dir differ from the output:
// modified (with a unified diff), missing and extra files.
func compareFiles(dir string, out *gen.Output) ([]gensync.Drift, error) {
	return gensync.Compare(dir, out)
}

// pruneFiles moves the orphan files of a scan, but those in ImplScan.Kept,
// out of their packages into impl/_pruned/<package>/ under dir, all of them
// or none, and returns the moves sorted by source.
func pruneFiles(dir string, scan *implscan.ImplScan) ([]gensync.Move, error) {
	return gensync.Prune(dir, scan)
}
