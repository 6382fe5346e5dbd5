// Package jsonpatch computes JSON Patches (RFC 6902) between two Go values
// of one type, at a cost that follows what changed, and applies them to
// JSON documents: the state stream's deltas (package httpbridge) and the
// timeline's diffs (package devpanel).
package jsonpatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Op is one JSON Patch (RFC 6902) operation. Diff writes add, remove and
// replace; Value is the JSON of the value, already encoded.
type Op struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Diff returns the JSON Patch that turns the JSON of old into the JSON of
// next, two values of the same type.
//
// It walks the Go values, not their JSON, so that its cost follows the change
// rather than the size of the state: a slice that next extends in place (as
// automata.Append does, sharing old's backing array) costs one add per new
// element, without looking at the old ones; a struct field or slice element
// that is the same memory in both is skipped. What it cannot map to JSON
// paths by itself (a type with its own MarshalJSON, an embedded struct,
// omitempty, interfaces) it compares as encoded JSON and replaces whole.
func Diff[T any](old, next T) ([]Op, error) {
	return diff(differ{}, old, next)
}

// DiffNilAsEmpty is Diff for a reader who sees a nil slice or map as an
// empty one, not as null: the first element of a nil slice is an add to
// it, not a replace of the whole (package devpanel's timeline).
func DiffNilAsEmpty[T any](old, next T) ([]Op, error) {
	return diff(differ{nilAsEmpty: true}, old, next)
}

func diff[T any](d differ, old, next T) ([]Op, error) {
	ov, nv := reflect.ValueOf(&old).Elem(), reflect.ValueOf(&next).Elem()
	if err := d.value("", ov, nv); err != nil {
		return nil, err
	}
	return d.ops, nil
}

type differ struct {
	ops        []Op
	nilAsEmpty bool
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// emptyOnNil is implemented by the state types agentgen generates: their
// MarshalJSON is encoding/json's but for the slices and maps it names (by
// their JSON names), which it writes as empty when nil. The differ walks
// such a type as any struct, reading those fields' nil as empty, instead of
// comparing it whole by its JSON: a state's delta costs what changed, not
// the size of the state.
type emptyOnNil interface{ JSONEmptyOnNil() []string }

var emptyOnNilType = reflect.TypeFor[emptyOnNil]()

// emptyCache maps a type that implements emptyOnNil to its names, escaped
// for a JSON Pointer as structFields has them.
var emptyCache sync.Map // reflect.Type -> []string

func emptyFields(v reflect.Value) []string {
	if names, ok := emptyCache.Load(v.Type()); ok {
		return names.([]string)
	}
	names := slices.Clone(v.Interface().(emptyOnNil).JSONEmptyOnNil())
	for i, name := range names {
		names[i] = escapePointer(name)
	}
	emptyCache.Store(v.Type(), names)
	return names
}

func (d *differ) add(kind, path string, v reflect.Value) error {
	var raw json.RawMessage
	if kind != "remove" {
		b, err := json.Marshal(v.Interface())
		if err != nil {
			return fmt.Errorf("encoding %s: %w", pathOrRoot(path), err)
		}
		raw = b
	}
	d.ops = append(d.ops, Op{Op: kind, Path: path, Value: raw})
	return nil
}

func pathOrRoot(p string) string {
	if p == "" {
		return "the view"
	}
	return p
}

// replaceIfChanged compares the JSON of o and n and replaces the value at
// path when they differ.
func (d *differ) replaceIfChanged(path string, o, n reflect.Value) error {
	ob, err := json.Marshal(o.Interface())
	if err != nil {
		return fmt.Errorf("encoding %s: %w", pathOrRoot(path), err)
	}
	nb, err := json.Marshal(n.Interface())
	if err != nil {
		return fmt.Errorf("encoding %s: %w", pathOrRoot(path), err)
	}
	if !bytes.Equal(ob, nb) {
		d.ops = append(d.ops, Op{Op: "replace", Path: path, Value: nb})
	}
	return nil
}

func (d *differ) value(path string, o, n reflect.Value) error {
	t := o.Type()
	if t.Kind() == reflect.Struct && t.Implements(emptyOnNilType) {
		return d.structValue(path, o, n, emptyFields(o))
	}
	if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) {
		return d.replaceIfChanged(path, o, n)
	}
	switch t.Kind() {
	case reflect.Struct:
		return d.structValue(path, o, n, nil)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 { // []byte is a base64 string
			return d.replaceIfChanged(path, o, n)
		}
		return d.slice(path, o, n, d.nilAsEmpty)
	case reflect.Array:
		for i := range o.Len() {
			if err := d.value(path+"/"+strconv.Itoa(i), o.Index(i), n.Index(i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		return d.mapValue(path, o, n, d.nilAsEmpty)
	case reflect.Pointer:
		if o.IsNil() || n.IsNil() {
			if o.IsNil() != n.IsNil() {
				return d.add("replace", path, n)
			}
			return nil
		}
		if o.Pointer() == n.Pointer() {
			return nil
		}
		return d.value(path, o.Elem(), n.Elem())
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.String:
		if !o.Equal(n) {
			return d.add("replace", path, n)
		}
		return nil
	default: // floats (NaN, -0), interfaces, and anything else: by their JSON
		return d.replaceIfChanged(path, o, n)
	}
}

// field is a struct field the differ walks by name.
type field struct {
	index int
	name  string // escaped for a JSON Pointer
}

// fieldCache maps a struct type to its fields, or to nil when the struct
// must be compared whole (embedded fields, omitempty, string options).
var fieldCache sync.Map // reflect.Type -> []field

func structFields(t reflect.Type) ([]field, bool) {
	if f, ok := fieldCache.Load(t); ok {
		fs := f.([]field)
		return fs, fs != nil
	}
	var fs []field
	whole := false
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			whole = true
			break
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if opts != "" {
			whole = true // omitempty, omitzero, string: the JSON shape varies
			break
		}
		if name == "" {
			name = sf.Name
		}
		fs = append(fs, field{index: i, name: escapePointer(name)})
	}
	if whole {
		fs = nil
	} else if fs == nil {
		fs = []field{}
	}
	fieldCache.Store(t, fs)
	return fs, fs != nil
}

// structValue diffs a struct field by field; the fields named empty (by
// their escaped JSON names) are slices or maps whose nil is written as
// empty (emptyOnNil).
func (d *differ) structValue(path string, o, n reflect.Value, empty []string) error {
	fs, ok := structFields(o.Type())
	if !ok {
		return d.replaceIfChanged(path, o, n)
	}
	for _, f := range fs {
		p, of, nf := path+"/"+f.name, o.Field(f.index), n.Field(f.index)
		var err error
		switch k := of.Kind(); {
		case k == reflect.Slice && of.Type().Elem().Kind() != reflect.Uint8 && slices.Contains(empty, f.name):
			err = d.slice(p, of, nf, true)
		case k == reflect.Map && slices.Contains(empty, f.name):
			err = d.mapValue(p, of, nf, true)
		default:
			err = d.value(p, of, nf)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// slice diffs two slices; nilAsEmpty says that a nil one is read as empty,
// not as null.
func (d *differ) slice(path string, o, n reflect.Value, nilAsEmpty bool) error {
	if o.IsNil() != n.IsNil() && !nilAsEmpty { // null and [] differ in JSON
		return d.add("replace", path, n)
	}
	ol, nl := o.Len(), n.Len()
	common := min(ol, nl)
	// The same backing array: the common prefix is the same memory.
	shared := common == 0 || o.Pointer() == n.Pointer()
	if !shared {
		for i := range common {
			if err := d.value(path+"/"+strconv.Itoa(i), o.Index(i), n.Index(i)); err != nil {
				return err
			}
		}
	}
	for i := ol - 1; i >= nl; i-- {
		d.ops = append(d.ops, Op{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
	}
	for i := common; i < nl; i++ {
		if err := d.add("add", path+"/-", n.Index(i)); err != nil {
			return err
		}
	}
	return nil
}

func (d *differ) mapValue(path string, o, n reflect.Value, nilAsEmpty bool) error {
	if o.IsNil() != n.IsNil() && !nilAsEmpty {
		return d.add("replace", path, n)
	}
	if o.Pointer() == n.Pointer() && o.IsNil() == n.IsNil() {
		return nil
	}
	if o.Type().Key().Kind() != reflect.String {
		return d.replaceIfChanged(path, o, n)
	}
	// Sorted keys: the same change gives the same patch.
	keys := make([]string, 0, n.Len())
	for _, k := range n.MapKeys() {
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	var removed []string
	for _, k := range o.MapKeys() {
		if !n.MapIndex(k).IsValid() {
			removed = append(removed, k.String())
		}
	}
	slices.Sort(removed)
	for _, k := range removed {
		d.ops = append(d.ops, Op{Op: "remove", Path: path + "/" + escapePointer(k)})
	}
	kt := o.Type().Key()
	for _, k := range keys {
		kv := reflect.ValueOf(k).Convert(kt)
		ov, nv := o.MapIndex(kv), n.MapIndex(kv)
		p := path + "/" + escapePointer(k)
		if !ov.IsValid() {
			if err := d.add("add", p, nv); err != nil {
				return err
			}
			continue
		}
		if err := d.value(p, ov, nv); err != nil {
			return err
		}
	}
	return nil
}

// escapePointer escapes a name for a JSON Pointer (RFC 6901).
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapePointer(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// Apply applies the add, remove and replace operations of a JSON Patch
// to doc, a value decoded by encoding/json into any, and returns the result.
// It is the Go twin of the httpbridge client module's applyPatch, for clients and tests.
func Apply(doc any, ops []Op) (any, error) {
	for i, o := range ops {
		var val any
		if o.Op != "remove" {
			if err := json.Unmarshal(o.Value, &val); err != nil {
				return nil, fmt.Errorf("patch operation %d: value: %w", i, err)
			}
		}
		var err error
		if doc, err = applyOp(doc, o.Op, o.Path, val); err != nil {
			return nil, fmt.Errorf("patch operation %d (%s %s): %w", i, o.Op, o.Path, err)
		}
	}
	return doc, nil
}

func applyOp(doc any, kind, path string, val any) (any, error) {
	if path == "" {
		if kind == "remove" {
			return nil, errors.New("cannot remove the root")
		}
		return val, nil
	}
	if path[0] != '/' {
		return nil, errors.New("the path does not start with /")
	}
	parts := strings.Split(path[1:], "/")
	return applyAt(doc, parts, kind, val)
}

func applyAt(doc any, parts []string, kind string, val any) (any, error) {
	key := unescapePointer(parts[0])
	last := len(parts) == 1
	switch c := doc.(type) {
	case map[string]any:
		if last {
			switch kind {
			case "add":
				c[key] = val
			case "replace":
				if _, ok := c[key]; !ok {
					return nil, fmt.Errorf("no member %q to replace", key)
				}
				c[key] = val
			case "remove":
				if _, ok := c[key]; !ok {
					return nil, fmt.Errorf("no member %q to remove", key)
				}
				delete(c, key)
			default:
				return nil, fmt.Errorf("unsupported operation %q", kind)
			}
			return c, nil
		}
		child, ok := c[key]
		if !ok {
			return nil, fmt.Errorf("no member %q", key)
		}
		next, err := applyAt(child, parts[1:], kind, val)
		if err != nil {
			return nil, err
		}
		c[key] = next
		return c, nil
	case []any:
		if last && kind == "add" && key == "-" {
			return append(c, val), nil
		}
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i > len(c) || (i == len(c) && !(last && kind == "add")) {
			return nil, fmt.Errorf("index %q out of range of an array of %d", key, len(c))
		}
		if last {
			switch kind {
			case "add":
				c = append(c, nil)
				copy(c[i+1:], c[i:])
				c[i] = val
			case "replace":
				c[i] = val
			case "remove":
				c = append(c[:i], c[i+1:]...)
			default:
				return nil, fmt.Errorf("unsupported operation %q", kind)
			}
			return c, nil
		}
		next, err := applyAt(c[i], parts[1:], kind, val)
		if err != nil {
			return nil, err
		}
		c[i] = next
		return c, nil
	default:
		return nil, fmt.Errorf("%q: not an object or array", key)
	}
}
