package modelgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The front end reads a spec file into a tree of nodes that keeps the
// position of every key and value: YAML with github.com/goccy/go-yaml
// (yaml.go), JSON with the tokenizer of encoding/json (json.go). The
// schema validator, the model checks and the diagnostics find values in
// it by JSON Pointer.

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

// decodeSpec decodes a parsed document into the spec types with
// encoding/json, keeping the order of properties (Properties decodes in
// order). On a document that does not match the spec schema it fails; Load
// reports the schema's diagnostics instead.
func decodeSpec(root *node) (*Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(root.appendJSON(nil)))
	dec.UseNumber()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	return &s, nil
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

// clamp keeps a position the YAML parser reported inside the document: an
// implicit null after "key:" at the end of a line is placed just after
// the colon.
func (li *lineIndex) clamp(p Pos) Pos {
	p.Line = min(max(p.Line, 1), len(li.starts))
	end := len(li.data)
	if p.Line < len(li.starts) {
		end = li.starts[p.Line] - 1
	}
	p.Col = min(max(p.Col, 1), utf8.RuneCount(li.data[li.starts[p.Line-1]:end])+1)
	return p
}

// after returns the position of the first character after the one at
// line:col (1-based, col in characters) that is not a space or a line
// break.
func (li *lineIndex) after(line, col int) Pos {
	if line < 1 || line > len(li.starts) {
		return li.pos(len(li.data))
	}
	off := li.starts[line-1]
	for i := 1; i < col && off < len(li.data); i++ {
		_, size := utf8.DecodeRune(li.data[off:])
		off += size
	}
	if off < len(li.data) {
		off++ // the character at line:col
	}
	for off < len(li.data) && (li.data[off] == ' ' || li.data[off] == '\n' || li.data[off] == '\r') {
		off++
	}
	return li.pos(off)
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
