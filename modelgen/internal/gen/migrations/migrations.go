// Package migrations prints what a spec's version history needs in Go: the
// history file itself, a package per earlier version whose records a
// migration reads (decl/v1: that version's declarations), the glue that
// hands the history to the journal (impl/agent/versions.go: Versions()), and
// a stub for each migration a person writes (impl/migrations/v1_to_v2.go).
package migrations

import (
	"bytes"
	"fmt"
	"github.com/moora-go/moora/modelgen/internal/evolve"
	"path"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/gen/decl"
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/versions"
)

// Dir is the directory of the hand-written migrations, package migrations.
const Dir = "impl/migrations"

// MigratePath is the import path of the run-time half of the history.
const MigratePath = "github.com/moora-go/moora/automata/migrate"

// New returns the generator of the plan's files; historyFile is the
// history file's path relative to the spec's directory, and declared the
// functions impl/migrations declares (Declared): an optional migration, of
// a state that changed compatibly, is used when it is declared.
func New(plan *versions.Plan, historyFile string, declared map[string]bool) gen.Generator {
	return generator{plan: plan, file: historyFile, declared: declared}
}

type generator struct {
	plan     *versions.Plan
	file     string
	declared map[string]bool
}

// migratesState says whether step s migrates the state: it must (a
// breaking change), or may and the function is written.
func (g generator) migratesState(s *versions.Step) bool {
	return s.State || (s.StateChanged && g.declared[stateFunc(s)])
}

// decodesState says whether a snapshot of step s's first version is
// decoded as it is into the next version's state: its state changed only
// so (versions.Step.StateDecodes), and no migration is written for it.
func (g generator) decodesState(s *versions.Step) bool {
	return s.StateDecodes && !g.migratesState(s)
}

// hasCode says whether step s runs migrations.
func (g generator) hasCode(s *versions.Step) bool { return len(s.Inputs) > 0 || g.migratesState(s) }

func (generator) Name() string { return "versions" }

// Dirs are the directories of the packages of every version of the
// history, generated or not: a package no longer needed (its step needs
// no migration since --amend, its optional migration was deleted) is
// deleted.
func (g generator) Dirs() []string {
	var dirs []string
	for v := 1; v <= g.plan.Current; v++ {
		dirs = append(dirs, VersionDir(v))
	}
	return dirs
}

// VersionDir is the directory of version v's package: decl/v1.
func VersionDir(v int) string { return "decl/v" + strconv.Itoa(v) }

// versionPkg is the Go package name of version v: v1.
func versionPkg(v int) string { return "v" + strconv.Itoa(v) }

// packages lists the versions that need a package, with the model to print
// it from: a step's versions, when the step needs a migration. The spec's
// own version gets aliases of decl (a nil model).
func (g generator) packages() map[int]*model.Model {
	pkgs := make(map[int]*model.Model)
	for _, s := range g.plan.Steps {
		if !g.hasCode(s) && !g.decodesState(s) {
			continue
		}
		if g.hasCode(s) {
			pkgs[s.From] = s.Old
		}
		if s.From+1 == g.plan.Current {
			pkgs[s.From+1] = nil
		} else {
			pkgs[s.From+1] = s.New
		}
	}
	return pkgs
}

func (g generator) Generate(m *model.Model) ([]gen.File, error) {
	p := g.plan
	files := []gen.File{{Path: g.file, Data: p.History.Encode(gen.PathBase(m.File)), Owned: true}}
	for v, vm := range g.packages() {
		if vm == nil {
			data, err := g.aliases(m, v)
			if err != nil {
				return nil, err
			}
			files = append(files, gen.File{Path: VersionDir(v) + "/current.go", Data: data, Owned: true})
			continue
		}
		out, err := decl.Package(VersionDir(v), versionPkg(v)).Generate(vm)
		if err != nil {
			return nil, fmt.Errorf("version %d: %w", v, err)
		}
		files = append(files, out...)
	}
	data, err := g.glue(m)
	if err != nil {
		return nil, err
	}
	files = append(files, gen.File{Path: model.AgentDir + "/versions.go", Data: data, Owned: true})
	for dir, v := range g.versionFiles() {
		pkg := path.Base(dir)
		f := jen.NewFile(pkg)
		gen.Comment(f, fmt.Sprintf("SpecVersion is the version of the spec that package %s declares: its number in %s.", pkg, path.Base(g.file)))
		f.Const().Id("SpecVersion").Op("=").Lit(v)
		data, err := gen.Render(dir+"/version.go", f)
		if err != nil {
			return nil, err
		}
		files = append(files, gen.File{Path: dir + "/version.go", Data: data, Owned: true})
	}
	for _, s := range p.Steps {
		if !s.NeedsCode() || g.writtenElsewhere(s) {
			continue
		}
		data, err := g.stub(m, s)
		if err != nil {
			return nil, err
		}
		files = append(files, gen.File{Path: StubPath(s.From)})
		files[len(files)-1].Data = data
	}
	gen.SortFiles(files)
	return files, nil
}

// versionFiles are the packages that get a SpecVersion, by directory: decl
// (the spec's version) and each full package of an earlier version.
func (g generator) versionFiles() map[string]int {
	files := map[string]int{"decl": g.plan.Current}
	for v, vm := range g.packages() {
		if vm != nil {
			files[VersionDir(v)] = v
		}
	}
	return files
}

// writtenElsewhere says whether impl/migrations declares every migration
// of step s, in files of its own choosing: its stub's file is not needed.
func (g generator) writtenElsewhere(s *versions.Step) bool {
	for _, fn := range Funcs(g.plan) {
		if fn.From == s.From && !g.declared[fn.Name] {
			return false
		}
	}
	return true
}

// StubPath is the file of the migrations from version from to the next.
func StubPath(from int) string {
	return fmt.Sprintf("%s/v%d_to_v%d.go", Dir, from, from+1)
}

// Func is a migration a person writes.
type Func struct {
	Name string // InputFromV1, AgentStateFromV1
	Path string // the file its stub is in
	From int
	What string // the input's type, or "the state"
}

// Funcs lists the migrations of a plan, by step, then inputs in the order
// of Step.Inputs (by actor, then name), then the state.
func Funcs(p *versions.Plan) []Func {
	var fs []Func
	for _, s := range p.Steps {
		for _, in := range s.Inputs {
			fs = append(fs, Func{Name: inputFunc(s, in), Path: StubPath(s.From), From: s.From, What: in.Name})
		}
		if s.State {
			fs = append(fs, Func{Name: stateFunc(s), Path: StubPath(s.From), From: s.From, What: "the state"})
		}
	}
	return fs
}

func inputFunc(s *versions.Step, in *versions.StepInput) string {
	return in.Old.Decl.GoName + "FromV" + strconv.Itoa(s.From)
}

func stateFunc(s *versions.Step) string { return "AgentStateFromV" + strconv.Itoa(s.From) }

func (g generator) versionPath(m *model.Model, v int) string {
	return m.Package + "/" + VersionDir(v)
}

// aliases prints the package of the spec's own version: its types are
// decl's, so that a migration written against it compiles now, and still
// compiles when a newer version makes it a package of its own.
func (g generator) aliases(m *model.Model, v int) ([]byte, error) {
	f := jen.NewFile(versionPkg(v))
	f.ImportName(m.DeclPath(), "decl")
	f.PackageComment(gen.DocText(fmt.Sprintf("Package %s is version %d of the spec, its current version: each of its types is decl's. The migrations to version %d are written against it, so that they go on compiling when a newer version of the spec makes it a package of its own.", versionPkg(v), v, v)))
	var names []string
	for _, t := range m.Types {
		names = append(names, t.GoName)
	}
	for _, o := range m.Observations {
		names = append(names, o.GoName)
	}
	for _, a := range m.Actors {
		names = append(names, a.Idents.State, a.Idents.Context, a.Idents.Input)
	}
	names = append(names, "AgentState", "AgentInput")
	var defs []jen.Code
	for _, n := range names {
		defs = append(defs, jen.Id(n).Op("=").Qual(m.DeclPath(), n))
	}
	f.Type().Defs(defs...)
	consts := []jen.Code{jen.Id("SpecVersion").Op("=").Qual(m.DeclPath(), "SpecVersion")}
	for _, t := range m.Types {
		for _, ev := range t.Values {
			consts = append(consts, jen.Id(ev.GoName).Op("=").Qual(m.DeclPath(), ev.GoName))
		}
	}
	f.Const().Defs(consts...)
	return gen.Render(VersionDir(v)+"/current.go", f)
}

// glue prints impl/agent/versions.go: Versions(), the history as package
// automata/migrate reads it.
func (g generator) glue(m *model.Model) ([]byte, error) {
	p := g.plan
	f := jen.NewFile("agent")
	f.ImportName(MigratePath, "migrate")
	migrations := m.Package + "/" + Dir
	f.ImportName(migrations, "migrations")
	var steps []jen.Code
	for _, s := range p.Steps {
		from := g.versionPath(m, s.From)
		if g.hasCode(s) {
			f.ImportName(from, versionPkg(s.From))
		}
		d := jen.Dict{}
		if len(s.Inputs) > 0 {
			inputs := jen.Dict{}
			for _, in := range s.Inputs {
				inputs[jen.Lit(in.Name)] = jen.Values(jen.Dict{
					jen.Id("Decode"): jen.Qual(MigratePath, "Unmarshal").Index(jen.Qual(from, in.Old.Decl.GoName)),
					jen.Id("Migrate"): jen.Func().Params(jen.Id("in").Any()).Any().Block(
						jen.Return(jen.Qual(migrations, inputFunc(s, in)).Call(jen.Id("in").Assert(jen.Qual(from, in.Old.Decl.GoName))))),
				})
			}
			d[jen.Id("Inputs")] = jen.Map(jen.String()).Qual(MigratePath, "Input").Values(inputs)
		}
		if s.StateChanged {
			d[jen.Id("StateChanged")] = jen.True()
		}
		if g.decodesState(s) {
			// The snapshot is decoded into the next version's state.
			to := g.versionPath(m, s.From+1)
			f.ImportName(to, versionPkg(s.From+1))
			d[jen.Id("State")] = jen.Op("&").Qual(MigratePath, "State").Values(jen.Dict{
				jen.Id("New"):     jen.Func().Params().Any().Block(jen.Return(jen.New(jen.Qual(to, "AgentState")))),
				jen.Id("Migrate"): jen.Func().Params(jen.Id("old").Any()).Any().Block(jen.Return(jen.Op("*").Id("old").Assert(jen.Op("*").Qual(to, "AgentState")))),
			})
		}
		if g.migratesState(s) {
			d[jen.Id("State")] = jen.Op("&").Qual(MigratePath, "State").Values(jen.Dict{
				jen.Id("New"): jen.Func().Params().Any().Block(jen.Return(jen.New(jen.Qual(from, "AgentState")))),
				jen.Id("Migrate"): jen.Func().Params(jen.Id("old").Any()).Any().Block(
					jen.Return(jen.Qual(migrations, stateFunc(s)).Call(jen.Op("*").Id("old").Assert(jen.Op("*").Qual(from, "AgentState"))))),
			})
		}
		steps = append(steps, jen.Line().Comment(fmt.Sprintf("%d to %d", s.From, s.From+1)).Line().Values(d))
	}
	var doc string
	if p.Current == 1 {
		doc = "Versions is the version history of the agent's spec, for journal.Options.Versions: the spec has one version, 1, and records are written under it."
	} else {
		doc = fmt.Sprintf("Versions is the version history of the agent's spec, for journal.Options.Versions: records are written under version %d, and the records of earlier versions are brought up to it, as the journal reads them, by the migrations of package migrations.", p.Current)
	}
	gen.Comment(f, doc)
	f.Func().Id("Versions").Params().Op("*").Qual(MigratePath, "History").Block(
		jen.Return(jen.Op("&").Qual(MigratePath, "History").Values(jen.Dict{
			jen.Id("Current"): jen.Lit(p.Current),
			jen.Id("Steps"):   jen.Index().Qual(MigratePath, "Step").Values(append(steps, jen.Line())...),
		})),
	)
	return gen.Render(model.AgentDir+"/versions.go", f)
}

// stub prints the migrations of step s, to be written by hand.
func (g generator) stub(m *model.Model, s *versions.Step) ([]byte, error) {
	from, to := g.versionPath(m, s.From), g.versionPath(m, s.From+1)
	f := jen.NewFile("migrations")
	f.ImportName(from, versionPkg(s.From))
	f.ImportName(to, versionPkg(s.From+1))
	if s.From == 1 {
		f.PackageComment(gen.DocText("Package migrations brings the records an agent journaled under earlier versions of its spec up to the current version: one function per input type whose shape changed in a breaking way, or that was removed, and one for the state when its shape did. agentgen generate writes a stub for each, once, and agentgen check fails until it is written. The journal runs them as it opens (package automata/migrate); like transitions, they are pure."))
	}
	current := ""
	if s.From+1 == g.plan.Current {
		current = fmt.Sprintf(" (%s is decl while %d is the spec's version.)", versionPkg(s.From+1), s.From+1)
	}
	for _, in := range s.Inputs {
		name := inputFunc(s, in)
		var result jen.Code
		var doc string
		if in.New != nil {
			result = jen.Qual(to, in.New.Decl.GoName)
			doc = fmt.Sprintf("%s brings a %s journaled under version %d of the spec up to version %d.%s", name, in.Name, s.From, s.From+1, current)
		} else {
			result = jen.Qual(to, "AgentInput")
			doc = fmt.Sprintf("%s brings a %s journaled under version %d of the spec, which version %d has no longer, up to version %d: it returns the input it becomes, or nil to drop it (the journal reports each input dropped when it opens).%s", name, in.Name, s.From, s.From+1, s.From+1, current)
		}
		f.Add(gen.Doc(changesDoc(doc, s, in.Name)))
		f.Func().Id(name).Params(jen.Id("old").Qual(from, in.Old.Decl.GoName)).Add(result).Block(
			jen.Panic(jen.Lit(fmt.Sprintf("not implemented: migration of %s from version %d to %d", in.Name, s.From, s.From+1))))
		f.Line()
	}
	if s.State {
		name := stateFunc(s)
		f.Add(gen.Doc(changesDoc(fmt.Sprintf("%s brings the state of a snapshot taken under version %d of the spec up to version %d.%s", name, s.From, s.From+1, current), s, "")))
		f.Func().Id(name).Params(jen.Id("old").Qual(from, "AgentState")).Qual(to, "AgentState").Block(
			jen.Panic(jen.Lit(fmt.Sprintf("not implemented: migration of the state from version %d to %d", s.From, s.From+1))))
	}
	f.NoFormat = true
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", StubPath(s.From), err)
	}
	return gen.FormatSource(StubPath(s.From), buf.Bytes())
}

// changesDoc is a migration's doc comment: doc, then the changes of step s
// to the input (or, for "", to the state).
func changesDoc(doc string, s *versions.Step, input string) string {
	var b strings.Builder
	b.WriteString(gen.Wrap(doc))
	b.WriteString("\n\nWhat changed (agentgen check lists it with file:line):\n\n")
	for _, c := range s.Changes {
		if c.Input == input {
			b.WriteString("\t" + changeLine(c) + "\n")
		}
	}
	return b.String()
}

// changeLine describes a change in one line: "/message/channel: new
// required property", with its breaking or compatible kind.
func changeLine(c evolve.Change) string {
	where := c.Path
	if where == "" {
		where = "(whole)"
	}
	kind := "compatible"
	if c.Breaking {
		kind = "breaking"
	}
	return strings.TrimSpace(fmt.Sprintf("%s: %s (%s)", where, c.What, kind))
}
