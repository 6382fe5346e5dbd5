package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/moora-go/moora/modelgen/internal/spec"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// inputSchemaURL is the URL under which the input schema document is
// compiled, here and by package inputjson for generated code.
const inputSchemaURL = "agentgen:inputs.schema.json"

// inputSchema builds the JSON Schema document generated code validates
// inputs against: each input's schema with its "type" discriminator added,
// under "inputs", the $defs they use, and under "actors" the inputs of each
// actor, in the order of the spec. Descriptions are kept (a validator
// ignores them; a form, or an MCP client's model, reads them), and each
// oneOf becomes its discriminated form (see discriminated).
func (b *builder) inputSchema() (doc map[string]any, data []byte) {
	inputs := make(map[string]any, len(b.m.Inputs))
	actors := make(map[string]any)
	defs := make(map[string]any)
	var addRefs func(s *Schema)
	addRefs = func(s *Schema) {
		if s == nil {
			return
		}
		if name, ok := strings.CutPrefix(s.Ref, "#/$defs/"); ok {
			if _, seen := defs[name]; !seen {
				def := b.spec.Defs[name]
				defs[name] = b.runtimeSchema("/$defs/" + spec.EscapePointer(name))
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
		schema := b.spec.Inputs[in.Actor.Name][in.Name]
		addRefs(schema)
		s := b.runtimeSchema("/inputs/" + spec.EscapePointer(in.Actor.Name) + "/" + spec.EscapePointer(in.Name)).(map[string]any)
		if ref, ok := s["$ref"]; ok {
			delete(s, "$ref")
			s["allOf"] = []any{map[string]any{"$ref": ref}}
		}
		props, _ := s["properties"].(properties)
		props = append(properties{{"type", map[string]any{"const": in.Name}}}, props...)
		required, _ := s["required"].([]any)
		s["type"] = "object"
		s["properties"] = props
		s["required"] = append([]any{"type"}, required...)
		inputs[in.Name] = s
		names, _ := actors[in.Actor.Name].([]any)
		actors[in.Actor.Name] = append(names, in.Name)
	}
	doc = map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "inputs": inputs, "actors": actors}
	if len(defs) > 0 {
		doc["$defs"] = defs
	}
	// The document becomes a Go raw string: escape what Go cannot hold.
	return doc, escapeBOM(appendIndentedJSON(nil, doc, ""))
}

// checkInputSchema compiles the input schema document as generated code
// does, and reports what the validator rejects at its place in the spec.
// The spec schema rejects what is known not to compile (multipleOf: 0, an
// empty allOf); this makes sure that no spec that loads generates a
// DecodeInput that fails on every input.
//
// Compiling is costly, so it is done once per distinct input schema (two
// inputs that differ only in their "type" constant compile alike), in
// groups, concurrently: the validator's work per schema grows with the
// number of schemas the same compiler compiled before. When something does
// not compile, each $defs type and input is checked against the JSON Schema
// meta-schema on its own, so that every problem is reported (compiling
// stops at the first).
func (b *builder) checkInputSchema(parts map[string]any) {
	inputs, _ := parts["inputs"].(map[string]any)
	names := slices.Sorted(maps.Keys(inputs))
	// The distinct schemas, and the inputs of each.
	var shapes []any
	shapeOf := make([]int, len(names))
	seen := make(map[string]int)
	for i, name := range names {
		shape := withTypeConst(inputs[name], "input")
		key := appendIndentedJSON(nil, shape, "")
		j, ok := seen[string(key)]
		if !ok {
			j = len(shapes)
			seen[string(key)] = j
			shapes = append(shapes, shape)
		}
		shapeOf[i] = j
	}
	const groupSize = 64
	errs := make([]error, len(shapes))
	var wg sync.WaitGroup
	for start := 0; start < len(shapes); start += groupSize {
		group := shapes[start:min(start+groupSize, len(shapes))]
		wg.Go(func() {
			// The compiler has panicked on schemas the spec schema
			// refuses (an exclusiveMinimum of null): on another
			// goroutine, that would end the process.
			defer func() {
				if p := recover(); p != nil {
					for i := range group {
						errs[start+i] = fmt.Errorf("compiling the input schema: %v", p)
					}
				}
			}()
			only := make(map[string]any, len(group))
			for i, shape := range group {
				only[strconv.Itoa(start+i)] = shape
			}
			sub := map[string]any{"$schema": parts["$schema"], "inputs": only}
			if defs, ok := parts["$defs"]; ok {
				sub["$defs"] = defs
			}
			c := newInputCompiler()
			if err := c.AddResource(inputSchemaURL, bytes.NewReader(appendIndentedJSON(nil, sub, ""))); err != nil {
				for i := range group {
					errs[start+i] = err
				}
				return
			}
			for i := range group {
				_, errs[start+i] = c.Compile(inputSchemaURL + "#/inputs/" + strconv.Itoa(start+i))
			}
		})
	}
	wg.Wait()
	if !slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
		return
	}
	meta, err := metaSchema()
	if err != nil {
		b.d.At("/inputs", err.Error(), "")
		return
	}
	invalid := false
	for _, key := range []string{"$defs", "inputs"} {
		part, _ := parts[key].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(part)) {
			// The validator takes what encoding/json decodes, not the
			// tree's json.RawMessage values.
			var v any
			dec := json.NewDecoder(bytes.NewReader(appendIndentedJSON(nil, part[name], "")))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				b.d.At("/"+key+"/"+spec.EscapePointer(name), fmt.Sprintf("re-reading the input schema: %v", err), "")
				invalid = true
				continue
			}
			if err := meta.Validate(v); err != nil {
				invalid = true
				b.reportCompileError("/"+key+"/"+spec.EscapePointer(name), err)
			}
		}
	}
	if invalid {
		return
	}
	for i, name := range names {
		if err := errs[shapeOf[i]]; err != nil {
			b.reportCompileError("/inputs/"+spec.EscapePointer(name), err)
		}
	}
}

// withTypeConst returns an input's schema in the input schema document with
// the constant of its "type" discriminator replaced by typ. The schema is
// not changed; the copy shares what it does not replace.
func withTypeConst(schema any, typ string) any {
	s, ok := schema.(map[string]any)
	if !ok {
		return schema
	}
	props, ok := s["properties"].(properties)
	if !ok {
		return schema
	}
	c := maps.Clone(s)
	props = slices.Clone(props)
	for i := range props {
		if props[i].name == "type" {
			props[i].schema = map[string]any{"const": typ}
		}
	}
	c["properties"] = props
	return c
}

// properties are the properties of an object schema in the input schema
// document, in the order of the spec: a form made from the document (package
// automata/devpanel's) lists an input's fields as the spec does. Every other
// object of the document is written with its keys sorted.
type properties []property

type property struct {
	name   string
	schema any
}

// metaSchema is the JSON Schema 2020-12 meta-schema, which the validator
// has built in.
var metaSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	s, err := newInputCompiler().Compile("https://json-schema.org/draft/2020-12/schema")
	if err != nil {
		return nil, fmt.Errorf("compiling the JSON Schema meta-schema: %w", err)
	}
	return s, nil
})

// newInputCompiler returns a compiler configured like the one that
// generated code uses (package inputjson's Decoder): draft 2020-12, formats
// asserted.
func newInputCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	return c
}

// reportCompileError reports why the part of the input schema document at
// docPtr does not compile.
func (b *builder) reportCompileError(docPtr string, err error) {
	const msg = "the run-time validator of inputs rejects this schema: %s"
	const hint = "fix or remove the keyword; DecodeInput could not validate any input"
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		var se *jsonschema.SchemaError
		if errors.As(err, &se) && se.Err != nil {
			err = se.Err
		}
		b.d.AtKey(b.specPointer(docPtr), fmt.Sprintf(msg, strings.TrimPrefix(err.Error(), "jsonschema: ")), hint)
		return
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			b.d.At(b.specPointer(docPtr+spec.FromSchemaPointer(e.InstanceLocation)), fmt.Sprintf(msg, e.Message), hint)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
}

// specPointer maps a location in the input schema document to the spec
// element it came from: the nearest one when the document was rewritten
// there (the "type" discriminator, a oneOf, an input that is a $ref). A
// location outside any input or $defs type maps to the inputs.
func (b *builder) specPointer(docPtr string) string {
	toks := spec.SplitPointer(docPtr)
	if len(toks) < 2 {
		return "/inputs"
	}
	var ptr string
	switch toks[0] {
	case "inputs":
		for _, in := range b.m.Inputs {
			if in.Name == toks[1] {
				ptr = "/inputs/" + spec.EscapePointer(in.Actor.Name) + "/" + spec.EscapePointer(in.Name)
			}
		}
	case "$defs":
		ptr = "/$defs/" + spec.EscapePointer(toks[1])
	}
	if ptr == "" {
		return "/inputs"
	}
	rest := toks[2:]
	for len(rest) > 0 {
		n := b.d.Src.Node(ptr)
		if n == nil {
			break
		}
		// A oneOf became allOf: [{if: ..., then: variant}, ...].
		if n.Get("oneOf") != nil && len(rest) >= 3 && rest[0] == "allOf" && rest[2] == "then" {
			ptr += "/oneOf/" + rest[1]
			rest = rest[3:]
			continue
		}
		if n.Get("$ref") != nil && rest[0] == "allOf" {
			break // an input that is a $ref became allOf: [{$ref}]
		}
		if !b.d.Src.Has(ptr + "/" + spec.EscapePointer(rest[0])) {
			break
		}
		ptr += "/" + spec.EscapePointer(rest[0])
		rest = rest[1:]
	}
	return ptr
}

// runtimeSchema returns the schema at ptr in the spec as generic JSON for
// the input schema document.
func (b *builder) runtimeSchema(ptr string) any {
	return b.rewriteSchema(b.d.Src.Node(ptr).Value(), ptr)
}

func (b *builder) rewriteSchema(v any, ptr string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	nullableEnum(m)
	if props, ok := m["properties"].(map[string]any); ok {
		ordered := make(properties, 0, len(props))
		for _, k := range b.d.Src.Node(ptr + "/properties").Keys() {
			ordered = append(ordered, property{k, b.rewriteSchema(props[k], ptr+"/properties/"+spec.EscapePointer(k))})
		}
		m["properties"] = ordered
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

// nullableEnum adds null to the values of a nullable enum. In JSON Schema,
// {type: [string, "null"], enum: [a, b]} rejects null, which enum does not
// list; its Go type is a pointer, whose nil encodes as null. The spec format
// allows only strings in enum, so a nullable enum means what its Go type
// says: one of the values, or null.
func nullableEnum(m map[string]any) {
	values, ok := m["enum"].([]any)
	if !ok || slices.Contains(values, nil) {
		return
	}
	if types, ok := m["type"].([]any); ok && slices.Contains(types, any("null")) {
		m["enum"] = append(values, nil)
	}
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
