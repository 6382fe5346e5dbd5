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
	"maps"
	"path"
	"slices"
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
	g := generator{plan: plan, file: historyFile, declared: declared, convs: make(map[int]*conversion)}
	for _, s := range plan.Steps {
		if s.NeedsCode() || s.StateConverts {
			g.convs[s.From] = newConversion(s, plan.Model.Package, declared)
		}
	}
	return g
}

type generator struct {
	plan     *versions.Plan
	file     string
	declared map[string]bool
	// convs are the conversions of the steps that need code, by From.
	convs map[int]*conversion
}

// migratesState says whether step s migrates the state: it must (a
// breaking change), or may and the function is written.
func (g generator) migratesState(s *versions.Step) bool {
	return s.State || s.StateConverts || (s.StateChanged && g.declared[stateFunc(s)])
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
	// ConversionsPath, when no step needs it any longer.
	return append(dirs, Dir)
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
		pkg := decl.Package(VersionDir(v), versionPkg(v))
		if c := g.convs[v]; c != nil && len(c.shared) > 0 {
			pkg = decl.Sharing(VersionDir(v), versionPkg(v), c.to, c.shared)
		}
		out, err := pkg.Generate(vm)
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
	if data, err := g.conversions(); err != nil {
		return nil, err
	} else if data != nil {
		files = append(files, gen.File{Path: ConversionsPath, Data: data, Owned: true})
	}
	for _, s := range p.Steps {
		if g.convs[s.From] == nil || g.writtenElsewhere(s) {
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
	for _, fn := range g.convs[s.From].funcs {
		if !g.declared[fn.Name] {
			return false
		}
	}
	return true
}

// StubPath is the file of the migrations from version from to the next.
func StubPath(from int) string {
	return fmt.Sprintf("%s/v%d_to_v%d.go", Dir, from, from+1)
}

// Func is a migration a person writes: a whole one (an input type
// removed, or a migration written whole by choice), or the value of one
// property that the generated conversions leave to a person.
type Func struct {
	Name string // InputFromV1, AgentStateFromV1, TicketPriorityFromV1
	Path string // the file its stub is in
	From int
	What string // the input's type, "the state", or "property priority of Ticket"
	// Input is the input type the function is about; "" for the state.
	Input string
	// JSONPath is the property's JSON Pointer in the input or state, for
	// a property's function: "/tickets/[]/priority".
	JSONPath string
	// Field is the property, for a property's function.
	Field *model.Field

	// RenamedFrom is the old property a property's function is offered as
	// a rename of: its stub is written, for review.
	RenamedFrom string

	input         *versions.StepInput // a whole input's
	param, result jen.Code            // a property's: the old struct, the property's type
	prefill       jen.Code            // the returned value offered for a rename
	owner         string              // the Go name of the struct that has the property, or of the union
	newState      bool                // a new state property
	variant       string              // a union's variant removed: its discriminator's value
}

// Funcs lists the migrations of a plan a person writes, by step, then
// inputs in the order of Step.Inputs (by actor, then name), then the state;
// declared are the functions impl/migrations declares (Declared): a whole
// migration declared is used instead of the generated conversion.
func Funcs(p *versions.Plan, declared map[string]bool) []Func {
	var fs []Func
	for _, s := range p.Steps {
		if s.NeedsCode() || s.StateConverts {
			fs = append(fs, newConversion(s, p.Model.Package, declared).funcs...)
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

// called is the function the glue calls for the whole migration name of
// step s: name when a person writes it, else its generated conversion.
func (g generator) called(s *versions.Step, name string) string {
	if c := g.convs[s.From]; c != nil && c.whole[name] != "" {
		return c.whole[name]
	}
	return name
}

// conversions prints ConversionsPath: every step's generated conversions
// and the helpers they call; nil when no step has any.
func (g generator) conversions() ([]byte, error) {
	f := jen.NewFile("migrations")
	some := false
	for _, s := range g.plan.Steps {
		c := g.convs[s.From]
		if c == nil || len(c.code) == 0 {
			continue
		}
		some = true
		f.ImportName(c.from, versionPkg(s.From))
		f.ImportName(c.to, versionPkg(s.From+1))
		for _, code := range c.code {
			f.Add(code)
		}
	}
	if !some {
		return nil, nil
	}
	// Every helper, used or not: a rename's stub, written once, may call
	// one that a later version's conversions no longer do.
	for _, h := range slices.Sorted(maps.Keys(helperCode)) {
		f.Add(helperCode[h]())
		f.Line()
	}
	return gen.Render(ConversionsPath, f)
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
						jen.Return(jen.Qual(migrations, g.called(s, inputFunc(s, in))).Call(jen.Id("in").Assert(jen.Qual(from, in.Old.Decl.GoName))))),
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
					jen.Return(jen.Qual(migrations, g.called(s, stateFunc(s))).Call(jen.Op("*").Id("old").Assert(jen.Op("*").Qual(from, "AgentState"))))),
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
	c := g.convs[s.From]
	from, to := c.from, c.to
	f := jen.NewFile("migrations")
	f.ImportName(from, versionPkg(s.From))
	f.ImportName(to, versionPkg(s.From+1))
	if s.From == 1 {
		f.PackageComment(gen.DocText("Package migrations brings the records an agent journaled under earlier versions of its spec up to the current version. agentgen generate converts the state and each input type whose shape changed in a breaking way field by field (conversions.go), and leaves to a person one function per property it cannot convert — a new required property, a changed type, a rename to confirm — and one per input type removed. It writes a stub of each, once, and agentgen check fails until it is written. A migration of a whole input or of the whole state (func <Input>FromV<N>, func AgentStateFromV<N>), when written, is used instead of its conversion. The journal runs them as it opens (package automata/migrate); like transitions, they are pure."))
	}
	current := ""
	if s.From+1 == g.plan.Current {
		current = fmt.Sprintf(" (%s is decl while %d is the spec's version.)", versionPkg(s.From+1), s.From+1)
	}
	for _, fn := range c.funcs {
		if g.declared[fn.Name] {
			continue
		}
		notImplemented := func(what string) jen.Code {
			return jen.Panic(jen.Lit(fmt.Sprintf("not implemented: migration of %s from version %d to %d", what, s.From, s.From+1)))
		}
		switch {
		case fn.input != nil:
			in := fn.input
			var result jen.Code
			var doc string
			if in.New != nil {
				result = jen.Qual(to, in.New.Decl.GoName)
				doc = fmt.Sprintf("%s brings a %s journaled under version %d of the spec up to version %d.%s", fn.Name, in.Name, s.From, s.From+1, current)
			} else {
				result = jen.Qual(to, "AgentInput")
				doc = fmt.Sprintf("%s brings a %s journaled under version %d of the spec, which version %d has no longer, up to version %d: it returns the input it becomes, or nil to drop it (the journal reports each input dropped when it opens).%s", fn.Name, in.Name, s.From, s.From+1, s.From+1, current)
			}
			f.Add(gen.Doc(changesDoc(doc, s, func(c evolve.Change) bool { return c.Input == in.Name })))
			f.Func().Id(fn.Name).Params(jen.Id("old").Qual(from, in.Old.Decl.GoName)).Add(result).Block(notImplemented(in.Name))
		case fn.variant != "":
			doc := fmt.Sprintf("%s returns what %s of variant %s, which version %d of the spec has no longer, becomes in version %d (at %s); the generated conversion (conversions.go) converts the other variants.%s", fn.Name, article(fn.owner), fn.variant, s.From+1, s.From+1, fn.JSONPath, current)
			f.Add(gen.Doc(changesDoc(doc, s, func(c evolve.Change) bool {
				return c.Input == fn.Input && strings.HasSuffix(c.What, "oneOf variant removed: "+fn.variant)
			})))
			f.Func().Id(fn.Name).Params(jen.Id("old").Add(fn.param)).Add(fn.result).Block(notImplemented(fn.What))
		case fn.Field == nil:
			doc := fmt.Sprintf("%s brings the state of a snapshot taken under version %d of the spec up to version %d.%s", fn.Name, s.From, s.From+1, current)
			f.Add(gen.Doc(changesDoc(doc, s, func(c evolve.Change) bool { return c.Input == "" })))
			f.Func().Id(fn.Name).Params(jen.Id("old").Qual(from, "AgentState")).Qual(to, "AgentState").Block(notImplemented("the state"))
		default:
			in := "in the state"
			if fn.Input != "" {
				in = "in input " + fn.Input
			}
			doc := fmt.Sprintf("%s returns the %s of %s of version %d of the spec (%s, at %s), made from the %s of version %d it is converted from; the generated conversion (conversions.go) converts every other property.%s", fn.Name, fn.Field.Name, article(fn.owner), s.From+1, in, fn.JSONPath, fn.owner, s.From, current)
			if fn.newState {
				doc += " No state of the older version has this property: return what the initial state has, or what a replay of the journal would compute."
			}
			var body jen.Code = notImplemented(fn.What)
			if fn.prefill != nil {
				doc += fmt.Sprintf("\n\n"+reviewMark+" %s is gone and %s is new, of a type %s converts to: a rename, as this body says? If not, say what %s is. Then delete this paragraph.", fn.RenamedFrom, fn.Field.Name, fn.RenamedFrom, fn.Field.Name)
				body = jen.Return(fn.prefill)
			}
			renamed := path.Dir(fn.JSONPath) + "/" + fn.RenamedFrom
			if path.Dir(fn.JSONPath) == "/" {
				renamed = "/" + fn.RenamedFrom
			}
			f.Add(gen.Doc(changesDoc(doc, s, func(c evolve.Change) bool {
				return c.Input == fn.Input && (c.Path == fn.JSONPath || strings.HasPrefix(c.Path, fn.JSONPath+"/") ||
					(fn.RenamedFrom != "" && c.Path == renamed) || (fn.Field.Ptr != "" && c.Ptr == fn.Field.Ptr))
			})))
			f.Func().Id(fn.Name).Params(jen.Id("old").Add(fn.param)).Add(fn.result).Block(body)
		}
		f.Line()
	}
	f.NoFormat = true
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", StubPath(s.From), err)
	}
	return gen.FormatSource(StubPath(s.From), buf.Bytes())
}

// article is name after "a" or "an": "an AgentState", "a Claim".
func article(name string) string {
	if name != "" && strings.ContainsRune("AEIOU", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

// changesDoc is a migration's doc comment: doc, then the changes of step s
// that about selects.
func changesDoc(doc string, s *versions.Step, about func(evolve.Change) bool) string {
	var b strings.Builder
	for _, para := range strings.Split(doc, "\n\n") {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(gen.Wrap(para))
	}
	var lines []string
	for _, c := range s.Changes {
		if about(c) {
			lines = append(lines, "\t"+changeLine(c)+"\n")
		}
	}
	if len(lines) > 0 {
		b.WriteString("\n\nWhat changed (agentgen check lists it with file:line):\n\n")
		b.WriteString(strings.Join(lines, ""))
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
