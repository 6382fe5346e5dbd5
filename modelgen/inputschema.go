package modelgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// inputSchema builds the JSON Schema document generated code validates
// inputs against: each input's schema with its "type" discriminator added,
// under "inputs", and the $defs they use. Descriptions are left out (they are
// in the Go doc comments), and each oneOf becomes its discriminated form
// (see discriminated).
func (b *builder) inputSchema() ([]byte, error) {
	inputs := make(map[string]any, len(b.m.Inputs))
	defs := make(map[string]any)
	var addRefs func(s *Schema)
	addRefs = func(s *Schema) {
		if s == nil {
			return
		}
		if name, ok := strings.CutPrefix(s.Ref, "#/$defs/"); ok {
			if _, seen := defs[name]; !seen {
				def := b.spec.Defs[name]
				defs[name] = b.runtimeSchema("/$defs/" + escapePointer(name))
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
		spec := b.spec.Inputs[in.Actor.Name][in.Name]
		addRefs(spec)
		s := b.runtimeSchema("/inputs/" + escapePointer(in.Actor.Name) + "/" + escapePointer(in.Name)).(map[string]any)
		if ref, ok := s["$ref"]; ok {
			delete(s, "$ref")
			s["allOf"] = []any{map[string]any{"$ref": ref}}
		}
		props, _ := s["properties"].(map[string]any)
		if props == nil {
			props = make(map[string]any)
		}
		props["type"] = map[string]any{"const": in.Name}
		required, _ := s["required"].([]any)
		s["type"] = "object"
		s["properties"] = props
		s["required"] = append([]any{"type"}, required...)
		inputs[in.Name] = s
	}
	doc := map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "inputs": inputs}
	if len(defs) > 0 {
		doc["$defs"] = defs
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encoding the input schema: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// runtimeSchema returns the schema at ptr in the spec as generic JSON for
// the input schema document.
func (b *builder) runtimeSchema(ptr string) any {
	return b.rewriteSchema(b.d.src.node(ptr).value(), ptr)
}

func (b *builder) rewriteSchema(v any, ptr string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	delete(m, "description")
	if props, ok := m["properties"].(map[string]any); ok {
		for k, p := range props {
			props[k] = b.rewriteSchema(p, ptr+"/properties/"+escapePointer(k))
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if sub, ok := m[k]; ok {
			m[k] = b.rewriteSchema(sub, ptr+"/"+k)
		}
	}
	for _, k := range []string{"allOf", "oneOf"} {
		if list, ok := m[k].([]any); ok {
			for i, sub := range list {
				list[i] = b.rewriteSchema(sub, ptr+"/"+k+"/"+strconv.Itoa(i))
			}
		}
	}
	if u := b.unions[ptr]; u != nil {
		return discriminated(m, u)
	}
	return m
}

// discriminated rewrites a oneOf whose variants are told apart by a const
// property into an equivalent schema that checks the discriminator first
// and then only the variant it names, so that a violation is reported
// against that variant alone instead of against every variant:
//
//	{"type": "object", "required": [D], "properties": {D: {"enum": [...]}},
//	 "allOf": [{"if": {"properties": {D: {"const": v}}, "required": [D]}, "then": variant}, ...]}
func discriminated(m map[string]any, u *TypeDecl) any {
	variants, _ := m["oneOf"].([]any)
	delete(m, "oneOf")
	values := make([]any, len(u.Variants))
	branches := make([]any, len(u.Variants))
	for i, v := range u.Variants {
		values[i] = v.Value
		branches[i] = map[string]any{
			"if": map[string]any{
				"properties": map[string]any{u.Discriminator: map[string]any{"const": v.Value}},
				"required":   []any{u.Discriminator},
			},
			"then": variants[i],
		}
	}
	m["type"] = "object"
	m["required"] = []any{u.Discriminator}
	m["properties"] = map[string]any{u.Discriminator: map[string]any{"enum": values}}
	m["allOf"] = branches
	return m
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
