package devpanel

import (
	"encoding/json"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Op is one operation of a JSON Patch (RFC 6902): what an input changed in
// the state, as the timeline shows it.
type Op struct {
	Op    string          `json:"op"` // add, remove, replace
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"` // absent for remove
}

// Diff returns the JSON Patch that turns before into after, both as they
// encode to JSON: objects key by key (sorted), arrays element by element
// (a grown array as adds at its end "/-", a shrunk one as removes from its
// end), anything else replaced whole. It encodes both whole: the timeline itself
// gets a patch of the same meaning by walking the Go values, which costs
// what the input changed, not the size of the state.
func Diff(before, after any) ([]Op, error) {
	a, err := asJSON(before)
	if err != nil {
		return nil, err
	}
	b, err := asJSON(after)
	if err != nil {
		return nil, err
	}
	ops := []Op{}
	diff(&ops, "", a, b)
	return ops, nil
}

func asJSON(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(data, &out)
	return out, err
}

func diff(ops *[]Op, path string, a, b any) {
	// A nil slice or map encodes as null: against an array or object, it
	// is an empty one, so that a first element is an add, not a replace.
	switch b.(type) {
	case []any:
		if a == nil {
			a = []any{}
		}
	case map[string]any:
		if a == nil {
			a = map[string]any{}
		}
	case nil:
		switch a.(type) {
		case []any:
			b = []any{}
		case map[string]any:
			b = map[string]any{}
		}
	}
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(a)+len(b))
		for k := range a {
			keys = append(keys, k)
		}
		for k := range b {
			if _, ok := a[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + "/" + escape(k)
			av, inA := a[k]
			bv, inB := b[k]
			switch {
			case !inB:
				*ops = append(*ops, Op{Op: "remove", Path: p})
			case !inA:
				*ops = append(*ops, Op{Op: "add", Path: p, Value: raw(bv)})
			default:
				diff(ops, p, av, bv)
			}
		}
		return
	case []any:
		b, ok := b.([]any)
		if !ok {
			break
		}
		n := min(len(a), len(b))
		for i := range n {
			diff(ops, path+"/"+strconv.Itoa(i), a[i], b[i])
		}
		for i := len(a) - 1; i >= n; i-- {
			*ops = append(*ops, Op{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
		}
		for _, v := range b[n:] {
			*ops = append(*ops, Op{Op: "add", Path: path + "/-", Value: raw(v)})
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*ops = append(*ops, Op{Op: "replace", Path: path, Value: raw(b)})
	}
}

// escape escapes a key as a JSON Pointer token (RFC 6901).
func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// raw encodes a value decoded from JSON, which cannot fail.
func raw(v any) json.RawMessage {
	data, _ := json.Marshal(v)
	return data
}
