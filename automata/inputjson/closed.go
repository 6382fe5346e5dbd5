package inputjson

import (
	"encoding/json"
	"strings"
)

// An input holds only the properties its schema declares. JSON Schema
// allows any other property of an object unless the schema says
// additionalProperties: false, and the Go type of an input has no field for
// one: it would be accepted, journaled as the input without it, and
// dropped without a word (a client that misspells an optional property, or
// that sends one the spec added in a version the server does not run yet,
// would never learn). So a Decoder compiles each object schema of the
// inputs closed: with "unevaluatedProperties": false, which draft 2020-12
// applies after the object's own properties, those of the members of its
// allOf, of the variant of its oneOf that matched and of the type its $ref
// names, so that an object merged from several schemas is closed as a
// whole, not member by member. An undeclared property is refused, named
// by its location:
//
//	decoding input "send": /bogus: a property the spec does not declare
//
// A schema that says additionalProperties (true, or a schema: a map) is
// open as it says, since that keyword evaluates every other property; an
// input type opts out so. An object schema without properties, allOf, oneOf
// or a $ref to such a type (a free-form object) is open too.
const undeclaredKeyword = "unevaluatedProperties"

// closeObjects returns the schema document doc with every object schema of
// its inputs closed (see undeclaredKeyword). The types under $defs are
// closed where they are used (a $ref), not where they are declared: a type
// that is a member of an allOf is closed by the allOf's schema, with the
// other members' properties.
func closeObjects(doc string) (string, error) {
	var root map[string]any
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return "", err
	}
	defs, _ := root["$defs"].(map[string]any)
	c := closer{defs: defs, structLike: map[string]bool{}}
	if inputs, ok := root["inputs"].(map[string]any); ok {
		for _, s := range inputs {
			c.schema(s, true)
		}
	}
	for _, s := range defs {
		c.schema(s, false) // closed where it is used
	}
	out, err := json.Marshal(root)
	return string(out), err
}

type closer struct {
	defs map[string]any
	// structLike memoizes isStructLike of the $defs types by name; a
	// type being resolved is false, which ends a cycle of $refs.
	structLike map[string]bool
}

// schema closes s, if close and s is an object schema with declared
// properties, and every schema inside it.
func (c closer) schema(v any, close bool) {
	s, ok := v.(map[string]any)
	if !ok {
		return
	}
	if close && c.isStructLike(s) {
		if _, has := s[undeclaredKeyword]; !has {
			s[undeclaredKeyword] = false
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			c.schema(p, true)
		}
	}
	c.schema(s["items"], true)
	c.schema(s["additionalProperties"], true)
	// The members of an allOf or a oneOf are closed by s, with all they
	// declare; their own properties' schemas are closed as any.
	for _, key := range []string{"allOf", "oneOf"} {
		members, _ := s[key].([]any)
		for _, m := range members {
			c.schema(m, false)
		}
	}
}

// isStructLike reports whether s declares the properties of an object: its
// own, those of an allOf or of oneOf variants, or those of the $defs type
// it refers to.
func (c closer) isStructLike(s map[string]any) bool {
	for _, key := range []string{"properties", "allOf", "oneOf"} {
		if _, ok := s[key]; ok {
			return true
		}
	}
	ref, _ := s["$ref"].(string)
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok {
		return false
	}
	if known, ok := c.structLike[name]; ok {
		return known
	}
	c.structLike[name] = false
	def, _ := c.defs[name].(map[string]any)
	c.structLike[name] = def != nil && c.isStructLike(def)
	return c.structLike[name]
}
