package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/moora-go/moora/modelgen/internal/names"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Validate checks the document against the spec schema and reports every
// leaf error at its position in the source.
//
// A spec repeats schemas a lot ({type: string}, the same message type under
// several observers), and a schema's validity does not depend on where it
// is. So the document is validated in pieces: the top level with every
// schema in it replaced by {}, and then each schema with the schemas nested
// in it replaced by {}, once per distinct piece. The errors of a piece are
// reported at every place it occurs. This finds exactly what validating the
// whole document finds (TestValidateInPieces), in a fraction of the time.
func Validate(src *Source) (Diagnostics, error) {
	root, err := compiledSpecSchema()
	if err != nil {
		return nil, err
	}
	schema, err := compiledSchemaSchema()
	if err != nil {
		return nil, err
	}
	d := &Diags{Src: src}
	if err := reportErrors(d, "", root.Validate(shallowValue(appendShallow(nil, topLevelShallow, src.root)))); err != nil {
		return nil, err
	}
	results := make(map[string]error)
	var buf []byte
	var firstErr error
	ForEachSchema(src.root, func(ptr string, n *Node) {
		buf = appendShallow(buf[:0], schemaShallow, n)
		verr, seen := results[string(buf)]
		if !seen {
			verr = schema.Validate(shallowValue(buf))
			results[string(buf)] = verr
		}
		if err := reportErrors(d, ptr, verr); err != nil && firstErr == nil {
			firstErr = err
		}
	})
	if firstErr != nil {
		return nil, firstErr
	}
	if len(d.List) == 0 {
		return nil, nil
	}
	return explain(d), nil
}

// explain sorts and compacts the schema's diagnostics, and replaces those
// under an observation target that is no actor but a property (a level
// left out: observations.user.reply: {type: string}) with one that says so.
func explain(d *Diags) Diagnostics {
	obs := d.Src.root.get("observations")
	if obs != nil && obs.kind == ObjectNode {
		actors := d.Src.root.get("actors")
		isActor := func(name string) bool {
			if actors == nil || actors.kind != ArrayNode {
				return false
			}
			return slices.ContainsFunc(actors.items, func(n *Node) bool { return n.kind == StringNode && n.str == name })
		}
		for i, observer := range obs.keys {
			targets := obs.vals[i]
			if targets.kind != ObjectNode {
				continue
			}
			for j, target := range targets.keys {
				v := targets.vals[j]
				if isActor(target) || v.kind != ObjectNode || !slices.ContainsFunc(v.keys, isSchemaKeyword) {
					continue
				}
				ptr := "/observations/" + EscapePointer(observer) + "/" + EscapePointer(target)
				elem := ElementName(ptr)
				n := len(d.List)
				d.List = slices.DeleteFunc(d.List, func(x *Diagnostic) bool {
					return x.Element == elem || strings.HasPrefix(x.Element, elem+".")
				})
				if len(d.List) < n {
					d.AtKey(ptr, fmt.Sprintf("%q is not an actor but reads as a property: a level is missing", target),
						fmt.Sprintf("observations map observer -> target -> property -> schema; write observations.%s.<target>.%s", observer, target))
				}
			}
		}
	}
	d.List.Sort()
	return slices.CompactFunc(d.List, func(a, b *Diagnostic) bool { return a.String() == b.String() })
}

// isSchemaKeyword says whether a key is one a schema holds.
func isSchemaKeyword(key string) bool {
	switch key {
	case "type", "$ref", "properties", "items", "enum", "const", "oneOf", "allOf", "additionalProperties", "description", "required":
		return true
	}
	return false
}

// reportErrors reports the leaves of a validation error of the piece at ptr.
func reportErrors(d *Diags, ptr string, err error) error {
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("validating against the spec schema: %w", err)
	}
	reportValidation(d, ptr, ve)
	return nil
}

// Where the schemas are, relative to an object: the top level of a spec, or
// a schema.
type shallowKind uint8

const (
	topLevelShallow shallowKind = iota
	schemaShallow
)

// schemaDepth says how many levels of objects below the value of key are
// schemas: observations -> observer -> target -> property -> schema is 3.
// For allOf and oneOf the schemas are the items of an array (arrayDepth).
const arrayDepth = -1

func schemaDepth(kind shallowKind, key string) (depth int, ok bool) {
	switch kind {
	case topLevelShallow:
		switch key {
		case "$defs":
			return 1, true
		case "observations":
			return 3, true
		case "inputs":
			return 2, true
		}
	case schemaShallow:
		switch key {
		case "properties":
			return 1, true
		case "items", "additionalProperties":
			return 0, true
		case "allOf", "oneOf":
			return arrayDepth, true
		}
	}
	return 0, false
}

// schemaChildren calls fn for each schema directly inside the object n:
// the values at schema positions that are objects (anything else is left
// for validation to report).
func schemaChildren(kind shallowKind, n *Node, fn func(ptr string, child *Node)) {
	if n.kind != ObjectNode {
		return
	}
	var walk func(ptr string, n *Node, depth int)
	walk = func(ptr string, n *Node, depth int) {
		switch {
		case depth == arrayDepth && n.kind == ArrayNode:
			for i, it := range n.items {
				walk(ptr+"/"+strconv.Itoa(i), it, 0)
			}
		case n.kind != ObjectNode:
		case depth == 0:
			fn(ptr, n)
		default:
			for i, k := range n.keys {
				walk(ptr+"/"+EscapePointer(k), n.vals[i], depth-1)
			}
		}
	}
	for i, k := range n.keys {
		if depth, ok := schemaDepth(kind, k); ok {
			walk("/"+EscapePointer(k), n.vals[i], depth)
		}
	}
}

// ForEachSchema calls fn for every schema in the document, nested ones
// included, with its JSON Pointer.
func ForEachSchema(root *Node, fn func(ptr string, n *Node)) {
	var visit func(ptr string, n *Node)
	visit = func(ptr string, n *Node) {
		fn(ptr, n)
		schemaChildren(schemaShallow, n, func(rel string, child *Node) { visit(ptr+rel, child) })
	}
	schemaChildren(topLevelShallow, root, func(rel string, child *Node) { visit(rel, child) })
}

// appendShallow appends the object n as JSON with the schemas directly
// inside it replaced by {}.
func appendShallow(b []byte, kind shallowKind, n *Node) []byte {
	var appendAt func(b []byte, n *Node, depth int) []byte
	appendAt = func(b []byte, n *Node, depth int) []byte {
		switch {
		case depth == arrayDepth && n.kind == ArrayNode:
			b = append(b, '[')
			for i, it := range n.items {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendAt(b, it, 0)
			}
			return append(b, ']')
		case n.kind != ObjectNode:
			return n.appendJSON(b)
		case depth == 0:
			return append(b, "{}"...)
		}
		b = append(b, '{')
		for i, k := range n.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendAt(b, n.vals[i], depth-1)
		}
		return append(b, '}')
	}
	if n.kind != ObjectNode {
		return n.appendJSON(b)
	}
	b = append(b, '{')
	for i, k := range n.keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		if depth, ok := schemaDepth(kind, k); ok {
			b = appendAt(b, n.vals[i], depth)
		} else {
			b = n.vals[i].appendJSON(b)
		}
	}
	return append(b, '}')
}

// shallowValue decodes the output of appendShallow for validation.
func shallowValue(shallow []byte) any {
	dec := json.NewDecoder(bytes.NewReader(shallow))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		panic(fmt.Sprintf("modelgen: re-reading a spec piece: %v", err)) // it was printed as JSON just now
	}
	return v
}

// FromSchemaPointer converts an instance location as santhosh-tekuri
// reports it (each token URL-path-escaped) to a plain JSON Pointer.
func FromSchemaPointer(loc string) string {
	if loc == "" {
		return ""
	}
	parts := strings.Split(strings.TrimPrefix(loc, "/"), "/")
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			parts[i] = u
		}
	}
	return "/" + strings.Join(parts, "/")
}

// reportValidation reports the leaves of a validation error of the piece of
// the document at prefix.
func reportValidation(d *Diags, prefix string, e *jsonschema.ValidationError) {
	kloc := fragment(e.AbsoluteKeywordLocation)
	inst := prefix + FromSchemaPointer(e.InstanceLocation)
	if path.Base(kloc) == "anyOf" {
		reportAnyOf(d, e, prefix, inst, kloc)
		return
	}
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			reportValidation(d, prefix, c)
		}
		return
	}
	switch path.Base(kloc) {
	case "additionalProperties":
		reportUnknownKeys(d, inst, strings.TrimSuffix(kloc, "/additionalProperties"))
	case "required":
		obj := d.Src.Node(inst)
		req, _ := schemaAt(kloc).([]any)
		for _, r := range req {
			if name, ok := r.(string); ok && obj.get(name) == nil {
				d.At(inst, fmt.Sprintf("missing required key %q", name), "")
			}
		}
	case "pattern":
		reportPattern(d, e, inst, kloc)
	case "maxLength":
		reportNameLength(d, e, inst, kloc)
	case "enum":
		if inst == "/version" {
			d.At(inst, fmt.Sprintf("unsupported spec version %s", d.Src.Node(inst).appendJSON(nil)), "this agentgen reads version 1")
			return
		}
		d.At(inst, e.Message, "")
	case "minItems":
		switch {
		case inst == "/actors":
			d.At(inst, "no actors", "list at least one actor")
		case path.Base(inst) == "allOf" && kloc == "/$defs/Schema/properties/allOf/minItems":
			d.AtKey(inst, "allOf has no members", "list the object schemas it merges, or remove it")
		case path.Base(inst) == "oneOf" && kloc == "/$defs/Schema/properties/oneOf/minItems":
			d.AtKey(inst, "oneOf has no variants", "list the object schemas it chooses between")
		default:
			d.At(inst, e.Message, "")
		}
	case "exclusiveMinimum":
		if path.Base(inst) == "multipleOf" && kloc == "/$defs/Schema/properties/multipleOf/exclusiveMinimum" {
			d.At(inst, fmt.Sprintf("multipleOf must be greater than 0, not %s", d.Src.Node(inst).appendJSON(nil)), "")
			return
		}
		d.At(inst, e.Message, "")
	default:
		d.At(inst, e.Message, "")
	}
}

// reportAnyOf reports a value that matches none of the alternatives of an
// anyOf in the spec schema with one message instead of one per alternative.
func reportAnyOf(d *Diags, e *jsonschema.ValidationError, prefix, inst, kloc string) {
	n := d.Src.Node(inst)
	switch kloc {
	case "/$defs/SchemaType/anyOf":
		const hint = `use one of object, array, string, integer, number, boolean, or a pair like [string, "null"]`
		switch {
		case n != nil && n.kind == StringNode:
			d.At(inst, fmt.Sprintf("unknown type %q", n.str), names.DidYouMean(names.Suggest(n.str, typeNames), hint))
		case n != nil && n.kind == ArrayNode:
			d.At(inst, `a list of types must be a pair of a type and "null"`, hint)
		default:
			d.At(inst, "type must be a string or a list", hint)
		}
	case "/$defs/BoolOrSchema/anyOf":
		if n != nil && n.kind == ObjectNode {
			// A schema with errors: report them, not that it is no boolean.
			for _, c := range e.Causes {
				if !strings.HasSuffix(c.KeywordLocation, "/anyOf/0/type") {
					reportValidation(d, prefix, c)
				}
			}
			return
		}
		d.At(inst, "additionalProperties must be true, false or a schema", "")
	default:
		d.At(inst, e.Message, "")
	}
}

// reportUnknownKeys reports each key of the object at inst that the schema
// object at sloc does not declare.
func reportUnknownKeys(d *Diags, inst, sloc string) {
	obj := d.Src.Node(inst)
	sch, _ := schemaAt(sloc).(map[string]any)
	props, _ := sch["properties"].(map[string]any)
	allowed := make([]string, 0, len(props))
	for k := range props {
		allowed = append(allowed, k)
	}
	slices.Sort(allowed)
	isSchema := sloc == "/$defs/Schema"
	for _, k := range obj.keys {
		if _, ok := props[k]; ok {
			continue
		}
		ptr := inst + "/" + EscapePointer(k)
		if isSchema {
			if hint, ok := unsupportedKeywords[k]; ok {
				d.AtKey(ptr, fmt.Sprintf("unsupported JSON Schema keyword %q", k), hint)
				continue
			}
		}
		what := "key"
		if isSchema {
			what = "schema keyword"
		}
		d.AtKey(ptr, fmt.Sprintf("unknown %s %q", what, k), names.DidYouMean(names.Suggest(k, allowed), "allowed: "+strings.Join(allowed, ", ")))
	}
}

// nameAt returns the name that the keyword at kloc checks, the key or the
// string at inst, and whether it is a key.
func nameAt(d *Diags, inst, kloc string) (name string, isKey bool) {
	if strings.Contains(kloc, "/propertyNames/") {
		parts := SplitPointer(inst)
		return parts[len(parts)-1], true
	}
	if n := d.Src.Node(inst); n != nil && n.kind == StringNode {
		return n.str, false
	}
	return "", false
}

// reportNameLength reports a name longer than MaxNameLength.
func reportNameLength(d *Diags, e *jsonschema.ValidationError, inst, kloc string) {
	name, isKey := nameAt(d, inst, kloc)
	sch, _ := schemaAt(strings.TrimSuffix(kloc, "/maxLength")).(map[string]any)
	what := "name"
	switch sch["pattern"] {
	case kebabPattern, pascalPattern:
	case propertyNamePattern:
		what = "property name"
	default:
		d.At(inst, e.Message, "")
		return
	}
	msg := fmt.Sprintf("%s %q is %d characters long, longer than the %d a name may be", what, abbreviate(name), utf8.RuneCountInString(name), MaxNameLength)
	const hint = "shorten it: generated Go names and file names are made of it"
	if isKey {
		d.AtKey(inst, msg, hint)
	} else {
		d.At(inst, msg, hint)
	}
}

// abbreviate shortens a name longer than MaxNameLength for a message: its
// first half of MaxNameLength characters, then "…".
func abbreviate(name string) string {
	if utf8.RuneCountInString(name) <= MaxNameLength {
		return name
	}
	r := []rune(name)
	return string(r[:MaxNameLength/2]) + "…"
}

func reportPattern(d *Diags, e *jsonschema.ValidationError, inst, kloc string) {
	name, isKey := nameAt(d, inst, kloc)
	if utf8.RuneCountInString(name) > MaxNameLength {
		return // reportNameLength says what is wrong; the pattern is for after
	}
	var msg string
	switch pat, _ := schemaAt(kloc).(string); pat {
	case kebabPattern:
		msg = fmt.Sprintf("name %q must be kebab-case, like %q", name, names.KebabCase(name))
	case pascalPattern:
		msg = fmt.Sprintf("name %q must be PascalCase, like %q", name, names.PascalCase(name))
	case propertyNamePattern:
		msg = fmt.Sprintf("property name %q must start with a letter and hold only letters, digits, '_' and '-'", name)
	default:
		msg = e.Message
	}
	if isKey {
		d.AtKey(inst, msg, "")
	} else {
		d.At(inst, msg, "")
	}
}

// unsupportedKeywords are JSON Schema keywords outside agentgen's subset,
// with what to do instead.
var unsupportedKeywords = map[string]string{
	"$id":                   "remove it",
	"$schema":               "remove it",
	"$anchor":               `refer to "#/$defs/Name" instead`,
	"$dynamicRef":           `refer to "#/$defs/Name" instead`,
	"$dynamicAnchor":        "remove it",
	"$vocabulary":           "remove it",
	"$comment":              "use a YAML comment or description",
	"$defs":                 "declare shared types in the top-level $defs",
	"definitions":           "declare shared types in the top-level $defs",
	"anyOf":                 "use oneOf of objects told apart by a const property",
	"not":                   "it has no Go type; remove it",
	"if":                    "it has no Go type; remove it",
	"then":                  "it has no Go type; remove it",
	"else":                  "it has no Go type; remove it",
	"dependentSchemas":      "it has no Go type; remove it",
	"dependentRequired":     "it has no Go type; remove it",
	"dependencies":          "it has no Go type; remove it",
	"prefixItems":           "use an object instead of a tuple",
	"additionalItems":       "use items",
	"contains":              "remove it",
	"minContains":           "remove it",
	"maxContains":           "remove it",
	"patternProperties":     "use additionalProperties with a schema for a map",
	"propertyNames":         "remove it",
	"unevaluatedItems":      "remove it",
	"unevaluatedProperties": "use additionalProperties: false",
	"contentEncoding":       "remove it",
	"contentMediaType":      "remove it",
	"contentSchema":         "remove it",
	"title":                 "use description",
	"examples":              "put examples in the description",
	"deprecated":            "say it in the description",
	"writeOnly":             "remove it",
	"nullable":              `use a type pair like [string, "null"]`,
}

// ValidateWhole validates the whole document against the spec schema at
// once: the reference that Validate, which validates each distinct schema
// once, must agree with. It is slower than Validate; tests and the fuzzer
// compare the two.
func ValidateWhole(src *Source) (Diagnostics, error) {
	s, err := compiledSpecSchema()
	if err != nil {
		return nil, err
	}
	d := &Diags{Src: src}
	if err := reportErrors(d, "", s.Validate(src.root.value())); err != nil {
		return nil, err
	}
	if len(d.List) == 0 {
		return nil, nil
	}
	return explain(d), nil
}
