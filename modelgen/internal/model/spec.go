package model

import "github.com/moora-go/moora/modelgen/internal/spec"

// The spec types the model is built from, and the diagnostics its checks
// report, named as in package spec.
type (
	Spec         = spec.Spec
	Schema       = spec.Schema
	SchemaType   = spec.SchemaType
	BoolOrSchema = spec.BoolOrSchema
	Properties   = spec.Properties
	Property     = spec.Property
	Pos          = spec.Pos
	Diagnostic   = spec.Diagnostic
	Diagnostics  = spec.Diagnostics
)

// The severities of a diagnostic.
const (
	Error   = spec.Error
	Warning = spec.Warning
)
