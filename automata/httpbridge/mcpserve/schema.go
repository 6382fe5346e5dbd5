package mcpserve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// inputSpec is one input type of the agent's schema document, as a tool
// shows it.
type inputSpec struct {
	name        string
	actor       string // "" when the document does not say
	description string
	// props are the properties a client sends, in the spec's order:
	// the "type" discriminator and the readOnly ones left out.
	props    []prop
	required []string
	rest     map[string]json.RawMessage // the schema's other keywords
}

// prop is a property of an object schema.
type prop struct {
	name   string
	schema json.RawMessage
}

// schemaDoc is the agent's input schema document (decl.InputSchema()).
type schemaDoc struct {
	inputs []*inputSpec // by name
	defs   map[string]json.RawMessage
	schema string // its $schema
}

// maxSchemaBytes bounds the schema document read: it is the program's
// own, but a bound keeps a mistake (the wrong file) from costing much.
const maxSchemaBytes = 16 << 20

// parseSchema reads the input schema document agentgen generates: each
// input's schema under "inputs", by type, with its description; the
// shared types under "$defs"; the actor of each input under "actors".
func parseSchema(data []byte) (*schemaDoc, error) {
	if len(data) > maxSchemaBytes {
		return nil, fmt.Errorf("the input schema is %d bytes, over %d", len(data), maxSchemaBytes)
	}
	var doc struct {
		Schema string                     `json:"$schema"`
		Inputs map[string]json.RawMessage `json:"inputs"`
		Defs   map[string]json.RawMessage `json:"$defs"`
		Actors map[string][]string        `json:"actors"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the input schema is not JSON: %v", err)
	}
	if len(doc.Inputs) == 0 {
		return nil, errors.New(`the input schema has no inputs under "inputs": want decl.InputSchema()`)
	}
	actorOf := map[string]string{}
	for actor, names := range doc.Actors {
		for _, n := range names {
			actorOf[n] = actor
		}
	}
	d := &schemaDoc{defs: doc.Defs, schema: doc.Schema}
	for _, name := range sortedKeys(doc.Inputs) {
		in, err := parseInput(name, doc.Inputs[name])
		if err != nil {
			return nil, err
		}
		in.actor = actorOf[name]
		d.inputs = append(d.inputs, in)
	}
	return d, nil
}

// parseInput reads the schema of input name.
func parseInput(name string, data json.RawMessage) (*inputSpec, error) {
	var s map[string]json.RawMessage
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("input %q: its schema is not an object: %v", name, err)
	}
	in := &inputSpec{name: name, rest: s}
	if raw, ok := s["description"]; ok {
		if err := json.Unmarshal(raw, &in.description); err != nil {
			return nil, fmt.Errorf("input %q: description: %v", name, err)
		}
	}
	var readOnly []string
	if raw, ok := s["properties"]; ok {
		props, err := orderedObject(raw)
		if err != nil {
			return nil, fmt.Errorf("input %q: properties: %v", name, err)
		}
		for _, p := range props {
			var flags struct {
				ReadOnly bool `json:"readOnly"`
			}
			json.Unmarshal(p.schema, &flags) // a schema may be true or false
			switch {
			case p.name == "type":
			case flags.ReadOnly:
				readOnly = append(readOnly, p.name)
			default:
				in.props = append(in.props, p)
			}
		}
	}
	if raw, ok := s["required"]; ok {
		var req []string
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, fmt.Errorf("input %q: required: %v", name, err)
		}
		for _, r := range req {
			if r != "type" && !slices.Contains(readOnly, r) {
				in.required = append(in.required, r)
			}
		}
	}
	for _, k := range []string{"description", "properties", "required", "type"} {
		delete(s, k)
	}
	return in, nil
}

// orderedObject reads a JSON object's members in their order.
func orderedObject(data []byte) ([]prop, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not an object")
	}
	var out []prop
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("a key is not a string")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(p prop) bool { return p.name == key }) {
			return nil, fmt.Errorf("%q appears twice", key)
		}
		out = append(out, prop{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the object")
	}
	return out, nil
}

// toolSchema is the input schema of in's tool: its object schema, with the
// properties a client sends, extra after them, and the $defs it refers to.
func (d *schemaDoc) toolSchema(in *inputSpec, extra []prop) (json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	all := append(slices.Clone(in.props), extra...)
	for i, p := range all {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p.name)
		b.Write(k)
		b.WriteByte(':')
		b.Write(p.schema)
	}
	b.WriteByte('}')
	if len(in.required) > 0 {
		req, _ := json.Marshal(in.required)
		b.WriteString(`,"required":`)
		b.Write(req)
	}
	for _, k := range sortedKeys(in.rest) {
		if k == "$defs" || k == "$schema" {
			continue
		}
		key, _ := json.Marshal(k)
		b.WriteByte(',')
		b.Write(key)
		b.WriteByte(':')
		b.Write(in.rest[k])
	}
	// The $defs the schema refers to, and those they refer to.
	used := map[string]bool{}
	var walk func(data []byte)
	walk = func(data []byte) {
		for _, name := range refs(data) {
			if def, ok := d.defs[name]; ok && !used[name] {
				used[name] = true
				walk(def)
			}
		}
	}
	walk(b.Bytes())
	if len(used) > 0 {
		b.WriteString(`,"$defs":{`)
		for i, name := range sortedKeys(used) {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(name)
			b.Write(k)
			b.WriteByte(':')
			b.Write(d.defs[name])
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	if !json.Valid(b.Bytes()) {
		return nil, fmt.Errorf("input %q: its tool's schema is not JSON", in.name)
	}
	return b.Bytes(), nil
}

// refs returns the names of the $defs that data's "$ref"s name
// ("#/$defs/Name", with JSON Pointer escapes).
func refs(data []byte) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, sub := range v {
				if s, ok := sub.(string); ok && k == "$ref" {
					if name, ok := strings.CutPrefix(s, "#/$defs/"); ok && !strings.Contains(name, "/") {
						out = append(out, strings.NewReplacer("~1", "/", "~0", "~").Replace(name))
					}
					continue
				}
				walk(sub)
			}
		case []any:
			for _, sub := range v {
				walk(sub)
			}
		}
	}
	var v any
	if json.Unmarshal(data, &v) == nil {
		walk(v)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func sortedKeys[T any](m map[string]T) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
