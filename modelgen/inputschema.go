package modelgen

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// inputSchema builds the JSON Schema document generated code validates
// inputs against: each input's schema with its "type" discriminator added,
// under "inputs", and the $defs they use. Descriptions are left out; they are
// in the Go doc comments.
func (b *builder) inputSchema() ([]byte, error) {
	inputs := make(map[string]*Schema, len(b.m.Inputs))
	defs := make(map[string]*Schema)
	var addRefs func(s *Schema)
	addRefs = func(s *Schema) {
		if s == nil {
			return
		}
		if name, ok := strings.CutPrefix(s.Ref, "#/$defs/"); ok {
			if _, seen := defs[name]; !seen {
				def := b.spec.Defs[name]
				defs[name] = withoutDocs(def)
				addRefs(def)
			}
		}
		addRefs(s.Items)
		if s.AdditionalProperties != nil {
			addRefs(s.AdditionalProperties.Schema)
		}
		for _, p := range s.Properties {
			addRefs(p.Schema)
		}
		for _, m := range slices.Concat(s.AllOf, s.OneOf) {
			addRefs(m)
		}
	}
	for _, in := range b.m.Inputs {
		s := withoutDocs(b.spec.Inputs[in.Actor.Name][in.Name])
		addRefs(s)
		typeProp := Property{Name: "type", Schema: &Schema{Const: jsonString(in.Name)}}
		if s.Ref != "" {
			s = &Schema{AllOf: []*Schema{{Ref: s.Ref}}, Default: s.Default}
		}
		s.Type = SchemaType{"object"}
		s.Properties = append(Properties{typeProp}, s.Properties...)
		s.Required = append([]string{"type"}, s.Required...)
		inputs[in.Name] = s
	}
	doc := struct {
		Schema string             `json:"$schema"`
		Defs   map[string]*Schema `json:"$defs,omitempty"`
		Inputs map[string]*Schema `json:"inputs"`
	}{"https://json-schema.org/draft/2020-12/schema", defs, inputs}
	if len(defs) == 0 {
		doc.Defs = nil
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the input schema: %w", err)
	}
	return out, nil
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// inputNames returns the input names of a model, sorted.
func inputNames(m *Model) []string {
	names := make(map[string]bool, len(m.Inputs))
	for _, in := range m.Inputs {
		names[in.Name] = true
	}
	return slices.Sorted(maps.Keys(names))
}
