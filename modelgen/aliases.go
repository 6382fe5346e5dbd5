package modelgen

import (
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
