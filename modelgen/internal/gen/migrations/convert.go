package migrations

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
	"github.com/moora-go/moora/modelgen/internal/evolve"
	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/gen/decl"
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/versions"
)

// ConversionsPath is the generated file of the conversions: for each step
// whose state or inputs changed in a breaking way, field by field, for
// every field that did not change.
const ConversionsPath = Dir + "/conversions.go"

// A conversion is the generated code of one step (From to From+1): the
// conversions of the state and of each input type that changed in a
// breaking way, unless a person wrote the whole migration (AgentStateFromV1,
// OpenTicketFromV1), and the functions a person writes for what changed.
type conversion struct {
	s        *versions.Step
	from, to string // the import paths of the versions' packages
	shared   map[string]bool
	declared map[string]bool

	// input is the input type being converted; "" for the state.
	input string
	// funcs are the functions a person writes, in order.
	funcs []Func
	// code holds the generated functions, in order.
	code []jen.Code
	// named maps a pair of struct or union types (old, new Go name) to
	// the generated function that converts one to the other.
	named map[[2]string]string
	// whole are the names of the generated exported conversions: state and
	// inputs, which the glue calls.
	whole map[string]string
	// keys names the functions a person writes by what they are for
	// (name); taken holds every function name of the step.
	keys  map[string]string
	taken map[string]bool
}

// convertFunc is the name of the generated conversion of a whole input or
// state, whose hand-written counterpart is name: ConvertAgentStateFromV1.
func convertFunc(name string) string { return "Convert" + name }

// newConversion plans step s's conversions. pkg is the agent's import path;
// declared are the functions impl/migrations declares by hand.
func newConversion(s *versions.Step, pkg string, declared map[string]bool) *conversion {
	c := &conversion{
		s:        s,
		from:     pkg + "/" + VersionDir(s.From),
		to:       pkg + "/" + VersionDir(s.From+1),
		declared: declared,
		named:    make(map[[2]string]string),
		whole:    make(map[string]string),
		keys:     make(map[string]string),
		taken:    make(map[string]bool),
	}
	if s.Old == nil || s.New == nil {
		return c
	}
	c.shared = Shared(s.Old, s.New)
	// The whole migrations' names, and their conversions', are not for a
	// property's.
	c.taken[stateFunc(s)], c.taken[convertFunc(stateFunc(s))] = true, true
	for _, in := range s.Old.Inputs {
		c.taken[inputFunc(s, &versions.StepInput{Old: in})] = true
		c.taken[convertFunc(inputFunc(s, &versions.StepInput{Old: in}))] = true
	}
	for _, in := range s.Inputs {
		name := inputFunc(s, in)
		if in.New == nil || declared[name] {
			// A removed input type becomes whatever a person says; a
			// migration written whole is used as it is.
			c.funcs = append(c.funcs, Func{Name: name, Path: StubPath(s.From), From: s.From, What: in.Name, Input: in.Name, input: in})
			continue
		}
		c.input = in.Name
		fn := convertFunc(name)
		c.whole[name] = fn
		c.structFunc(fn, in.Old.Decl.GoName, in.Old.Decl.Fields, in.New.Decl.GoName, in.New.Decl.Fields, "",
			fmt.Sprintf("%s brings a %s journaled under version %d of the spec up to version %d.", fn, in.Name, s.From, s.From+1))
	}
	if s.State || s.StateConverts {
		name := stateFunc(s)
		if declared[name] {
			c.funcs = append(c.funcs, Func{Name: name, Path: StubPath(s.From), From: s.From, What: "the state"})
		} else {
			c.input = ""
			fn := convertFunc(name)
			c.whole[name] = fn
			c.structFunc(fn, "AgentState", s.Old.AgentState, "AgentState", s.New.AgentState, "",
				fmt.Sprintf("%s brings the state of a snapshot taken under version %d of the spec up to version %d.", fn, s.From, s.From+1))
		}
	}
	return c
}

// n is the step's "FromV1" suffix.
func (c *conversion) n() string { return "FromV" + strconv.Itoa(c.s.From) }

// structFunc generates name, which converts struct oldGo of version From
// (its fields olds) to newGo of version From+1 (news), field by field; a
// field that cannot be converted so is a function a person writes. path
// is the JSON Pointer of the struct in the input or state.
func (c *conversion) structFunc(name, oldGo string, olds []*model.Field, newGo string, news []*model.Field, path, doc string) {
	c.named[[2]string{oldGo, newGo}] = name
	var vals []jen.Code // in the order of news
	set := func(f *model.Field, x jen.Code) { vals = append(vals, jen.Id(f.GoName).Op(":").Add(x)) }
	used := make(map[string]bool) // old fields carried over
	var notes []string
	for _, nf := range news {
		fpath := path + "/" + nf.Name
		of := fieldNamed(olds, nf.Name)
		if of != nil {
			used[of.Name] = true
			if x, ok := c.conv(jen.Id("old").Dot(of.GoName), of.Type, nf.Type, fpath); ok && !c.breakingAt(nf, fpath, of.Type, nf.Type) {
				set(nf, keepEmpty(of, nf, x))
				continue
			}
			set(nf, c.hand(oldGo, newGo, nf, fpath, nil, ""))
			continue
		}
		// A property removed and this one added, converted as it is: a
		// rename, offered for review.
		var renamed *model.Field
		var prefill jen.Code
		for _, of := range olds {
			if used[of.Name] || fieldNamed(news, of.Name) != nil {
				continue
			}
			if x, ok := c.try(jen.Id("old").Dot(of.GoName), of.Type, nf.Type, fpath); ok {
				renamed, prefill = of, keepEmpty(of, nf, x)
				break
			}
		}
		switch {
		case renamed != nil:
			used[renamed.Name] = true
			set(nf, c.hand(oldGo, newGo, nf, fpath, prefill, renamed.Name))
		case nf.Required:
			// A new required property; a new state property too, whose
			// value only a replay or a person can say.
			set(nf, c.hand(oldGo, newGo, nf, fpath, nil, ""))
		default:
			notes = append(notes, nf.Name+" is new and optional: no old value has it")
		}
	}
	for _, of := range olds {
		if !used[of.Name] {
			notes = append(notes, fmt.Sprintf("%s is not carried over: version %d has it no longer", of.Name, c.s.From+1))
		}
	}
	if doc == "" {
		doc = fmt.Sprintf("%s converts a value of %s from version %d of the spec to version %d.", name, oldGo, c.s.From, c.s.From+1)
	}
	if len(notes) > 0 {
		doc += " " + strings.Join(notes, "; ") + "."
	}
	c.code = append(c.code, gen.Doc(doc), jen.Func().Id(name).Params(jen.Id("old").Qual(c.from, oldGo)).Qual(c.to, newGo).Block(
		jen.Return(jen.Qual(c.to, newGo).Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, vals...)),
	), jen.Line())
}

// try is conv for a rename: it converts only what needs nothing written by
// hand, and leaves c as it was when it does not.
func (c *conversion) try(x *jen.Statement, a, b *model.Type, path string) (*jen.Statement, bool) {
	funcs, code := len(c.funcs), len(c.code)
	named := maps.Clone(c.named)
	e, ok := c.conv(x, a, b, path)
	if ok && len(c.funcs) == funcs {
		return e, true
	}
	c.funcs, c.code, c.named = c.funcs[:funcs], c.code[:code], named
	return nil, false
}

// keepEmpty is x, the value of old property of converted to new property
// nf, kept empty where of was a required list or map that is not
// nullable, and nf is nullable or optional: the old version wrote nil as
// [] or {} (and gob restores an empty one as nil), which nf would write as
// null or leave out.
func keepEmpty(of, nf *model.Field, x jen.Code) jen.Code {
	if !of.Required || of.Nullable || !of.Type.IsCollection() || (!nf.Nullable && nf.Required) {
		return x
	}
	if of.Type.Underlying().Kind == model.SliceType {
		return jen.Id("emptySlice").Call(x)
	}
	return jen.Id("emptyMap").Call(x)
}

// breakingAt says whether a breaking change of the value being converted
// is at the field nf (at fpath), or inside it, where its old and new types
// are the same: a narrowed constraint, which no conversion of the type
// sees.
func (c *conversion) breakingAt(nf *model.Field, fpath string, a, b *model.Type) bool {
	if !sameType(a, b, c.shared) {
		return false
	}
	return slices.ContainsFunc(c.s.Changes, func(ch evolve.Change) bool {
		if !ch.Breaking || ch.Input != c.input {
			return false
		}
		return ch.Path == fpath || strings.HasPrefix(ch.Path, fpath+"/") ||
			(nf.Ptr != "" && (ch.Ptr == nf.Ptr || strings.HasPrefix(ch.Ptr, nf.Ptr+"/")))
	})
}

func fieldNamed(fs []*model.Field, name string) *model.Field {
	if i := slices.IndexFunc(fs, func(f *model.Field) bool { return f.Name == name }); i >= 0 {
		return fs[i]
	}
	return nil
}

// hand records the function a person writes for field nf of struct newGo
// (from a value of struct oldGo of the older version), and returns its
// call. prefill, when not nil, is the body's returned value, offered for a
// rename of the old property RenamedFrom.
func (c *conversion) hand(oldGo, newGo string, nf *model.Field, fpath string, prefill jen.Code, RenamedFrom string) jen.Code {
	name, fresh := c.name(newGo+"."+nf.Name, newGo, nf.GoName)
	if fresh {
		what := fmt.Sprintf("property %s of %s", nf.Name, newGo)
		c.funcs = append(c.funcs, Func{
			Name: name, Path: StubPath(c.s.From), From: c.s.From, What: what,
			Input: c.input, JSONPath: fpath, Field: nf,
			param: jen.Qual(c.from, oldGo), result: decl.GoType(nf.Type, c.to),
			prefill: prefill, RenamedFrom: RenamedFrom, owner: newGo,
			newState: c.input == "" && oldGo == "AgentState" && RenamedFrom == "" && nf.Required,
		})
	}
	return jen.Id(name).Call(jen.Id("old"))
}

// name returns the name of the function a person writes for what key
// names (a struct's property, a union's variant), made of parts, and
// whether it is new: the same key has the same name; another key whose
// parts spell the same name (Line.ItemCount, LineItem.Count) gets
// "Property" between its parts, then a number.
func (c *conversion) name(key, owner, part string) (string, bool) {
	if name, ok := c.keys[key]; ok {
		return name, false
	}
	name := owner + part + c.n()
	for i := 1; c.taken[name]; i++ {
		name = fmt.Sprintf("%sProperty%s%s", owner, part, c.n())
		if i > 1 {
			name = fmt.Sprintf("%sProperty%s%d%s", owner, part, i, c.n())
		}
	}
	c.keys[key], c.taken[name] = name, true
	return name, true
}

// conv returns x, a value of type a of version From, converted to type b
// of version From+1; ok is false when no conversion is generated (the types
// differ in what a person decides). path is x's JSON Pointer.
func (c *conversion) conv(x *jen.Statement, a, b *model.Type, path string) (*jen.Statement, bool) {
	if sameType(a, b, c.shared) {
		return x, true
	}
	if a.Kind == model.NamedType && a.Decl.Kind == model.AliasDecl {
		return c.conv(x, a.Decl.Target, b, path)
	}
	if b.Kind == model.NamedType && b.Decl.Kind == model.AliasDecl {
		return c.conv(x, a, b.Decl.Target, path)
	}
	switch {
	case a.Kind == b.Kind && a.Kind <= model.StringType:
		return x, true
	case a.Kind == model.IntType && b.Kind == model.FloatType:
		return jen.Float64().Call(x), true
	case a.Kind == model.PointerType && b.Kind == model.PointerType:
		return c.apply("convertPointer", x, a.Elem, b.Elem, path)
	case b.Kind == model.PointerType && a.Kind != model.PointerType:
		// Optional or nullable now.
		e, ok := c.conv(x, a, b.Elem, path)
		if !ok {
			return nil, false
		}
		return jen.Id("pointerTo").Call(e), true
	case a.Kind == model.SliceType && b.Kind == model.SliceType:
		return c.apply("convertSlice", x, a.Elem, b.Elem, path+"/[]")
	case a.Kind == model.MapType && b.Kind == model.MapType:
		return c.apply("convertMap", x, a.Elem, b.Elem, path+"/{}")
	case a.Kind == model.NamedType && b.Kind == model.NamedType:
		return c.named2(x, a.Decl, b.Decl, path)
	case a.Kind == model.NamedType && a.Decl.Kind == model.DefinedDecl:
		e, ok := c.conv(x, a.Decl.Target, b, path)
		if ok && b.Kind <= model.StringType {
			// A defined scalar is converted to the plain type; a list
			// or map is assignable.
			e = decl.GoType(b, "").Call(e)
		}
		return e, ok
	case a.Kind == model.NamedType && a.Decl.Kind == model.EnumDecl && b.Kind == model.StringType:
		return jen.String().Call(x), true
	case b.Kind == model.NamedType && b.Decl.Kind == model.DefinedDecl:
		e, ok := c.conv(x, a, b.Decl.Target, path)
		if !ok {
			return nil, false
		}
		return jen.Qual(c.to, b.Decl.GoName).Call(e), true
	}
	return nil, false
}

// named2 converts between two declared types.
func (c *conversion) named2(x *jen.Statement, a, b *model.TypeDecl, path string) (*jen.Statement, bool) {
	switch {
	case a.Kind == model.EnumDecl && b.Kind == model.EnumDecl:
		for _, v := range a.Values {
			if !slices.ContainsFunc(b.Values, func(w *model.EnumValue) bool { return w.Value == v.Value }) {
				return nil, false // a value removed: a person says what it becomes
			}
		}
		return jen.Qual(c.to, b.GoName).Call(x), true
	case a.Kind == model.StructDecl && b.Kind == model.StructDecl:
		name, ok := c.named[[2]string{a.GoName, b.GoName}]
		if !ok {
			name = "convert" + a.GoName + c.n()
			if a.GoName != b.GoName {
				name = "convert" + a.GoName + "To" + b.GoName + c.n()
			}
			c.structFunc(name, a.GoName, a.Fields, b.GoName, b.Fields, path, "")
		}
		return jen.Id(name).Call(x), true
	case a.Kind == model.UnionDecl && b.Kind == model.UnionDecl:
		return c.union(x, a, b, path)
	case a.Kind == model.DefinedDecl && b.Kind == model.DefinedDecl:
		e, ok := c.conv(x, a.Target, b.Target, path)
		if !ok {
			return nil, false
		}
		return jen.Qual(c.to, b.GoName).Call(e), true
	case a.Kind == model.DefinedDecl:
		return c.conv(x, a.Target, &model.Type{Kind: model.NamedType, Decl: b}, path)
	case b.Kind == model.DefinedDecl:
		e, ok := c.conv(x, &model.Type{Kind: model.NamedType, Decl: a}, b.Target, path)
		if !ok {
			return nil, false
		}
		return jen.Qual(c.to, b.GoName).Call(e), true
	}
	return nil, false
}

// union converts a oneOf variant by variant, matched by their
// discriminator's value; a variant removed is a person's to convert.
func (c *conversion) union(x *jen.Statement, a, b *model.TypeDecl, path string) (*jen.Statement, bool) {
	key := [2]string{a.GoName, b.GoName}
	if name, ok := c.named[key]; ok {
		return jen.Id(name).Call(x), true
	}
	if a.Discriminator != b.Discriminator {
		return nil, false
	}
	name := "convert" + a.GoName + c.n()
	if a.GoName != b.GoName {
		name = "convert" + a.GoName + "To" + b.GoName + c.n()
	}
	c.named[key] = name
	var cases []jen.Code
	for _, ov := range a.Variants {
		nv := variantOf(b, ov.Value)
		vpath := path + "/" + a.Discriminator + "=" + ov.Value
		var e jen.Code
		if nv == nil {
			// A variant removed: what it becomes is a person's to say.
			e = c.handVariant(a, ov, b, vpath)
		} else {
			e, _ = c.named2(jen.Id("v"), ov.Decl, nv.Decl, vpath) // structs: always converted
		}
		cases = append(cases, jen.Case(jen.Qual(c.from, ov.Decl.GoName)).Block(jen.Return(e)))
	}
	c.code = append(c.code,
		gen.Doc(fmt.Sprintf("%s converts a value of %s from version %d of the spec to version %d, variant by variant.", name, a.GoName, c.s.From, c.s.From+1)),
		jen.Func().Id(name).Params(jen.Id("old").Qual(c.from, a.GoName)).Qual(c.to, b.GoName).Block(
			jen.Switch(jen.Id("v").Op(":=").Id("old").Assert(jen.Type())).Block(cases...),
			jen.Return(jen.Nil()),
		), jen.Line())
	return jen.Id(name).Call(x), true
}

// handVariant records the function a person writes for variant ov of
// union a, which union b has no longer, and returns its call on v.
func (c *conversion) handVariant(a *model.TypeDecl, ov *model.Variant, b *model.TypeDecl, vpath string) jen.Code {
	part := ov.Decl.GoName
	owner := a.GoName
	if strings.HasPrefix(part, owner) {
		owner = ""
	}
	name, fresh := c.name(a.GoName+"="+ov.Value, owner, part)
	if fresh {
		c.funcs = append(c.funcs, Func{
			Name: name, Path: StubPath(c.s.From), From: c.s.From,
			What: fmt.Sprintf("variant %s of %s", ov.Value, a.GoName), Input: c.input, JSONPath: vpath,
			param: jen.Qual(c.from, ov.Decl.GoName), result: jen.Qual(c.to, b.GoName),
			owner: b.GoName, variant: ov.Value,
		})
	}
	return jen.Id(name).Call(jen.Id("v"))
}

func variantOf(d *model.TypeDecl, value string) *model.Variant {
	for _, v := range d.Variants {
		if v.Value == value {
			return v
		}
	}
	return nil
}

// apply converts x, a pointer, slice or map of elements of type a, with
// helper (convertPointer, convertSlice, convertMap) and the conversion of
// one element to type b.
func (c *conversion) apply(helper string, x *jen.Statement, a, b *model.Type, path string) (*jen.Statement, bool) {
	v := jen.Id("v")
	e, ok := c.conv(v, a, b, path)
	if !ok {
		return nil, false
	}
	if a.Kind == model.NamedType && b.Kind == model.NamedType {
		// A struct or union converted by a generated function: passed as
		// it is.
		if name, ok := c.named[[2]string{a.Decl.GoName, b.Decl.GoName}]; ok {
			return jen.Id(helper).Call(x, jen.Id(name)), true
		}
	}
	fn := jen.Func().Params(jen.Id("v").Add(decl.GoType(a, c.from))).Add(decl.GoType(b, c.to)).Block(jen.Return(e))
	return jen.Id(helper).Call(x, fn), true
}

// helperCode is the source of the generic helpers.
var helperCode = map[string]func() jen.Code{
	"pointerTo": func() jen.Code {
		return jen.Func().Id("pointerTo").Types(jen.Id("T").Any()).Params(jen.Id("v").Id("T")).Op("*").Id("T").Block(jen.Return(jen.Op("&").Id("v")))
	},
	"convertPointer": func() jen.Code {
		return jen.Func().Id("convertPointer").Types(jen.Id("T"), jen.Id("U").Any()).Params(jen.Id("p").Op("*").Id("T"), jen.Id("f").Func().Params(jen.Id("T")).Id("U")).Op("*").Id("U").Block(
			jen.If(jen.Id("p").Op("==").Nil()).Block(jen.Return(jen.Nil())),
			jen.Id("u").Op(":=").Id("f").Call(jen.Op("*").Id("p")),
			jen.Return(jen.Op("&").Id("u")),
		)
	},
	"convertSlice": func() jen.Code {
		return jen.Func().Id("convertSlice").Types(jen.Id("S").Id("~[]T"), jen.Id("T"), jen.Id("U").Any()).Params(jen.Id("s").Id("S"), jen.Id("f").Func().Params(jen.Id("T")).Id("U")).Index().Id("U").Block(
			jen.If(jen.Id("s").Op("==").Nil()).Block(jen.Return(jen.Nil())),
			jen.Id("out").Op(":=").Make(jen.Index().Id("U"), jen.Len(jen.Id("s"))),
			jen.For(jen.List(jen.Id("i"), jen.Id("v")).Op(":=").Range().Id("s")).Block(
				jen.Id("out").Index(jen.Id("i")).Op("=").Id("f").Call(jen.Id("v")),
			),
			jen.Return(jen.Id("out")),
		)
	},
	"emptySlice": func() jen.Code {
		return jen.Func().Id("emptySlice").Types(jen.Id("S").Id("~[]T"), jen.Id("T").Any()).Params(jen.Id("s").Id("S")).Id("S").Block(
			jen.If(jen.Id("s").Op("==").Nil()).Block(jen.Return(jen.Id("S").Values())),
			jen.Return(jen.Id("s")),
		)
	},
	"emptyMap": func() jen.Code {
		return jen.Func().Id("emptyMap").Types(jen.Id("M").Id("~map[string]T"), jen.Id("T").Any()).Params(jen.Id("m").Id("M")).Id("M").Block(
			jen.If(jen.Id("m").Op("==").Nil()).Block(jen.Return(jen.Id("M").Values())),
			jen.Return(jen.Id("m")),
		)
	},
	"convertMap": func() jen.Code {
		return jen.Func().Id("convertMap").Types(jen.Id("M").Id("~map[string]T"), jen.Id("T"), jen.Id("U").Any()).Params(jen.Id("m").Id("M"), jen.Id("f").Func().Params(jen.Id("T")).Id("U")).Map(jen.String()).Id("U").Block(
			jen.If(jen.Id("m").Op("==").Nil()).Block(jen.Return(jen.Nil())),
			jen.Id("out").Op(":=").Make(jen.Map(jen.String()).Id("U"), jen.Len(jen.Id("m"))),
			jen.For(jen.List(jen.Id("k"), jen.Id("v")).Op(":=").Range().Id("m")).Block(
				jen.Id("out").Index(jen.Id("k")).Op("=").Id("f").Call(jen.Id("v")),
			),
			jen.Return(jen.Id("out")),
		)
	},
}
