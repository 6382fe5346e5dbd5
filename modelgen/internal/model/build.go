package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/moora-go/moora/modelgen/internal/names"
	"github.com/moora-go/moora/modelgen/internal/spec"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Build runs the model checks on a schema-valid spec and derives the model.
// It reports every problem it finds, not only the first.
func Build(src *spec.Source, sp *Spec) (*Model, error) {
	d := &spec.Diags{Src: src}
	b := &builder{
		d:          d,
		spec:       sp,
		m:          &Model{File: src.File(), Package: sp.Package, Src: src},
		names:      newNameTable(d),
		stateNames: newNameTable(d),
		actors:     make(map[string]*Actor),
		defs:       make(map[string]*TypeDecl),
		resolved:   make(map[string]resolved),
		owners:     make(map[string]propOwner),
		infos:      make(map[*TypeDecl]*structInfo),
		unions:     make(map[string]*TypeDecl),
		canon:      make(map[*Schema][]byte),
		defState:   make(map[*TypeDecl]uint8),
		fieldRes:   make(map[*Field]resolved),
		usedActors: make(map[string]bool),
		unknownIn:  make(map[string][]string),
	}
	if sp.Package != "" {
		b.m.PackageNote = "from the package key of " + src.File()
		if msg := CheckImportPath(sp.Package); msg != "" {
			d.At("/package", msg, "write the Go import path of the spec's directory, like example.com/agent")
		}
	}
	if ts := sp.TypeScript; ts != "" {
		b.m.TypeScript = ts
		if clean := path.Clean(ts); clean != ts || strings.HasPrefix(ts, "../") || ts == ".." || strings.HasPrefix(ts, "/") {
			d.At("/typescript", fmt.Sprintf("%q is not a clean relative path inside the spec's directory", ts), "write a path like web/agent.ts")
		}
	}
	b.names.reserve("agentgen", "Actor", "Actors", "AgentState", "AgentInput", "EffectFns", "JobFns", "DecodeInput", "DecodeClientInput", "InputSchema", "Timestamped", "SpecVersion")
	b.checkDescriptions()
	b.checkReadOnly()
	b.checkSatisfiable()
	b.buildActors()
	b.buildDefs()
	b.buildObservations()
	b.buildInputs()
	b.checkUnusedActors()
	b.checkImplNames()
	b.fieldTypes()
	b.checkCycles()
	b.derive()
	b.lint()
	d.List.Sort()
	d.List = slices.CompactFunc(d.List, func(x, y *Diagnostic) bool { return x.String() == y.String() })
	if d.Errors() > 0 {
		// Lint findings on a broken model are noise: report the errors.
		return nil, slices.DeleteFunc(d.List, func(x *Diagnostic) bool { return x.Severity == Warning })
	}
	b.m.Warnings = d.List
	slices.SortFunc(b.decls, func(x, y *TypeDecl) int { return strings.Compare(x.GoName, y.GoName) })
	for _, d := range b.decls {
		if d.Kind == UnionDecl {
			nameUnion(d)
		}
	}
	b.m.Types = b.decls
	for _, in := range b.m.Inputs {
		for _, f := range in.Decl.Fields {
			if f.Name == "timestamp" && f.Required && !f.Nullable && f.Type.Underlying().Kind == IntType {
				in.Timestamp = f
			}
		}
	}
	doc, schema := b.inputSchema()
	if b.checkInputSchema(doc); d.Errors() > 0 {
		d.List.Sort()
		d.List = slices.CompactFunc(d.List, func(x, y *Diagnostic) bool { return x.String() == y.String() })
		return nil, slices.DeleteFunc(d.List, func(x *Diagnostic) bool { return x.Severity == Warning })
	}
	b.m.InputSchema = schema
	return b.m, nil
}

type builder struct {
	d          *spec.Diags
	spec       *Spec
	m          *Model
	names      *nameTable // package-level Go identifiers
	stateNames *nameTable // AgentState fields and methods
	actors     map[string]*Actor
	defs       map[string]*TypeDecl
	decls      []*TypeDecl
	resolved   map[string]resolved // by JSON Pointer of the schema
	owners     map[string]propOwner
	infos      map[*TypeDecl]*structInfo
	unions     map[string]*TypeDecl // by JSON Pointer of the oneOf schema
	canon      map[*Schema][]byte
	defState   map[*TypeDecl]uint8 // defBusy while a $defs type is worked out, then defDone
	fieldRes   map[*Field]resolved // a field's type before optional and nullable apply
	usedActors map[string]bool     // declared actors named in observations or inputs
	unknownIn  map[string][]string // unknown actor names, with the sections that use them
}

const (
	defBusy = 1 + iota
	defDone
)

// resolved is the Go type of a schema and whether the schema allows null.
type resolved struct {
	t        *Type
	nullable bool
}

type propOwner struct {
	target *Actor
	ptr    string
	schema *Schema
}

// mergedProp is a property of an object after allOf merging.
type mergedProp struct {
	name     string
	schema   *Schema
	ptr      string
	required bool
	from     *TypeDecl // the $defs struct it was merged from; nil for the object's own
}

// structInfo is what allOf merging needs to know about a filled struct.
type structInfo struct {
	props  []mergedProp
	closed bool // additionalProperties: false
}

func (b *builder) buildActors() {
	goNames := newNameTable(b.d)
	for i, name := range b.spec.Actors {
		ptr := "/actors/" + strconv.Itoa(i)
		if prev, dup := b.actors[name]; dup {
			b.d.At(ptr, fmt.Sprintf("duplicate actor %q (first listed at %s)", name, posShort(prev.Pos)), "remove one of them")
			continue
		}
		a := &Actor{Name: name, GoName: names.PascalCase(name), VarName: names.LowerCamel(name), Pos: b.d.Src.ValuePos(ptr)}
		a.Idents = actorIdents(a.GoName)
		b.actors[name] = a
		what := fmt.Sprintf("actor %q", name)
		if why, bad := reservedWord(a.VarName); bad {
			b.d.At(ptr, fmt.Sprintf("actor %q: generated code names it %s, which is %s", name, a.VarName, why), "rename the actor")
		}
		if !goNames.claim(a.GoName, what, ptr, "rename one of the actors") {
			continue
		}
		b.m.Actors = append(b.m.Actors, a)
		id := a.Idents
		for _, name := range []string{id.Const, id.State, id.Context, id.Input, id.InitialFn, id.TransitionFn, id.EffectFn, id.JobsFn} {
			b.names.claim(name, what, ptr, "rename the actor")
		}
		for _, name := range []string{id.State, id.Context, id.WithState} {
			b.stateNames.reserve("the AgentState method "+name, name)
		}
	}
}

// actor returns the declared actor named by the key at ptr, reporting an
// unknown one.
func (b *builder) actor(name, ptr, section string) *Actor {
	if a, ok := b.actors[name]; ok {
		b.usedActors[name] = true
		return a
	}
	if !slices.Contains(b.unknownIn[name], section) {
		b.unknownIn[name] = append(b.unknownIn[name], section)
	}
	b.d.AtKey(ptr, fmt.Sprintf("unknown actor %q in %s", name, section),
		names.DidYouMean(names.Suggest(name, b.spec.Actors), "declare it under actors, or fix the name"))
	return nil
}

// checkUnusedActors reports, at its entry in the actors list, a declared
// actor that observations and inputs never name while they name an unknown
// actor that is likely its misspelling: the typo may be in the list rather
// than at the uses, which are reported by actor.
func (b *builder) checkUnusedActors() {
	if len(b.unknownIn) == 0 {
		return
	}
	unknown := slices.Sorted(maps.Keys(b.unknownIn))
	listed := make(map[string]bool)
	for i, name := range b.spec.Actors {
		if b.usedActors[name] || listed[name] {
			continue // used, or a duplicate entry, reported already
		}
		listed[name] = true
		// The unknown names whose use-site hint names this actor.
		var likely []string
		for _, u := range unknown {
			if names.Suggest(u, b.spec.Actors) == name {
				likely = append(likely, u)
			}
		}
		if len(likely) == 0 {
			continue
		}
		u := names.Suggest(name, likely)
		if u == "" {
			u = likely[0]
		}
		sections := b.unknownIn[u]
		b.d.At("/actors/"+strconv.Itoa(i), fmt.Sprintf("actor %q is used nowhere", name),
			fmt.Sprintf("did you mean %q, which %s use?", u, strings.Join(sections, " and ")))
	}
}

// actorKeys orders the keys of a map keyed by actor name: declared actors
// in the order of the actors list, then unknown names sorted.
func (b *builder) actorKeys(keys []string) []string {
	var known, unknown []string
	for _, a := range b.spec.Actors {
		if slices.Contains(keys, a) && !slices.Contains(known, a) {
			known = append(known, a)
		}
	}
	for _, k := range keys {
		if _, ok := b.actors[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	return append(known, unknown...)
}

func (b *builder) buildDefs() {
	for _, name := range slices.Sorted(maps.Keys(b.spec.Defs)) {
		ptr := "/$defs/" + spec.EscapePointer(name)
		decl := &TypeDecl{Name: name, GoName: name, File: "types.go", Ptr: ptr, Doc: Description(b.spec.Defs[name])}
		b.defs[name] = decl
		b.decls = append(b.decls, decl)
		b.names.claim(name, fmt.Sprintf("$defs type %s", name), ptr, "rename one of them")
	}
	for _, name := range slices.Sorted(maps.Keys(b.spec.Defs)) {
		b.fillDef(b.defs[name])
	}
}

// fillDef works out a $defs type. It reports false when the type is being
// worked out already: a cycle through allOf, oneOf or $ref.
func (b *builder) fillDef(decl *TypeDecl) bool {
	switch b.defState[decl] {
	case defDone:
		return true
	case defBusy:
		return false
	}
	b.defState[decl] = defBusy
	defer func() { b.defState[decl] = defDone }()
	s := b.spec.Defs[decl.Name]
	if s == nil {
		b.d.At(decl.Ptr, "schema is null", "write a schema object")
		decl.Kind = DefinedDecl
		decl.Target = &Type{Kind: StringType}
		return true
	}
	switch c := b.classify(s, decl.Ptr); c.class {
	case refClass:
		decl.Kind = AliasDecl
		decl.Target = b.resolve(s, decl.Ptr, decl.GoName, decl.File).t
	case unionClass:
		decl.Kind = UnionDecl
		b.fillUnion(decl, s, decl.Ptr)
	case structClass:
		decl.Kind = StructDecl
		b.fillStruct(decl, s, decl.Ptr)
	case enumClass:
		decl.Kind = EnumDecl
		b.fillEnum(decl, s, decl.Ptr)
	default:
		decl.Kind = DefinedDecl
		r := b.resolve(s, decl.Ptr, decl.GoName, decl.File)
		if r.nullable {
			b.d.At(decl.Ptr+"/type", "a $defs type cannot be nullable", "make the properties that use it nullable or optional instead")
		}
		decl.Target = r.t
	}
	return true
}

// badRef reports whether ref is a $ref that refDecl rejects: unsupported,
// or naming no $defs type.
func (b *builder) badRef(ref string) bool {
	if ref == "" {
		return false
	}
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	return !ok || strings.Contains(name, "/") || b.defs[spec.UnescapePointer(name)] == nil
}

// checkRefs reports each $ref in s, at ptr, that does not resolve or is
// unsupported, as resolving s would.
func (b *builder) checkRefs(s *Schema, ptr string) {
	if s == nil {
		return
	}
	if b.badRef(s.Ref) {
		b.refDecl(s.Ref, ptr+"/$ref")
	}
	b.checkRefs(s.Items, ptr+"/items")
	if s.AdditionalProperties != nil {
		b.checkRefs(s.AdditionalProperties.Schema, ptr+"/additionalProperties")
	}
	for _, p := range s.Properties {
		b.checkRefs(p.Schema, ptr+"/properties/"+spec.EscapePointer(p.Name))
	}
	for i, m := range s.AllOf {
		b.checkRefs(m, ptr+"/allOf/"+strconv.Itoa(i))
	}
	for i, v := range s.OneOf {
		b.checkRefs(v, ptr+"/oneOf/"+strconv.Itoa(i))
	}
}

// sameButBadRefs reports whether x and y, without descriptions, are the
// same but where one of them has a $ref that badRef rejects.
func (b *builder) sameButBadRefs(x, y *Schema) bool {
	x, y = withoutDocs(x), withoutDocs(y) // deep copies, to be masked
	b.maskBadRefs(x, y)
	jx, _ := json.Marshal(x) // plain data always encodes
	jy, _ := json.Marshal(y)
	return bytes.Equal(jx, jy)
}

// maskBadRefs blanks the $refs of x and y, walked side by side, wherever
// one of them has a $ref that badRef rejects.
func (b *builder) maskBadRefs(x, y *Schema) {
	if x == nil || y == nil {
		return
	}
	if b.badRef(x.Ref) || b.badRef(y.Ref) {
		x.Ref, y.Ref = "?", "?"
	}
	b.maskBadRefs(x.Items, y.Items)
	if x.AdditionalProperties != nil && y.AdditionalProperties != nil {
		b.maskBadRefs(x.AdditionalProperties.Schema, y.AdditionalProperties.Schema)
	}
	for i := range min(len(x.Properties), len(y.Properties)) {
		if x.Properties[i].Name == y.Properties[i].Name {
			b.maskBadRefs(x.Properties[i].Schema, y.Properties[i].Schema)
		}
	}
	for i := range min(len(x.AllOf), len(y.AllOf)) {
		b.maskBadRefs(x.AllOf[i], y.AllOf[i])
	}
	for i := range min(len(x.OneOf), len(y.OneOf)) {
		b.maskBadRefs(x.OneOf[i], y.OneOf[i])
	}
}

// refDecl returns the $defs type a $ref names.
func (b *builder) refDecl(ref, ptr string) *TypeDecl {
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok || strings.Contains(name, "/") {
		b.d.At(ptr, fmt.Sprintf("unsupported $ref %q", ref), `refer to a shared type as "#/$defs/Name"`)
		return nil
	}
	name = spec.UnescapePointer(name)
	decl := b.defs[name]
	if decl == nil {
		hint := "declare the type under $defs, or fix the name"
		if s := names.Suggest(name, slices.Sorted(maps.Keys(b.defs))); s != "" {
			hint = names.DidYouMean("#/$defs/"+s, "")
		}
		b.d.At(ptr, fmt.Sprintf("$ref %q does not resolve", ref), hint)
	}
	return decl
}

func (b *builder) buildObservations() {
	for _, obsName := range b.actorKeys(slices.Collect(maps.Keys(b.spec.Observations))) {
		obsPtr := "/observations/" + spec.EscapePointer(obsName)
		observer := b.actor(obsName, obsPtr, "observations")
		targets := b.spec.Observations[obsName]
		for _, tgtName := range b.actorKeys(slices.Collect(maps.Keys(targets))) {
			tptr := obsPtr + "/" + spec.EscapePointer(tgtName)
			target := b.actor(tgtName, tptr, "observations")
			if observer == nil || target == nil {
				continue
			}
			o := &Observation{Observer: observer, Target: target, GoName: observationName(observer, target), Pos: b.d.Src.KeyPos(tptr)}
			b.names.claim(o.GoName, fmt.Sprintf("observation %s.%s", obsName, tgtName), tptr, b.names.observationHint(o.GoName))
			members := newNameTable(b.d)
			for _, p := range targets[tgtName] {
				if f := b.observedField(target, p, tptr+"/"+spec.EscapePointer(p.Name)); f != nil {
					if members.claim(f.GoName, fmt.Sprintf("property %q", p.Name), f.Ptr, "rename one of the properties") {
						o.Fields = append(o.Fields, f)
					}
				}
			}
			observer.Observes = append(observer.Observes, o)
			target.ObservedBy = append(target.ObservedBy, o)
			b.m.Observations = append(b.m.Observations, o)
		}
	}
}

// observedField checks the ownership of an observed property and returns
// its field.
func (b *builder) observedField(target *Actor, p Property, ptr string) *Field {
	prev, seen := b.owners[p.Name]
	switch {
	case seen && prev.target != target:
		b.d.AtKey(ptr, fmt.Sprintf("property %q is also observed on actor %q (%s)", p.Name, prev.target.Name, posShort(b.d.Src.KeyPos(prev.ptr))),
			"a piece of state has one owner: rename one of them, or observe it on one actor only")
		return nil
	case seen && !b.sameSchema(prev.schema, p.Schema):
		// The first copy's $refs are reported when it is resolved; this
		// copy is not resolved, so its own are reported here.
		b.checkRefs(p.Schema, ptr)
		if b.sameButBadRefs(prev.schema, p.Schema) {
			return nil // the $refs that do not resolve are the difference
		}
		b.d.AtKey(ptr, fmt.Sprintf("property %q of actor %q has a different schema than at %s", p.Name, target.Name, posShort(b.d.Src.KeyPos(prev.ptr))),
			"observations of one actor must agree on the schema of a property")
		return nil
	case seen:
		b.checkRefs(p.Schema, ptr)
	case !seen:
		b.owners[p.Name] = propOwner{target: target, ptr: ptr, schema: p.Schema}
		b.stateNames.claim(names.FieldName(p.Name), fmt.Sprintf("property %q", p.Name), ptr, "rename one of the properties")
	}
	r := b.resolve(p.Schema, b.owners[p.Name].ptr, names.FieldName(p.Name), "observations.go")
	f := &Field{
		Name: p.Name, GoName: names.FieldName(p.Name),
		Required: true, Nullable: r.nullable, Doc: docOr(p.Schema, ""), Owner: target, Ptr: ptr,
	}
	b.fieldRes[f] = r
	return f
}

func (b *builder) buildInputs() {
	type seenInput struct {
		actor *Actor
		ptr   string
	}
	seen := make(map[string]seenInput)
	for _, actorName := range b.actorKeys(slices.Collect(maps.Keys(b.spec.Inputs))) {
		aptr := "/inputs/" + spec.EscapePointer(actorName)
		a := b.actor(actorName, aptr, "inputs")
		if a == nil {
			continue
		}
		inputs := b.spec.Inputs[actorName]
		for _, name := range slices.Sorted(maps.Keys(inputs)) {
			ptr := aptr + "/" + spec.EscapePointer(name)
			if prev, dup := seen[name]; dup {
				b.d.AtKey(ptr, fmt.Sprintf("input %q is also declared by actor %q (%s)", name, prev.actor.Name, posShort(b.d.Src.KeyPos(prev.ptr))),
					"input names are the type discriminators of AgentInput: rename one of them")
				continue
			}
			seen[name] = seenInput{a, ptr}
			in := &Input{Name: name, Actor: a, Pos: b.d.Src.KeyPos(ptr), Type: &ConstProp{Name: "type", GoName: "Type", Value: jsonString(name)}}
			if why, bad := reservedWord(names.LowerCamel(name)); bad {
				b.d.AtKey(ptr, fmt.Sprintf("input %q: generated code names it %s, which is %s", name, names.LowerCamel(name), why), "rename the input")
			}
			s := inputs[name]
			decl := b.newDecl(names.PascalCase(name), "inputs.go", ptr, StructDecl, fmt.Sprintf("input %q", name), s)
			if decl == nil {
				continue
			}
			decl.Input = in
			in.Decl = decl
			if s == nil {
				b.d.At(ptr, "schema is null", "write an object schema")
				continue
			}
			c := b.classify(s, ptr)
			if c.class != structClass && c.class != refClass {
				if c.class != invalidClass {
					b.d.At(ptr, "an input must be an object schema", "give it type: object and properties")
				}
				continue
			}
			if c.nullable {
				b.d.At(ptr+"/type", "an input cannot be nullable", `remove "null" from its type; an input is always an object`)
				continue
			}
			if c.class == refClass && !b.inputRef(s.Ref, ptr) {
				continue
			}
			b.fillStruct(decl, s, ptr)
			a.Inputs = append(a.Inputs, in)
			b.m.Inputs = append(b.m.Inputs, in)
		}
	}
}

// inputRef checks that an input that is a $ref names an object type, and
// reports what it names otherwise.
func (b *builder) inputRef(ref, ptr string) bool {
	def := b.refDecl(ref, ptr+"/$ref")
	if def == nil || !b.fillDef(def) {
		return false
	}
	if def.Kind == StructDecl && b.infos[def] != nil {
		return true
	}
	what, hint := declKindName(def), fmt.Sprintf("refer to an object type, or give the input type: object and a property of type %s", def.Name)
	if def.Kind == AliasDecl && def.Target != nil && def.Target.Kind == NamedType && def.Target.Decl.Kind == StructDecl {
		hint = fmt.Sprintf(`refer to "#/$defs/%s" directly`, def.Target.Decl.Name)
	}
	b.d.At(ptr+"/$ref", fmt.Sprintf("an input must be an object, but $ref %q names %s, which is %s", ref, def.Name, what), hint)
	return false
}

// declKindName says what kind of type a $defs type is, for messages.
func declKindName(d *TypeDecl) string {
	switch d.Kind {
	case StructDecl:
		return "an object"
	case EnumDecl:
		return "an enum"
	case UnionDecl:
		return "a oneOf"
	case AliasDecl:
		if d.Target != nil && d.Target.Kind == NamedType {
			return "another name for " + d.Target.Decl.Name
		}
	case DefinedDecl:
		if d.Target != nil {
			switch d.Target.Kind {
			case MapType:
				return "a map"
			case SliceType:
				return "an array"
			case StringType:
				return "a string"
			case IntType:
				return "an integer"
			case FloatType:
				return "a number"
			case BoolType:
				return "a boolean"
			}
		}
	}
	return "not an object"
}

// checkImplNames reports an input whose Go name is an actor's: package
// transitions of impl/ declares a function named after each actor (its
// transition) and after each input (the transition of that input).
func (b *builder) checkImplNames() {
	t := newNameTable(b.d)
	for _, a := range b.m.Actors {
		t.claim(a.GoName, fmt.Sprintf("actor %q", a.Name), "/actors/"+strconv.Itoa(slices.Index(b.spec.Actors, a.Name)), "")
	}
	for _, in := range b.m.Inputs {
		t.claim(in.Decl.GoName, fmt.Sprintf("input %q", in.Name), "/inputs/"+spec.EscapePointer(in.Actor.Name)+"/"+spec.EscapePointer(in.Name),
			"package transitions (impl/) names a function after each actor and each input: rename the input")
	}
}

// newDecl declares a named type for the schema at ptr.
func (b *builder) newDecl(goName, file, ptr string, kind DeclKind, what string, s *Schema) *TypeDecl {
	if goName == "" {
		b.d.AtKey(ptr, "cannot derive a Go name here", "move the schema into $defs")
		return nil
	}
	decl := &TypeDecl{Name: goName, GoName: goName, Kind: kind, File: file, Ptr: ptr, Doc: Description(s)}
	hint := "rename one of them"
	if what == "" {
		what = "the inline schema " + spec.ElementName(ptr)
		hint = "move the inline schema into $defs under another name, or rename the clashing element"
	}
	b.names.claim(goName, what, ptr, hint)
	b.decls = append(b.decls, decl)
	return decl
}

// Schema classes, by how they map to Go.
type schemaClass uint8

const (
	invalidClass schemaClass = iota
	refClass
	unionClass
	structClass
	mapClass
	arrayClass
	enumClass
	stringClass
	integerClass
	numberClass
	booleanClass
)

type classified struct {
	class    schemaClass
	nullable bool
}

var classOfType = map[string]schemaClass{
	"object": structClass, "array": arrayClass, "string": stringClass,
	"integer": integerClass, "number": numberClass, "boolean": booleanClass,
}

// The keywords each class accepts besides description and default.
var classKeywords = map[schemaClass][]string{
	refClass:     {"$ref"},
	unionClass:   {"oneOf", "type"},
	structClass:  {"type", "properties", "required", "additionalProperties", "allOf", "minProperties", "maxProperties"},
	mapClass:     {"type", "additionalProperties", "minProperties", "maxProperties"},
	arrayClass:   {"type", "items", "minItems", "maxItems", "uniqueItems"},
	enumClass:    {"type", "enum", "pattern", "format", "minLength", "maxLength"},
	stringClass:  {"type", "pattern", "format", "minLength", "maxLength"},
	integerClass: {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
	numberClass:  {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
	booleanClass: {"type"},
}

var classNames = map[schemaClass]string{
	refClass: "a $ref", unionClass: "a oneOf", structClass: "an object", mapClass: "a map",
	arrayClass: "an array", enumClass: "an enum", stringClass: "a string", integerClass: "an integer",
	numberClass: "a number", booleanClass: "a boolean",
}

// classify works out how a schema maps to Go and checks that its keywords
// fit together.
func (b *builder) classify(s *Schema, ptr string) classified {
	if len(s.Const) > 0 {
		b.d.AtKey(ptr+"/const", "const is supported only on a property of an object", "use enum for a set of allowed strings")
		return classified{}
	}
	var c classified
	switch {
	case s.Ref != "":
		c.class = refClass
	case s.OneOf != nil:
		c.class = unionClass
	case s.AllOf != nil:
		c.class = structClass
	}
	if len(s.Type) > 0 {
		t, nullable, ok := b.schemaType(s.Type, ptr+"/type")
		if !ok {
			return classified{}
		}
		c.nullable = nullable
		explicit := classOfType[t]
		switch {
		case c.class == refClass:
			b.d.AtKey(ptr+"/type", `"type" cannot sit beside $ref`, "remove it; the referenced type says it")
			return classified{}
		case (c.class == unionClass || c.class == structClass) && explicit != structClass:
			b.d.AtKey(ptr+"/type", fmt.Sprintf("%s is an object, not %s", keywordOf(s), t), "use type: object or remove type")
			return classified{}
		case c.class == unionClass && nullable:
			b.d.AtKey(ptr+"/type", "a oneOf cannot be nullable", "make the property that holds it optional")
			return classified{}
		case c.class == invalidClass:
			c.class = explicit
		}
	} else if c.class == invalidClass {
		switch {
		case len(s.Properties) > 0 || s.Required != nil || s.AdditionalProperties != nil:
			c.class = structClass
		case s.Items != nil:
			c.class = arrayClass
		case s.Enum != nil: // an empty one is reported by checkSatisfiable
			c.class = enumClass
		default:
			b.d.At(ptr, "cannot tell the type of this schema", `add "type" (object, array, string, integer, number or boolean), a $ref, properties or items`)
			return classified{}
		}
	}
	if c.class == structClass && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		if len(s.Properties) > 0 || len(s.AllOf) > 0 {
			b.d.AtKey(ptr+"/additionalProperties", "an object with properties cannot also have an additionalProperties schema", "use additionalProperties: false or true, or put the map in a property of its own")
			return classified{}
		}
		c.class = mapClass
	}
	if c.class == stringClass && s.Enum != nil {
		c.class = enumClass
	}
	if !b.checkKeywords(s, ptr, c.class) {
		return classified{}
	}
	return c
}

func keywordOf(s *Schema) string {
	if len(s.OneOf) > 0 {
		return "a oneOf"
	}
	return "an allOf"
}

// schemaType checks a "type" value: one type, or a type and "null".
func (b *builder) schemaType(t SchemaType, ptr string) (name string, nullable, ok bool) {
	switch {
	case len(t) == 1 && t[0] != "null":
		return t[0], false, true
	case len(t) == 2 && t[0] == "null" && t[1] != "null":
		return t[1], true, true
	case len(t) == 2 && t[1] == "null" && t[0] != "null":
		return t[0], true, true
	}
	b.d.At(ptr, fmt.Sprintf("unsupported type %s", typeString(t)), `use one type, or a pair of a type and "null" like [string, "null"]`)
	return "", false, false
}

func typeString(t SchemaType) string {
	j, _ := json.Marshal(t)
	return string(j)
}

// schemaKeywords lists the keywords a schema uses, in a fixed order.
func schemaKeywords(s *Schema) []string {
	var ks []string
	add := func(k string, ok bool) {
		if ok {
			ks = append(ks, k)
		}
	}
	add("$ref", s.Ref != "")
	add("type", len(s.Type) > 0)
	add("properties", s.Properties != nil)
	add("required", s.Required != nil)
	add("items", s.Items != nil)
	add("additionalProperties", s.AdditionalProperties != nil)
	add("enum", s.Enum != nil)
	add("const", len(s.Const) > 0)
	add("allOf", s.AllOf != nil)
	add("oneOf", s.OneOf != nil)
	add("minimum", s.Minimum != "")
	add("maximum", s.Maximum != "")
	add("exclusiveMinimum", s.ExclusiveMinimum != "")
	add("exclusiveMaximum", s.ExclusiveMaximum != "")
	add("multipleOf", s.MultipleOf != "")
	add("minLength", s.MinLength != nil)
	add("maxLength", s.MaxLength != nil)
	add("pattern", s.Pattern != "")
	add("format", s.Format != "")
	add("minItems", s.MinItems != nil)
	add("maxItems", s.MaxItems != nil)
	add("uniqueItems", s.UniqueItems)
	add("minProperties", s.MinProperties != nil)
	add("maxProperties", s.MaxProperties != nil)
	return ks
}

// checkKeywords reports keywords that do not apply to the class, a pattern
// that does not compile, an unknown format and a default of the wrong kind.
func (b *builder) checkKeywords(s *Schema, ptr string, class schemaClass) bool {
	ok := true
	allowed := classKeywords[class]
	for _, k := range schemaKeywords(s) {
		if slices.Contains(allowed, k) {
			continue
		}
		ok = false
		if class == refClass {
			b.d.AtKey(ptr+"/"+k, fmt.Sprintf("%q cannot sit beside $ref", k), "only description and default may accompany $ref")
		} else {
			b.d.AtKey(ptr+"/"+k, fmt.Sprintf("%q does not apply to %s", k, classNames[class]), "remove it")
		}
	}
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			b.d.At(ptr+"/pattern", fmt.Sprintf("pattern does not compile: %v", strings.TrimPrefix(err.Error(), "error parsing regexp: ")), "write a Go (RE2) regular expression")
			ok = false
		}
	}
	if s.Format != "" {
		if _, known := jsonschema.Formats[s.Format]; !known {
			formats := slices.Sorted(maps.Keys(jsonschema.Formats))
			b.d.At(ptr+"/format", fmt.Sprintf("unknown format %q", s.Format),
				names.DidYouMean(names.Suggest(s.Format, formats), "use one of "+strings.Join(formats, ", ")))
			ok = false
		}
	}
	if s.Default != nil && class != refClass && class != unionClass {
		if !defaultFits(s.Default, class, len(s.Type) == 2) {
			b.d.At(ptr+"/default", fmt.Sprintf("default %s is not %s", s.Default, classNames[class]), "make the default match the type")
			ok = false
		} else if class == enumClass {
			var v string
			_ = json.Unmarshal(s.Default, &v)
			if !slices.Contains(s.Enum, v) && string(s.Default) != "null" {
				b.d.At(ptr+"/default", fmt.Sprintf("default %s is not one of the enum values", s.Default), "make the default one of the enum values")
				ok = false
			}
		}
	}
	return ok
}

// defaultFits says whether a default value has the JSON kind of the class.
func defaultFits(v json.RawMessage, class schemaClass, nullable bool) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return false
	}
	if string(v) == "null" {
		return nullable
	}
	switch class {
	case structClass, mapClass:
		return v[0] == '{'
	case arrayClass:
		return v[0] == '['
	case enumClass, stringClass:
		return v[0] == '"'
	case booleanClass:
		return string(v) == "true" || string(v) == "false"
	case numberClass:
		return v[0] == '-' || (v[0] >= '0' && v[0] <= '9')
	case integerClass:
		f, err := strconv.ParseFloat(string(v), 64)
		return err == nil && f == float64(int64(f))
	}
	return false
}

// resolve returns the Go type of the schema at ptr, declaring the named
// types it needs under name. Each schema location resolves once.
func (b *builder) resolve(s *Schema, ptr, name, file string) resolved {
	if r, ok := b.resolved[ptr]; ok {
		return r
	}
	r := b.resolveSchema(s, ptr, name, file)
	b.resolved[ptr] = r
	return r
}

func (b *builder) resolveSchema(s *Schema, ptr, name, file string) resolved {
	invalid := resolved{t: &Type{Kind: StringType}}
	if s == nil {
		b.d.At(ptr, "schema is null", "write a schema object")
		return invalid
	}
	c := b.classify(s, ptr)
	switch c.class {
	case refClass:
		decl := b.refDecl(s.Ref, ptr+"/$ref")
		if decl == nil {
			return invalid
		}
		return resolved{t: named(decl)}
	case unionClass:
		decl := b.newDecl(name, file, ptr, UnionDecl, "", s)
		if decl == nil {
			return invalid
		}
		b.fillUnion(decl, s, ptr)
		return resolved{t: named(decl)}
	case structClass:
		decl := b.newDecl(name, file, ptr, StructDecl, "", s)
		if decl == nil {
			return invalid
		}
		b.fillStruct(decl, s, ptr)
		return resolved{t: named(decl), nullable: c.nullable}
	case enumClass:
		decl := b.newDecl(name, file, ptr, EnumDecl, "", s)
		if decl == nil {
			return invalid
		}
		b.fillEnum(decl, s, ptr)
		return resolved{t: named(decl), nullable: c.nullable}
	case mapClass:
		v := b.resolve(s.AdditionalProperties.Schema, ptr+"/additionalProperties", name+"Value", file)
		return resolved{t: &Type{Kind: MapType, Elem: elemType(v)}, nullable: c.nullable}
	case arrayClass:
		if s.Items == nil {
			b.d.At(ptr, "an array needs items", "say what the array holds with items")
			return invalid
		}
		it := b.resolve(s.Items, ptr+"/items", name+"Item", file)
		return resolved{t: &Type{Kind: SliceType, Elem: elemType(it)}, nullable: c.nullable}
	case stringClass:
		return resolved{t: &Type{Kind: StringType}, nullable: c.nullable}
	case integerClass:
		return resolved{t: &Type{Kind: IntType}, nullable: c.nullable}
	case numberClass:
		return resolved{t: &Type{Kind: FloatType}, nullable: c.nullable}
	case booleanClass:
		return resolved{t: &Type{Kind: BoolType}, nullable: c.nullable}
	}
	return invalid
}

func named(d *TypeDecl) *Type { return &Type{Kind: NamedType, Decl: d} }

// elemType is the Go type of an array item or map value: a pointer when it
// may be null and nil is not already its null.
func elemType(r resolved) *Type {
	if r.nullable && !r.t.IsNilable() {
		return &Type{Kind: PointerType, Elem: r.t}
	}
	return r.t
}

// fieldType is the Go type of a struct field: a pointer when the value may be
// absent or null and nil is not already its absence.
func fieldType(r resolved, required bool) *Type {
	if (!required || r.nullable) && !r.t.IsNilable() {
		return &Type{Kind: PointerType, Elem: r.t}
	}
	return r.t
}

// collectProps merges an object schema's allOf members and own properties.
func (b *builder) collectProps(s *Schema, ptr string, self *TypeDecl) (props []mergedProp, closedBy []string, ok bool) {
	ok = true
	index := make(map[string]int)
	add := func(p mergedProp) {
		if i, dup := index[p.name]; dup {
			switch {
			case b.sameSchema(props[i].schema, p.schema):
			case props[i].schema != nil && props[i].schema.ReadOnly || p.schema != nil && p.schema.ReadOnly:
				// An allOf member would still require it of a client.
				b.d.AtKey(p.ptr, fmt.Sprintf("readOnly property %q is declared by an allOf member too (at %s)", p.name, posShort(b.d.Src.KeyPos(props[i].ptr))),
					"a readOnly property must be the input's own: remove it from the allOf member, or drop readOnly")
				ok = false
			default:
				b.d.AtKey(p.ptr, fmt.Sprintf("property %q is declared again with a different schema (first at %s)", p.name, posShort(b.d.Src.KeyPos(props[i].ptr))),
					"allOf merges properties: give them one schema")
				ok = false
			}
			props[i].required = props[i].required || p.required
			return
		}
		index[p.name] = len(props)
		props = append(props, p)
	}
	members := s.AllOf
	memberPtr := func(i int) string { return ptr + "/allOf/" + strconv.Itoa(i) }
	if s.Ref != "" { // an input that is a $ref: merge the referenced type
		members = []*Schema{{Ref: s.Ref}}
		memberPtr = func(int) string { return ptr }
	}
	for i, m := range members {
		mptr := memberPtr(i)
		if m == nil {
			b.d.At(mptr, "schema is null", "write a schema object")
			ok = false
			continue
		}
		if m.Ref != "" {
			if !b.checkKeywords(m, mptr, refClass) {
				ok = false
				continue
			}
			def := b.refDecl(m.Ref, mptr+"/$ref")
			if def == nil {
				ok = false
				continue
			}
			if !b.fillDef(def) || def == self {
				b.d.At(mptr+"/$ref", fmt.Sprintf("allOf cycle: %s includes itself", def.Name), "break the cycle")
				ok = false
				continue
			}
			info := b.infos[def]
			if def.Kind != StructDecl || info == nil {
				b.d.At(mptr+"/$ref", fmt.Sprintf("allOf member %s is not an object", def.Name), "allOf merges objects only")
				ok = false
				continue
			}
			for _, p := range info.props {
				if p.from == nil {
					p.from = def
				}
				add(p)
			}
			if info.closed {
				closedBy = append(closedBy, mptr)
			}
			continue
		}
		if c := b.classify(m, mptr); c.class != structClass || len(m.AllOf) > 0 || c.nullable {
			if c.class != invalidClass {
				b.d.At(mptr, "allOf member must be an object with properties or a $ref to one", "allOf merges objects only")
			}
			ok = false
			continue
		}
		mprops, mclosed, mok := b.collectProps(m, mptr, self)
		ok = ok && mok
		for _, p := range mprops {
			add(p)
		}
		closedBy = append(closedBy, mclosed...)
	}
	for _, p := range s.Properties {
		add(mergedProp{name: p.Name, schema: p.Schema, ptr: ptr + "/properties/" + spec.EscapePointer(p.Name)})
	}
	for i, r := range s.Required {
		rptr := ptr + "/required/" + strconv.Itoa(i)
		if slices.Contains(s.Required[:i], r) {
			b.d.At(rptr, fmt.Sprintf("%q is listed twice", r), "remove one")
			ok = false
			continue
		}
		j, declared := index[r]
		if !declared {
			declaredNames := slices.Sorted(maps.Keys(index))
			b.d.At(rptr, fmt.Sprintf("required property %q is not declared", r),
				names.DidYouMean(names.Suggest(r, declaredNames), "declare it under properties, or remove it from required"))
			ok = false
			continue
		}
		props[j].required = true
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Bool != nil && !*ap.Bool {
		closedBy = append(closedBy, ptr)
	}
	return props, closedBy, ok
}

// fillStruct declares the fields and const properties of an object.
func (b *builder) fillStruct(decl *TypeDecl, s *Schema, ptr string) {
	decl.Kind = StructDecl
	if s.Ref != "" && !b.checkKeywords(s, ptr, refClass) {
		return
	}
	props, closedBy, _ := b.collectProps(s, ptr, decl)
	info := &structInfo{props: props}
	b.infos[decl] = info
	// additionalProperties: false only sees the properties declared beside
	// it, so with allOf it would reject the merged ones.
	for _, cptr := range closedBy {
		own := b.closedProps(cptr)
		for _, p := range props {
			if !slices.Contains(own, p.name) {
				b.d.At(cptr, fmt.Sprintf("additionalProperties: false here rejects property %q that allOf merges in, so no value is valid", p.name),
					"remove additionalProperties: false from the allOf member")
				break
			}
		}
		if cptr == ptr && s.Ref == "" {
			info.closed = true
		} else if decl.Input != nil {
			b.d.At(cptr, `additionalProperties: false here would reject the input's "type" property`,
				"remove it, or put additionalProperties: false on the input itself")
		}
	}
	members := newNameTable(b.d)
	members.reserve("a method agentgen generates", "MarshalJSON", "UnmarshalJSON")
	if decl.Input != nil {
		members.reserve("a method agentgen generates", "InputType", "InputActor", "WithTimestamp")
		members.reserve(`the input's "type" discriminator`, "Type")
	}
	for _, p := range props {
		what := fmt.Sprintf("property %q", p.name)
		if decl.Input != nil && strings.EqualFold(p.name, "type") {
			// encoding/json matches names regardless of case: "Type" would
			// receive the discriminator.
			b.d.AtKey(p.ptr, fmt.Sprintf("property %q is (or differs only in case from) the input's discriminator \"type\", which agentgen writes", p.name), "rename the property")
			continue
		}
		if p.schema == nil {
			b.d.At(p.ptr, "schema is null", "write a schema object")
			continue
		}
		if len(p.schema.Const) > 0 {
			if cp := b.constProp(p); cp != nil && members.claim(cp.GoName, what, p.ptr, "rename one of the properties") {
				decl.Consts = append(decl.Consts, cp)
			}
			continue
		}
		var r resolved
		if p.from != nil {
			r = b.resolved[p.ptr]
		} else {
			r = b.resolve(p.schema, p.ptr, decl.GoName+names.FieldName(p.name), decl.File)
		}
		if r.t == nil {
			continue // reported where it was declared
		}
		f := &Field{
			Name: p.name, GoName: names.FieldName(p.name),
			Required: p.required, Nullable: r.nullable, Doc: docOr(p.schema, ""), Ptr: p.ptr,
			// checkReadOnly reports readOnly anywhere else.
			ReadOnly: decl.Input != nil && p.schema.ReadOnly && p.ptr == ptr+"/properties/"+spec.EscapePointer(p.name),
		}
		b.fieldRes[f] = r
		if members.claim(f.GoName, what, p.ptr, "rename one of the properties") {
			decl.Fields = append(decl.Fields, f)
		}
	}
}

// closedProps lists the properties declared beside an additionalProperties:
// false, at the schema at ptr (or, for a $ref, the schema it names).
func (b *builder) closedProps(ptr string) []string {
	var names []string
	n := b.d.Src.Node(ptr)
	if ref := n.Get("$ref"); ref != nil && ref.Kind() == spec.StringNode {
		if name, ok := strings.CutPrefix(ref.Str(), "#/$defs/"); ok {
			if def := b.defs[name]; def != nil {
				if info := b.infos[def]; info != nil {
					for _, p := range info.props {
						names = append(names, p.name)
					}
				}
			}
		}
		return names
	}
	if props := n.Get("properties"); props != nil {
		names = append(names, props.Keys()...)
	}
	return names
}

// constProp checks a property with a const value.
func (b *builder) constProp(p mergedProp) *ConstProp {
	s := p.schema
	ok := true
	for _, k := range schemaKeywords(s) {
		if k != "const" && k != "type" {
			b.d.AtKey(p.ptr+"/"+k, fmt.Sprintf("%q does not apply to a const property", k), "remove it")
			ok = false
		}
	}
	v := bytes.TrimSpace(s.Const)
	kind := ""
	switch {
	case v[0] == '"':
		kind = "string"
	case string(v) == "true" || string(v) == "false":
		kind = "boolean"
	case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
		kind = "number"
	default:
		b.d.At(p.ptr+"/const", fmt.Sprintf("const %s is not a string, number or boolean", v), "use a string, number or boolean")
		return nil
	}
	if len(s.Type) > 0 {
		t, nullable, tok := b.schemaType(s.Type, p.ptr+"/type")
		if tok && (nullable || !(t == kind || (kind == "number" && t == "integer"))) {
			b.d.AtKey(p.ptr+"/type", fmt.Sprintf("const %s is not of type %s", v, typeString(s.Type)), "make the type match the const")
			ok = false
		}
	}
	if !p.required {
		b.d.AtKey(p.ptr, fmt.Sprintf("const property %q must be required", p.name), "add it to required; agentgen always writes it")
		ok = false
	}
	if !ok {
		return nil
	}
	return &ConstProp{Name: p.name, GoName: names.FieldName(p.name), Value: slices.Clone(v)}
}

// fillUnion declares a oneOf: a sealed interface whose variants are told
// apart by a common const string property.
func (b *builder) fillUnion(decl *TypeDecl, s *Schema, ptr string) {
	decl.Kind = UnionDecl
	b.unions[ptr] = decl
	type variant struct {
		ptr    string
		schema *Schema
		decl   *TypeDecl // for $ref variants
		consts map[string]string
	}
	var vs []variant
	for i, v := range s.OneOf {
		vptr := ptr + "/oneOf/" + strconv.Itoa(i)
		if v == nil {
			b.d.At(vptr, "schema is null", "write a schema object")
			return
		}
		var props []mergedProp
		var vdecl *TypeDecl
		if v.Ref != "" {
			if !b.checkKeywords(v, vptr, refClass) {
				return
			}
			vdecl = b.refDecl(v.Ref, vptr+"/$ref")
			if vdecl == nil {
				return
			}
			if !b.fillDef(vdecl) || vdecl == decl {
				b.d.At(vptr+"/$ref", fmt.Sprintf("oneOf cycle: %s is a variant of itself", vdecl.Name), "break the cycle")
				return
			}
			if vdecl.Kind != StructDecl || b.infos[vdecl] == nil {
				b.d.At(vptr+"/$ref", fmt.Sprintf("oneOf variant %s is not an object", vdecl.Name), "oneOf variants must be objects")
				return
			}
			props = b.infos[vdecl].props
		} else {
			if c := b.classify(v, vptr); c.class != structClass || c.nullable {
				if c.class != invalidClass {
					b.d.At(vptr, "oneOf variant must be an object", "oneOf variants must be objects told apart by a const property")
				}
				return
			}
			var ok bool
			props, _, ok = b.collectProps(v, vptr, nil)
			if !ok {
				return
			}
		}
		consts := make(map[string]string)
		for _, p := range props {
			if p.schema == nil || len(p.schema.Const) == 0 {
				continue
			}
			var str string
			if json.Unmarshal(p.schema.Const, &str) == nil {
				consts[p.name] = str
			}
		}
		vs = append(vs, variant{ptr: vptr, schema: v, decl: vdecl, consts: consts})
	}
	if len(vs) == 0 {
		b.d.AtKey(ptr+"/oneOf", "oneOf has no variants", "list the object schemas it chooses between")
		return
	}
	// The discriminator is the const string property every variant has.
	var common []string
	for name := range vs[0].consts {
		all := true
		for _, v := range vs[1:] {
			if _, ok := v.consts[name]; !ok {
				all = false
				break
			}
		}
		if all {
			common = append(common, name)
		}
	}
	slices.Sort(common)
	switch len(common) {
	case 0:
		b.d.AtKey(ptr+"/oneOf", "oneOf variants share no const string property to tell them apart",
			`give every variant a required property with a const string, like kind: {const: circle}`)
		return
	case 1:
	default:
		b.d.AtKey(ptr+"/oneOf", fmt.Sprintf("oneOf variants share several const string properties (%s)", strings.Join(common, ", ")),
			"keep one discriminator property")
		return
	}
	decl.Discriminator = common[0]
	values := make(map[string]string)
	for _, v := range vs {
		val := v.consts[decl.Discriminator]
		if prev, dup := values[val]; dup {
			b.d.At(v.ptr, fmt.Sprintf("discriminator %s %q is also used by %s", decl.Discriminator, val, spec.ElementName(prev)), "give each variant its own value")
			continue
		}
		values[val] = v.ptr
		vdecl := v.decl
		if vdecl == nil {
			vdecl = b.newDecl(decl.GoName+names.PascalCase(val), decl.File, v.ptr, StructDecl, "", v.schema)
			if vdecl == nil {
				continue
			}
			b.fillStruct(vdecl, v.schema, v.ptr)
		}
		vdecl.Unions = append(vdecl.Unions, decl)
		decl.Variants = append(decl.Variants, &Variant{Value: val, Decl: vdecl})
	}
}

// fillEnum declares a string enum and its constants.
func (b *builder) fillEnum(decl *TypeDecl, s *Schema, ptr string) {
	decl.Kind = EnumDecl
	members := newNameTable(b.d)
	for i, v := range s.Enum {
		vptr := ptr + "/enum/" + strconv.Itoa(i)
		if slices.Contains(s.Enum[:i], v) {
			b.d.At(vptr, fmt.Sprintf("enum value %q is listed twice", v), "remove one")
			continue
		}
		suffix := names.PascalCase(v)
		if suffix == "" {
			b.d.At(vptr, fmt.Sprintf("enum value %q has no letters or digits to name a Go constant after", v), "use a value with letters or digits")
			continue
		}
		goName := decl.GoName + suffix
		if !members.claim(goName, fmt.Sprintf("enum value %q", v), vptr, "use values that differ in more than case and punctuation") {
			continue
		}
		b.names.claim(goName, fmt.Sprintf("enum value %q", v), vptr, "rename the enum value or the clashing type")
		decl.Values = append(decl.Values, &EnumValue{Value: v, GoName: goName})
	}
}

// fieldTypes gives each field its Go type. It runs once every type is
// worked out, because whether an optional field needs a pointer depends on
// the type it refers to.
func (b *builder) fieldTypes() {
	for _, d := range b.decls {
		for _, f := range d.Fields {
			f.Type = fieldType(b.fieldRes[f], f.Required)
		}
	}
	for _, o := range b.m.Observations {
		for _, f := range o.Fields {
			f.Type = fieldType(b.fieldRes[f], f.Required)
		}
	}
}

// checkCycles reports types that contain themselves by value: Go cannot
// declare them without a pointer.
func (b *builder) checkCycles() {
	edges := func(d *TypeDecl) []*TypeDecl {
		var out []*TypeDecl
		switch d.Kind {
		case StructDecl:
			for _, f := range d.Fields {
				if f.Type.Kind == NamedType && f.Type.Decl.Kind != UnionDecl && f.Type.Decl.Kind != EnumDecl {
					out = append(out, f.Type.Decl)
				}
			}
		case AliasDecl, DefinedDecl:
			if d.Target != nil && d.Target.Kind == NamedType {
				out = append(out, d.Target.Decl)
			}
		}
		return out
	}
	const (
		unseen = iota
		onStack
		done
	)
	state := make(map[*TypeDecl]int)
	var stack []*TypeDecl
	var visit func(d *TypeDecl)
	visit = func(d *TypeDecl) {
		state[d] = onStack
		stack = append(stack, d)
		for _, e := range edges(d) {
			switch state[e] {
			case unseen:
				visit(e)
			case onStack:
				i := slices.Index(stack, e)
				cycle := stack[i:]
				names := make([]string, 0, len(cycle)+1)
				for _, c := range cycle {
					names = append(names, c.GoName)
				}
				names = append(names, e.GoName)
				b.d.AtKey(e.Ptr, "type cycle "+strings.Join(names, " → ")+": a Go value cannot contain itself",
					"make one of the properties on the cycle optional (a pointer) or an array")
			}
		}
		stack = stack[:len(stack)-1]
		state[d] = done
	}
	sorted := slices.Clone(b.decls)
	slices.SortFunc(sorted, func(x, y *TypeDecl) int { return strings.Compare(x.GoName, y.GoName) })
	for _, d := range sorted {
		if state[d] == unseen {
			visit(d)
		}
	}
}

// derive computes StateOf, ContextOf and AgentState.
func (b *builder) derive() {
	union := func(obs []*Observation) []*Field {
		var fs []*Field
		seen := make(map[string]bool)
		for _, o := range obs {
			for _, f := range o.Fields {
				if !seen[f.Name] {
					seen[f.Name] = true
					fs = append(fs, f)
				}
			}
		}
		slices.SortFunc(fs, func(x, y *Field) int { return strings.Compare(x.Name, y.Name) })
		return fs
	}
	var all []*Observation
	for _, a := range b.m.Actors {
		a.State = union(a.ObservedBy)
		a.Context = union(a.Observes)
		all = append(all, a.ObservedBy...)
	}
	b.m.AgentState = union(all)
}

// lint reports the methodology's step-3 findings as warnings.
func (b *builder) lint() {
	for i, name := range b.spec.Actors {
		a := b.actors[name]
		ptr := "/actors/" + strconv.Itoa(i)
		if a == nil || a.Pos != b.d.Src.ValuePos(ptr) {
			continue
		}
		switch {
		case len(a.State) > 0 && len(a.Inputs) == 0:
			b.d.WarnKey(ptr, fmt.Sprintf("actor %q has state (%s) but no inputs to change it", name, FieldNames(a.State)),
				fmt.Sprintf("add an input under inputs.%s", name))
		case len(a.Inputs) > 0 && len(a.State) == 0:
			b.d.WarnKey(ptr, fmt.Sprintf("actor %q has inputs but no state for them to change", name),
				fmt.Sprintf("observe some of its state under observations.<observer>.%s", name))
		}
		if len(a.Observes) == 0 && len(a.ObservedBy) == 0 {
			b.d.WarnKey(ptr, fmt.Sprintf("actor %q observes nothing and is observed by nothing", name),
				"connect it with an observation, or remove it")
		}
	}
}

// FieldNames lists the spec names of fields, separated by commas.
func FieldNames(fs []*Field) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// checkDescriptions reports a description that cannot become a Go comment:
// one holding NUL or another control character (tabs and line breaks
// aside) or a byte order mark, which go/format rejects or which would not
// show in an editor.
func (b *builder) checkDescriptions() {
	spec.ForEachSchema(b.d.Src.Root(), func(ptr string, n *spec.Node) {
		desc := n.Get("description")
		if desc == nil || desc.Kind() != spec.StringNode {
			return
		}
		for _, r := range desc.Str() {
			var what string
			switch {
			case r == '\t' || r == '\n' || r == '\r':
				continue
			case unicode.IsControl(r):
				what = fmt.Sprintf("the control character %U", r)
			case r == '\uFEFF':
				what = "a byte order mark (U+FEFF)"
			default:
				continue
			}
			b.d.At(ptr+"/description", fmt.Sprintf("description holds %s, which a Go doc comment cannot hold", what), "remove it")
			return
		}
	})
}

// docOr returns the schema's description followed by its default, or def
// when it has neither.
func docOr(s *Schema, def string) string {
	if s == nil {
		return def
	}
	doc := s.Description
	if s.Default != nil {
		doc = strings.TrimSpace(doc + "\n\nDefault: " + string(escapeBOM(s.Default)))
	}
	if doc == "" {
		return def
	}
	return doc
}

// escapeBOM writes each byte order mark in a JSON text as the escape
// \ufeff, which means the same: Go source cannot hold U+FEFF but at its
// start. JSON text has the character only inside strings.
func escapeBOM(j []byte) []byte {
	return bytes.ReplaceAll(j, []byte("\uFEFF"), []byte(`\ufeff`))
}

// sameSchema compares two schemas, ignoring descriptions.
func (b *builder) sameSchema(x, y *Schema) bool {
	if x == y {
		return true
	}
	return bytes.Equal(b.canonical(x), b.canonical(y))
}

// canonical is the JSON of a schema without descriptions, computed once.
func (b *builder) canonical(s *Schema) []byte {
	if j, ok := b.canon[s]; ok {
		return j
	}
	j, _ := json.Marshal(withoutDocs(s)) // plain data always encodes
	b.canon[s] = j
	return j
}

// withoutDocs returns a copy of s without descriptions.
func withoutDocs(s *Schema) *Schema {
	if s == nil {
		return nil
	}
	c := *s
	c.Description = ""
	c.Items = withoutDocs(s.Items)
	if s.AdditionalProperties != nil {
		c.AdditionalProperties = &BoolOrSchema{Bool: s.AdditionalProperties.Bool, Schema: withoutDocs(s.AdditionalProperties.Schema)}
	}
	if s.Properties != nil {
		c.Properties = make(Properties, len(s.Properties))
		for i, p := range s.Properties {
			c.Properties[i] = Property{Name: p.Name, Schema: withoutDocs(p.Schema)}
		}
	}
	c.AllOf = mapSchemas(s.AllOf, withoutDocs)
	c.OneOf = mapSchemas(s.OneOf, withoutDocs)
	return &c
}

func mapSchemas(ss []*Schema, f func(*Schema) *Schema) []*Schema {
	if ss == nil {
		return nil
	}
	out := make([]*Schema, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

// CheckImportPath returns what is wrong with a Go import path, or "".
func CheckImportPath(p string) string {
	if reason := ImportPathError(p); reason != "" {
		return fmt.Sprintf("package %q is not a valid Go import path: %s", p, reason)
	}
	return ""
}

// Description is the description of a schema, or "" for none.
func Description(s *Schema) string {
	if s == nil {
		return ""
	}
	return s.Description
}

// checkReadOnly reports readOnly where it means nothing: anywhere but on a
// property of an input, which the server assigns in the admission step and
// a client may leave out (decl.DecodeClientInput). A property of a state
// is the agent's own; one of a type inside an input is not the server's
// to fill in.
func (b *builder) checkReadOnly() {
	// allowed says whether s may be readOnly; own whether its own
	// properties may be (s is an input).
	var walk func(s *spec.Schema, ptr string, allowed, own bool)
	walk = func(s *spec.Schema, ptr string, allowed, own bool) {
		if s == nil {
			return
		}
		if s.ReadOnly && !allowed {
			b.d.AtKey(ptr+"/readOnly", "readOnly is allowed only on a top-level property of an input, inputs.<actor>.<input>.properties.<name>: one the server assigns in the agent's admission step", "remove it, or move the property to the input that the server stamps")
		}
		walk(s.Items, ptr+"/items", false, false)
		if s.AdditionalProperties != nil {
			walk(s.AdditionalProperties.Schema, ptr+"/additionalProperties", false, false)
		}
		for _, p := range s.Properties {
			walk(p.Schema, ptr+"/properties/"+spec.EscapePointer(p.Name), own, false)
		}
		for i, m := range s.AllOf {
			walk(m, ptr+"/allOf/"+strconv.Itoa(i), false, false)
		}
		for i, m := range s.OneOf {
			walk(m, ptr+"/oneOf/"+strconv.Itoa(i), false, false)
		}
	}
	for name, s := range b.spec.Defs {
		walk(s, "/$defs/"+spec.EscapePointer(name), false, false)
	}
	for observer, targets := range b.spec.Observations {
		for target, props := range targets {
			for _, p := range props {
				walk(p.Schema, "/observations/"+spec.EscapePointer(observer)+"/"+spec.EscapePointer(target)+"/"+spec.EscapePointer(p.Name), false, false)
			}
		}
	}
	for actor, inputs := range b.spec.Inputs {
		for name, s := range inputs {
			walk(s, "/inputs/"+spec.EscapePointer(actor)+"/"+spec.EscapePointer(name), false, true)
		}
	}
}
