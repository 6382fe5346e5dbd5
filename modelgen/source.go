package modelgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Pos is a position in a spec file. Line and Col are 1-based; Col counts
// characters (runes). A zero Col means the column is unknown.
type Pos struct {
	File string
	Line int
	Col  int
}

func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Limits that keep a hostile spec from exhausting the loader.
const (
	maxDepth = 100     // nesting of objects and arrays
	maxNodes = 100_000 // values, after YAML alias expansion
)

type nodeKind uint8

const (
	nullNode nodeKind = iota
	boolNode
	numberNode
	stringNode
	arrayNode
	objectNode
)

var kindNames = [...]string{"null", "boolean", "number", "string", "array", "object"}

func (k nodeKind) String() string { return kindNames[k] }

// A node is one value of the spec document with its source position. Objects
// keep their keys in source order.
type node struct {
	kind   nodeKind
	pos    Pos
	str    string // string value; number literal in JSON syntax; "true"/"false"
	items  []*node
	keys   []string
	keyPos []Pos
	vals   []*node
}

// get returns the value of key in an object node, or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != objectNode {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// value converts n to the generic form encoding/json produces with UseNumber:
// map[string]any, []any, json.Number, string, bool and nil.
func (n *node) value() any {
	switch n.kind {
	case boolNode:
		return n.str == "true"
	case numberNode:
		return json.Number(n.str)
	case stringNode:
		return n.str
	case arrayNode:
		a := make([]any, len(n.items))
		for i, it := range n.items {
			a[i] = it.value()
		}
		return a
	case objectNode:
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			m[k] = n.vals[i].value()
		}
		return m
	}
	return nil
}

// appendJSON appends n as JSON, keeping the key order of objects.
func (n *node) appendJSON(b []byte) []byte {
	switch n.kind {
	case nullNode:
		return append(b, "null"...)
	case boolNode, numberNode:
		return append(b, n.str...)
	case stringNode:
		return appendJSONString(b, n.str)
	case arrayNode:
		b = append(b, '[')
		for i, it := range n.items {
			if i > 0 {
				b = append(b, ',')
			}
			b = it.appendJSON(b)
		}
		return append(b, ']')
	}
	b = append(b, '{')
	for i, k := range n.keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = n.vals[i].appendJSON(b)
	}
	return append(b, '}')
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// A source is a parsed spec document. Values are found by JSON Pointer
// (RFC 6901), walking the tree: lookups are rare (diagnostics and a few
// positions), so no index is built.
type source struct {
	file string
	root *node
}

type entry struct {
	n      *node
	keyPos Pos // position of the key naming the value; zero for array items
}

func newSource(file string, root *node) *source {
	return &source{file: file, root: root}
}

// lookup returns the value at ptr, or ok false.
func (s *source) lookup(ptr string) (e entry, ok bool) {
	e.n = s.root
	for _, tok := range splitPointer(ptr) {
		switch e.n.kind {
		case objectNode:
			i := slices.Index(e.n.keys, tok)
			if i < 0 {
				return entry{}, false
			}
			e = entry{e.n.vals[i], e.n.keyPos[i]}
		case arrayNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(e.n.items) {
				return entry{}, false
			}
			e = entry{e.n.items[i], Pos{}}
		default:
			return entry{}, false
		}
	}
	return e, true
}

// pos returns the position of the value at ptr, falling back to the nearest
// enclosing value that exists.
func (s *source) pos(ptr string) Pos {
	for {
		if e, ok := s.lookup(ptr); ok {
			return e.n.pos
		}
		if ptr == "" {
			return Pos{File: s.file, Line: 1, Col: 1}
		}
		ptr = ptr[:strings.LastIndexByte(ptr, '/')]
	}
}

// keyPos returns the position of the key naming the value at ptr, or of the
// value itself for array items and the root.
func (s *source) keyPos(ptr string) Pos {
	if e, ok := s.lookup(ptr); ok && e.keyPos.Line > 0 {
		return e.keyPos
	}
	return s.pos(ptr)
}

// node returns the value at ptr, or nil.
func (s *source) node(ptr string) *node {
	e, _ := s.lookup(ptr)
	return e.n
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

func escapePointer(key string) string { return pointerEscaper.Replace(key) }

// splitPointer splits a JSON Pointer into its unescaped reference tokens.
func splitPointer(ptr string) []string {
	if ptr == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, p := range parts {
		parts[i] = pointerUnescaper.Replace(p)
	}
	return parts
}

// elementName renders a JSON Pointer the way diagnostics name a spec element:
// observations.user.llm.userMessages, actors[1], $defs.Shape.oneOf[0].
func elementName(ptr string) string {
	var b strings.Builder
	for _, p := range splitPointer(ptr) {
		if _, err := strconv.Atoi(p); err == nil && b.Len() > 0 {
			b.WriteString("[" + p + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	if b.Len() == 0 {
		return "(document)"
	}
	return b.String()
}

// parseSpec parses a spec document: JSON when the file name ends in .json,
// YAML otherwise. It rejects empty keys, which name nothing and which JSON
// Pointers in the validator's errors cannot tell from their parent.
func parseSpec(file string, data []byte) (*node, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	if !utf8.Valid(data) {
		off := invalidUTF8(data)
		return nil, &Diagnostic{Pos: newLineIndex(file, data).pos(off),
			Message: fmt.Sprintf("the spec is not valid UTF-8: byte %#x", data[off]), Hint: "save the file as UTF-8"}
	}
	var root *node
	var err error
	if strings.HasSuffix(strings.ToLower(file), ".json") {
		root, err = parseJSON(file, data)
	} else {
		root, err = parseYAML(file, data)
	}
	if err != nil {
		return nil, err
	}
	if ds := emptyKeys(root); len(ds) > 0 {
		return nil, ds
	}
	return root, nil
}

// utf8BOM is the UTF-8 byte order mark, which a spec may start with in
// either syntax.
var utf8BOM = []byte("\ufeff")

// invalidUTF8 returns the offset of the first byte of data that is not
// part of a UTF-8 encoded character.
func invalidUTF8(data []byte) int {
	for off := 0; off < len(data); {
		r, size := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && size <= 1 {
			return off
		}
		off += size
	}
	return len(data)
}

// emptyKeys reports every empty key of the document, except inside the
// value of an empty key.
func emptyKeys(root *node) Diagnostics {
	var ds Diagnostics
	var path []string
	var walk func(n *node)
	walk = func(n *node) {
		switch n.kind {
		case arrayNode:
			for i, it := range n.items {
				path = append(path, strconv.Itoa(i))
				walk(it)
				path = path[:len(path)-1]
			}
		case objectNode:
			for i, k := range n.keys {
				if k == "" {
					elem := ""
					if len(path) > 0 {
						elem = elementName("/" + strings.Join(path, "/"))
					}
					ds = append(ds, &Diagnostic{Pos: n.keyPos[i], Element: elem, Message: `empty key ""`, Hint: "every key of a spec is a name or a keyword; give it one"})
					continue
				}
				path = append(path, escapePointer(k))
				walk(n.vals[i])
				path = path[:len(path)-1]
			}
		}
	}
	walk(root)
	ds.sort()
	return ds
}

// lineIndex converts byte offsets to positions.
type lineIndex struct {
	file   string
	data   []byte
	starts []int
}

func newLineIndex(file string, data []byte) *lineIndex {
	li := &lineIndex{file: file, data: data, starts: []int{0}}
	for i, c := range data {
		if c == '\n' {
			li.starts = append(li.starts, i+1)
		}
	}
	return li
}

func (li *lineIndex) pos(off int) Pos {
	off = min(max(off, 0), len(li.data))
	line := 0
	for lo, hi := 0, len(li.starts); lo < hi; {
		m := (lo + hi) / 2
		if li.starts[m] <= off {
			line, lo = m, m+1
		} else {
			hi = m
		}
	}
	col := utf8.RuneCount(li.data[li.starts[line]:off]) + 1
	return Pos{File: li.file, Line: line + 1, Col: col}
}

type jsonParser struct {
	dec   *json.Decoder
	data  []byte
	li    *lineIndex
	nodes int
}

func parseJSON(file string, data []byte) (*node, error) {
	p := &jsonParser{dec: json.NewDecoder(bytes.NewReader(data)), data: data, li: newLineIndex(file, data)}
	p.dec.UseNumber()
	tok, off, err := p.next()
	if err == io.EOF {
		return nil, &Diagnostic{Pos: Pos{File: file, Line: 1, Col: 1}, Message: "empty spec"}
	}
	if err != nil {
		return nil, p.syntaxError(err, off)
	}
	n, err := p.value(tok, off, 0)
	if err != nil {
		return nil, err
	}
	if _, off, err := p.next(); err != io.EOF {
		return nil, &Diagnostic{Pos: p.li.pos(off), Message: "unexpected data after the top-level JSON value"}
	}
	return n, nil
}

// next returns the next token and the offset where it starts.
func (p *jsonParser) next() (json.Token, int, error) {
	off := int(p.dec.InputOffset())
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	tok, err := p.dec.Token()
	return tok, off, err
}

func (p *jsonParser) syntaxError(err error, off int) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = int(se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
		return &Diagnostic{Pos: p.li.pos(len(p.data)), Message: "unexpected end of JSON input"}
	}
	return &Diagnostic{Pos: p.li.pos(off), Message: strings.TrimPrefix(err.Error(), "json: ")}
}

func (p *jsonParser) value(tok json.Token, off, depth int) (*node, error) {
	pos := p.li.pos(off)
	if p.nodes++; p.nodes > maxNodes {
		return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("spec has more than %d values", maxNodes)}
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: nullNode, pos: pos}, nil
	case bool:
		return &node{kind: boolNode, pos: pos, str: strconv.FormatBool(t)}, nil
	case json.Number:
		return &node{kind: numberNode, pos: pos, str: canonicalNumber(t.String())}, nil
	case string:
		return &node{kind: stringNode, pos: pos, str: t}, nil
	}
	if depth > maxDepth {
		return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("values nested deeper than %d levels", maxDepth)}
	}
	if tok == json.Delim('[') {
		n := &node{kind: arrayNode, pos: pos}
		for {
			tok, off, err := p.next()
			if err != nil {
				return nil, p.syntaxError(err, off)
			}
			if tok == json.Delim(']') {
				return n, nil
			}
			it, err := p.value(tok, off, depth+1)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, it)
		}
	}
	n := &node{kind: objectNode, pos: pos}
	seen := make(map[string]Pos)
	for {
		tok, off, err := p.next()
		if err != nil {
			return nil, p.syntaxError(err, off)
		}
		if tok == json.Delim('}') {
			return n, nil
		}
		key := tok.(string) // the decoder only yields string keys here
		kpos := p.li.pos(off)
		if first, dup := seen[key]; dup {
			return nil, &Diagnostic{Pos: kpos, Message: fmt.Sprintf("duplicate key %q (first at %d:%d)", key, first.Line, first.Col)}
		}
		seen[key] = kpos
		tok, off, err = p.next()
		if err != nil {
			return nil, p.syntaxError(err, off)
		}
		v, err := p.value(tok, off, depth+1)
		if err != nil {
			return nil, err
		}
		n.keys = append(n.keys, key)
		n.keyPos = append(n.keyPos, kpos)
		n.vals = append(n.vals, v)
	}
}

var yamlLineError = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func parseYAML(file string, data []byte) (*node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, &Diagnostic{Pos: Pos{File: file, Line: 1, Col: 1}, Message: "empty spec"}
		}
		return nil, yamlError(file, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		if err != nil {
			return nil, yamlError(file, data, err)
		}
		return nil, &Diagnostic{Pos: Pos{File: file, Line: extra.Line, Col: extra.Column}, Message: "more than one YAML document; a spec is a single document"}
	}
	c := &yamlConverter{file: file}
	return c.convert(&doc, 0)
}

// yamlError turns a yaml.v3 error into a diagnostic. yaml.v3 reports a line
// (no column) for most errors; those without one are placed at the end of
// the document when it ended too early, and at its start otherwise.
func yamlError(file string, data []byte, err error) error {
	msg := err.Error()
	if m := yamlLineError.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Diagnostic{Pos: Pos{File: file, Line: max(line, 1)}, Message: m[2]}
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 1
	if strings.Contains(msg, "end of stream") {
		line = newLineIndex(file, data).pos(len(data)).Line
	}
	return &Diagnostic{Pos: Pos{File: file, Line: line}, Message: msg}
}

type yamlConverter struct {
	file  string
	nodes int
}

func (c *yamlConverter) convert(y *yaml.Node, depth int) (*node, error) {
	pos := Pos{File: c.file, Line: y.Line, Col: y.Column}
	if c.nodes++; c.nodes > maxNodes {
		return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("spec has more than %d values (after expanding YAML aliases)", maxNodes)}
	}
	if depth > maxDepth {
		return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("values nested deeper than %d levels", maxDepth)}
	}
	switch y.Kind {
	case yaml.DocumentNode:
		if len(y.Content) == 0 {
			return nil, &Diagnostic{Pos: pos, Message: "empty spec"}
		}
		return c.convert(y.Content[0], depth)
	case yaml.AliasNode:
		if y.Alias == nil {
			return nil, &Diagnostic{Pos: pos, Message: "unresolved YAML alias"}
		}
		return c.convert(y.Alias, depth+1)
	case yaml.SequenceNode:
		n := &node{kind: arrayNode, pos: pos}
		for _, it := range y.Content {
			v, err := c.convert(it, depth+1)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, v)
		}
		return n, nil
	case yaml.MappingNode:
		n := &node{kind: objectNode, pos: pos}
		seen := make(map[string]Pos)
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			kpos := Pos{File: c.file, Line: k.Line, Col: k.Column}
			if k.Kind != yaml.ScalarNode {
				return nil, &Diagnostic{Pos: kpos, Message: "mapping keys must be strings"}
			}
			if k.ShortTag() == "!!merge" {
				return nil, &Diagnostic{Pos: kpos, Message: "YAML merge keys (<<) are not supported; repeat the keys or use $defs and $ref"}
			}
			if first, dup := seen[k.Value]; dup {
				return nil, &Diagnostic{Pos: kpos, Message: fmt.Sprintf("duplicate key %q (first at %d:%d)", k.Value, first.Line, first.Col)}
			}
			seen[k.Value] = kpos
			val, err := c.convert(v, depth+1)
			if err != nil {
				return nil, err
			}
			n.keys = append(n.keys, k.Value)
			n.keyPos = append(n.keyPos, kpos)
			n.vals = append(n.vals, val)
		}
		return n, nil
	case yaml.ScalarNode:
		return c.scalar(y, pos)
	}
	return nil, &Diagnostic{Pos: pos, Message: "unsupported YAML node"}
}

func (c *yamlConverter) scalar(y *yaml.Node, pos Pos) (*node, error) {
	switch tag := y.ShortTag(); tag {
	case "!!null":
		return &node{kind: nullNode, pos: pos}, nil
	case "!!bool":
		if y.Value == "true" || y.Value == "false" {
			return &node{kind: boolNode, pos: pos, str: y.Value}, nil
		}
		var b bool
		if err := y.Decode(&b); err != nil {
			return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("invalid boolean %q", y.Value)}
		}
		return &node{kind: boolNode, pos: pos, str: strconv.FormatBool(b)}, nil
	case "!!int", "!!float":
		if jsonInteger(y.Value) {
			return &node{kind: numberNode, pos: pos, str: y.Value}, nil
		}
		var v any
		if err := y.Decode(&v); err != nil {
			return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("invalid number %q", y.Value)}
		}
		var s string
		switch v := v.(type) {
		case int:
			s = strconv.Itoa(v)
		case int64:
			s = strconv.FormatInt(v, 10)
		case uint64:
			s = strconv.FormatUint(v, 10)
		case float64:
			if math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("number %s cannot be represented in JSON", y.Value)}
			}
			s = strconv.FormatFloat(v, 'g', -1, 64)
		default:
			return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("invalid number %q", y.Value)}
		}
		return &node{kind: numberNode, pos: pos, str: s}, nil
	case "!!str", "!!timestamp":
		return &node{kind: stringNode, pos: pos, str: y.Value}, nil
	default:
		return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("unsupported YAML tag %s", tag)}
	}
}

// canonicalNumber writes an integral number without fraction or exponent
// (1.0 and 1e2 become 1 and 100), so that it decodes into a Go integer.
func canonicalNumber(lit string) string {
	if !strings.ContainsAny(lit, ".eE") {
		return lit
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<53 {
		return lit
	}
	return strconv.FormatInt(int64(f), 10)
}

// jsonInteger says whether s is an integer written the way JSON writes it
// (no sign but -, no leading zeros) that fits an int64.
func jsonInteger(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}
