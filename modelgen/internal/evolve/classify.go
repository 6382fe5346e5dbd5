// Package evolve compares two versions of an agent spec and classifies every
// difference in the data shapes that a durable agent's journal keeps: the
// JSON of each input type (the journal's records) and the JSON of the agent
// state (its snapshots). It owns the rules that say which differences the
// records of the old version survive and which need a migration; it knows
// nothing of Go. Descriptions, defaults and readOnly are no part of a shape:
// readOnly says what a client may leave out of an input for the server to
// assign, and the journal's record holds the property either way.
package evolve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/moora-go/moora/modelgen/internal/spec"
)

// Change is one difference between two versions of a spec's data shapes.
type Change struct {
	// Breaking says that replaying records of the old version under the new
	// one needs code (a migration): some valid old value is not a valid new
	// value, or would lose information.
	Breaking bool
	// Input is the input type (its kebab-case name) the change is to; "" for
	// a change of the state.
	Input string
	// Path is the JSON Pointer of the changed value inside the input or the
	// state: "" for the input or the state as a whole, "/message/channel"
	// for a property of an input. The first token of a state path is the
	// state property's name. Array items add the token "[]", map values the
	// token "{}", and a oneOf variant the token "<discriminator>=<value>":
	// "/userMessages/[]/channel", "/usage/{}/cost", "/shape/kind=circle/radius".
	Path string
	// What says what changed, in lowercase: "new required property",
	// "enum value removed: done", "constraint narrowed: maxLength 10 -> 5", ...
	What string
	// Old and New are compact JSON of the old and new schema at Path, with
	// $refs and allOf resolved so that they show the shape (a recursive $ref
	// is left as it is); "" where absent. Each is cut to 200 bytes and
	// ends in "…" when longer.
	Old, New string
	// Ptr is a JSON Pointer into the new spec document of where the change
	// is, for a file:line:col position: the schema of the changed value
	// where it is declared (a $ref followed into $defs, an allOf member's
	// property at the member), or for something removed the closest
	// enclosing schema that still exists (its "properties" when it has
	// some). A removed input type is at "/inputs/<actor>" when the actor
	// still has inputs, else at "/inputs", else "". A state property is at
	// the first observation that declares it ("/observations/<observer>/
	// <target>/<property>", observers and targets in name order), a removed
	// one at "/observations" (or "" when there are none).
	Ptr string
	// Decodes says, of a compatible change of the state, that a snapshot
	// of the old version decodes as it is into the new version's type, to
	// the same value: a new optional property inside a state property,
	// which no old value has (its Go field is a pointer or a slice, absent
	// as nil), or a value added to an enum (its Go type stays). A step whose state changes are all such needs neither a
	// migration nor a replay.
	Decodes bool
}

// NewStateProperty is the What of a state property added: a compatible
// change whose value only a replay of the journal computes.
const NewStateProperty = "new state property"

// Compare returns the changes from old to new, in a deterministic order:
// inputs by name, then the state; within each, by Path.
func Compare(old, new *spec.Spec) []Change {
	var cs []Change
	cs = append(cs, compareInputs(old, new)...)
	cs = append(cs, compareState(old, new)...)
	slices.SortStableFunc(cs, func(a, b Change) int {
		// The state ("") comes after every input.
		if (a.Input == "") != (b.Input == "") {
			if a.Input == "" {
				return 1
			}
			return -1
		}
		if c := strings.Compare(a.Input, b.Input); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	return cs
}

// Breaking reports whether any change is breaking.
func Breaking(cs []Change) bool {
	return slices.ContainsFunc(cs, func(c Change) bool { return c.Breaking })
}

// declared is a top-level value of a spec: an input type or a state
// property.
type declared struct {
	actor  string // the actor that dispatches the input; "" for state
	schema *spec.Schema
	ptr    string // where schema is, in its document
}

// inputsOf returns a spec's inputs by name.
func inputsOf(s *spec.Spec) map[string]declared {
	m := make(map[string]declared)
	for _, actor := range slices.Sorted(maps.Keys(s.Inputs)) {
		for name, schema := range s.Inputs[actor] {
			if _, dup := m[name]; !dup {
				m[name] = declared{actor: actor, schema: schema, ptr: pointer("inputs", actor, name)}
			}
		}
	}
	return m
}

// stateOf returns a spec's state properties by name, each with the first
// observation that declares it.
func stateOf(s *spec.Spec) map[string]declared {
	m := make(map[string]declared)
	for _, observer := range slices.Sorted(maps.Keys(s.Observations)) {
		targets := s.Observations[observer]
		for _, target := range slices.Sorted(maps.Keys(targets)) {
			for _, p := range targets[target] {
				if _, dup := m[p.Name]; !dup {
					m[p.Name] = declared{schema: p.Schema, ptr: pointer("observations", observer, target, p.Name)}
				}
			}
		}
	}
	return m
}

// compareInputs compares the input types of both versions, by name.
func compareInputs(old, new *spec.Spec) []Change {
	olds, news := inputsOf(old), inputsOf(new)
	var cs []Change
	for _, name := range slices.Sorted(maps.Keys(union(olds, news))) {
		o, inOld := olds[name]
		n, inNew := news[name]
		c := &comparer{old: old, new: new, input: name, seen: make(map[[2]*spec.Schema]bool)}
		switch {
		case !inOld:
			c.report(false, "", "new input type", nil, n.schema, n.ptr)
		case !inNew:
			ptr := ""
			if _, ok := new.Inputs[o.actor]; ok {
				ptr = pointer("inputs", o.actor)
			} else if new.Inputs != nil {
				ptr = "/inputs"
			}
			c.report(true, "", "removed input type", o.schema, nil, ptr)
		default:
			if o.actor != n.actor {
				c.report(false, "", fmt.Sprintf("input moved from actor %s to %s", o.actor, n.actor), o.schema, n.schema, n.ptr)
			}
			c.compare("", o.schema, n.schema, n.ptr)
		}
		cs = append(cs, c.changes...)
	}
	return cs
}

// compareState compares the state properties of both versions, by name.
func compareState(old, new *spec.Spec) []Change {
	olds, news := stateOf(old), stateOf(new)
	var cs []Change
	for _, name := range slices.Sorted(maps.Keys(union(olds, news))) {
		o, inOld := olds[name]
		n, inNew := news[name]
		c := &comparer{old: old, new: new, state: true, seen: make(map[[2]*spec.Schema]bool)}
		path := "/" + spec.EscapePointer(name)
		switch {
		case !inOld:
			c.report(false, path, NewStateProperty, nil, n.schema, n.ptr)
		case !inNew:
			ptr := ""
			if new.Observations != nil {
				ptr = "/observations"
			}
			c.report(true, path, "removed state property", o.schema, nil, ptr)
		default:
			c.compare(path, o.schema, n.schema, n.ptr)
		}
		cs = append(cs, c.changes...)
	}
	return cs
}

// A comparer compares the schemas of one top-level value (an input type or
// a state property) and collects the changes.
type comparer struct {
	old, new *spec.Spec
	input    string // the input type; "" for the state
	// state is set for a state property: its validation keywords are not
	// enforced at run time, so their changes are not changes, and any
	// property added to or removed from an object of it is breaking.
	state bool
	// seen holds the pairs of (resolved) schemas compared through a $ref,
	// so that recursive types terminate and a $defs type used twice is
	// reported once.
	seen    map[[2]*spec.Schema]bool
	changes []Change
}

// report adds a change at path: o and n are the old and new schemas there
// (nil when absent), ptr is where it is in the new spec.
func (c *comparer) report(breaking bool, path, what string, o, n *spec.Schema, ptr string) {
	c.changes = append(c.changes, Change{
		Breaking: breaking,
		Input:    c.input,
		Path:     path,
		What:     what,
		Old:      show(c.old, o),
		New:      show(c.new, n),
		Ptr:      ptr,
	})
}

// compare compares the value at path, of schema os in the old spec and ns
// in the new one; nptr is where ns is in the new spec.
func (c *comparer) compare(path string, os, ns *spec.Schema, nptr string) {
	o, _ := resolve(c.old, os, "")
	n, nptr := resolve(c.new, ns, nptr)
	if o == nil || n == nil {
		return // a dangling $ref: not a valid spec
	}
	if os.Ref != "" || ns.Ref != "" {
		key := [2]*spec.Schema{o, n}
		if c.seen[key] {
			return
		}
		c.seen[key] = true
	}
	okind, onull := kindOf(o)
	nkind, nnull := kindOf(n)
	switch {
	case okind == nkind:
	case okind == integerKind && nkind == numberKind:
		c.report(false, path, "type widened: integer -> number", os, ns, nptr)
	default:
		c.report(true, path, "type changed", os, ns, nptr)
		return
	}
	switch {
	case !onull && nnull:
		c.report(false, path, "nullable now", os, ns, nptr)
	case onull && !nnull:
		c.report(true, path, "no longer nullable", os, ns, nptr)
	}
	if !c.state {
		c.constraints(path, o, n, nptr)
	}
	c.values(path, o, n, nptr)
	switch nkind {
	case objectKind:
		c.objects(path, o, n, nptr)
	case mapKind:
		c.compare(path+"/{}", o.AdditionalProperties.Schema, n.AdditionalProperties.Schema, nptr+"/additionalProperties")
	case arrayKind:
		if o.Items != nil && n.Items != nil {
			c.compare(path+"/[]", o.Items, n.Items, nptr+"/items")
		}
	case unionKind:
		c.unions(path, o, n, nptr)
	}
}

// values compares the enums and consts of two schemas.
func (c *comparer) values(path string, o, n *spec.Schema, nptr string) {
	switch {
	case len(o.Enum) > 0 && len(n.Enum) > 0:
		for _, v := range o.Enum {
			if !slices.Contains(n.Enum, v) {
				c.report(true, path, "enum value removed: "+v, o, n, nptr)
			}
		}
		for _, v := range n.Enum {
			if !slices.Contains(o.Enum, v) {
				c.report(false, path, "enum value added: "+v, o, n, nptr)
				// The Go type is the same; no old value is the new one.
				c.changes[len(c.changes)-1].Decodes = c.state
			}
		}
	case len(n.Enum) > 0:
		c.report(true, path, "enum added", o, n, nptr)
	case len(o.Enum) > 0:
		c.report(false, path, "enum removed", o, n, nptr)
	}
	oc, nc := compact(o.Const), compact(n.Const)
	switch {
	case oc == nc:
	case oc == "":
		c.report(true, path, "const added", o, n, nptr)
	case nc == "":
		c.report(false, path, "const removed", o, n, nptr)
	default:
		c.report(true, path, "const changed", o, n, nptr)
	}
}

// objects compares two objects' merged properties.
func (c *comparer) objects(path string, o, n *spec.Schema, nptr string) {
	oo, no := merge(c.old, o, ""), merge(c.new, n, nptr)
	if !c.state {
		switch {
		case !oo.closed && no.closed:
			c.report(true, path, "additionalProperties false added", o, n, nptr)
		case oo.closed && !no.closed:
			c.report(false, path, "additionalProperties false removed", o, n, nptr)
		}
	}
	for _, op := range oo.props {
		ppath := path + "/" + spec.EscapePointer(op.name)
		np := no.lookup(op.name)
		if np == nil {
			// Information is lost even when the property was optional.
			c.report(true, ppath, "removed property", op.schema, nil, no.propsPtr)
			continue
		}
		switch {
		case op.required && !np.required:
			c.report(false, ppath, "property no longer required", op.schema, np.schema, np.ptr)
		case !op.required && np.required:
			c.report(true, ppath, "property now required", op.schema, np.schema, np.ptr)
		}
		c.compare(ppath, op.schema, np.schema, np.ptr)
	}
	for _, np := range no.props {
		if oo.lookup(np.name) != nil {
			continue
		}
		ppath := path + "/" + spec.EscapePointer(np.name)
		if np.required {
			c.report(true, ppath, "new required property", nil, np.schema, np.ptr)
		} else {
			// No old value has it: an old input is a valid new one, and an
			// old snapshot decodes into the new shape as it is (absent).
			c.report(false, ppath, "new optional property", nil, np.schema, np.ptr)
			if c.state {
				c.changes[len(c.changes)-1].Decodes = true
			}
		}
	}
}

// unions compares two oneOfs variant by variant, matched by the value of
// their discriminator.
func (c *comparer) unions(path string, o, n *spec.Schema, nptr string) {
	od, ovs := variants(c.old, o, "")
	nd, nvs := variants(c.new, n, nptr)
	if od != nd {
		c.report(true, path, fmt.Sprintf("oneOf discriminator changed: %s -> %s", od, nd), o, n, nptr)
		return
	}
	find := func(vs []variant, value string) *variant {
		for i := range vs {
			if vs[i].value == value {
				return &vs[i]
			}
		}
		return nil
	}
	for _, ov := range ovs {
		nv := find(nvs, ov.value)
		if nv == nil {
			c.report(true, path, "oneOf variant removed: "+ov.value, ov.schema, nil, nptr)
			continue
		}
		c.compare(path+"/"+spec.EscapePointer(nd+"="+nv.value), ov.schema, nv.schema, nv.ptr)
	}
	for _, nv := range nvs {
		if find(ovs, nv.value) == nil {
			c.report(false, path, "oneOf variant added: "+nv.value, nil, nv.schema, resolvedPtr(c.new, nv.schema, nv.ptr))
		}
	}
}

// constraints compares the validation keywords of two schemas: a keyword
// added or tightened narrows the valid values, one removed or loosened
// widens them.
func (c *comparer) constraints(path string, o, n *spec.Schema, nptr string) {
	narrowed := func(what string) { c.report(true, path, "constraint narrowed: "+what, o, n, nptr) }
	widened := func(what string) { c.report(false, path, "constraint widened: "+what, o, n, nptr) }
	changed := func(what string) { c.report(true, path, "constraint changed: "+what, o, n, nptr) }
	// bound compares a bound; lower says values must be at least (or
	// above) it, else at most (or below).
	bound := func(name string, lower bool, ov, nv json.Number) {
		switch {
		case ov == "" && nv == "":
		case ov == "":
			narrowed(fmt.Sprintf("%s %s added", name, nv))
		case nv == "":
			widened(name + " removed")
		default:
			cmp := compareNumbers(ov, nv)
			if cmp == 0 {
				return
			}
			what := fmt.Sprintf("%s %s -> %s", name, ov, nv)
			if (cmp < 0) == lower {
				narrowed(what)
			} else {
				widened(what)
			}
		}
	}
	count := func(n *int) json.Number {
		if n == nil {
			return ""
		}
		return json.Number(strconv.Itoa(*n))
	}
	// exact compares a keyword that only its absence widens.
	exact := func(name, ov, nv string, equal bool) {
		switch {
		case ov == "" && nv == "":
		case ov == "":
			narrowed(fmt.Sprintf("%s %s added", name, nv))
		case nv == "":
			widened(name + " removed")
		case !equal:
			changed(fmt.Sprintf("%s %s -> %s", name, ov, nv))
		}
	}
	quote := func(s string) string {
		if s == "" {
			return ""
		}
		return strconv.Quote(s)
	}

	bound("minimum", true, o.Minimum, n.Minimum)
	bound("maximum", false, o.Maximum, n.Maximum)
	bound("exclusiveMinimum", true, o.ExclusiveMinimum, n.ExclusiveMinimum)
	bound("exclusiveMaximum", false, o.ExclusiveMaximum, n.ExclusiveMaximum)
	exact("multipleOf", string(o.MultipleOf), string(n.MultipleOf),
		o.MultipleOf == "" || n.MultipleOf == "" || compareNumbers(o.MultipleOf, n.MultipleOf) == 0)
	bound("minLength", true, count(o.MinLength), count(n.MinLength))
	bound("maxLength", false, count(o.MaxLength), count(n.MaxLength))
	exact("pattern", quote(o.Pattern), quote(n.Pattern), o.Pattern == n.Pattern)
	exact("format", quote(o.Format), quote(n.Format), o.Format == n.Format)
	bound("minItems", true, count(o.MinItems), count(n.MinItems))
	bound("maxItems", false, count(o.MaxItems), count(n.MaxItems))
	switch {
	case !o.UniqueItems && n.UniqueItems:
		narrowed("uniqueItems added")
	case o.UniqueItems && !n.UniqueItems:
		widened("uniqueItems removed")
	}
	bound("minProperties", true, count(o.MinProperties), count(n.MinProperties))
	bound("maxProperties", false, count(o.MaxProperties), count(n.MaxProperties))
}

// compareNumbers compares two JSON numbers by value: -1, 0 or +1.
func compareNumbers(a, b json.Number) int {
	x, _, errx := big.ParseFloat(string(a), 10, 256, big.ToNearestEven)
	y, _, erry := big.ParseFloat(string(b), 10, 256, big.ToNearestEven)
	if errx != nil || erry != nil { // not numbers: not a valid spec
		return strings.Compare(string(a), string(b))
	}
	return x.Cmp(y)
}

// A kind is what a schema describes, whatever keywords say it.
type kind uint8

const (
	unknownKind kind = iota
	objectKind       // an object with properties (a struct)
	mapKind          // an object with an additionalProperties schema
	arrayKind
	stringKind // enums too
	integerKind
	numberKind
	booleanKind
	unionKind // a oneOf
)

// kindOf tells the kind of a resolved schema, the way package model does,
// and whether it is nullable.
func kindOf(s *spec.Schema) (k kind, nullable bool) {
	var name string
	for _, t := range s.Type {
		if t == "null" {
			nullable = true
		} else {
			name = t
		}
	}
	switch {
	case s.OneOf != nil:
		return unionKind, nullable
	case s.AllOf != nil:
		return objectKind, nullable
	}
	switch name {
	case "object":
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			return mapKind, nullable
		}
		return objectKind, nullable
	case "array":
		return arrayKind, nullable
	case "string":
		return stringKind, nullable
	case "integer":
		return integerKind, nullable
	case "number":
		return numberKind, nullable
	case "boolean":
		return booleanKind, nullable
	}
	switch {
	case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return mapKind, nullable
	case len(s.Properties) > 0 || s.Required != nil || s.AdditionalProperties != nil:
		return objectKind, nullable
	case s.Items != nil:
		return arrayKind, nullable
	case len(s.Enum) > 0:
		return stringKind, nullable
	}
	// A const property may say no type: its value tells it.
	var v any
	if json.Unmarshal(s.Const, &v) == nil {
		switch v.(type) {
		case string:
			return stringKind, nullable
		case float64:
			return numberKind, nullable
		case bool:
			return booleanKind, nullable
		case []any:
			return arrayKind, nullable
		case map[string]any:
			return objectKind, nullable
		}
	}
	return unknownKind, nullable
}

// resolve follows $refs from s, at ptr in doc, to the schema they name and
// where it is: "#/$defs/Name" is at "/$defs/Name". It returns nil for a
// dangling $ref.
func resolve(doc *spec.Spec, s *spec.Schema, ptr string) (*spec.Schema, string) {
	for range len(doc.Defs) + 1 {
		if s == nil || s.Ref == "" {
			return s, ptr
		}
		name := defName(s.Ref)
		s, ptr = doc.Defs[name], pointer("$defs", name)
	}
	return nil, "" // a $ref cycle: not a valid spec
}

// resolvedPtr is where the schema at ptr is declared, $refs followed.
func resolvedPtr(doc *spec.Spec, s *spec.Schema, ptr string) string {
	_, ptr = resolve(doc, s, ptr)
	return ptr
}

func defName(ref string) string { return strings.TrimPrefix(ref, "#/$defs/") }

// An object is the merged view of an object schema: allOf members'
// properties first, in order, then its own.
type object struct {
	props []prop
	// closed says additionalProperties: false is on the object itself; on
	// an allOf member it does not apply to the merged object.
	closed bool
	// propsPtr is where a property removed from the object is reported:
	// its "properties" when it has them, else the object.
	propsPtr string
}

type prop struct {
	name     string
	schema   *spec.Schema
	ptr      string // where the property is declared
	required bool
}

func (o *object) lookup(name string) *prop {
	for i := range o.props {
		if o.props[i].name == name {
			return &o.props[i]
		}
	}
	return nil
}

// maxMerge bounds the nesting of allOf members, which a valid spec keeps
// free of cycles.
const maxMerge = spec.MaxDepth

// merge merges the properties of the resolved object schema s, at ptr in
// doc, and of its allOf members; the required lists of all are merged.
func merge(doc *spec.Spec, s *spec.Schema, ptr string) object {
	o := object{propsPtr: ptr}
	if s == nil {
		return o
	}
	index := make(map[string]int)
	var required []string
	var walk func(s *spec.Schema, ptr string, depth int)
	walk = func(s *spec.Schema, ptr string, depth int) {
		if s == nil || depth > maxMerge {
			return
		}
		for i, m := range s.AllOf {
			ms, mptr := resolve(doc, m, ptr+"/allOf/"+strconv.Itoa(i))
			walk(ms, mptr, depth+1)
		}
		for _, p := range s.Properties {
			if _, dup := index[p.Name]; !dup {
				index[p.Name] = len(o.props)
				o.props = append(o.props, prop{name: p.Name, schema: p.Schema, ptr: ptr + "/properties/" + spec.EscapePointer(p.Name)})
			}
		}
		required = append(required, s.Required...)
	}
	walk(s, ptr, 0)
	for _, r := range required {
		if i, ok := index[r]; ok {
			o.props[i].required = true
		}
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Bool != nil && !*ap.Bool {
		o.closed = true
	}
	if s.Properties != nil {
		o.propsPtr = ptr + "/properties"
	}
	return o
}

// A variant is one object of a oneOf.
type variant struct {
	value  string       // of the discriminator
	schema *spec.Schema // as written in the oneOf
	ptr    string       // where schema is
}

// variants returns the discriminator of the resolved oneOf schema s, at ptr
// in doc (the const string property all its variants have), and its
// variants. A variant without a discriminator, in a spec that is not valid,
// goes by its index.
func variants(doc *spec.Spec, s *spec.Schema, ptr string) (string, []variant) {
	consts := make([]map[string]string, len(s.OneOf))
	for i, v := range s.OneOf {
		consts[i] = make(map[string]string)
		vs, vptr := resolve(doc, v, ptr+"/oneOf/"+strconv.Itoa(i))
		obj := merge(doc, vs, vptr)
		for _, p := range obj.props {
			ps, _ := resolve(doc, p.schema, "")
			var str string
			if ps != nil && json.Unmarshal(ps.Const, &str) == nil {
				consts[i][p.name] = str
			}
		}
	}
	var common []string
	if len(consts) > 0 {
		for name := range consts[0] {
			if !slices.ContainsFunc(consts[1:], func(m map[string]string) bool { _, ok := m[name]; return !ok }) {
				common = append(common, name)
			}
		}
	}
	slices.Sort(common)
	disc := ""
	if len(common) > 0 {
		disc = common[0]
	}
	vs := make([]variant, len(s.OneOf))
	for i, v := range s.OneOf {
		value, ok := consts[i][disc]
		if !ok {
			value = strconv.Itoa(i)
		}
		vs[i] = variant{value: value, schema: v, ptr: ptr + "/oneOf/" + strconv.Itoa(i)}
	}
	return disc, vs
}

// union returns the keys of both maps.
func union[V any](a, b map[string]V) map[string]struct{} {
	u := make(map[string]struct{}, len(a)+len(b))
	for k := range a {
		u[k] = struct{}{}
	}
	for k := range b {
		u[k] = struct{}{}
	}
	return u
}

// pointer joins reference tokens into a JSON Pointer.
func pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(spec.EscapePointer(t))
	}
	return b.String()
}

// compact returns a JSON value without insignificant space, "" for none.
func compact(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// maxShown is the length Change.Old and Change.New are cut to.
const maxShown = 200

// show returns the compact JSON of schema s of doc, with $refs and allOf
// resolved, cut to maxShown bytes; "" for nil.
func show(doc *spec.Spec, s *spec.Schema) string {
	if s == nil {
		return ""
	}
	r := renderer{doc: doc}
	r.schema(s)
	if len(r.b) <= maxShown {
		return string(r.b)
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(r.b[cut]) {
		cut--
	}
	return string(r.b[:cut]) + "…"
}

// A renderer writes schemas as compact JSON, stopping soon after maxShown
// bytes. Descriptions and defaults are left out: they do not make a shape.
type renderer struct {
	doc       *spec.Spec
	b         []byte
	expanding []string // the $defs types being written, to stop recursion
}

func (r *renderer) full() bool { return len(r.b) > maxShown }

// str writes a JSON string, leaving <, > and & as they are.
func (r *renderer) str(s string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	r.b = append(r.b, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}

func (r *renderer) schema(s *spec.Schema) {
	if r.full() {
		return
	}
	if s == nil {
		r.b = append(r.b, "null"...)
		return
	}
	if s.Ref != "" {
		name := defName(s.Ref)
		def := r.doc.Defs[name]
		if def == nil || slices.Contains(r.expanding, name) {
			r.b = append(r.b, `{"$ref":`...)
			r.str(s.Ref)
			r.b = append(r.b, '}')
			return
		}
		r.expanding = append(r.expanding, name)
		r.schema(def)
		r.expanding = r.expanding[:len(r.expanding)-1]
		return
	}
	r.b = append(r.b, '{')
	first := true
	key := func(k string) {
		if !first {
			r.b = append(r.b, ',')
		}
		first = false
		r.str(k)
		r.b = append(r.b, ':')
	}
	switch {
	case len(s.Type) > 0:
		key("type")
		t, _ := json.Marshal(s.Type) // a list of strings always marshals
		r.b = append(r.b, t...)
	case s.AllOf != nil:
		key("type")
		r.str("object")
	}
	if s.Properties != nil || s.AllOf != nil {
		obj := merge(r.doc, s, "")
		key("properties")
		r.b = append(r.b, '{')
		var required []string
		for i, p := range obj.props {
			if r.full() {
				return
			}
			if i > 0 {
				r.b = append(r.b, ',')
			}
			r.str(p.name)
			r.b = append(r.b, ':')
			r.schema(p.schema)
			if p.required {
				required = append(required, p.name)
			}
		}
		r.b = append(r.b, '}')
		if len(required) > 0 {
			key("required")
			r.strings(required)
		}
	} else if s.Required != nil {
		key("required")
		r.strings(s.Required)
	}
	if s.Items != nil {
		key("items")
		r.schema(s.Items)
	}
	if ap := s.AdditionalProperties; ap != nil {
		key("additionalProperties")
		if ap.Bool != nil {
			r.b = strconv.AppendBool(r.b, *ap.Bool)
		} else {
			r.schema(ap.Schema)
		}
	}
	if s.Enum != nil {
		key("enum")
		r.strings(s.Enum)
	}
	if c := compact(s.Const); c != "" {
		key("const")
		r.b = append(r.b, c...)
	}
	if s.OneOf != nil {
		key("oneOf")
		r.b = append(r.b, '[')
		for i, v := range s.OneOf {
			if r.full() {
				return
			}
			if i > 0 {
				r.b = append(r.b, ',')
			}
			r.schema(v)
		}
		r.b = append(r.b, ']')
	}
	for _, kv := range []struct {
		k string
		v json.Number
	}{
		{"minimum", s.Minimum}, {"maximum", s.Maximum},
		{"exclusiveMinimum", s.ExclusiveMinimum}, {"exclusiveMaximum", s.ExclusiveMaximum},
		{"multipleOf", s.MultipleOf},
	} {
		if kv.v != "" {
			key(kv.k)
			r.b = append(r.b, kv.v...)
		}
	}
	ints := func(k string, v *int) {
		if v != nil {
			key(k)
			r.b = strconv.AppendInt(r.b, int64(*v), 10)
		}
	}
	ints("minLength", s.MinLength)
	ints("maxLength", s.MaxLength)
	if s.Pattern != "" {
		key("pattern")
		r.str(s.Pattern)
	}
	if s.Format != "" {
		key("format")
		r.str(s.Format)
	}
	ints("minItems", s.MinItems)
	ints("maxItems", s.MaxItems)
	if s.UniqueItems {
		key("uniqueItems")
		r.b = append(r.b, "true"...)
	}
	ints("minProperties", s.MinProperties)
	ints("maxProperties", s.MaxProperties)
	r.b = append(r.b, '}')
}

func (r *renderer) strings(ss []string) {
	r.b = append(r.b, '[')
	for i, s := range ss {
		if i > 0 {
			r.b = append(r.b, ',')
		}
		r.str(s)
	}
	r.b = append(r.b, ']')
}
