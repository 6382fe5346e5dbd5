package modelgen

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// decodeSpec decodes a parsed document into the spec types directly, keeping
// the order of properties. It is what json.Unmarshal into Spec does, without
// printing and re-parsing the document; on a document that does not match
// the spec schema it fails with an error naming the location.
func decodeSpec(root *node) (*Spec, error) {
	d := &specDecoder{}
	s := d.spec(root)
	return s, d.err
}

type specDecoder struct{ err error }

func (d *specDecoder) fail(n *node, what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%s: want %s, got %s", n.pos, what, n.kind)
	}
}

func (d *specDecoder) want(n *node, kind nodeKind) bool {
	if n.kind != kind {
		d.fail(n, kind.String())
		return false
	}
	return true
}

func (d *specDecoder) str(n *node) string {
	if !d.want(n, stringNode) {
		return ""
	}
	return n.str
}

func (d *specDecoder) strs(n *node) []string {
	if !d.want(n, arrayNode) {
		return nil
	}
	out := make([]string, len(n.items))
	for i, it := range n.items {
		out[i] = d.str(it)
	}
	return out
}

func (d *specDecoder) int(n *node) int {
	if !d.want(n, numberNode) {
		return 0
	}
	v, err := strconv.Atoi(n.str)
	if err != nil {
		d.fail(n, "an integer")
	}
	return v
}

func (d *specDecoder) spec(n *node) *Spec {
	s := &Spec{}
	if !d.want(n, objectNode) {
		return s
	}
	for i, k := range n.keys {
		v := n.vals[i]
		switch k {
		case "version":
			s.Version = d.int(v)
		case "package":
			s.Package = d.str(v)
		case "actors":
			s.Actors = d.strs(v)
		case "$defs":
			s.Defs = d.schemaMap(v)
		case "observations":
			if d.want(v, objectNode) {
				s.Observations = make(map[string]map[string]Properties, len(v.keys))
				for j, obs := range v.keys {
					targets := v.vals[j]
					if !d.want(targets, objectNode) {
						continue
					}
					m := make(map[string]Properties, len(targets.keys))
					for t, target := range targets.keys {
						m[target] = d.properties(targets.vals[t])
					}
					s.Observations[obs] = m
				}
			}
		case "inputs":
			if d.want(v, objectNode) {
				s.Inputs = make(map[string]map[string]*Schema, len(v.keys))
				for j, actor := range v.keys {
					s.Inputs[actor] = d.schemaMap(v.vals[j])
				}
			}
		default:
			d.fail(v, "no key "+strconv.Quote(k))
		}
	}
	return s
}

func (d *specDecoder) schemaMap(n *node) map[string]*Schema {
	if !d.want(n, objectNode) {
		return nil
	}
	m := make(map[string]*Schema, len(n.keys))
	for i, k := range n.keys {
		m[k] = d.schema(n.vals[i])
	}
	return m
}

func (d *specDecoder) properties(n *node) Properties {
	if !d.want(n, objectNode) {
		return nil
	}
	ps := make(Properties, len(n.keys))
	for i, k := range n.keys {
		ps[i] = Property{Name: k, Schema: d.schema(n.vals[i])}
	}
	return ps
}

func (d *specDecoder) schemas(n *node) []*Schema {
	if !d.want(n, arrayNode) {
		return nil
	}
	out := make([]*Schema, len(n.items))
	for i, it := range n.items {
		out[i] = d.schema(it)
	}
	return out
}

func (d *specDecoder) intPtr(n *node) *int {
	v := d.int(n)
	return &v
}

func (d *specDecoder) number(n *node) json.Number {
	if !d.want(n, numberNode) {
		return ""
	}
	return json.Number(n.str)
}

func (d *specDecoder) schema(n *node) *Schema {
	if n.kind == nullNode || !d.want(n, objectNode) {
		return nil
	}
	s := &Schema{}
	for i, k := range n.keys {
		v := n.vals[i]
		switch k {
		case "$ref":
			s.Ref = d.str(v)
		case "description":
			s.Description = d.str(v)
		case "type":
			if v.kind == arrayNode {
				s.Type = d.strs(v)
			} else {
				s.Type = SchemaType{d.str(v)}
			}
		case "properties":
			s.Properties = d.properties(v)
		case "required":
			s.Required = d.strs(v)
		case "items":
			s.Items = d.schema(v)
		case "additionalProperties":
			if v.kind == boolNode {
				b := v.str == "true"
				s.AdditionalProperties = &BoolOrSchema{Bool: &b}
			} else {
				s.AdditionalProperties = &BoolOrSchema{Schema: d.schema(v)}
			}
		case "enum":
			s.Enum = d.strs(v)
		case "const":
			s.Const = v.appendJSON(nil)
		case "default":
			s.Default = v.appendJSON(nil)
		case "allOf":
			s.AllOf = d.schemas(v)
		case "oneOf":
			s.OneOf = d.schemas(v)
		case "minimum":
			s.Minimum = d.number(v)
		case "maximum":
			s.Maximum = d.number(v)
		case "exclusiveMinimum":
			s.ExclusiveMinimum = d.number(v)
		case "exclusiveMaximum":
			s.ExclusiveMaximum = d.number(v)
		case "multipleOf":
			s.MultipleOf = d.number(v)
		case "minLength":
			s.MinLength = d.intPtr(v)
		case "maxLength":
			s.MaxLength = d.intPtr(v)
		case "pattern":
			s.Pattern = d.str(v)
		case "format":
			s.Format = d.str(v)
		case "minItems":
			s.MinItems = d.intPtr(v)
		case "maxItems":
			s.MaxItems = d.intPtr(v)
		case "uniqueItems":
			if d.want(v, boolNode) {
				s.UniqueItems = v.str == "true"
			}
		case "minProperties":
			s.MinProperties = d.intPtr(v)
		case "maxProperties":
			s.MaxProperties = d.intPtr(v)
		default:
			d.fail(v, "no key "+strconv.Quote(k))
		}
	}
	return s
}
