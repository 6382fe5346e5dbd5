package model

import "github.com/moora-go/moora/modelgen/internal/spec"

// Model is a validated, derived agent model.
type Model struct {
	// File is the spec file as named by the caller.
	File string
	// Package is the Go import path of the spec's directory; empty when
	// neither the spec nor an enclosing go.mod says it. PackageNote says why
	// it is empty, or where it came from.
	Package     string
	PackageNote string
	// TypeScript is the spec's typescript path (relative to the spec's
	// directory): where its types are written as TypeScript; "" for none.
	TypeScript string

	// Actors in the order of the spec's actors list.
	Actors []*Actor
	// Observations by observer, then target, in actor order.
	Observations []*Observation
	// Inputs by actor order, then by name.
	Inputs []*Input
	// Types are the named data types: $defs and the inline objects, enums
	// and oneOfs that need a name, sorted by Go name.
	Types []*TypeDecl
	// AgentState is the union of all actor states, sorted by property name.
	AgentState []*Field
	// InputSchema is a JSON Schema document holding one schema per input
	// under "inputs" (by input name) and the $defs they use. Generated code
	// validates inputs against it.
	InputSchema []byte

	// Warnings are the methodology lint findings (see Options.Strict).
	Warnings Diagnostics

	// Src is the spec document the model was built from, with the
	// position of every value.
	Src *spec.Source
}

// Actor is one actor with its derived state and context.
type Actor struct {
	Name    string // kebab-case spec name: task-manager
	GoName  string // TaskManager: its initial state and transition funcs, its EffectFns and JobFns fields
	VarName string // taskManager, for variables and parameters
	Pos     Pos
	// Idents are the identifiers package decl declares for the actor.
	Idents ActorIdents

	Observes   []*Observation // observations by this actor (ContextOf), in target order
	ObservedBy []*Observation // observations of this actor (StateOf), in observer order
	// State is StateOf(actor): the union of the properties of all
	// observations of the actor, sorted by property name.
	State []*Field
	// Context is ContextOf(actor): the union of the properties of all
	// observations by the actor, sorted by property name.
	Context []*Field
	// Inputs the actor dispatches, sorted by name.
	Inputs []*Input
}

// ActorIdents are the Go identifiers of package decl that belong to one
// actor (here the actor user), chosen once, when the model is built:
// printers print them and never build one.
type ActorIdents struct {
	Const        string // ActorUser, its Actor constant
	State        string // StateOfUser
	Context      string // ContextOfUser
	Input        string // InputFromUser, the sealed interface of its inputs
	WithState    string // WithStateOfUser, the AgentState method
	InitialFn    string // InitialFnOfUser
	TransitionFn string // TransitionFnOfUser
	EffectFn     string // EffectFnOfUser
	JobsFn       string // JobsFnOfUser
	InputMarker  string // isInputFromUser, the method that seals InputFromUser
}

// statePrefix starts the name of every actor's state type, StateOfX.
const StatePrefix = "StateOf"

// actorIdents names the identifiers of the actor whose Go name is goName.
// The seed's names (StateOfX, ContextOfX, InputFromX) are the modelling
// method's vocabulary.
func actorIdents(goName string) ActorIdents {
	return ActorIdents{
		Const:        "Actor" + goName,
		State:        StatePrefix + goName,
		Context:      "ContextOf" + goName,
		Input:        "InputFrom" + goName,
		WithState:    "WithStateOf" + goName,
		InitialFn:    "InitialFnOf" + goName,
		TransitionFn: "TransitionFnOf" + goName,
		EffectFn:     "EffectFnOf" + goName,
		JobsFn:       "JobsFnOf" + goName,
		InputMarker:  "isInputFrom" + goName,
	}
}

// nameUnion names the identifiers that come with a oneOf's sealed
// interface, once its Go name is chosen.
func nameUnion(d *TypeDecl) {
	d.Marker = "is" + d.GoName
	d.Decoder = "decode" + d.GoName
}

// observationName is the Go name of what observer sees of target: XObY.
func observationName(observer, target *Actor) string { return observer.GoName + "Ob" + target.GoName }

// Observation is what Observer sees of Target: XObY.
type Observation struct {
	Observer, Target *Actor
	GoName           string // UserObLlm
	Fields           []*Field
	Pos              Pos
}

// Input is one input type, dispatched by Actor.
type Input struct {
	Name  string // kebab-case; the "type" discriminator
	Actor *Actor
	Decl  *TypeDecl // the input's struct (Decl.Input == this)
	Pos   Pos
	// Type is the property "type" that MarshalJSON writes: the
	// discriminator, with the input's name as its value.
	Type *ConstProp
	// Timestamp is the input's required integer property "timestamp",
	// which the generated WithTimestamp sets (an admission step stamps
	// inputs with it); nil when the input has none.
	Timestamp *Field
}

// ReadOnly returns the input's fields that the spec marks readOnly, in the
// order of the spec.
func (in *Input) ReadOnly() []*Field {
	var fs []*Field
	for _, f := range in.Decl.Fields {
		if f.ReadOnly {
			fs = append(fs, f)
		}
	}
	return fs
}

// Field is one property of a struct.
type Field struct {
	Name     string // JSON name as in the spec
	GoName   string
	Type     *Type // the Go type, with the pointer an optional or nullable value needs
	Required bool
	Nullable bool
	Doc      string
	// Owner is the actor whose state holds the property (observation,
	// state, context and agent-state fields only).
	Owner *Actor
	Ptr   string // JSON Pointer of the property in the spec
	// ReadOnly says that the spec marks the property readOnly: the server
	// assigns it in the agent's admission step, and DecodeClientInput
	// leaves it zero whatever a client sends (an input's own top-level
	// properties only).
	ReadOnly bool
}

// Tag returns the field's JSON struct tag value: the spec name, plus
// omitempty (pointers, interfaces) or omitzero (slices, maps) when optional.
func (f *Field) Tag() string {
	if f.Required {
		return f.Name
	}
	if f.Type.IsCollection() {
		return f.Name + ",omitzero"
	}
	return f.Name + ",omitempty"
}

// TypeKind is the kind of a Go type.
type TypeKind uint8

// The kinds of Go types a schema maps to.
const (
	BoolType    TypeKind = iota // bool
	IntType                     // int64
	FloatType                   // float64
	StringType                  // string
	NamedType                   // a declared type; see Type.Decl
	SliceType                   // []Elem
	MapType                     // map[string]Elem
	PointerType                 // *Elem
)

// Type is a Go type expression.
type Type struct {
	Kind TypeKind
	Elem *Type     // SliceType, MapType, PointerType
	Decl *TypeDecl // NamedType
}

// Underlying follows aliases and defined types to the type that says how
// the value is represented.
func (t *Type) Underlying() *Type {
	for i := 0; t.Kind == NamedType && i < 100; i++ {
		switch t.Decl.Kind {
		case AliasDecl, DefinedDecl:
			if t.Decl.Target == nil {
				return t
			}
			t = t.Decl.Target
		default:
			return t
		}
	}
	return t
}

// IsCollection says whether nil is the natural "absent" of t: slices and
// maps, also behind a named type.
func (t *Type) IsCollection() bool {
	u := t.Underlying()
	return u.Kind == SliceType || u.Kind == MapType
}

// IsNilable says whether t needs no pointer to be absent or null: slices,
// maps and sealed interfaces.
func (t *Type) IsNilable() bool {
	u := t.Underlying()
	return u.Kind == SliceType || u.Kind == MapType || u.Kind == PointerType ||
		(u.Kind == NamedType && u.Decl.Kind == UnionDecl)
}

// DeclKind is the kind of a declared type.
type DeclKind uint8

// The kinds of declared types.
const (
	StructDecl  DeclKind = iota // type X struct{...}
	EnumDecl                    // type X string + constants + Valid
	UnionDecl                   // type X interface{ isX() }: a oneOf
	AliasDecl                   // type X = Target: a $defs entry that is a $ref
	DefinedDecl                 // type X Target: a $defs array, map or scalar
)

// TypeDecl is a declared Go type.
type TypeDecl struct {
	Name   string // spec name ($defs key) or the derived Go name of an inline schema
	GoName string
	Kind   DeclKind
	Doc    string
	File   string // the generated file it belongs to: types.go, observations.go, inputs.go
	Ptr    string // JSON Pointer of its schema in the spec

	// StructDecl
	Fields []*Field
	Consts []*ConstProp // properties with a const value: written on encoding, not fields
	Unions []*TypeDecl  // the oneOfs this struct is a variant of
	Input  *Input       // set when the struct is an input

	// EnumDecl
	Values []*EnumValue

	// UnionDecl
	Discriminator string // the JSON name of the const property
	Variants      []*Variant
	Marker        string // isShape, the method that seals the interface
	Decoder       string // decodeShape, the function that decodes a value

	// AliasDecl, DefinedDecl
	Target *Type
}

// ConstProp is a property with a fixed value.
type ConstProp struct {
	Name   string // JSON name
	GoName string
	Value  []byte // the JSON value
}

// EnumValue is one value of an enum and the Go constant naming it.
type EnumValue struct {
	Value  string
	GoName string
}

// Variant is one alternative of a oneOf.
type Variant struct {
	Value string // the discriminator value
	Decl  *TypeDecl
}

// NeedsMarshal says whether a struct needs a MarshalJSON: it is an input or
// has const properties to write, or required non-null slices and maps whose nil value
// must encode as empty rather than null.
func (d *TypeDecl) NeedsMarshal() bool {
	return d.Kind == StructDecl && (d.Input != nil || len(d.Consts) > 0 || len(d.EmptyOnNil()) > 0)
}

// EmptyOnNil lists the fields whose nil value encodes as empty ([] or {}).
func (d *TypeDecl) EmptyOnNil() []*Field {
	var fs []*Field
	for _, f := range d.Fields {
		if f.Required && !f.Nullable && f.Type.IsCollection() {
			fs = append(fs, f)
		}
	}
	return fs
}

// NeedsDecoder says whether encoding/json cannot decode a value of type t by
// itself: t holds a sealed interface that is not wrapped in a type with its
// own UnmarshalJSON.
func (t *Type) NeedsDecoder() bool {
	switch t.Kind {
	case SliceType, MapType, PointerType:
		return t.Elem.NeedsDecoder()
	case NamedType:
		switch t.Decl.Kind {
		case UnionDecl:
			return true
		case AliasDecl:
			return t.Decl.Target.NeedsDecoder()
		}
	}
	return false
}

// NeedsUnmarshal says whether a struct or defined type needs an
// UnmarshalJSON because it holds a sealed interface.
func (d *TypeDecl) NeedsUnmarshal() bool {
	switch d.Kind {
	case StructDecl:
		for _, f := range d.Fields {
			if f.Type.NeedsDecoder() {
				return true
			}
		}
	case DefinedDecl:
		return d.Target.NeedsDecoder()
	}
	return false
}

// Spec decodes the spec the model was built from.
func (m *Model) Spec() (*spec.Spec, error) { return spec.Decode(m.Src.Root()) }
