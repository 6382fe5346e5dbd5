package impl

import (
	"bytes"
	"fmt"
	"path"
	"sync"
	"text/template"

	"github.com/dave/jennifer/jen"
	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/implscan"
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/templates"
)

// New returns the generator of impl/. It owns the glue:
//
//	impl/agent/initial.go           Initial: the actors' initial states composed
//	impl/agent/transition.go        Transition: each input routed to its actor
//	impl/agent/effect.go            WithEffects and WithJobs: each actor's
//	                                effect and jobs on its context
//	impl/agent/create.go            Definition, Create and Machine
//	impl/initials/initials.gen.go   package doc and compile-time signature checks
//	impl/transitions/transitions.gen.go  each actor's transition: a type switch
//	                                routing its inputs to the hand-written ones
//	impl/agent/fuzz.gen_test.go     FuzzTransitions: the laws of the method
//	                                checked by automata/modeltest
//
// and creates, when missing, a stub for each hand-written function
// (ImplFuncs) and of package invariants (InvariantFuncs) that scan did
// not find. A nil scan finds nothing: every stub
// is generated. No stubs are generated for a package scan could not parse,
// because a function hidden behind the syntax error would be defined twice.
func New(scan *implscan.ImplScan) gen.Generator { return implGenerator{scan} }

type implGenerator struct{ scan *implscan.ImplScan }

func (implGenerator) Name() string { return "impl" }

func (implGenerator) Dirs() []string {
	return []string{model.AgentDir, model.InitialsDir, model.TransitionsDir}
}

func (g implGenerator) Generate(m *model.Model) ([]gen.File, error) {
	e := &implEmitter{m: m, decl: m.DeclPath()}
	parts := []struct {
		path string
		pkg  string
		emit func(*jen.File)
	}{
		{model.AgentDir + "/create.go", "agent", e.create},
		{model.AgentDir + "/effect.go", "agent", e.effect},
		{model.AgentDir + "/initial.go", "agent", e.initial},
		{model.AgentDir + "/transition.go", "agent", e.transition},
		{model.InitialsDir + "/initials.gen.go", "initials", e.initials},
		{model.TransitionsDir + "/transitions.gen.go", "transitions", e.transitions},
	}
	var files []gen.File
	for _, p := range parts {
		f := jen.NewFile(p.pkg)
		f.ImportName(e.decl, "decl")
		f.ImportName(gen.AutomataPath, "automata")
		f.ImportName(m.InitialsPath(), "initials")
		f.ImportName(m.TransitionsPath(), "transitions")
		p.emit(f)
		data, err := gen.Render(p.path, f)
		if err != nil {
			return nil, err
		}
		files = append(files, gen.File{Path: p.path, Data: data, Owned: true})
	}
	fuzz := jen.NewFile("agent_test")
	fuzz.ImportName(e.decl, "decl")
	fuzz.ImportName(m.AgentPath(), "agent")
	fuzz.ImportName(m.InvariantsPath(), "invariants")
	fuzz.ImportName(gen.ModeltestPath, "modeltest")
	e.fuzz(fuzz)
	data, err := gen.Render(model.FuzzFile, fuzz)
	if err != nil {
		return nil, err
	}
	files = append(files, gen.File{Path: model.FuzzFile, Data: data, Owned: true})
	for _, fn := range model.InvariantFuncs() {
		if g.scan != nil && (g.scan.Found[path.Base(model.InvariantsDir)+"."+fn.Name] || g.scan.Broken[model.InvariantsDir]) {
			continue
		}
		data, err := InvariantStub(m, fn)
		if err != nil {
			return nil, err
		}
		files = append(files, gen.File{Path: fn.Path, Data: data})
	}
	for _, fn := range model.ImplFuncs(m) {
		if g.scan != nil && (g.scan.Found[fn.Package()+"."+fn.Name] || g.scan.Broken[fn.Dir()]) {
			continue
		}
		data, err := Stub(m, fn)
		if err != nil {
			return nil, err
		}
		files = append(files, gen.File{Path: fn.Path, Data: data})
	}
	gen.SortFiles(files)
	return files, nil
}

// StubData is what the stub templates (templates/stub/*.go.tmpl) receive.
type StubData struct {
	DeclPath  string // import path of decl/
	Actor     string // kebab-case actor name
	Input     string // kebab-case input name; empty for an initial state
	Func      string // the function's Go name
	State     string // StateOfX
	InputType string // the input's Go type in decl
}

var (
	stubsOnce sync.Once
	stubs     *template.Template
	stubsErr  error
)

func parseStubs() {
	stubs, stubsErr = template.New("stub").Option("missingkey=error").Funcs(gen.TemplateFuncs).ParseFS(templates.FS, "stub/*.go.tmpl")
}

// Stub renders the stub of a hand-written function from its template.
func Stub(m *model.Model, fn *model.ImplFunc) ([]byte, error) {
	stubsOnce.Do(parseStubs)
	if stubsErr != nil {
		return nil, fmt.Errorf("reading the stub templates: %w", stubsErr)
	}
	d := StubData{DeclPath: m.DeclPath(), Actor: fn.Actor.Name, Func: fn.Name, State: fn.Actor.Idents.State}
	name := "initial.go.tmpl"
	if fn.Input != nil {
		name = "transition.go.tmpl"
		d.Input, d.InputType = fn.Input.Name, fn.Input.Decl.GoName
	}
	var buf bytes.Buffer
	if err := stubs.ExecuteTemplate(&buf, name, d); err != nil {
		return nil, fmt.Errorf("stub of %s: %w", fn.Element(), err)
	}
	return gen.FormatSource(fn.Path, buf.Bytes())
}

// InvariantStub renders the stub of a function of package invariants.
func InvariantStub(m *model.Model, fn model.InvariantFunc) ([]byte, error) {
	stubsOnce.Do(parseStubs)
	if stubsErr != nil {
		return nil, fmt.Errorf("reading the stub templates: %w", stubsErr)
	}
	var buf bytes.Buffer
	if err := stubs.ExecuteTemplate(&buf, path.Base(fn.Path)+".tmpl", StubData{DeclPath: m.DeclPath(), Func: fn.Name}); err != nil {
		return nil, fmt.Errorf("stub of invariants.%s: %w", fn.Name, err)
	}
	return gen.FormatSource(fn.Path, buf.Bytes())
}

// fuzz prints FuzzTransitions: the model of the agent handed to
// automata/modeltest, which draws the inputs and checks the laws.
func (e *implEmitter) fuzz(f *jen.File) {
	f.Add(jen.Comment(gen.DocText(fmt.Sprintf(`FuzzTransitions checks the laws of the method on sequences of inputs drawn from the input schemas of %s (every actor's inputs, every value within its schema), decoded from the fuzzer's bytes: no panic; the same sequence gives the same state twice; each transition changes only the state of the actor that dispatched its input; the state round-trips its JSON; and the invariants of invariants.Check hold. invariants.Admit runs before each input, and an input it rejects is skipped. A failure names the law and prints the sequence, one input a line with its actor, and the fuzzer saves it under testdata/fuzz/FuzzTransitions:`, e.specName())) + `
//
//	go test -run '^$' -fuzz FuzzTransitions -fuzztime 30s ./impl/agent
//
// A plain go test runs its seed corpus (and the failures saved there).`))
	mt := func(name string) *jen.Statement { return jen.Qual(gen.ModeltestPath, name) }
	var actors []jen.Code
	for _, a := range e.m.Actors {
		actors = append(actors, jen.Values(jen.Dict{
			jen.Id("Name"): jen.Lit(a.Name),
			jen.Id("State"): jen.Func().Params(jen.Id("s").Add(e.stateType())).Any().Block(
				jen.Return(jen.Id("s").Dot(a.Idents.State).Call()),
			),
		}))
	}
	f.Func().Id("FuzzTransitions").Params(jen.Id("f").Op("*").Qual("testing", "F")).Block(
		mt("Fuzz").Call(jen.Id("f"), jen.Id("transitionsModel").Call()),
	)
	f.Line()
	model := mt("Model").Types(e.stateType(), e.inputType())
	gen.Comment(f, `transitionsModel is the agent's machine as FuzzTransitions checks it. A test of your own replays a sequence that a failure printed with modeltest.Run(transitionsModel(), seq), seq read with modeltest.ReadSequence(text, decl.DecodeInput).`)
	f.Func().Id("transitionsModel").Params().Add(model.Clone()).Block(
		jen.Return(model.Clone().Values(jen.DictFunc(func(d jen.Dict) {
			d[jen.Id("Initial")] = jen.Qual(e.m.AgentPath(), "Initial")
			d[jen.Id("Transition")] = jen.Qual(e.m.AgentPath(), "Transition")
			d[jen.Id("Admit")] = jen.Qual(e.m.InvariantsPath(), "Admit")
			d[jen.Id("Invariant")] = jen.Qual(e.m.InvariantsPath(), "Check")
			d[jen.Id("Schema")] = e.declID("InputSchema").Call()
			d[jen.Id("Decode")] = e.declID("DecodeInput")
			d[jen.Id("Actors")] = jen.Index().Add(mt("Actor").Types(e.stateType())).Values(actors...)
		}))),
	)
}

// implEmitter prints the glue of impl/.
type implEmitter struct {
	m    *model.Model
	decl string
}

func (e *implEmitter) declID(name string) *jen.Statement { return jen.Qual(e.decl, name) }

func (e *implEmitter) stateType() *jen.Statement { return e.declID("AgentState") }
func (e *implEmitter) inputType() *jen.Statement { return e.declID("AgentInput") }

// generic is automata.<name>[decl.AgentState, decl.AgentInput].
func (e *implEmitter) generic(name string) *jen.Statement {
	return jen.Qual(gen.AutomataPath, name).Types(e.stateType(), e.inputType())
}

func (e *implEmitter) specName() string { return gen.PathBase(e.m.File) }

func (e *implEmitter) create(f *jen.File) {
	jobs := "decl.JobFns{}"
	if n := len(e.m.Actors); n > 0 {
		a := e.m.Actors[n-1]
		jobs = fmt.Sprintf("decl.JobFns{%s: %sJobs}", a.GoName, a.VarName)
	}
	f.PackageComment(gen.DocText(fmt.Sprintf(`Package agent puts together the agent specified in %s (package %s): Initial and Transition compose the initial states and transitions of its actors, written by hand in impl/initials and impl/transitions, into one pure machine; WithEffects runs the effect of each actor on its context, and WithJobs reconciles the jobs each actor's context calls for; Create starts the agent with the effects and options it is given.`, e.specName(), e.m.Package)) + `
//
// Jobs (LLM calls, tool calls: work that is tracked by key, cancelled when
// the state no longer calls for it, and restarted after a crash) are an
// option:
//
//	m := agent.Create(effects, agent.WithJobs(` + jobs + `))
//
// A durable agent is made of the same pieces, with an admission step that
// assigns what the server stamps (the properties the spec marks readOnly):
//
//	m, err := journal.Open(store, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
//		Codec: journal.JSONGob[decl.AgentState](decl.DecodeInput),
//	}, agent.WithEffects(effects), agent.WithJobs(jobs), automata.WithAdmission(stamp))
//
// The journal reads the records of every earlier version of the spec
// through the migrations of impl/migrations: Definition carries the
// version history, Versions (versions.go).
//
// It is generated by agentgen; edit the spec and run agentgen generate.`)
	gen.Comment(f, "Machine is a running agent: its output is its state.")
	f.Type().Id("Machine").Op("=").Qual(gen.AutomataPath, "Machine").Types(e.stateType(), e.inputType(), e.stateType())
	f.Line()
	gen.Comment(f, "Definition returns the agent as a pure machine: Initial and Transition, with the version history of its spec, Versions, for a durable agent.")
	f.Func().Id("Definition").Params().Add(e.generic("Definition")).Block(
		jen.Return(e.generic("Definition").Values(jen.Dict{
			jen.Id("Initial"):    jen.Id("Initial"),
			jen.Id("Transition"): jen.Id("Transition"),
			jen.Id("Versions"):   jen.Id("Versions").Call(),
		})),
	)
	f.Line()
	gen.Comment(f, `Create starts the agent (createAgent): a Moore machine whose output is its state, running the effect of each actor in fns on the actor's context (WithEffects). opts are applied after that: WithJobs adds the actors' jobs, and an automata.WithEffect in opts runs after the actors' effects.`)
	f.Func().Id("Create").Params(
		jen.Id("fns").Add(e.declID("EffectFns")),
		jen.Id("opts").Op("...").Add(e.generic("Option")),
	).Op("*").Id("Machine").Block(
		jen.Return(jen.Qual(gen.AutomataPath, "NewMoore").Call(
			jen.Id("Definition").Call(),
			jen.Id("output"),
			jen.Append(jen.Index().Add(e.generic("Option")).Values(jen.Id("WithEffects").Call(jen.Id("fns"))), jen.Id("opts").Op("...")).Op("..."),
		)),
	)
	f.Line()
	gen.Comment(f, "output is the agent's Moore output: its state.")
	f.Func().Id("output").Params(jen.Id("state").Add(e.stateType())).Add(e.stateType()).Block(jen.Return(jen.Id("state")))
}

func (e *implEmitter) initial(f *jen.File) {
	gen.Comment(f, "Initial returns the initial state of the agent: the initial state of each actor, from impl/initials.")
	body := []jen.Code{jen.Var().Id("s").Add(e.stateType())}
	for _, a := range e.m.Actors {
		body = append(body, jen.Id("s").Op("=").Id("s").Dot(a.Idents.WithState).Call(jen.Qual(e.m.InitialsPath(), a.GoName).Call()))
	}
	body = append(body, jen.Return(jen.Id("s")))
	f.Func().Id("Initial").Params().Add(e.stateType()).Block(body...)
}

func (e *implEmitter) transition(f *jen.File) {
	gen.Comment(f, `Transition applies an input to the state of the agent: the transition of the actor that dispatched it, from impl/transitions, on that actor's state. It panics on an input no actor dispatches, such as nil.`)
	var cases []jen.Code
	for _, a := range e.m.Actors {
		if len(a.Inputs) == 0 {
			continue
		}
		cases = append(cases, jen.Case(e.declID(a.Idents.Input)).Block(
			jen.Return(jen.Id("state").Dot(a.Idents.WithState).Call(
				jen.Qual(e.m.TransitionsPath(), a.GoName).Call(jen.Id("state").Dot(a.Idents.State).Call(), jen.Id("input")),
			)),
		))
	}
	var body []jen.Code
	if len(cases) > 0 {
		body = append(body, jen.Switch(jen.Id("input").Op(":=").Id("input").Assert(jen.Type())).Block(cases...))
	}
	body = append(body, jen.Panic(jen.Qual(gen.FmtPath, "Sprintf").Call(jen.Lit("agent.Transition: input %T is dispatched by no actor"), jen.Id("input"))))
	f.Func().Id("Transition").Params(jen.Id("state").Add(e.stateType()), jen.Id("input").Add(e.inputType())).Add(e.stateType()).Block(body...)
}

// effect prints WithEffects and WithJobs: one option per actor whose
// function is set, each on the actor's context, joined into one.
func (e *implEmitter) effect(f *jen.File) {
	gen.Comment(f, `WithEffects returns the option that runs the effect of each actor in fns, one after another in actor order, each on its actor's context (automata.Project from ContextOfX) and named after its actor when it fails (automata.WithActorEffect). An actor whose effect is nil has none.`)
	e.perActor(f, "WithEffects", "EffectFns", func(a *model.Actor) *jen.Statement {
		return jen.Qual(gen.AutomataPath, "WithActorEffect").Call(jen.Lit(a.Name), jen.Qual(gen.AutomataPath, "Project").Call(
			e.stateType().Dot(a.Idents.Context), jen.Id("fns").Dot(a.GoName),
		))
	})
	f.Line()
	gen.Comment(f, `WithJobs returns the option that reconciles the jobs of each actor in fns with the state (automata.WithActorJobs): each actor's jobs function sees only its context (automata.ProjectJobs from ContextOfX), and its keys are prefixed with its name and a slash, so that the keys of two actors never clash; automata.JobKey returns the prefixed key. An actor whose jobs function is nil calls for no jobs.`)
	e.perActor(f, "WithJobs", "JobFns", func(a *model.Actor) *jen.Statement {
		return jen.Qual(gen.AutomataPath, "WithActorJobs").Call(jen.Lit(a.Name), jen.Qual(gen.AutomataPath, "ProjectJobs").Call(
			e.stateType().Dot(a.Idents.Context), jen.Id("fns").Dot(a.GoName),
		))
	})
}

// perActor prints func name(fns decl.<fns>) automata.Option[...], which
// joins option(a) for each actor a whose field of fns is not nil.
func (e *implEmitter) perActor(f *jen.File, name, fns string, option func(a *model.Actor) *jen.Statement) {
	body := []jen.Code{jen.Var().Id("opts").Index().Add(e.generic("Option"))}
	for _, a := range e.m.Actors {
		body = append(body, jen.If(jen.Id("fns").Dot(a.GoName).Op("!=").Nil()).Block(
			jen.Id("opts").Op("=").Append(jen.Id("opts"), option(a)),
		))
	}
	body = append(body, jen.Return(jen.Qual(gen.AutomataPath, "Join").Call(jen.Id("opts").Op("..."))))
	f.Func().Id(name).Params(jen.Id("fns").Add(e.declID(fns))).Add(e.generic("Option")).Block(body...)
}

func (e *implEmitter) initials(f *jen.File) {
	example := ""
	if len(e.m.Actors) > 0 {
		a := e.m.Actors[0]
		example = fmt.Sprintf(" (%s.go: func %s() decl.%s)", a.Name, a.GoName, a.Idents.State)
	}
	f.PackageComment(gen.DocText(fmt.Sprintf(`Package initials holds the initial state of each actor of the agent specified in %s: one function per actor, named after it, in a file named after it%s. They are written by hand; agentgen creates a stub for a missing one and never changes them after. They must be pure: no clock, no randomness, no I/O.`, e.specName(), example)))
	f.Line()
	gen.Comment(f, "Each initial state has the signature agentgen expects.")
	var guards []jen.Code
	for _, a := range e.m.Actors {
		guards = append(guards, jen.Id("_").Add(e.declID(a.Idents.InitialFn)).Op("=").Id(a.GoName))
	}
	f.Var().Defs(guards...)
}

func (e *implEmitter) transitions(f *jen.File) {
	example := ""
	for _, fn := range model.ImplFuncs(e.m) {
		if fn.Input != nil {
			example = fmt.Sprintf(" (%s: func %s)", path.Base(fn.Path), fn.Name)
			break
		}
	}
	f.PackageComment(gen.DocText(fmt.Sprintf(`Package transitions holds the transitions of the agent specified in %s. For each input there is a function named after it, in a file named after the actor and the input%s, written by hand; agentgen creates a stub for a missing one and never changes them after. They must be pure and deterministic, and must not write into memory the given state can reach.`, e.specName(), example)) + `
//
// This file, generated, routes the inputs of each actor to them.`)
	f.Line()
	var guards []jen.Code
	for _, a := range e.m.Actors {
		if len(a.Inputs) == 0 {
			continue
		}
		state := e.declID(a.Idents.State)
		var cases []jen.Code
		for _, in := range a.Inputs {
			cases = append(cases, jen.Case(e.declID(in.Decl.GoName)).Block(
				jen.Return(jen.Id(in.Decl.GoName).Call(jen.Id("state"), jen.Id("input"))),
			))
			guards = append(guards, jen.Id("_").Func().Params(state.Clone(), e.declID(in.Decl.GoName)).Add(state.Clone()).Op("=").Id(in.Decl.GoName))
		}
		gen.Comment(f, fmt.Sprintf("%s is the transition of actor %s: it applies an input the actor dispatched to the actor's state, with the function of that input. It panics on a nil input.", a.GoName, a.Name))
		f.Func().Id(a.GoName).Params(jen.Id("state").Add(state.Clone()), jen.Id("input").Add(e.declID(a.Idents.Input))).Add(state.Clone()).Block(
			jen.Switch(jen.Id("input").Op(":=").Id("input").Assert(jen.Type())).Block(cases...),
			jen.Panic(jen.Qual(gen.FmtPath, "Sprintf").Call(jen.Lit(fmt.Sprintf("transitions.%s: unexpected input %%T", a.GoName)), jen.Id("input"))),
		)
		f.Line()
		guards = append(guards, jen.Id("_").Add(e.declID(a.Idents.TransitionFn)).Op("=").Id(a.GoName))
	}
	if len(guards) > 0 {
		gen.Comment(f, "Each transition has the signature agentgen expects.")
		f.Var().Defs(guards...)
	}
}
