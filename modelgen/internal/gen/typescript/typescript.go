// Package typescript prints a model as a TypeScript module, for the
// browser: the same types the Go of package decl declares, from the same
// spec, so that a page that posts inputs and reads the state is
// type-checked against the spec the server is generated from.
//
// JSON Schema maps to TypeScript as the JSON the server writes: an object
// with properties is an interface (a required property is required, an
// optional one optional, a nullable one "| null"); an enum is a union of
// string literals; a oneOf is a union of its variants, each with its
// discriminator as a literal; a map is a Record<string, T>; an array is
// T[]; integers and numbers are number, with "integer" and the schema's
// constraints in the doc comment. Each input's interface has its "type"
// literal; Client<Input> is the input without its readOnly properties, as
// a client posts it.
package typescript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/spec"
)

// New returns the generator of the model's TypeScript module, at the path
// its spec names (model.Model.TypeScript; nothing when it names none);
// version is the spec's version, written as specVersion.
func New(version int) gen.Generator { return generator{version: version} }

type generator struct{ version int }

func (generator) Name() string { return "typescript" }

// Dirs is none: the module's directory holds the page's own files too.
func (generator) Dirs() []string { return nil }

func (g generator) Generate(m *model.Model) ([]gen.File, error) {
	if m.TypeScript == "" {
		return nil, nil
	}
	p := &printer{m: m}
	p.module(g.version)
	return []gen.File{{Path: m.TypeScript, Data: p.b.Bytes(), Owned: true}}, nil
}

type printer struct {
	m *model.Model
	b bytes.Buffer
}

func (p *printer) printf(format string, args ...any) { fmt.Fprintf(&p.b, format, args...) }

func (p *printer) module(version int) {
	m := p.m
	p.printf("%s\n\n", gen.Header)
	p.doc("", fmt.Sprintf("The types of the agent of %s, as its JSON: what a page posts as inputs and reads as state. Generated from the spec by agentgen generate, as package decl is; agentgen check fails when the spec changed since.", gen.PathBase(m.File)))
	p.printf("\n/** The version of the spec these types are of. */\nexport const specVersion = %d;\n\n", version)
	var actors []string
	for _, a := range m.Actors {
		actors = append(actors, jsString(a.Name))
	}
	p.printf("/** The actors, in the order of the spec. */\nexport const actors = [%s] as const;\n\n", strings.Join(actors, ", "))
	p.printf("/** An actor of the agent. */\nexport type Actor = (typeof actors)[number];\n")
	for _, d := range m.Types {
		if d.Input == nil {
			p.printf("\n")
			p.decl(d)
		}
	}
	for _, o := range m.Observations {
		p.printf("\n")
		p.doc("", fmt.Sprintf("What %s observes of %s.", o.Observer.Name, o.Target.Name))
		p.iface(o.GoName, o.Fields, nil)
	}
	for _, a := range m.Actors {
		p.printf("\n")
		p.doc("", fmt.Sprintf("The state of %s: what the actors observe of it.", a.Name))
		p.iface(a.Idents.State, a.State, nil)
		p.printf("\n")
		p.doc("", fmt.Sprintf("What %s observes: its context.", a.Name))
		p.iface(a.Idents.Context, a.Context, nil)
	}
	p.printf("\n")
	p.doc("", "The agent's state: every actor's, as the bridge and the devpanel show it.")
	p.iface("AgentState", m.AgentState, nil)
	inputNames := make(map[string][]string)
	for _, in := range m.Inputs {
		p.printf("\n")
		p.decl(in.Decl)
		readOnly := in.ReadOnly()
		p.printf("\n")
		if len(readOnly) == 0 {
			p.doc("", fmt.Sprintf("The input %q as a client posts it: all of it (it has no readOnly property).", in.Name))
			p.printf("export type Client%s = %s;\n", in.Decl.GoName, in.Decl.GoName)
		} else {
			p.doc("", fmt.Sprintf("The input %q as a client posts it: without its readOnly properties, which the server assigns.", in.Name))
			var names []string
			for _, f := range readOnly {
				names = append(names, jsString(f.Name))
			}
			p.printf("export type Client%s = Omit<%s, %s>;\n", in.Decl.GoName, in.Decl.GoName, strings.Join(names, " | "))
		}
		inputNames[in.Actor.Name] = append(inputNames[in.Actor.Name], in.Name)
	}
	var all, allClient, byActor []string
	for _, a := range m.Actors {
		var ins, client []string
		for _, in := range a.Inputs {
			ins = append(ins, in.Decl.GoName)
			client = append(client, "Client"+in.Decl.GoName)
		}
		if len(ins) == 0 {
			ins, client = []string{"never"}, []string{"never"}
		}
		p.printf("\n")
		p.doc("", fmt.Sprintf("The inputs %s dispatches.", a.Name))
		p.printf("export type %s = %s;\n", a.Idents.Input, strings.Join(ins, " | "))
		p.doc("", fmt.Sprintf("The inputs %s dispatches, as a client posts them.", a.Name))
		p.printf("export type Client%s = %s;\n", a.Idents.Input, strings.Join(client, " | "))
		all = append(all, a.Idents.Input)
		allClient = append(allClient, "Client"+a.Idents.Input)
		var names []string
		for _, n := range inputNames[a.Name] {
			names = append(names, jsString(n))
		}
		byActor = append(byActor, fmt.Sprintf("  %s: [%s],", property(a.Name), strings.Join(names, ", ")))
	}
	p.printf("\n/** Any input of the agent. */\nexport type AgentInput = %s;\n", strings.Join(all, " | "))
	p.printf("/** Any input of the agent, as a client posts it. */\nexport type ClientAgentInput = %s;\n", strings.Join(allClient, " | "))
	p.printf("\n/** The names of the inputs (their \"type\"), by the actor that dispatches them. */\nexport const inputs = {\n%s\n} as const;\n", strings.Join(byActor, "\n"))
}

// decl prints a declared type.
func (p *printer) decl(d *model.TypeDecl) {
	text := d.Doc
	if text == "" && d.Input != nil {
		text = fmt.Sprintf("The input %q, dispatched by actor %s.", d.Input.Name, d.Input.Actor.Name)
	}
	p.doc(text, p.constraints(d.Ptr))
	switch d.Kind {
	case model.StructDecl:
		var consts []*model.ConstProp
		if d.Input != nil {
			consts = append(consts, d.Input.Type)
		}
		p.iface(d.GoName, d.Fields, append(consts, d.Consts...))
	case model.EnumDecl:
		var values []string
		for _, v := range d.Values {
			values = append(values, jsString(v.Value))
		}
		p.printf("export type %s = %s;\n", d.GoName, strings.Join(values, " | "))
	case model.UnionDecl:
		var variants []string
		for _, v := range d.Variants {
			variants = append(variants, v.Decl.GoName)
		}
		p.printf("export type %s = %s;\n", d.GoName, strings.Join(variants, " | "))
	case model.AliasDecl, model.DefinedDecl:
		p.printf("export type %s = %s;\n", d.GoName, tsType(d.Target))
	}
}

// iface prints an interface of the fields, its const properties first.
func (p *printer) iface(name string, fields []*model.Field, consts []*model.ConstProp) {
	p.printf("export interface %s {\n", name)
	for _, c := range consts {
		p.printf("  %s: %s;\n", property(c.Name), literal(c.Value))
	}
	for _, f := range fields {
		p.doc(f.Doc, p.constraints(f.Ptr), "  ")
		t := f.Type
		if t.Kind == model.PointerType {
			t = t.Elem // optional or nullable: said below
		}
		ts := tsType(t)
		if f.Nullable {
			ts += " | null"
		}
		opt := ""
		if !f.Required {
			opt = "?"
		}
		p.printf("  %s%s: %s;\n", property(f.Name), opt, ts)
	}
	p.printf("}\n")
}

// tsType is t in TypeScript.
func tsType(t *model.Type) string {
	switch t.Kind {
	case model.BoolType:
		return "boolean"
	case model.IntType, model.FloatType:
		return "number"
	case model.StringType:
		return "string"
	case model.NamedType:
		return t.Decl.GoName
	case model.SliceType:
		e := tsType(t.Elem)
		if strings.Contains(e, " ") {
			return "Array<" + e + ">"
		}
		return e + "[]"
	case model.MapType:
		return "Record<string, " + tsType(t.Elem) + ">"
	case model.PointerType:
		return tsType(t.Elem) + " | null"
	}
	panic(fmt.Sprintf("modelgen: unknown type kind %d", t.Kind))
}

// doc prints a JSDoc comment of the paragraphs that are not empty,
// indented by the first of indent.
func (p *printer) doc(text, extra string, indent ...string) {
	in := ""
	if len(indent) > 0 {
		in = indent[0]
	}
	var paras []string
	for _, t := range []string{strings.TrimSpace(text), extra} {
		if t != "" {
			paras = append(paras, strings.ReplaceAll(t, "*/", "*\\/"))
		}
	}
	if len(paras) == 0 {
		return
	}
	body := strings.Join(paras, "\n\n")
	lines := strings.Split(gen.Wrap(body), "\n")
	if len(lines) == 1 {
		p.printf("%s/** %s */\n", in, lines[0])
		return
	}
	p.printf("%s/**\n", in)
	for _, l := range lines {
		if l == "" {
			p.printf("%s *\n", in)
		} else {
			p.printf("%s * %s\n", in, l)
		}
	}
	p.printf("%s */\n", in)
}

// constraints says, in one line, what the schema at ptr in the spec
// requires beyond its TypeScript type: "An integer. minimum 0, maxLength
// 10."; "" when nothing.
func (p *printer) constraints(ptr string) string {
	if ptr == "" || p.m.Src == nil {
		return ""
	}
	n := p.m.Src.Node(ptr)
	if n == nil {
		return ""
	}
	var s spec.Schema
	if json.Unmarshal(n.AppendIndentedJSON(nil, ""), &s) != nil {
		return ""
	}
	var parts []string
	integer := false
	for _, t := range s.Type {
		integer = integer || t == "integer"
	}
	num := func(name string, v json.Number) {
		if v != "" {
			parts = append(parts, name+" "+string(v))
		}
	}
	count := func(name string, v *int) {
		if v != nil {
			parts = append(parts, name+" "+strconv.Itoa(*v))
		}
	}
	num("minimum", s.Minimum)
	num("maximum", s.Maximum)
	num("exclusiveMinimum", s.ExclusiveMinimum)
	num("exclusiveMaximum", s.ExclusiveMaximum)
	num("multipleOf", s.MultipleOf)
	count("minLength", s.MinLength)
	count("maxLength", s.MaxLength)
	if s.Pattern != "" {
		parts = append(parts, "pattern "+s.Pattern)
	}
	if s.Format != "" {
		parts = append(parts, "format "+s.Format)
	}
	count("minItems", s.MinItems)
	count("maxItems", s.MaxItems)
	if s.UniqueItems {
		parts = append(parts, "uniqueItems")
	}
	count("minProperties", s.MinProperties)
	count("maxProperties", s.MaxProperties)
	out := ""
	if integer {
		out = "An integer."
	}
	if len(parts) > 0 {
		out = strings.TrimSpace(out + " Constraints: " + strings.Join(parts, ", ") + ".")
	}
	return out
}

// jsString is s as a string literal: JSON's, which TypeScript reads.
func jsString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// property is a property name as TypeScript writes it: quoted unless an
// identifier.
func property(name string) string {
	if identifier.MatchString(name) {
		return name
	}
	return jsString(name)
}

// literal is a const property's JSON value as a TypeScript literal type.
func literal(v []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}
