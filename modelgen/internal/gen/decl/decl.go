package decl

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dave/jennifer/jen"
	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/spec"
)

// Generator generates the decl/ package: the Go declarations of the model.
var Generator gen.Generator = declGenerator{dir: "decl", pkg: "decl"}

// Package generates the declarations of the model as package pkg in dir
// (relative to the spec): an earlier version of the spec's, decl/v1.
func Package(dir, pkg string) gen.Generator { return declGenerator{dir: dir, pkg: pkg} }

// Sharing is Package whose declared types named in shared are aliases of
// the types of the same name in the package at path next (the next
// version's, decl/v2): the types that did not change between the two.
func Sharing(dir, pkg, next string, shared map[string]bool) gen.Generator {
	return declGenerator{dir: dir, pkg: pkg, next: next, shared: shared}
}

type declGenerator struct {
	dir, pkg string
	next     string
	shared   map[string]bool
}

func (g declGenerator) Name() string   { return g.dir }
func (g declGenerator) Dirs() []string { return []string{g.dir} }

func (g declGenerator) Generate(m *model.Model) ([]gen.File, error) {
	type part struct {
		name string
		emit func(e *declEmitter, f *jen.File)
	}
	// The largest files first: they are rendered concurrently.
	parts := []part{
		{"inputs.go", (*declEmitter).inputs},
		{"agent.go", (*declEmitter).agent},
		{"observations.go", (*declEmitter).observations},
		{"contexts.go", (*declEmitter).contexts},
		{"inputschema.go", (*declEmitter).inputSchema},
		{"states.go", (*declEmitter).states},
		{"helpers.go", (*declEmitter).helpers},
		{"types.go", func(e *declEmitter, f *jen.File) { e.decls(f, "types.go") }},
		{"actors.go", (*declEmitter).actors},
	}
	files := make([]gen.File, len(parts))
	errs := make([]error, len(parts))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, p := range parts {
		e := &declEmitter{m: m, next: g.next, shared: g.shared}
		if p.name == "types.go" && !e.has("types.go") {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			f := jen.NewFile(g.pkg)
			f.ImportName(gen.AutomataPath, "automata")
			f.ImportName(gen.InputjsonPath, "inputjson")
			f.ImportName(gen.JSONSchemaPath, "jsonschema")
			p.emit(e, f)
			data, err := gen.Render(g.dir+"/"+p.name, f)
			files[i], errs[i] = gen.File{Path: g.dir + "/" + p.name, Data: data, Owned: true}, err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	files = slicesDeleteEmpty(files)
	gen.SortFiles(files)
	return files, nil
}

func slicesDeleteEmpty(files []gen.File) []gen.File {
	out := files[:0]
	for _, f := range files {
		if f.Path != "" {
			out = append(out, f)
		}
	}
	return out
}

// Generated unexported names never start with "decode" followed by a
// capital letter, except decodeX for the oneOf type X: exported spec names
// cannot collide with them.

// A declEmitter prints the files of decl/. One is used per file, so that
// files can be printed concurrently; the model is only read.
type declEmitter struct {
	m *model.Model
	// next and shared: the types of m named in shared are aliases of
	// next's (Sharing).
	next   string
	shared map[string]bool
}

func (e *declEmitter) has(file string) bool {
	return slices.ContainsFunc(e.m.Types, func(d *model.TypeDecl) bool { return d.File == file })
}

func goType(t *model.Type) *jen.Statement { return GoType(t, "") }

// GoType is the Go type t, its declared types qualified by the package at
// path ("" for the package being generated).
func GoType(t *model.Type, path string) *jen.Statement {
	switch t.Kind {
	case model.BoolType:
		return jen.Bool()
	case model.IntType:
		return jen.Int64()
	case model.FloatType:
		return jen.Float64()
	case model.StringType:
		return jen.String()
	case model.NamedType:
		return jen.Qual(path, t.Decl.GoName)
	case model.SliceType:
		return jen.Index().Add(GoType(t.Elem, path))
	case model.MapType:
		return jen.Map(jen.String()).Add(GoType(t.Elem, path))
	case model.PointerType:
		return jen.Op("*").Add(GoType(t.Elem, path))
	}
	panic(fmt.Sprintf("modelgen: unknown type kind %d", t.Kind))
}

// fields emits struct fields with their docs and JSON tags.
func fields(fs []*model.Field, extraDoc func(f *model.Field) string) []jen.Code {
	var out []jen.Code
	for _, f := range fs {
		text := f.Doc
		if extraDoc != nil {
			if x := extraDoc(f); x != "" {
				text = strings.TrimSpace(text + "\n\n" + x)
			}
		}
		out = append(out, gen.Doc(text), jen.Id(f.GoName).Add(goType(f.Type)).Tag(map[string]string{"json": f.Tag()}))
	}
	return out
}

func listed(list []string) string {
	switch len(list) {
	case 0:
		return "none"
	case 1:
		return list[0]
	}
	return strings.Join(list[:len(list)-1], ", ") + " and " + list[len(list)-1]
}

func (e *declEmitter) actors(f *jen.File) {
	gen.Comment(f, "Actor names an actor of the agent.")
	f.Type().Id("Actor").String()
	f.Line()
	var consts, ids []jen.Code
	for _, a := range e.m.Actors {
		consts = append(consts, jen.Id(a.Idents.Const).Id("Actor").Op("=").Lit(a.Name))
		ids = append(ids, jen.Id(a.Idents.Const))
	}
	gen.Comment(f, "The actors of the agent, in the order of the spec.")
	f.Const().Defs(consts...)
	f.Line()
	gen.Comment(f, "Actors returns every actor of the agent, in the order of the spec.")
	f.Func().Id("Actors").Params().Index().Id("Actor").Block(
		jen.Return(jen.Index().Id("Actor").Values(ids...)),
	)
	f.Line()
	gen.Comment(f, "Valid reports whether a is one of the actors.")
	f.Func().Params(jen.Id("a").Id("Actor")).Id("Valid").Params().Bool().Block(
		jen.Switch(jen.Id("a")).Block(jen.Case(ids...).Block(jen.Return(jen.True()))),
		jen.Return(jen.False()),
	)
}

// decls emits the declared types that belong to file, sorted by name.
func (e *declEmitter) decls(f *jen.File, file string) {
	for _, d := range e.m.Types {
		if d.File == file {
			e.decl(f, d)
		}
	}
}

func (e *declEmitter) decl(f *jen.File, d *model.TypeDecl) {
	if e.shared[d.GoName] {
		e.alias(f, d)
		return
	}
	fallback := fmt.Sprintf("%s is the type of %s in the spec.", d.GoName, spec.ElementName(d.Ptr))
	if strings.HasPrefix(d.Ptr, "/$defs/") && strings.Count(d.Ptr, "/") == 2 {
		fallback = fmt.Sprintf("%s is the shared type $defs.%s of the spec.", d.GoName, d.Name)
	}
	if d.Input != nil {
		fallback = fmt.Sprintf("%s is the input %q, dispatched by actor %s.", d.GoName, d.Input.Name, d.Input.Actor.Name)
	}
	f.Add(gen.DocFor(d.Doc, fallback))
	switch d.Kind {
	case model.StructDecl:
		f.Type().Id(d.GoName).Struct(fields(d.Fields, readOnlyDoc)...)
		f.Line()
		for _, u := range d.Unions {
			f.Func().Params(jen.Id(d.GoName)).Id(u.Marker).Params().Block()
			f.Line()
		}
		if d.NeedsMarshal() {
			e.marshal(f, d)
		}
		if d.NeedsUnmarshal() {
			e.unmarshalStruct(f, d.GoName, d.Fields)
		}
	case model.EnumDecl:
		f.Type().Id(d.GoName).String()
		f.Line()
		var consts, ids []jen.Code
		for _, v := range d.Values {
			consts = append(consts, jen.Id(v.GoName).Id(d.GoName).Op("=").Lit(v.Value))
			ids = append(ids, jen.Id(v.GoName))
		}
		gen.Comment(f, fmt.Sprintf("The values of %s.", d.GoName))
		f.Const().Defs(consts...)
		f.Line()
		gen.Comment(f, fmt.Sprintf("Valid reports whether v is one of the values of %s.", d.GoName))
		f.Func().Params(jen.Id("v").Id(d.GoName)).Id("Valid").Params().Bool().Block(
			jen.Switch(jen.Id("v")).Block(jen.Case(ids...).Block(jen.Return(jen.True()))),
			jen.Return(jen.False()),
		)
		f.Line()
	case model.UnionDecl:
		f.Type().Id(d.GoName).Interface(jen.Id(d.Marker).Params())
		f.Line()
		e.unionDecoder(f, d)
	case model.AliasDecl:
		f.Type().Id(d.GoName).Op("=").Add(goType(d.Target))
		f.Line()
	case model.DefinedDecl:
		f.Type().Id(d.GoName).Add(goType(d.Target))
		f.Line()
		if d.NeedsUnmarshal() {
			gen.Comment(f, "UnmarshalJSON decodes the sealed interfaces "+d.GoName+" holds.")
			f.Func().Params(jen.Id("v").Op("*").Id(d.GoName)).Id("UnmarshalJSON").Params(jen.Id("data").Index().Byte()).Error().Block(
				jen.List(jen.Id("x"), jen.Err()).Op(":=").Add(e.decoder(d.Target)).Call(jen.Id("data")),
				jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
				jen.Op("*").Id("v").Op("=").Id("x"),
				jen.Return(jen.Nil()),
			)
			f.Line()
		}
	}
}

// alias declares d as the type of the same name in e.next, with its enum
// values.
func (e *declEmitter) alias(f *jen.File, d *model.TypeDecl) {
	gen.Comment(f, fmt.Sprintf("%s did not change in the next version of the spec: it is that version's type.", d.GoName))
	f.Type().Id(d.GoName).Op("=").Qual(e.next, d.GoName)
	f.Line()
	if len(d.Values) > 0 {
		var consts []jen.Code
		for _, v := range d.Values {
			consts = append(consts, jen.Id(v.GoName).Op("=").Qual(e.next, v.GoName))
		}
		gen.Comment(f, fmt.Sprintf("The values of %s.", d.GoName))
		f.Const().Defs(consts...)
		f.Line()
	}
}

// constValue is the Go value and type a const property is written with.
func constValue(c *model.ConstProp) (typ, val jen.Code) {
	v := string(c.Value)
	switch {
	case v[0] == '"':
		var s string
		_ = json.Unmarshal(c.Value, &s) // checked when the model was built
		return jen.String(), jen.Lit(s)
	case v == "true" || v == "false":
		return jen.Bool(), jen.Id(v)
	}
	return jen.Qual(gen.JSONPath, "Number"), jen.Qual(gen.JSONPath, "Number").Call(jen.Lit(v))
}

// marshal emits a MarshalJSON that writes the const properties (the input
// "type" first) and encodes nil required slices and maps as empty.
func (e *declEmitter) marshal(f *jen.File, d *model.TypeDecl) {
	var body []jen.Code
	body = append(body, jen.Type().Id("plain").Id(d.GoName))
	for _, fd := range d.EmptyOnNil() {
		body = append(body, jen.If(jen.Id("v").Dot(fd.GoName).Op("==").Nil()).Block(
			jen.Id("v").Dot(fd.GoName).Op("=").Add(goType(fd.Type)).Values(),
		))
	}
	consts := d.Consts
	if d.Input != nil {
		consts = append([]*model.ConstProp{d.Input.Type}, consts...)
	}
	what := "MarshalJSON encodes " + d.GoName
	switch {
	case d.Input != nil:
		what += " with its \"type\" discriminator"
	case len(consts) > 0:
		what += " with its const properties"
	}
	if len(d.EmptyOnNil()) > 0 {
		what += "; nil required slices and maps encode as empty"
	}
	if len(consts) == 0 {
		body = append(body, jen.Return(jen.Qual(gen.JSONPath, "Marshal").Call(jen.Id("plain").Call(jen.Id("v")))))
	} else {
		var fieldsCode, vals []jen.Code
		for _, c := range consts {
			typ, val := constValue(c)
			fieldsCode = append(fieldsCode, jen.Id(c.GoName).Add(typ).Tag(map[string]string{"json": c.Name}))
			vals = append(vals, val)
		}
		fieldsCode = append(fieldsCode, jen.Id("plain"))
		vals = append(vals, jen.Id("plain").Call(jen.Id("v")))
		body = append(body, jen.Return(jen.Qual(gen.JSONPath, "Marshal").Call(
			jen.Struct(fieldsCode...).Values(vals...),
		)))
	}
	gen.Comment(f, what+".")
	f.Func().Params(jen.Id("v").Id(d.GoName)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Block(body...)
	f.Line()
}

// decoder returns a func([]byte) (T, error) decoding a type that holds
// sealed interfaces.
func (e *declEmitter) decoder(t *model.Type) *jen.Statement {
	switch t.Kind {
	case model.SliceType:
		return jen.Qual(gen.InputjsonPath, "SliceOf").Call(e.decoder(t.Elem))
	case model.MapType:
		return jen.Qual(gen.InputjsonPath, "MapOf").Call(e.decoder(t.Elem))
	case model.NamedType:
		if t.Decl.Kind == model.AliasDecl {
			return e.decoder(t.Decl.Target)
		}
		return jen.Id(t.Decl.Decoder)
	}
	panic("modelgen: no decoder needed for " + fmt.Sprint(t.Kind))
}

// structType emits a struct type of fields, with an UnmarshalJSON when it
// holds sealed interfaces.
//
// Its fields are a state's (an observation, a state, a context): always
// present, so a nil slice or map that is not nullable encodes as empty, as
// the initial state has it, whether it was made by a transition, a
// migration or a snapshot's decoding (gob keeps no empty slice); the JSON
// that a bridge, a panel or the journal writes of a state is then the same
// before and after a restart.
func (e *declEmitter) structType(f *jen.File, goName string, fs []*model.Field, extraDoc func(*model.Field) string) {
	f.Type().Id(goName).Struct(fields(fs, extraDoc)...)
	f.Line()
	var empty []*model.Field
	for _, fd := range fs {
		if !fd.Nullable && fd.Type.IsCollection() {
			empty = append(empty, fd)
		}
	}
	if len(empty) > 0 {
		body := []jen.Code{jen.Type().Id("plain").Id(goName)}
		for _, fd := range empty {
			body = append(body, jen.If(jen.Id("v").Dot(fd.GoName).Op("==").Nil()).Block(
				jen.Id("v").Dot(fd.GoName).Op("=").Add(goType(fd.Type)).Values(),
			))
		}
		body = append(body, jen.Return(jen.Qual(gen.JSONPath, "Marshal").Call(jen.Id("plain").Call(jen.Id("v")))))
		gen.Comment(f, "MarshalJSON encodes "+goName+" with its nil slices and maps as empty, as a state always has them.")
		f.Func().Params(jen.Id("v").Id(goName)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Block(body...)
		f.Line()
		var names []jen.Code
		for _, fd := range empty {
			names = append(names, jen.Lit(fd.Name))
		}
		gen.Comment(f, "JSONEmptyOnNil names the properties that MarshalJSON writes as empty when nil, for the runtime's JSON Patches of the state (an HTTP bridge's deltas), which then walk "+goName+" field by field.")
		f.Func().Params(jen.Id(goName)).Id("JSONEmptyOnNil").Params().Index().String().Block(
			jen.Return(jen.Index().String().Values(names...)),
		)
		f.Line()
	}
	if slices.ContainsFunc(fs, func(fd *model.Field) bool { return fd.Type.NeedsDecoder() }) {
		e.unmarshalStruct(f, goName, fs)
	}
}

// unmarshalStruct emits an UnmarshalJSON that decodes the fields holding
// sealed interfaces, which encoding/json cannot fill by itself.
func (e *declEmitter) unmarshalStruct(f *jen.File, goName string, fs []*model.Field) {
	rawFields := []jen.Code{jen.Id("plain")}
	var decode []jen.Code
	for _, fd := range fs {
		if !fd.Type.NeedsDecoder() {
			continue
		}
		rawFields = append(rawFields, jen.Id(fd.GoName).Qual(gen.JSONPath, "RawMessage").Tag(map[string]string{"json": fd.Name}))
		decode = append(decode, jen.If(
			jen.List(jen.Id("v").Dot(fd.GoName), jen.Err()).Op("=").Add(e.decoder(fd.Type)).Call(jen.Id("raw").Dot(fd.GoName)),
			jen.Err().Op("!=").Nil(),
		).Block(jen.Return(jen.Qual(gen.FmtPath, "Errorf").Call(jen.Lit(fd.Name+": %w"), jen.Err()))))
	}
	body := []jen.Code{
		jen.Type().Id("plain").Id(goName),
		jen.Var().Id("raw").Struct(rawFields...),
		jen.If(jen.Err().Op(":=").Qual(gen.JSONPath, "Unmarshal").Call(jen.Id("data"), jen.Op("&").Id("raw")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		jen.Op("*").Id("v").Op("=").Id(goName).Call(jen.Id("raw").Dot("plain")),
		jen.Var().Err().Error(),
	}
	body = append(body, decode...)
	body = append(body, jen.Return(jen.Nil()))
	gen.Comment(f, "UnmarshalJSON decodes "+goName+", including the sealed interfaces it holds.")
	f.Func().Params(jen.Id("v").Op("*").Id(goName)).Id("UnmarshalJSON").Params(jen.Id("data").Index().Byte()).Error().Block(body...)
	f.Line()
}

// unionDecoder emits decodeX, which picks the variant of a oneOf by its
// discriminator.
func (e *declEmitter) unionDecoder(f *jen.File, d *model.TypeDecl) {
	var cases []jen.Code
	var values []string
	for _, v := range d.Variants {
		values = append(values, strconv.Quote(v.Value))
		cases = append(cases, jen.Case(jen.Lit(v.Value)).Block(
			jen.Var().Id("v").Id(v.Decl.GoName),
			jen.If(jen.Err().Op(":=").Qual(gen.JSONPath, "Unmarshal").Call(jen.Id("data"), jen.Op("&").Id("v")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
			jen.Return(jen.Id("v"), jen.Nil()),
		))
	}
	disc := strconv.Quote(d.Discriminator)
	gen.Comment(f, fmt.Sprintf("%s decodes a %s by its %s property; null decodes to nil.", d.Decoder, d.GoName, disc))
	f.Func().Id(d.Decoder).Params(jen.Id("data").Index().Byte()).Params(jen.Id(d.GoName), jen.Error()).Block(
		jen.If(jen.Len(jen.Id("data")).Op("==").Lit(0).Op("||").String().Call(jen.Id("data")).Op("==").Lit("null")).Block(jen.Return(jen.Nil(), jen.Nil())),
		jen.Var().Id("probe").Struct(jen.Id("Value").Op("*").String().Tag(map[string]string{"json": d.Discriminator})),
		jen.If(jen.Err().Op(":=").Qual(gen.JSONPath, "Unmarshal").Call(jen.Id("data"), jen.Op("&").Id("probe")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.If(jen.Id("probe").Dot("Value").Op("==").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual(gen.ErrorsPath, "New").Call(jen.Lit(fmt.Sprintf("missing %s (want one of %s)", disc, strings.Join(values, ", "))))),
		),
		jen.Switch(jen.Op("*").Id("probe").Dot("Value")).Block(cases...),
		jen.Return(jen.Nil(), jen.Qual(gen.FmtPath, "Errorf").Call(jen.Lit(fmt.Sprintf("unknown %s %%q (want one of %s)", disc, strings.Join(values, ", "))), jen.Op("*").Id("probe").Dot("Value"))),
	)
	f.Line()
}

func observationNames(obs []*model.Observation) []string {
	out := make([]string, len(obs))
	for i, o := range obs {
		out[i] = o.GoName
	}
	return out
}

func (e *declEmitter) observations(f *jen.File) {
	for _, o := range e.m.Observations {
		gen.Comment(f, fmt.Sprintf("%s is what actor %s observes of actor %s: a slice of the state of %s.", o.GoName, o.Observer.Name, o.Target.Name, o.Target.Name))
		e.structType(f, o.GoName, o.Fields, nil)
	}
	e.decls(f, "observations.go")
}

func (e *declEmitter) states(f *jen.File) {
	for _, a := range e.m.Actors {
		gen.Comment(f, fmt.Sprintf("%s is the state of actor %s: the union of the observations of it (%s).", a.Idents.State, a.Name, listed(observationNames(a.ObservedBy))))
		e.structType(f, a.Idents.State, a.State, nil)
	}
}

func (e *declEmitter) contexts(f *jen.File) {
	for _, a := range e.m.Actors {
		gen.Comment(f, fmt.Sprintf("%s is the context of actor %s: the union of its observations (%s). Its effect and jobs functions see only this.", a.Idents.Context, a.Name, listed(observationNames(a.Observes))))
		e.structType(f, a.Idents.Context, a.Context, ownedBy)
	}
}

func (e *declEmitter) inputs(f *jen.File) {
	for _, a := range e.m.Actors {
		var inputNames []string
		for _, in := range a.Inputs {
			inputNames = append(inputNames, in.Decl.GoName)
		}
		gen.Comment(f, fmt.Sprintf("%s is an input dispatched by actor %s: %s.", a.Idents.Input, a.Name, listed(inputNames)))
		f.Type().Id(a.Idents.Input).Interface(
			jen.Id("AgentInput"),
			jen.Id(a.Idents.InputMarker).Params(),
		)
		f.Line()
	}
	for _, in := range e.m.Inputs {
		d := in.Decl
		e.decl(f, d)
		gen.Comment(f, fmt.Sprintf("InputType returns %q, the input's type discriminator.", in.Name))
		f.Func().Params(jen.Id(d.GoName)).Id("InputType").Params().String().Block(jen.Return(jen.Lit(in.Name)))
		f.Line()
		gen.Comment(f, fmt.Sprintf("InputActor returns %q, the actor that dispatches the input.", in.Actor.Name))
		f.Func().Params(jen.Id(d.GoName)).Id("InputActor").Params().String().Block(jen.Return(jen.Lit(in.Actor.Name)))
		f.Line()
		if ts := in.Timestamp; ts != nil {
			gen.Comment(f, fmt.Sprintf("WithTimestamp returns the input with %s set to ts.", ts.GoName))
			value := jen.Id("ts")
			if ts.Type.Kind != model.IntType {
				value = goType(ts.Type).Parens(jen.Id("ts")) // a named integer type
			}
			f.Func().Params(jen.Id("in").Id(d.GoName)).Id("WithTimestamp").Params(jen.Id("ts").Int64()).Id("AgentInput").Block(
				jen.Id("in").Dot(ts.GoName).Op("=").Add(value),
				jen.Return(jen.Id("in")),
			)
			f.Line()
		}
		f.Func().Params(jen.Id(d.GoName)).Id("isAgentInput").Params().Block()
		f.Func().Params(jen.Id(d.GoName)).Id(in.Actor.Idents.InputMarker).Params().Block()
		f.Line()
	}
	if slices.ContainsFunc(e.m.Inputs, func(in *model.Input) bool { return in.Timestamp != nil }) {
		gen.Comment(f, `Timestamped is an input with a timestamp: every input whose required integer
property "timestamp" a server stamps on arrival, in an admission step
(automata.WithAdmission) that calls WithTimestamp. The time then comes inside
the input, as transitions need, and never from a clock they read.

`+e.timestampClients())
		f.Type().Id("Timestamped").Interface(
			jen.Id("AgentInput"),
			jen.Id("WithTimestamp").Params(jen.Id("ts").Int64()).Id("AgentInput"),
		)
		f.Line()
	}
	// Inline types of inputs, other than the inputs themselves.
	for _, d := range e.m.Types {
		if d.File == "inputs.go" && d.Input == nil {
			e.decl(f, d)
		}
	}
	if len(e.m.Inputs) > 0 {
		var checks []jen.Code
		for _, in := range e.m.Inputs {
			checks = append(checks, jen.Id("_").Id(in.Actor.Idents.Input).Op("=").Id(in.Decl.GoName).Values())
		}
		gen.Comment(f, "Each input implements the sealed interface of its actor.")
		f.Var().Defs(checks...)
		f.Line()
	}
	e.decodeInput(f)
}

func (e *declEmitter) decodeInput(f *jen.File) {
	decoders := jen.Dict{}
	for _, in := range e.m.Inputs {
		decoders[jen.Lit(in.Name)] = jen.Id("unmarshalInput").Index(jen.Id(in.Decl.GoName))
	}
	gen.Comment(f, `inputDecoder decodes each input type, by its discriminator, after validating
it against its schema in inputSchemaJSON.`)
	f.Var().Id("inputDecoder").Op("=").Qual(gen.InputjsonPath, "NewDecoder").Call(
		jen.Id("inputSchemaJSON"),
		jen.Map(jen.String()).Func().Params(jen.Index().Byte()).Params(jen.Id("AgentInput"), jen.Error()).Values(decoders),
	)
	f.Line()
	gen.Comment(f, "unmarshalInput decodes the JSON of an input of type T.")
	f.Func().Id("unmarshalInput").Types(jen.Id("T").Id("AgentInput")).Params(jen.Id("data").Index().Byte()).Params(jen.Id("AgentInput"), jen.Error()).Block(
		jen.Var().Id("v").Id("T"),
		jen.If(jen.Err().Op(":=").Qual(gen.JSONPath, "Unmarshal").Call(jen.Id("data"), jen.Op("&").Id("v")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Return(jen.Id("v"), jen.Nil()),
	)
	f.Line()
	gen.Comment(f, `DecodeInput decodes an input from JSON, the form MarshalJSON writes: an
object whose "type" names the input. It validates the object against the
input's JSON Schema before decoding, and reports an unknown type, every schema
violation (with its location in the object) and data after the JSON value.`)
	f.Func().Id("DecodeInput").Params(jen.Id("data").Index().Byte()).Params(jen.Id("AgentInput"), jen.Error()).Block(
		jen.Return(jen.Id("inputDecoder").Dot("Decode").Call(jen.Id("data"))),
	)
	f.Line()
	gen.Comment(f, `clientInputDecoder is inputDecoder for what clients send: the properties the
spec marks readOnly may be absent.`)
	f.Var().Id("clientInputDecoder").Op("=").Id("inputDecoder").Dot("ForClients").Call()
	f.Line()
	gen.Comment(f, `DecodeClientInput decodes an input that a client sends (a POST to
automata/httpbridge, a form of automata/devpanel): as DecodeInput, but the
properties the spec marks readOnly, which the server assigns in the agent's
admission step (automata.WithAdmission), may be absent, and what a client sends
for one is dropped; the admission step assigns them, and the journal records
the input as it leaves admission, which DecodeInput reads back.

`+e.readOnlyClients())
	f.Func().Id("DecodeClientInput").Params(jen.Id("data").Index().Byte()).Params(jen.Id("AgentInput"), jen.Error()).Block(
		jen.Return(jen.Id("clientInputDecoder").Dot("Decode").Call(jen.Id("data"))),
	)
}

// readOnlyDoc is the doc of a field that the spec marks readOnly.
func readOnlyDoc(f *model.Field) string {
	if !f.ReadOnly {
		return ""
	}
	return "ReadOnly: the server assigns it in the agent's admission step;\nDecodeClientInput leaves it zero, whatever a client sends."
}

// readOnlyClients says which properties a client leaves out, for the doc
// of DecodeClientInput.
func (e *declEmitter) readOnlyClients() string {
	var each []string
	for _, in := range e.m.Inputs {
		var props []string
		for _, f := range in.ReadOnly() {
			props = append(props, strconv.Quote(f.Name))
		}
		if len(props) > 0 {
			each = append(each, listed(props)+" of "+in.Name)
		}
	}
	if len(each) == 0 {
		return "No property of this spec is readOnly: DecodeClientInput decodes as DecodeInput does, and a client sends every required property."
	}
	return "The readOnly properties, which a client leaves out: " + strings.Join(each, "; ") + "."
}

// timestampClients says what a client sends for the timestamp of each
// Timestamped input, for the doc of Timestamped.
func (e *declEmitter) timestampClients() string {
	var marked []string
	unmarked := 0
	for _, in := range e.m.Inputs {
		switch {
		case in.Timestamp == nil:
		case in.Timestamp.ReadOnly:
			marked = append(marked, in.Name)
		default:
			unmarked++
		}
	}
	const sends = "a client sends one (any integer, such as 0), which the admission step overwrites"
	switch {
	case unmarked == 0:
		return `The spec marks "timestamp" readOnly on each of them: a client leaves it out (DecodeClientInput drops what a client sends), and the admission step must stamp it.`
	case len(marked) == 0:
		return `The spec marks "timestamp" readOnly on none of them: ` + sends + `. Mark it readOnly in the spec and clients may leave it out (DecodeClientInput).`
	}
	return `The spec marks "timestamp" readOnly on ` + listed(marked) + `: a client leaves it out there (DecodeClientInput drops what a client sends), and the admission step must stamp it. On the others, ` + sends + `.`
}

func (e *declEmitter) inputSchema(f *jen.File) {
	schema := string(e.m.InputSchema)
	lit := jen.Lit(schema)
	if !strings.Contains(schema, "`") {
		lit = jen.Op("`" + schema + "`")
	}
	gen.Comment(f, `inputSchemaJSON is the JSON Schema of the inputs: one schema per input under
"inputs", by type, the shared types they use under "$defs", and the inputs of
each actor under "actors". inputDecoder compiles it on first use.`)
	f.Const().Id("inputSchemaJSON").Op("=").Add(lit)
	f.Line()
	gen.Comment(f, `InputSchema returns the JSON Schema document DecodeInput validates inputs
against: one schema per input under "inputs", by type, with the spec's
descriptions, each object's properties in the order of the spec; the shared
types under "$defs"; and under "actors" the inputs each actor dispatches, in
the order of the spec. A form, a client or a devtool (package automata/devpanel)
checks inputs with it before sending them; an MCP server
(automata/httpbridge/mcpserve) makes each client input a tool of it.`)
	f.Func().Id("InputSchema").Params().Index().Byte().Block(
		jen.Return(jen.Index().Byte().Parens(jen.Id("inputSchemaJSON"))),
	)
}

func (e *declEmitter) helpers(f *jen.File) {
	for _, a := range e.m.Actors {
		gen.Comment(f, fmt.Sprintf("%s returns the initial state of actor %s. It must be pure.", a.Idents.InitialFn, a.Name))
		f.Type().Id(a.Idents.InitialFn).Op("=").Func().Params().Id(a.Idents.State)
		f.Line()
		gen.Comment(f, fmt.Sprintf(`%s applies an input dispatched by actor %s to the actor's state.
It must be pure and deterministic: no clock, randomness or I/O; time arrives
inside inputs.`, a.Idents.TransitionFn, a.Name))
		f.Type().Id(a.Idents.TransitionFn).Op("=").Func().Params(
			jen.Id("state").Id(a.Idents.State),
			jen.Id("input").Id(a.Idents.Input),
		).Id(a.Idents.State)
		f.Line()
		gen.Comment(f, fmt.Sprintf(`%s runs the side effects of actor %s for its context and reports
back by dispatching inputs. It is injected when the agent is created.`, a.Idents.EffectFn, a.Name))
		f.Type().Id(a.Idents.EffectFn).Op("=").Qual(gen.AutomataPath, "Effect").Types(jen.Id(a.Idents.Context), jen.Id("AgentInput"))
		f.Line()
		gen.Comment(f, fmt.Sprintf(`%s says which jobs actor %s calls for, by key: the LLM calls, tool calls and other asynchronous work its context asks for. It must be a pure function of the context, so that a restored agent calls for the same jobs, and must not write into it. The keys are the jobs' idempotency keys, stable across restarts; the agent prefixes each with %q, and automata.JobKey returns the prefixed key. It is injected when the agent is created.`, a.Idents.JobsFn, a.Name, a.Name+"/"))
		f.Type().Id(a.Idents.JobsFn).Op("=").Func().Params(jen.Id("view").Id(a.Idents.Context)).Map(jen.String()).Qual(gen.AutomataPath, "Job").Types(jen.Id("AgentInput"))
		f.Line()
	}
}

func (e *declEmitter) agent(f *jen.File) {
	f.PackageComment(gen.DocText(fmt.Sprintf(`Package decl declares the types of the agent specified in %s
(package %s): its actors, the observations between them, each
actor's state and context, the inputs, and the function types of each
actor's initial state, transition, effect and jobs.

It is generated by agentgen; edit the spec and run agentgen generate.`, gen.PathBase(e.m.File), e.m.Package)))
	gen.Comment(f, "AgentState is the state of the whole agent: the union of the states of all actors.")
	e.structType(f, "AgentState", e.m.AgentState, ownedBy)
	project := func(fs []*model.Field) jen.Dict {
		d := jen.Dict{}
		for _, fd := range fs {
			d[jen.Id(fd.GoName)] = jen.Id("s").Dot(fd.GoName)
		}
		return d
	}
	for _, a := range e.m.Actors {
		st := a.Idents.State
		gen.Comment(f, fmt.Sprintf("%s returns the state of actor %s.", st, a.Name))
		f.Func().Params(jen.Id("s").Id("AgentState")).Id(st).Params().Id(st).Block(
			jen.Return(jen.Id(st).Values(project(a.State))),
		)
		f.Line()
		var assign []jen.Code
		for _, fd := range a.State {
			assign = append(assign, jen.Id("s").Dot(fd.GoName).Op("=").Id("state").Dot(fd.GoName))
		}
		assign = append(assign, jen.Return(jen.Id("s")))
		gen.Comment(f, fmt.Sprintf("%s returns a copy of s with the state of actor %s replaced by state.", a.Idents.WithState, a.Name))
		f.Func().Params(jen.Id("s").Id("AgentState")).Id(a.Idents.WithState).Params(jen.Id("state").Id(st)).Id("AgentState").Block(assign...)
		f.Line()
		ctx := a.Idents.Context
		gen.Comment(f, fmt.Sprintf("%s returns the context of actor %s: what it observes.", ctx, a.Name))
		f.Func().Params(jen.Id("s").Id("AgentState")).Id(ctx).Params().Id(ctx).Block(
			jen.Return(jen.Id(ctx).Values(project(a.Context))),
		)
		f.Line()
	}
	gen.Comment(f, `AgentInput is an input of the agent: one of the InputFromX of its actors.
MarshalJSON of an input writes its "type" discriminator; DecodeInput reads it
back.`)
	f.Type().Id("AgentInput").Interface(
		jen.Comment("InputType returns the input's type discriminator."),
		jen.Id("InputType").Params().String(),
		jen.Comment("InputActor returns the spec name of the actor that dispatches the input."),
		jen.Id("InputActor").Params().String(),
		jen.Id("isAgentInput").Params(),
	)
	f.Line()
	var efs []jen.Code
	for _, a := range e.m.Actors {
		efs = append(efs, jen.Id(a.GoName).Id(a.Idents.EffectFn))
	}
	gen.Comment(f, "EffectFns holds the effect function of each actor. It is injected when the\nagent is created.")
	f.Type().Id("EffectFns").Struct(efs...)
	f.Line()
	var jfs []jen.Code
	for _, a := range e.m.Actors {
		jfs = append(jfs, jen.Id(a.GoName).Id(a.Idents.JobsFn))
	}
	gen.Comment(f, "JobFns holds the jobs function of each actor: the work its context calls for, by key. It is injected when the agent is created, with agent.WithJobs; an actor whose jobs function is nil calls for no jobs.")
	f.Type().Id("JobFns").Struct(jfs...)
}

func ownedBy(fd *model.Field) string { return "Owned by actor " + fd.Owner.Name + "." }
