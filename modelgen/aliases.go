package modelgen

import (
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/spec"
)

// The spec format and the diagnostics, from package spec (the front end).
type (
	// Spec is an agent spec (version 1): the actors of an agent, what each
	// one observes of the others, and the inputs each one dispatches.
	Spec = spec.Spec
	// Schema is the supported subset of JSON Schema (draft 2020-12).
	Schema = spec.Schema
	// SchemaType is a schema's type: one name, or a pair of a name and
	// "null" for a nullable value.
	SchemaType = spec.SchemaType
	// BoolOrSchema is additionalProperties: a boolean or a schema.
	BoolOrSchema = spec.BoolOrSchema
	// Properties are the properties of an object schema, in order.
	Properties = spec.Properties
	// Property is one named property schema.
	Property = spec.Property

	// Pos is a position in a spec file. Line and Col are 1-based; Col
	// counts characters (runes). A zero Col means the column is unknown.
	Pos = spec.Pos
	// A Diagnostic is one problem found in a spec: where, which spec
	// element, what is wrong and, for model checks, how to fix it.
	Diagnostic = spec.Diagnostic
	// Diagnostics is a list of diagnostics sorted by position. As an error
	// it is one diagnostic per line.
	Diagnostics = spec.Diagnostics
	// Severity tells errors from warnings.
	Severity = spec.Severity
)

// The severities of a diagnostic.
const (
	// Error makes a spec invalid.
	Error = spec.Error
	// Warning reports a likely modelling mistake (methodology step 3). With
	// the strict option it becomes an error.
	Warning = spec.Warning
)

// SpecSchemaURL is where editors can find the spec schema; the committed
// copy lives at modelgen/agent.schema.json in the repository.
const SpecSchemaURL = spec.FormatSchemaURL

// SpecSchema returns the JSON Schema of the spec format, for editors
// ("# yaml-language-server: $schema=...") and for agentgen schema.
func SpecSchema() []byte { return spec.FormatSchema() }

// AsDiagnostics returns the diagnostics carried by err: a Diagnostics list
// or a single *Diagnostic, possibly wrapped. It returns nil for other
// errors.
func AsDiagnostics(err error) Diagnostics { return spec.AsDiagnostics(err) }

// The model, from package model: the plain-data IR between a validated spec
// and the printers.
type (
	// Model is a validated, derived agent model.
	Model = model.Model
	// Actor is one actor with its derived state and context.
	Actor = model.Actor
	// ActorIdents are the Go identifiers of package decl that belong to one
	// actor.
	ActorIdents = model.ActorIdents
	// Observation is what Observer sees of Target: XObY.
	Observation = model.Observation
	// Input is one input type, dispatched by Actor.
	Input = model.Input
	// Field is one property of a struct.
	Field = model.Field
	// Type is a Go type expression.
	Type = model.Type
	// TypeKind is the kind of a Go type.
	TypeKind = model.TypeKind
	// TypeDecl is a declared Go type.
	TypeDecl = model.TypeDecl
	// DeclKind is the kind of a declared type.
	DeclKind = model.DeclKind
	// ConstProp is a property with a fixed value.
	ConstProp = model.ConstProp
	// EnumValue is one value of an enum and the Go constant naming it.
	EnumValue = model.EnumValue
	// Variant is one alternative of a oneOf.
	Variant = model.Variant
	// ImplFunc is a function a person writes in impl/ and the generated
	// glue calls.
	ImplFunc = model.ImplFunc
)

// The kinds of Go types a schema maps to.
const (
	BoolType    = model.BoolType    // bool
	IntType     = model.IntType     // int64
	FloatType   = model.FloatType   // float64
	StringType  = model.StringType  // string
	NamedType   = model.NamedType   // a declared type; see Type.Decl
	SliceType   = model.SliceType   // []Elem
	MapType     = model.MapType     // map[string]Elem
	PointerType = model.PointerType // *Elem
)

// The kinds of declared types.
const (
	StructDecl  = model.StructDecl  // type X struct{...}
	EnumDecl    = model.EnumDecl    // type X string + constants + Valid
	UnionDecl   = model.UnionDecl   // type X interface{ isX() }: a oneOf
	AliasDecl   = model.AliasDecl   // type X = Target: a $defs entry that is a $ref
	DefinedDecl = model.DefinedDecl // type X Target: a $defs array, map or scalar
)

// The directories of impl/, relative to the spec's directory.
const (
	InitialsDir    = model.InitialsDir    // hand-written initial states, package initials
	TransitionsDir = model.TransitionsDir // hand-written transitions and the generated dispatch, package transitions
	AgentDir       = model.AgentDir       // the generated glue, package agent
	PrunedDir      = model.PrunedDir      // where generate --prune moves orphans; the go command ignores it
)

// ErrNoPackage is returned by Generate and ScanImpl when the model has no
// package path.
var ErrNoPackage = model.ErrNoPackage

// ImplFuncs lists the hand-written functions of a model: for each actor in
// order, its initial state, then the transitions of its inputs by name.
func ImplFuncs(m *Model) []*ImplFunc { return model.ImplFuncs(m) }
