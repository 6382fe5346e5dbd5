package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/moora-go/moora/internal/yamlpos"
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
	MaxBytes = 256 << 10 // bytes of a spec file, checked before parsing
	MaxDepth = 100       // nesting of objects and arrays
	MaxNodes = 50_000    // values, after YAML alias expansion
)

// NodeKind is the kind of a value: one of JSON's (yamlpos.Kind, which
// the ReAct example's configuration reader shares).
type NodeKind = yamlpos.Kind

const (
	NullNode   = yamlpos.Null
	BoolNode   = yamlpos.Bool
	NumberNode = yamlpos.Number
	StringNode = yamlpos.String
	ArrayNode  = yamlpos.Array
	ObjectNode = yamlpos.Object
)

// A Node is one value of the spec document with its source position. Objects
// keep their keys in source order.
type Node struct {
	kind   NodeKind
	pos    Pos
	str    string // string value; number literal in JSON syntax; "true"/"false"
	items  []*Node
	keys   []string
	keyPos []Pos
	vals   []*Node
}

// get returns the value of key in an object node, or nil.
func (n *Node) get(key string) *Node {
	if n == nil || n.kind != ObjectNode {
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
func (n *Node) value() any {
	switch n.kind {
	case BoolNode:
		return n.str == "true"
	case NumberNode:
		return json.Number(n.str)
	case StringNode:
		return n.str
	case ArrayNode:
		a := make([]any, len(n.items))
		for i, it := range n.items {
			a[i] = it.value()
		}
		return a
	case ObjectNode:
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			m[k] = n.vals[i].value()
		}
		return m
	}
	return nil
}

// appendJSON appends n as JSON, keeping the key order of objects.
func (n *Node) appendJSON(b []byte) []byte {
	switch n.kind {
	case NullNode:
		return append(b, "null"...)
	case BoolNode, NumberNode:
		return append(b, n.str...)
	case StringNode:
		return appendJSONString(b, n.str)
	case ArrayNode:
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

// Decode decodes a parsed document into the spec types with
// encoding/json, keeping the order of properties (Properties decodes in
// order). On a document that does not match the spec schema it fails; Load
// reports the schema's diagnostics instead.
func Decode(root *Node) (*Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(root.appendJSON(nil)))
	dec.UseNumber()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

// appendJSONString appends s as a JSON string. Most strings of a spec
// need no escape: they are copied between quotes; any other is quoted by
// encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// A Source is a parsed spec document. Values are found by JSON Pointer
// (RFC 6901), walking the tree: lookups are rare (diagnostics and a few
// positions), so no index is built.
type Source struct {
	file string
	root *Node
}

type entry struct {
	n      *Node
	keyPos Pos // position of the key naming the value; zero for array items
}

// NewSource returns the source of the document root of file.
func NewSource(file string, root *Node) *Source {
	return &Source{file: file, root: root}
}

// lookup returns the value at ptr, or ok false.
func (s *Source) lookup(ptr string) (e entry, ok bool) {
	e.n = s.root
	for _, tok := range SplitPointer(ptr) {
		switch e.n.kind {
		case ObjectNode:
			i := slices.Index(e.n.keys, tok)
			if i < 0 {
				return entry{}, false
			}
			e = entry{e.n.vals[i], e.n.keyPos[i]}
		case ArrayNode:
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
func (s *Source) pos(ptr string) Pos {
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
func (s *Source) keyPos(ptr string) Pos {
	if e, ok := s.lookup(ptr); ok && e.keyPos.Line > 0 {
		return e.keyPos
	}
	return s.pos(ptr)
}

// Node returns the value at ptr, or nil.
func (s *Source) Node(ptr string) *Node {
	e, _ := s.lookup(ptr)
	return e.n
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// EscapePointer escapes a key as a reference token of a JSON Pointer.
func EscapePointer(key string) string { return pointerEscaper.Replace(key) }

// SplitPointer splits a JSON Pointer into its unescaped reference tokens.
func SplitPointer(ptr string) []string {
	if ptr == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, p := range parts {
		parts[i] = pointerUnescaper.Replace(p)
	}
	return parts
}

// ElementName renders a JSON Pointer the way diagnostics name a spec element:
// observations.user.llm.userMessages, actors[1], $defs.Shape.oneOf[0]. A
// key longer than any name may be is abbreviated (abbreviate).
func ElementName(ptr string) string {
	var b strings.Builder
	for _, p := range SplitPointer(ptr) {
		p = abbreviate(p)
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

// Parse parses a spec document: JSON when the file name ends in .json,
// YAML otherwise. It rejects a document of more than MaxBytes before
// reading it, and empty keys, which name nothing and which JSON Pointers in
// the validator's errors cannot tell from their parent.
func Parse(file string, data []byte) (*Node, error) {
	if len(data) > MaxBytes {
		return nil, TooLarge(file)
	}
	data = bytes.TrimPrefix(data, UTF8BOM)
	if !utf8.Valid(data) {
		off := yamlpos.InvalidUTF8(data)
		return nil, &Diagnostic{Pos: newLineIndex(file, data).pos(off),
			Message: fmt.Sprintf("the spec is not valid UTF-8: byte %#x", data[off]), Hint: "save the file as UTF-8"}
	}
	var root *Node
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

// TooLarge is the error of a spec file of more than MaxBytes, at its first
// line.
func TooLarge(file string) *Diagnostic {
	return &Diagnostic{Pos: Pos{File: file, Line: 1, Col: 1},
		Message: fmt.Sprintf("the spec has more than %d bytes (%d KiB), the most a spec may have", MaxBytes, MaxBytes>>10)}
}

// ParseJSON parses a JSON document that holds up to maxNodes values, such
// as a spec's history, which holds many specs; otherwise it is Parse.
func ParseJSON(file string, data []byte, maxNodes int) (*Node, error) {
	data = bytes.TrimPrefix(data, UTF8BOM)
	if !utf8.Valid(data) {
		off := yamlpos.InvalidUTF8(data)
		return nil, &Diagnostic{Pos: newLineIndex(file, data).pos(off), Message: fmt.Sprintf("not valid UTF-8: byte %#x", data[off])}
	}
	root, err := parseJSONMax(file, data, maxNodes)
	if err != nil {
		return nil, err
	}
	if ds := emptyKeys(root); len(ds) > 0 {
		return nil, ds
	}
	return root, nil
}

// UTF8BOM is the UTF-8 byte order mark, which a spec may start with in
// either syntax.
var UTF8BOM = []byte("\ufeff")

// emptyKeys reports every empty key of the document, except inside the
// value of an empty key.
func emptyKeys(root *Node) Diagnostics {
	var ds Diagnostics
	var path []string
	var walk func(n *Node)
	walk = func(n *Node) {
		switch n.kind {
		case ArrayNode:
			for i, it := range n.items {
				path = append(path, strconv.Itoa(i))
				walk(it)
				path = path[:len(path)-1]
			}
		case ObjectNode:
			for i, k := range n.keys {
				if k == "" {
					elem := ""
					if len(path) > 0 {
						elem = ElementName("/" + strings.Join(path, "/"))
					}
					ds = append(ds, &Diagnostic{Pos: n.keyPos[i], Element: elem, Message: `empty key ""`, Hint: "every key of a spec is a name or a keyword; give it one"})
					continue
				}
				path = append(path, EscapePointer(k))
				walk(n.vals[i])
				path = path[:len(path)-1]
			}
		}
	}
	walk(root)
	ds.Sort()
	return ds
}

// lineIndex converts byte offsets to positions. It is used by one
// goroutine, the parser's, which asks for offsets mostly in increasing
// order: the column of the last offset asked for is kept, so that the
// values of one long line cost their distance from the previous one, not
// from the line's start (a minified document is one line).
type lineIndex struct {
	file   string
	data   []byte
	starts []int

	lastLine, lastOff, lastCol int // the last position computed; lastOff -1: none
}

func newLineIndex(file string, data []byte) *lineIndex {
	li := &lineIndex{file: file, data: data, starts: []int{0}, lastOff: -1}
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
	var col int
	if li.lastOff >= 0 && li.lastLine == line && li.lastOff <= off {
		col = li.lastCol + utf8.RuneCount(li.data[li.lastOff:off])
	} else {
		col = utf8.RuneCount(li.data[li.starts[line]:off]) + 1
	}
	li.lastLine, li.lastOff, li.lastCol = line, off, col
	return Pos{File: li.file, Line: line + 1, Col: col}
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

// JSONInteger says whether s is an integer written the way JSON writes it
// (no sign but -, no leading zeros) that fits an int64.
func JSONInteger(s string) bool { return yamlpos.JSONInteger(s) }

// File is the name of the spec file, as positions give it.
func (s *Source) File() string { return s.file }

// Root is the document.
func (s *Source) Root() *Node { return s.root }

// ValuePos returns the position of the value at ptr, or of the nearest
// enclosing value that exists.
func (s *Source) ValuePos(ptr string) Pos { return s.pos(ptr) }

// KeyPos returns the position of the key naming the value at ptr, or of the
// value itself for array items and the root.
func (s *Source) KeyPos(ptr string) Pos { return s.keyPos(ptr) }

// Has says whether the document has a value at ptr.
func (s *Source) Has(ptr string) bool {
	_, ok := s.lookup(ptr)
	return ok
}

// Kind is the kind of value n is.
func (n *Node) Kind() NodeKind { return n.kind }

// Str is the text of a string, number or boolean.
func (n *Node) Str() string { return n.str }

// Get returns the value of key in an object, or nil.
func (n *Node) Get(key string) *Node { return n.get(key) }

// Value is n in the generic form encoding/json produces with UseNumber:
// map[string]any, []any, json.Number, string, bool and nil.
func (n *Node) Value() any { return n.value() }

// Keys are the keys of an object, in the order written.
func (n *Node) Keys() []string { return n.keys }

// UnescapePointer unescapes one reference token of a JSON Pointer.
func UnescapePointer(tok string) string { return pointerUnescaper.Replace(tok) }

// AppendIndentedJSON appends n as JSON indented by two spaces a level, each
// line after the first starting with prefix, keeping the key order of
// objects and the literals of numbers; the top-level keys in skip are left
// out. Empty objects and arrays are written {} and [].
func (n *Node) AppendIndentedJSON(b []byte, prefix string, skip ...string) []byte {
	return n.appendIndented(b, prefix, skip)
}

func (n *Node) appendIndented(b []byte, prefix string, skip []string) []byte {
	switch n.kind {
	case ArrayNode:
		if len(n.items) == 0 {
			return append(b, "[]"...)
		}
		b = append(b, '[')
		for i, it := range n.items {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(append(b, '\n'), prefix...), "  "...)
			b = it.appendIndented(b, prefix+"  ", nil)
		}
		return append(append(append(b, '\n'), prefix...), ']')
	case ObjectNode:
		b = append(b, '{')
		first := true
		for i, k := range n.keys {
			if slices.Contains(skip, k) {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(append(append(b, '\n'), prefix...), "  "...)
			b = appendJSONString(b, k)
			b = append(b, ": "...)
			b = n.vals[i].appendIndented(b, prefix+"  ", nil)
		}
		if first {
			return append(b, '}')
		}
		return append(append(append(b, '\n'), prefix...), '}')
	}
	return n.appendJSON(b)
}

// Pos returns the position of the value.
func (n *Node) Pos() Pos { return n.pos }

// Items returns the elements of an array node.
func (n *Node) Items() []*Node { return n.items }
