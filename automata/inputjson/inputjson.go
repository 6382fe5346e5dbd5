// Package inputjson is the run-time half of the decl packages that agentgen
// generates: it decodes an agent's inputs from JSON, validating each against
// its JSON Schema. A generated decl package holds what is particular to its
// spec (the input types, the JSON Schema document of the inputs and a decode
// function per input type) and builds one Decoder of them; its DecodeInput
// is that Decoder's Decode. The UnmarshalJSON methods it generates for
// structs that hold sealed interfaces decode slices and maps of them with
// SliceOf and MapOf.
//
// The JSON of an input is an object whose "type" property names the input.
// Decode validates the object against that input's schema before decoding
// it, and fails, saying where, on empty data and on data that is not one
// JSON object, on an unknown type (listing the known ones), on every schema
// violation (with its location in the object), on a number too large for its
// Go type, on a property that encoding/json would match in another case, on
// what encoding/json reads without a word (a key written twice in one
// object, of which it keeps the last; bytes that are not UTF-8, which it
// replaces with U+FFFD), on a property the schema does not declare, and on
// an input over its Limits. An integer may be written as JSON Schema allows,
// 1.0 and 1e3 too.
//
// An object of an input holds only the properties its schema declares
// (its own, those of its allOf members, of the oneOf variant it is, of the
// $defs type it refers to): the Go type has no field for another, which
// would be dropped without a word. A schema opts out with
// additionalProperties: true (and a map, additionalProperties with a
// schema, takes any key). See closeObjects.
//
// A property the server assigns (a timestamp, stamped by the agent's
// admission step) is marked "readOnly": true in the schema. Decode requires
// it like any other, as the journal holds what the server gave it; the
// Decoder that ForClients returns, a generated DecodeClientInput, is for
// what clients send: it accepts such a property absent and drops what a
// client sends for it, unchecked, but refuses a key that differs from it
// only in case (which encoding/json would decode into it).
//
// # Limits
//
// Decode reads at most Limits.MaxBytes bytes (1 MiB unless WithLimits says
// otherwise) nested at most Limits.MaxDepth levels (64), so that a hostile
// input costs time and memory in proportion to its length, bounded by
// MaxBytes. It checks the length first, then the nesting, with one pass
// over the bytes that counts the brackets outside strings: an input over
// either limit is refused before anything parses it, in a message that
// names the limit to raise:
//
//	decoding input: 104857601 bytes, over the limit of 1048576 (inputjson.Limits.MaxBytes)
//	decoding input: nested deeper than 64 levels at byte offset 1234 (inputjson.Limits.MaxDepth)
//
// It also refuses, before validating, a number written with more than 1,000
// characters or with an exponent beyond ±1000: the schema validator reads
// numbers as math/big.Rat, at a cost growing with the square of the length
// and with the power of ten (one 1e999999 took 40 ms and 6 MB, and
// 1e1000001 made it panic). No int64 or float64 needs either.
//
// A generated DecodeInput uses the defaults. An input decoded again later,
// such as one replayed from a journal, must be within the limits it is
// decoded with then; keep them as high as the ones it was admitted with.
//
// Decode is not for inputs of many megabytes (files, documents): pass those
// by reference (a path, a URL) in a string property.
//
// # Speed
//
// Measured with
//
//	go test -run XXX -bench . -benchmem -count 3 ./automata/inputjson/
//
// on this project's 2-core CI machine (Intel Xeon, Go 1.26, quiet; medians
// of 3).
//
// Most inputs take a fast path (see fast.go): an input type whose schema
// uses only type, const and enum of strings, properties, required,
// additionalProperties, items, the bounds of lengths, counts and numbers,
// and $refs to such types, is checked in one pass over the bytes and
// decoded at once; the schema validator gets what the fast path is not
// certain of (a null, an integer written 1.0, a key in another case, a
// duplicate, a map of over 16 keys, an exponent) and every input it
// refuses, so that both accept the same inputs, decoded alike, and every
// error is the validator's. The starter agent's message, 263 bytes
// (BenchmarkStarterInput, medians of 3 in one run): 4.1 µs and 11
// allocations on the fast path, 24.0 µs and 117 on the validator's (×5.9);
// the fast path checks the syntax with a scanner of its own, four times
// encoding/json's pace (internal/jsonvalid), and then decodes with
// encoding/json, which is most of its time.
// The fast path's time per byte stays the same from n to 100n elements
// (BenchmarkDecodeFast, one run: array 1.5 ms at n=1,000, ×11.4, ×9.7;
// string 0.55 ms, ×11.1, ×7.0; forest 1.5 ms, ×11.6, ×7.9).
//
// The validator's path, which the figures below measure (the benchmarks
// turn the fast path off), runs at 3 to 6 MB/s for inputs of many small
// values, the schema validator taking about half of the time, and about 35
// MB/s for long strings. Time, bytes and allocations grow tenfold from n to 10n
// elements and again to 100n (BenchmarkDecode; the 100n inputs, 1.3 to 3.2
// MB, are over the default MaxBytes, which the benchmark raises):
//
//	shape     n=1,000   10n      100n     allocated at 100n
//	array     5.7 ms    ×10.5    ×9.1     344 MB  children, each a node
//	object    1.7 ms    ×13.2    ×10.7    113 MB  labels, a map of strings
//	string    0.47 ms   ×10.8    ×11.6     44 MB  one string of 20n bytes
//	integers  6.6 ms    ×9.9     ×10.0    371 MB  children, weights written 1.0e1
//	forest    6.1 ms    ×9.6     ×10.0    352 MB  chains of nodes, 63 levels deep
//
// Within MaxDepth, depth adds little (BenchmarkDecodeDepth: one chain of 6
// levels 0.020 ms, of 60 levels ×8.9); beyond it, the validator's cost per
// byte grows with depth (600 levels ×24, 6,000 levels ×27 and ×65 the
// bytes), which is what MaxDepth bounds. Numbers at the limits
// (BenchmarkDecodeNumbers: 1,000 characters, exponent 1000) validate at
// about 30 MB/s, ×9.3 and ×10.4 from 10 to 100 to 1,000 of them. Refusing
// an input over MaxBytes or MaxDepth takes 0.2 µs whatever its size
// (BenchmarkRefuse), and the nesting pass reads 0.5 to 1.5 GB/s
// (BenchmarkDeeperThan). Validating with the objects closed, as Decode
// does, costs what validating with the spec's open schema does
// (BenchmarkValidateClosed, n=1,000, medians of 3 in one run beside a CI
// job, closed/open: array ×1.06, object ×0.48, string ×1.05, integers
// ×0.95, forest ×1.00, the spread being the machine's noise), with the
// same bytes and allocations.
package inputjson

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/moora-go/moora/automata/internal/schemaerr"
)

// schemaURL is the URL under which a Decoder compiles its schema document.
const schemaURL = "agentgen:inputs.schema.json"

// Decoder decodes the inputs of one agent from JSON. Its methods may be
// called concurrently.
type Decoder[T any] struct {
	decoders map[string]func([]byte) (T, error)
	typeList string // the input types, quoted and sorted, for error messages
	schema   string // the JSON Schema document of the inputs
	schemas  func() (map[string]*typeSchema, error)
	// fast are the input types the fast path checks (see fast.go).
	fast   func() map[string]*fastNode
	limits Limits
	// For a decoder of what clients send (ForClients): the readOnly
	// properties of each input type, which its schemas do not require.
	client   bool
	readOnly func() (map[string][]string, error)
}

// NewDecoder returns a Decoder of the input types that are the keys of
// decoders, each decoded from its JSON by its function there (after
// validation, so the function needs to check nothing more). schema is the
// JSON Schema document of the inputs: the schema of each input type under
// "inputs", by type, and the shared types they use under "$defs". It is
// compiled, with draft 2020-12 and format assertions, on the first call of
// Decode that needs it; an error in it is reported by every such call.
func NewDecoder[T any](schema string, decoders map[string]func([]byte) (T, error)) *Decoder[T] {
	var quoted []string
	for _, typ := range slices.Sorted(maps.Keys(decoders)) {
		quoted = append(quoted, strconv.Quote(typ))
	}
	d := &Decoder[T]{decoders: maps.Clone(decoders), typeList: names(quoted), schema: schema}
	d.schemas = sync.OnceValues(func() (map[string]*typeSchema, error) {
		return compile(schema, slices.Collect(maps.Keys(d.decoders)))
	})
	d.fast = sync.OnceValue(func() map[string]*fastNode {
		if _, err := d.schemas(); err != nil {
			return nil // every Decode reports it, on the validator's path
		}
		return compileFast(schema, slices.Collect(maps.Keys(d.decoders)))
	})
	return d
}

// typeSchema is the schema of one input type, compiled twice: open, as the
// spec wrote it, and closed to the properties it does not declare (see
// closeObjects).
type typeSchema struct {
	open, closed *jsonschema.Schema
}

// compile compiles the schema of each of the input types types in the
// schema document doc, open and closed.
func compile(doc string, types []string) (map[string]*typeSchema, error) {
	closedDoc, err := closeObjects(doc)
	if err != nil {
		return nil, err
	}
	open, err := compileDoc(doc, types)
	if err != nil {
		return nil, err
	}
	closed, err := compileDoc(closedDoc, types)
	if err != nil {
		return nil, err
	}
	schemas := make(map[string]*typeSchema, len(types))
	for _, typ := range types {
		schemas[typ] = &typeSchema{open: open[typ], closed: closed[typ]}
	}
	return schemas, nil
}

// compileDoc compiles the schema of each of the input types types in the
// schema document doc.
func compileDoc(doc string, types []string) (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	if err := c.AddResource(schemaURL, strings.NewReader(doc)); err != nil {
		return nil, err
	}
	schemas := make(map[string]*jsonschema.Schema, len(types))
	for _, typ := range types {
		s, err := c.Compile(schemaURL + "#/inputs/" + typ)
		if err != nil {
			return nil, err
		}
		schemas[typ] = s
	}
	return schemas, nil
}

// ForClients returns a Decoder of the inputs that clients send (a POST to
// an HTTP bridge, a form): the properties of an input that its schema
// marks "readOnly": true, which the server assigns (the agent's admission
// step stamps them, automata.WithAdmission), may be absent, and what a
// client sends for one is dropped, as JSON Schema allows for readOnly
// ("ignored or rejected by the owning authority") and as Kubernetes ignores
// the status a client sends: the input is decoded with the zero value
// there, for the admission step to assign. A key that differs from such a
// property only in case ("Timestamp" for "timestamp") is refused, as Decode
// refuses one, since encoding/json would decode it into the property.
// Everything else is as Decode checks it. readOnly counts on an input's own
// properties only (those under "properties" of its schema). The schemas of
// the input types without readOnly properties are Decode's, compiled once.
func (d *Decoder[T]) ForClients() *Decoder[T] {
	c := *d
	c.client = true
	c.readOnly = sync.OnceValues(func() (map[string][]string, error) { return readOnlyProperties(d.schema) })
	c.schemas = sync.OnceValues(func() (map[string]*typeSchema, error) {
		full, err := d.schemas()
		if err != nil {
			return nil, err
		}
		ro, err := c.readOnly()
		if err != nil {
			return nil, err
		}
		// Only the schemas of the input types with readOnly properties
		// differ from Decode's: the others are shared, not compiled again
		// (an agent's journal decodes with Decode, its server with this).
		var differ []string
		for typ := range d.decoders {
			if len(ro[typ]) > 0 {
				differ = append(differ, typ)
			}
		}
		if len(differ) == 0 {
			return full, nil
		}
		doc, err := withoutRequired(d.schema, ro)
		if err != nil {
			return nil, err
		}
		own, err := compile(doc, differ)
		if err != nil {
			return nil, err
		}
		schemas := maps.Clone(full)
		maps.Copy(schemas, own)
		return schemas, nil
	})
	return &c
}

// readOnlyProperties returns the readOnly properties of each input type of
// a schema document, in name order.
func readOnlyProperties(schema string) (map[string][]string, error) {
	var doc struct {
		Inputs map[string]struct {
			Properties map[string]struct {
				ReadOnly bool `json:"readOnly"`
			} `json:"properties"`
		} `json:"inputs"`
	}
	if err := json.Unmarshal([]byte(schema), &doc); err != nil {
		return nil, err
	}
	ro := make(map[string][]string)
	for typ, in := range doc.Inputs {
		for name, p := range in.Properties {
			if p.ReadOnly {
				ro[typ] = append(ro[typ], name)
			}
		}
		slices.Sort(ro[typ])
	}
	return ro, nil
}

// withoutRequired returns the schema document with the properties ro of
// each input type left out of its "required".
func withoutRequired(schema string, ro map[string][]string) (string, error) {
	var doc map[string]any
	dec := json.NewDecoder(strings.NewReader(schema))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return "", err
	}
	inputs, _ := doc["inputs"].(map[string]any)
	for typ, names := range ro {
		in, _ := inputs[typ].(map[string]any)
		required, _ := in["required"].([]any)
		in["required"] = slices.DeleteFunc(required, func(r any) bool {
			name, _ := r.(string)
			return slices.Contains(names, name)
		})
	}
	out, err := json.Marshal(doc)
	return string(out), err
}

// names lists quoted names for a message: "a", "b" and "c".
func names(list []string) string {
	switch len(list) {
	case 0:
		return "none"
	case 1:
		return list[0]
	}
	return strings.Join(list[:len(list)-1], ", ") + " and " + list[len(list)-1]
}

// Decode decodes an input from JSON: an object whose "type" names the input.
// It refuses an input over d's Limits before parsing it, validates the
// object against the input's JSON Schema before decoding, and reports an
// unknown type, every schema violation (with its location in the object)
// and data after the JSON value.
func (d *Decoder[T]) Decode(data []byte) (T, error) {
	var zero T
	if err := d.limits.check(data); err != nil {
		return zero, err
	}
	if !d.client {
		if in, ok := d.decodeFast(data); ok {
			return in, nil
		}
	}
	return d.decodeValidated(data)
}

// decodeValidated decodes an input within d's limits with the schema
// validator, and reports what is wrong with it.
func (d *Decoder[T]) decodeValidated(data []byte) (T, error) {
	var zero T
	var doc any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return zero, errors.New("decoding input: empty input")
		}
		return zero, fmt.Errorf("decoding input: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return zero, errors.New("decoding input: unexpected data after the JSON value")
	}
	// What encoding/json reads without a word: a key written twice, bytes
	// that are not UTF-8.
	if err := checkSyntax(data); err != nil {
		return zero, fmt.Errorf("decoding input: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return zero, errors.New("decoding input: not a JSON object")
	}
	typ, ok := obj["type"].(string)
	if !ok {
		return zero, fmt.Errorf("decoding input: missing string property \"type\" (want one of %s)", d.typeList)
	}
	decode, ok := d.decoders[typ]
	if !ok {
		return zero, fmt.Errorf("decoding input: unknown type %q (want one of %s)", typ, d.typeList)
	}
	// What a client sends for a property the server assigns is dropped
	// before anything reads it: it is not checked, not even its length.
	var assigned []string
	dropped := false
	if d.client {
		ro, err := d.readOnly()
		if err != nil {
			return zero, fmt.Errorf("decoding input: %w", err)
		}
		assigned = ro[typ]
		for _, name := range assigned {
			if _, ok := obj[name]; ok {
				delete(obj, name)
				dropped = true
			}
		}
	}
	if err := checkNumbers(obj, new(path)); err != nil {
		return zero, fmt.Errorf("decoding input %q: %w", typ, err)
	}
	schemas, err := d.schemas()
	if err != nil {
		return zero, fmt.Errorf("decoding input: %w", err)
	}
	// Validated closed; where that fails, validated open, whose errors
	// come first: a property that fails its schema is not counted as
	// declared by the closed one (draft 2020-12 keeps no annotation of a
	// failed schema), which would report it, and every property of the
	// objects around it, undeclared too.
	var undeclared error
	if err := schemas[typ].closed.Validate(doc); err != nil {
		if err := schemas[typ].open.Validate(doc); err != nil {
			return zero, inputError(typ, err)
		}
		undeclared = err
	}
	// encoding/json decodes into an int64 only a number written as an
	// integer; JSON Schema also reads 1.0 and 1e3 as integers.
	if _, changed := canonicalIntegers(doc); changed || dropped {
		var err error
		if data, err = json.Marshal(doc); err != nil {
			return zero, fmt.Errorf("decoding input %q: %w", typ, err)
		}
	}
	in, err := decode(data)
	if err != nil {
		return zero, decodeError(typ, err)
	}
	if err := checkDecoded(in, doc, assigned); err != nil {
		return zero, fmt.Errorf("decoding input %q: %w", typ, err)
	}
	if undeclared != nil {
		// After checkDecoded, which names a key written in another case
		// than the property's (an undeclared key too) as such.
		return zero, undeclaredError(typ, undeclared)
	}
	return in, nil
}

// canonicalIntegers rewrites in place each number in v that is an integer
// written with a fraction or an exponent (1.0, 1e3) and fits an int64 as an
// integer literal. It reports whether it rewrote any.
func canonicalIntegers(v any) (any, bool) {
	switch v := v.(type) {
	case json.Number:
		if lit, ok := integerLiteral(string(v)); ok {
			return json.Number(lit), true
		}
	case map[string]any:
		changed := false
		for k, e := range v {
			if c, ok := canonicalIntegers(e); ok {
				v[k], changed = c, true
			}
		}
		return v, changed
	case []any:
		changed := false
		for i, e := range v {
			if c, ok := canonicalIntegers(e); ok {
				v[i], changed = c, true
			}
		}
		return v, changed
	}
	return v, false
}

// integerLiteral returns the JSON number n, written with a fraction or an
// exponent, as an integer literal when it is an integer that fits an int64.
func integerLiteral(n string) (string, bool) {
	if !strings.ContainsAny(n, ".eE") {
		return "", false
	}
	sign, mant, exp := "", n, 0
	if strings.HasPrefix(mant, "-") {
		sign, mant = "-", mant[1:]
	}
	if i := strings.IndexAny(mant, "eE"); i >= 0 {
		e, err := strconv.Atoi(mant[i+1:])
		if err != nil || e < -1000 || e > 1000 {
			return "", false
		}
		mant, exp = mant[:i], e
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	// point is the number of digits before the decimal point.
	point := len(whole) + exp - (len(whole) + len(frac) - len(digits))
	digits = strings.TrimRight(digits, "0")
	switch {
	case digits == "":
		return "0", true
	case point < len(digits) || point > 19:
		return "", false
	}
	i, err := strconv.ParseInt(sign+digits+strings.Repeat("0", point-len(digits)), 10, 64)
	if err != nil {
		return "", false
	}
	return strconv.FormatInt(i, 10), true
}

// decodeError reports why a validated input did not decode: a number that does
// not fit its Go type.
func decodeError(typ string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("decoding input %q: /%s: %s does not fit in a Go %s", typ, strings.ReplaceAll(te.Field, ".", "/"), te.Value, te.Type)
	}
	return fmt.Errorf("decoding input %q: %w", typ, err)
}

// checkDecoded makes sure the decoded input is the JSON that was validated:
// encoding/json matches property names regardless of case, so {"Limit": 99}
// could otherwise fill a field whose "limit" the schema never saw. The
// properties in assigned, left for the server to assign, hold their zero
// values instead, unless the input has a key in another case that
// encoding/json matched to one of them ({"Timestamp": 99} for a readOnly
// "timestamp"): that is a client's value, refused like any other key in
// another case.
func checkDecoded(in any, doc any, assigned []string) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var got any
	if err := dec.Decode(&got); err != nil {
		return err
	}
	if m, ok := got.(map[string]any); ok {
		w, _ := doc.(map[string]any)
		for _, name := range assigned {
			if caseVariant(w, name) == "" {
				delete(m, name)
			}
		}
	}
	if problem, ok := jsonSubset(got, doc, new(path)); !ok {
		return errors.New(problem)
	}
	return nil
}

// jsonSubset reports whether every value in got is in want at the same place,
// and what is wrong where it is not: a key of want that encoding/json matched
// to another in a different case. p is where got and want are.
func jsonSubset(got, want any, p *path) (string, bool) {
	switch g := got.(type) {
	case map[string]any:
		w, ok := want.(map[string]any)
		if !ok {
			return p.String() + notAsWritten, false
		}
		for k, gv := range g {
			wv, ok := w[k]
			if ok {
				p.push(pathKey(k))
				problem, ok := jsonSubset(gv, wv, p)
				p.pop()
				if ok {
					continue
				}
				if caseVariant(w, k) == "" {
					return problem, false
				}
			}
			if v := caseVariant(w, k); v != "" {
				return fmt.Sprintf("%s/%s: property names are case-sensitive: %q is not %q", p, v, v, k), false
			}
			return p.child(pathKey(k)) + notAsWritten, false
		}
		return "", true
	case []any:
		w, ok := want.([]any)
		if !ok || len(w) != len(g) {
			return p.String() + notAsWritten, false
		}
		for i, gv := range g {
			p.push(pathIndex(i))
			problem, ok := jsonSubset(gv, w[i], p)
			p.pop()
			if !ok {
				return problem, false
			}
		}
		return "", true
	case json.Number:
		w, ok := want.(json.Number)
		if !ok {
			return p.String() + notAsWritten, false
		}
		if g == w {
			return "", true
		}
		gf, gerr := g.Float64()
		wf, werr := w.Float64()
		if gerr == nil && werr == nil && gf == wf {
			return "", true
		}
		return p.String() + notAsWritten, false
	}
	if got == want {
		return "", true
	}
	return p.String() + notAsWritten, false
}

// notAsWritten says that a decoded value is not in the input as written.
const notAsWritten = ": property names are case-sensitive; this one is not in the input as written"

// caseVariant returns the key of m other than k, the first in order, that
// encoding/json matches to k regardless of case, or "".
func caseVariant(m map[string]any, k string) string {
	var found string
	for mk := range m {
		if mk != k && strings.EqualFold(mk, k) && (found == "" || mk < found) {
			found = mk
		}
	}
	return found
}

// inputError reports every leaf of a schema violation, sorted, with its
// location in the input.
// undeclaredError is the error of an input that is valid but for
// properties its schema does not declare, err being the closed schema's.
func undeclaredError(typ string, err error) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("decoding input %q: %w", typ, err)
	}
	type leaf struct{ loc, problem string }
	var leaves []leaf
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			problem := e.Message
			if strings.HasSuffix(e.KeywordLocation, "/"+undeclaredKeyword) {
				problem = "a property the spec does not declare"
			}
			leaves = append(leaves, leaf{cmp.Or(e.InstanceLocation, "/"), problem})
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	// A closed object with an undeclared property deeper inside fails
	// as a whole, and draft 2020-12 then counts none of its properties as
	// declared in the object around it: report the deepest only.
	var problems []string
	for _, l := range leaves {
		parent := l.loc[:strings.LastIndexByte(l.loc, '/')+1]
		deeper := slices.ContainsFunc(leaves, func(o leaf) bool {
			return strings.HasPrefix(o.loc, parent) && strings.Count(o.loc, "/") > strings.Count(l.loc, "/")
		})
		if !deeper {
			problems = append(problems, l.loc+": "+l.problem)
		}
	}
	slices.Sort(problems)
	return fmt.Errorf("decoding input %q: %s", typ, strings.Join(slices.Compact(problems), "; "))
}

func inputError(typ string, err error) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("decoding input %q: %w", typ, err)
	}
	return fmt.Errorf("decoding input %q: %s", typ, strings.Join(schemaerr.Leaves(ve), "; "))
}
