package spec

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/invopop/jsonschema"
)

// The spec types below are the v1 spec format. They are plain data: Load
// decodes a spec file into them after it validated the file against the JSON
// Schema that is produced from these same types (agentgen schema). Their doc
// comments become the descriptions an editor shows.

// Spec is an agent spec (version 1): the actors of an agent, what each one
// observes of the others, and the inputs each one dispatches.
type Spec struct {
	// Version of the spec format. Must be 1.
	Version int `json:"version" jsonschema:"enum=1"`
	// Package is the Go import path of the spec's directory. When absent,
	// agentgen derives it from the nearest enclosing go.mod and the relative
	// directory.
	Package string `json:"package,omitempty"`
	// TypeScript is where agentgen generate writes the spec's types as a
	// TypeScript module, for the browser: a path relative to the spec's
	// directory, ending in .ts (web/agent.ts). Absent, none is written.
	TypeScript string `json:"typescript,omitempty" jsonschema:"maxLength=256,pattern=^[A-Za-z0-9_.][A-Za-z0-9_./-]*\\.ts$"`
	// Actors lists the participants the agent reasons about, by kebab-case
	// name: user, llm, task-manager.
	Actors []string `json:"actors" jsonschema:"minItems=1"`
	// Defs holds shared data types by PascalCase name. Refer to one with
	// {"$ref": "#/$defs/Name"}.
	Defs map[string]*Schema `json:"$defs,omitempty"`
	// Observations maps observer -> target -> property -> schema: the slice
	// of the target's state that the observer sees. observations.user.llm is
	// UserObLlm.
	Observations map[string]map[string]Properties `json:"observations,omitempty"`
	// Inputs maps actor -> input name -> object schema: the inputs the actor
	// dispatches. The kebab-case input name is the input's "type"
	// discriminator and is unique across all actors.
	Inputs map[string]map[string]*Schema `json:"inputs,omitempty"`
}

// Schema is the supported subset of JSON Schema (draft 2020-12).
type Schema struct {
	// Ref refers to a shared type: "#/$defs/Name".
	Ref string `json:"$ref,omitempty"`
	// Description becomes the Go doc comment.
	Description string `json:"description,omitempty"`
	// Type is object, array, string, integer, number or boolean, or a pair
	// of one of them and "null" for a nullable value.
	Type SchemaType `json:"type,omitempty"`
	// Properties of an object, in order; they become struct fields.
	Properties Properties `json:"properties,omitempty"`
	// Required lists the properties that must be present.
	Required []string `json:"required,omitempty"`
	// Items is the schema of an array's elements.
	Items *Schema `json:"items,omitempty"`
	// AdditionalProperties: a schema makes the object a map with values of
	// that schema; false rejects undeclared properties.
	AdditionalProperties *BoolOrSchema `json:"additionalProperties,omitempty"`
	// Enum lists the allowed strings; the type becomes a named string type
	// with one constant per value.
	Enum []string `json:"enum,omitempty"`
	// Const fixes a property's value; a string const property is how oneOf
	// variants are told apart.
	Const json.RawMessage `json:"const,omitempty"`
	// AllOf merges object schemas into one struct.
	AllOf []*Schema `json:"allOf,omitempty" jsonschema:"minItems=1"`
	// OneOf lists object schemas told apart by a const property; it becomes
	// a sealed interface.
	OneOf []*Schema `json:"oneOf,omitempty" jsonschema:"minItems=1"`
	// Default documents the value to assume when the property is absent.
	Default json.RawMessage `json:"default,omitempty"`
	// ReadOnly marks a property of an input that the server assigns, in
	// the agent's admission step (a timestamp): clients may leave it out
	// (decl.DecodeClientInput), and the journal records the value the
	// server gave it. Allowed only on the top-level properties of an
	// input: inputs.<actor>.<input>.properties.<name>.
	ReadOnly bool `json:"readOnly,omitempty"`

	// Minimum is the smallest allowed number.
	Minimum json.Number `json:"minimum,omitempty"`
	// Maximum is the largest allowed number.
	Maximum json.Number `json:"maximum,omitempty"`
	// ExclusiveMinimum is a number the value must exceed.
	ExclusiveMinimum json.Number `json:"exclusiveMinimum,omitempty"`
	// ExclusiveMaximum is a number the value must stay below.
	ExclusiveMaximum json.Number `json:"exclusiveMaximum,omitempty"`
	// MultipleOf is a number greater than 0 the value must be a multiple of.
	MultipleOf json.Number `json:"multipleOf,omitempty" jsonschema:"exclusiveMinimum=0"`
	// MinLength is the smallest allowed string length, in characters.
	MinLength *int `json:"minLength,omitempty" jsonschema:"minimum=0"`
	// MaxLength is the largest allowed string length, in characters.
	MaxLength *int `json:"maxLength,omitempty" jsonschema:"minimum=0"`
	// Pattern is a regular expression a string must match.
	Pattern string `json:"pattern,omitempty"`
	// Format names a string format checked at run time: date-time, email,
	// uri, uuid, ...
	Format string `json:"format,omitempty"`
	// MinItems is the smallest allowed array length.
	MinItems *int `json:"minItems,omitempty" jsonschema:"minimum=0"`
	// MaxItems is the largest allowed array length.
	MaxItems *int `json:"maxItems,omitempty" jsonschema:"minimum=0"`
	// UniqueItems requires the elements of an array to differ.
	UniqueItems bool `json:"uniqueItems,omitempty"`
	// MinProperties is the smallest allowed number of entries of a map.
	MinProperties *int `json:"minProperties,omitempty" jsonschema:"minimum=0"`
	// MaxProperties is the largest allowed number of entries of a map.
	MaxProperties *int `json:"maxProperties,omitempty" jsonschema:"minimum=0"`
}

// SchemaType is the value of "type": one type name, or a pair of one type
// name and "null".
type SchemaType []string

var typeNames = []string{"object", "array", "string", "integer", "number", "boolean"}

// JSONSchema describes SchemaType for the spec schema.
func (SchemaType) JSONSchema() *jsonschema.Schema {
	enum := make([]any, len(typeNames))
	for i, t := range typeNames {
		enum[i] = t
	}
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "string", Enum: enum},
		{Type: "array", Items: &jsonschema.Schema{Type: "string", Enum: append(enum, "null")}, MinItems: ptr(uint64(2)), MaxItems: ptr(uint64(2))},
	}}
}

// UnmarshalJSON accepts a type name or an array of them.
func (t *SchemaType) UnmarshalJSON(data []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) {
		var list []string
		if err := json.Unmarshal(data, &list); err != nil {
			return err
		}
		*t = list
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	*t = SchemaType{s}
	return nil
}

// MarshalJSON writes a single type as a string.
func (t SchemaType) MarshalJSON() ([]byte, error) {
	if len(t) == 1 {
		return json.Marshal(t[0])
	}
	return json.Marshal([]string(t))
}

// BoolOrSchema is the value of additionalProperties: a boolean or a schema.
type BoolOrSchema struct {
	Bool   *bool
	Schema *Schema
}

// JSONSchema describes BoolOrSchema for the spec schema.
func (BoolOrSchema) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "boolean"},
		{Ref: "#/$defs/Schema"},
	}}
}

// UnmarshalJSON accepts true, false or a schema object.
func (b *BoolOrSchema) UnmarshalJSON(data []byte) error {
	var v bool
	if err := json.Unmarshal(data, &v); err == nil {
		*b = BoolOrSchema{Bool: &v}
		return nil
	}
	b.Bool = nil
	return json.Unmarshal(data, &b.Schema)
}

// MarshalJSON writes the boolean or the schema.
func (b BoolOrSchema) MarshalJSON() ([]byte, error) {
	if b.Bool != nil {
		return json.Marshal(*b.Bool)
	}
	return json.Marshal(b.Schema)
}

// Properties maps property names to schemas, keeping the source order.
type Properties []Property

// Property is one named schema of Properties.
type Property struct {
	Name   string
	Schema *Schema
}

// JSONSchema describes Properties for the spec schema.
func (Properties) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:                 "object",
		PropertyNames:        &jsonschema.Schema{Pattern: propertyNamePattern, MaxLength: ptr(uint64(MaxNameLength))},
		AdditionalProperties: &jsonschema.Schema{Ref: "#/$defs/Schema"},
	}
}

// Lookup returns the schema of the named property, or nil.
func (ps Properties) Lookup(name string) *Schema {
	for _, p := range ps {
		if p.Name == name {
			return p.Schema
		}
	}
	return nil
}

// UnmarshalJSON decodes an object, keeping the order of its keys.
func (ps *Properties) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("properties: want an object")
	}
	*ps = (*ps)[:0]
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		var s *Schema
		if err := dec.Decode(&s); err != nil {
			return err
		}
		*ps = append(*ps, Property{Name: tok.(string), Schema: s})
	}
	_, err = dec.Token()
	return err
}

// MarshalJSON encodes an object with the keys in order.
func (ps Properties) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, p.Name)
		b = append(b, ':')
		v, err := json.Marshal(p.Schema)
		if err != nil {
			return nil, err
		}
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// Name patterns of the spec; the spec schema enforces them and diagnostics
// explain them.
const (
	kebabPattern        = `^[a-z][a-z0-9]*(-[a-z0-9]+)*$`
	pascalPattern       = `^[A-Z][A-Za-z0-9]*$`
	propertyNamePattern = `^[A-Za-z][A-Za-z0-9_-]*$`
)

// MaxNameLength is the most characters a name of the spec may have: an
// actor's, an input's, a $defs type's or a property's. Generated file names
// are made of names (impl/transitions/<actor>_<input>.go), and file systems
// allow 255 bytes.
const MaxNameLength = 64

// JSONSchemaExtend adds the name patterns and lengths the reflected schema
// cannot carry.
func (Spec) JSONSchemaExtend(s *jsonschema.Schema) {
	maxLen := ptr(uint64(MaxNameLength))
	kebab := &jsonschema.Schema{Pattern: kebabPattern, MaxLength: maxLen}
	if p, ok := s.Properties.Get("actors"); ok {
		p.Items.Pattern = kebabPattern
		p.Items.MaxLength = maxLen
	}
	if p, ok := s.Properties.Get("$defs"); ok {
		p.PropertyNames = &jsonschema.Schema{Pattern: pascalPattern, MaxLength: maxLen}
	}
	for _, key := range []string{"observations", "inputs"} {
		if p, ok := s.Properties.Get(key); ok {
			p.PropertyNames = kebab
			p.AdditionalProperties.PropertyNames = kebab
		}
	}
}

func ptr[T any](v T) *T { return &v }
