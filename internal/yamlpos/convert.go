package yamlpos

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// A Node is a value of a YAML document as JSON has them, with its
// position: the tree Convert makes of a syntax tree. An object keeps its
// keys in the order written.
type Node struct {
	Kind            Kind
	Line, Col       int      // where the value starts
	KeyLine, KeyCol int      // where its key is, in the object that holds it; 0 if none
	Text            string   // a string; a number in JSON's syntax; "true" or "false"
	Items           []*Node  // an array's items
	Keys            []string // an object's keys
	Vals            []*Node  // an object's values, one per key
}

// Get is the value of key in an object, or nil.
func (n *Node) Get(key string) *Node {
	if n == nil || n.Kind != Object {
		return nil
	}
	if i := slices.Index(n.Keys, key); i >= 0 {
		return n.Vals[i]
	}
	return nil
}

// Value is n as encoding/json decodes JSON with UseNumber: map[string]any,
// []any, json.Number, string, bool and nil.
func (n *Node) Value() any {
	switch n.Kind {
	case Bool:
		return n.Text == "true"
	case Number:
		return json.Number(n.Text)
	case String:
		return n.Text
	case Array:
		a := make([]any, len(n.Items))
		for i, it := range n.Items {
			a[i] = it.Value()
		}
		return a
	case Object:
		m := make(map[string]any, len(n.Keys))
		for i, k := range n.Keys {
			m[k] = n.Vals[i].Value()
		}
		return m
	}
	return nil
}

// ConvertOptions are the limits of a conversion and the policy of its
// reader where the two readers differ. The zero value of each policy is
// the configuration reader's where it says so.
type ConvertOptions struct {
	MaxValues int // the most values, aliases expanded (each anchor, alias and tag is one too)
	MaxDepth  int // the deepest a value may be: the root is at 0, an alias adds 1

	// MaxKeyHops bounds the anchors and aliases a key goes through to
	// its text (KeyAliasLoop); 0: no bound.
	MaxKeyHops int

	// Text is the document: when set, every position is kept inside it
	// (its line within the lines, its column at most one past the line's
	// last character) and a node without a position is at 1:1; when nil, a
	// line or column is at least 1 and a node without a position is at
	// its parent's (a mapping's key, a value's key, an item's sequence).
	Text []byte

	// ItemAfterDash moves an item of a block sequence read as a string
	// that the parser places on a later line than its "-" (a plain
	// scalar continued on the next lines: the parser places it at its
	// last line) to the first character after its "-". It needs Text.
	ItemAfterDash bool

	// AliasAtAlias places the value of an alias at the alias; else it is
	// where the anchored value is.
	AliasAtAlias bool

	// RefuseAliasInAnchor refuses an alias inside the value of its own
	// anchor (AliasInAnchor); else it is expanded again, up to MaxDepth.
	RefuseAliasInAnchor bool

	// NullAtKey places a null written as such or as nothing ("key:") at
	// its key; else it is where the parser says (after the colon).
	NullAtKey bool

	// RefuseKeyWithoutValue refuses an entry of a flow mapping without a
	// colon, {a, b: 1} (KeyWithoutValue); else its value is null.
	RefuseKeyWithoutValue bool

	// ExactNumbers keeps a number written as a JSON integer that fits an
	// int64 as written, and refuses a float written with a digit other
	// than 0 that reads as 0 (TooCloseToZero); else numbers are formatted
	// by strconv (an integer in decimal, a float as 'g' writes it).
	ExactNumbers bool

	// Tags is how the tags YAML defines are read.
	Tags TagPolicy
}

// A TagPolicy is how Convert reads the tags YAML defines. Any other tag
// is UnsupportedTag.
type TagPolicy uint8

const (
	// LooseTags (the configuration reader's): !!str makes a scalar its
	// text, and a null or nothing "", and is TagOnNonScalar on anything
	// else; !!int, !!float, !!bool, !!null, !!map and !!seq leave their
	// value as it is, of whatever kind (a schema is left to say what it
	// should be). Another tag is refused before its value is read.
	LooseTags TagPolicy = iota
	// CheckedTags (the spec reader's): !!str and !!timestamp make a
	// scalar its text, and are TagOnNonScalar on anything else; the value
	// of another tag is read first, then the tag must be one of !!int,
	// !!float, !!bool, !!null, !!map and !!seq and the value of its kind
	// (TagMismatch).
	CheckedTags
)

// checkedTagKinds are the kinds of the values CheckedTags admits under a
// tag other than !!str and !!timestamp.
var checkedTagKinds = map[string]Kind{"!!int": Number, "!!float": Number, "!!bool": Bool, "!!null": Null, "!!map": Object, "!!seq": Array}

// A Fault is what a ConvertError says is wrong.
type Fault uint8

const (
	_               Fault = iota
	Crossed               // a limit crossed: ConvertError.Limit, TooManyValues or TooDeep
	UnknownAlias          // an alias (Name) of no anchor before it; InKey if in a key
	AliasInAnchor         // an alias (Name) inside the value of its own anchor
	MergeKey              // a merge key (<<)
	KeyNotScalar          // a key that is a collection
	KeyWithoutText        // a key that is nothing
	KeyAliasLoop          // a key of more than MaxKeyHops anchors and aliases
	KeyWithoutValue       // an entry (Name) of a flow mapping without a colon
	DuplicateKey          // a key (Name) already in its mapping, first at FirstLine:FirstCol
	UnsupportedTag        // a tag (Name) not of the policy
	TagMismatch           // a value of kind Got under a tag (Name) of another
	TagOnNonScalar        // a tag (Name) that takes a scalar on a collection
	NumberTooLarge        // an integer (Name, as written) that fits no 64 bits
	NumberNotJSON         // an infinity or a NaN (Name, as written)
	TooCloseToZero        // a float (Name, as written) that a float64 reads as 0
	UnsupportedNode       // a node of a type (Name, in lower case) that is no JSON value
)

// A Step is one step of a path from a document's root: the Index-th item
// of an array if Item, else the value of Key in an object.
type Step struct {
	Item  bool
	Index int
	Key   string
}

// A ConvertError says what a syntax tree holds that Convert refuses, and
// where: the fields other than Fault, Line, Col and Path are those the
// fault's comment names.
type ConvertError struct {
	Fault     Fault
	Line, Col int
	// Path leads from the root to the value at fault, or for a fault of
	// a key (a key's alias, a merge key, a key without text, value or
	// scalar, a duplicate) to the mapping that holds the key.
	Path []Step

	Name                string // an alias's name, a tag, a key, a number as written, a node's type
	InKey               bool
	Limit               Limit
	Got                 Kind
	FirstLine, FirstCol int
	// For KeyWithoutValue: HasPrev if the entry before it has a scalar
	// key, PrevKey, and a plain string value, PrevText.
	HasPrev           bool
	PrevKey, PrevText string
}

// Error says what e is, in this package's words: the readers say it in
// theirs.
func (e *ConvertError) Error() string {
	return fmt.Sprintf("%d:%d: YAML conversion fault %d %q", e.Line, e.Col, e.Fault, e.Name)
}

// Convert turns the syntax tree of a document (a body Parse returns)
// into a tree of Node, with aliases expanded, tags resolved, and what
// JSON cannot hold refused, as opts say.
func Convert(doc ast.Node, opts ConvertOptions) (*Node, *ConvertError) {
	c := &converter{opts: opts, anchors: map[string]ast.Node{}, expanding: map[string]bool{}}
	if opts.Text != nil {
		c.text = newLineIndex(opts.Text)
	}
	line, col := c.position(doc, 1, 1)
	return c.convert(doc, line, col, 0)
}

// PositionIn is the position of n (Position) kept inside text, as Convert
// with Text keeps it; 1:1 for a node without a position.
func PositionIn(n ast.Node, text []byte) (line, col int) {
	line, col, ok := Position(n)
	if !ok {
		line, col = 1, 1
	}
	return newLineIndex(text).clamp(line, col)
}

type converter struct {
	opts      ConvertOptions
	text      *lineIndex // nil without opts.Text
	anchors   map[string]ast.Node
	expanding map[string]bool // the anchors whose values are being read (RefuseAliasInAnchor)
	values    int
	path      []Step
}

// position is where y starts; (line, col) is its parent's.
func (c *converter) position(y ast.Node, line, col int) (int, int) {
	l, cl, ok := Position(y)
	if !ok {
		if c.text != nil {
			l, cl = 1, 1
		} else {
			l, cl = line, col
		}
	}
	if c.text != nil {
		return c.text.clamp(l, cl)
	}
	return max(l, 1), max(cl, 1)
}

// fail is a ConvertError at line:col, at the current path.
func (c *converter) fail(f Fault, line, col int, name string) *ConvertError {
	return &ConvertError{Fault: f, Line: line, Col: col, Path: slices.Clone(c.path), Name: name}
}

// convert converts y, at depth; (line, col) is its parent's position.
func (c *converter) convert(y ast.Node, line, col, depth int) (*Node, *ConvertError) {
	line, col = c.position(y, line, col)
	if c.values++; c.values > c.opts.MaxValues {
		e := c.fail(Crossed, line, col, "")
		e.Limit = TooManyValues
		return nil, e
	}
	if depth > c.opts.MaxDepth {
		e := c.fail(Crossed, line, col, "")
		e.Limit = TooDeep
		return nil, e
	}
	if IsNone(y) {
		return &Node{Kind: Null, Line: line, Col: col}, nil
	}
	switch y := y.(type) {
	case *ast.AnchorNode:
		name := TokenText(y.Name)
		c.anchors[name] = y.Value
		if c.opts.RefuseAliasInAnchor {
			c.expanding[name] = true
			defer delete(c.expanding, name)
		}
		return c.convert(y.Value, line, col, depth)
	case *ast.AliasNode:
		name := TokenText(y.Value)
		target, ok := c.anchors[name]
		if !ok {
			return nil, c.fail(UnknownAlias, line, col, name)
		}
		if c.opts.RefuseAliasInAnchor {
			if c.expanding[name] {
				return nil, c.fail(AliasInAnchor, line, col, name)
			}
			c.expanding[name] = true
			defer delete(c.expanding, name)
		}
		n, err := c.convert(target, line, col, depth+1)
		if err == nil && c.opts.AliasAtAlias {
			n.Line, n.Col = line, col
		}
		return n, err
	case *ast.SequenceNode:
		return c.sequence(y, line, col, depth)
	case *ast.MappingNode:
		return c.mapping(y.Values, line, col, depth)
	case *ast.MappingValueNode:
		// A mapping of one entry, in a sequence: "- key: value".
		return c.mapping([]*ast.MappingValueNode{y}, line, col, depth)
	case *ast.TagNode:
		return c.tagged(y, line, col, depth)
	}
	return c.scalar(y, line, col)
}

func (c *converter) sequence(y *ast.SequenceNode, line, col, depth int) (*Node, *ConvertError) {
	n := &Node{Kind: Array, Line: line, Col: col, Items: make([]*Node, 0, len(y.Values))}
	for i, it := range y.Values {
		c.path = append(c.path, Step{Item: true, Index: i})
		v, err := c.convert(it, line, col, depth+1)
		c.path = c.path[:len(c.path)-1]
		if err != nil {
			return nil, err
		}
		if c.opts.ItemAfterDash && c.text != nil && v.Kind == String && !y.IsFlowStyle && i < len(y.Entries) && y.Entries[i].Start != nil {
			// The parser places a plain scalar that continues on the
			// next lines, as an item of a block sequence, at its last
			// line: it starts after its "-".
			dash := y.Entries[i].Start.Position
			if l, cl := c.text.after(dash.Line, dash.Column); l < v.Line {
				v.Line, v.Col = l, cl
			}
		}
		n.Items = append(n.Items, v)
	}
	return n, nil
}

// mapping converts the entries of a mapping at line:col.
func (c *converter) mapping(entries []*ast.MappingValueNode, line, col, depth int) (*Node, *ConvertError) {
	n := &Node{Kind: Object, Line: line, Col: col, Keys: make([]string, 0, len(entries)), Vals: make([]*Node, 0, len(entries))}
	index := make(map[string]int, len(entries)) // of each key in n.Keys
	for i, mv := range entries {
		if mv == nil {
			continue
		}
		var k ast.Node = mv.Key
		kline, kcol := c.position(k, line, col)
		if mk, ok := k.(*ast.MappingKeyNode); ok {
			k = mk.Value
		}
		for hops := 0; !IsNone(k); hops++ {
			if c.opts.MaxKeyHops > 0 && hops > c.opts.MaxKeyHops {
				return nil, c.fail(KeyAliasLoop, kline, kcol, "")
			}
			if a, ok := k.(*ast.AnchorNode); ok {
				c.anchors[TokenText(a.Name)] = a.Value
				k = a.Value
				continue
			}
			if a, ok := k.(*ast.AliasNode); ok {
				target, found := c.anchors[TokenText(a.Value)]
				if !found {
					e := c.fail(UnknownAlias, kline, kcol, TokenText(a.Value))
					e.InKey = true
					return nil, e
				}
				k = target
				continue
			}
			break
		}
		if IsNone(k) {
			return nil, c.fail(KeyWithoutText, kline, kcol, "")
		}
		if k.Type() == ast.MergeKeyType {
			return nil, c.fail(MergeKey, kline, kcol, "")
		}
		key, ok := ScalarText(k)
		if !ok {
			return nil, c.fail(KeyNotScalar, kline, kcol, "")
		}
		if c.opts.RefuseKeyWithoutValue && (mv.Start == nil || mv.Start.Type != token.MappingValueType) {
			e := c.fail(KeyWithoutValue, kline, kcol, key)
			if i > 0 && entries[i-1] != nil {
				prev := entries[i-1]
				if text, ok := prev.Value.(*ast.StringNode); ok && text != nil && text.Token != nil && text.Token.Type == token.StringType {
					e.PrevKey, e.HasPrev = ScalarText(prev.Key)
					e.PrevText = text.Value
				}
			}
			return nil, e
		}
		if first, dup := index[key]; dup {
			e := c.fail(DuplicateKey, kline, kcol, key)
			e.FirstLine, e.FirstCol = n.Vals[first].KeyLine, n.Vals[first].KeyCol
			return nil, e
		}
		index[key] = len(n.Keys)
		c.path = append(c.path, Step{Key: key})
		v, err := c.convert(mv.Value, kline, kcol, depth+1)
		c.path = c.path[:len(c.path)-1]
		if err != nil {
			return nil, err
		}
		v.KeyLine, v.KeyCol = kline, kcol
		if _, null := mv.Value.(*ast.NullNode); null && c.opts.NullAtKey {
			// Written or not (key:), the parser puts it after the colon:
			// the key is where to look.
			v.Line, v.Col = kline, kcol
		}
		n.Keys = append(n.Keys, key)
		n.Vals = append(n.Vals, v)
	}
	return n, nil
}

// tagged resolves the tags YAML defines, as opts.Tags says.
func (c *converter) tagged(y *ast.TagNode, line, col, depth int) (*Node, *ConvertError) {
	tag := ""
	if y.Start != nil {
		tag = y.Start.Value
	}
	str := func() (*Node, *ConvertError) {
		text, ok := ScalarText(y.Value)
		if !ok {
			return nil, c.fail(TagOnNonScalar, line, col, tag)
		}
		return &Node{Kind: String, Line: line, Col: col, Text: text}, nil
	}
	if c.opts.Tags == LooseTags {
		switch tag {
		case "!!str":
			if _, null := y.Value.(*ast.NullNode); null || IsNone(y.Value) {
				return &Node{Kind: String, Line: line, Col: col}, nil
			}
			return str()
		case "!!int", "!!float", "!!bool", "!!null", "!!map", "!!seq":
			return c.convert(y.Value, line, col, depth)
		}
		return nil, c.fail(UnsupportedTag, line, col, tag)
	}
	if tag == "!!str" || tag == "!!timestamp" {
		return str()
	}
	n, err := c.convert(y.Value, line, col, depth)
	if err != nil {
		return nil, err
	}
	kind, ok := checkedTagKinds[tag]
	if !ok {
		return nil, c.fail(UnsupportedTag, line, col, tag)
	}
	if n.Kind != kind {
		e := c.fail(TagMismatch, line, col, tag)
		e.Got = n.Kind
		return nil, e
	}
	return n, nil
}

func (c *converter) scalar(y ast.Node, line, col int) (*Node, *ConvertError) {
	scalar := func(kind Kind, text string) (*Node, *ConvertError) {
		return &Node{Kind: kind, Line: line, Col: col, Text: text}, nil
	}
	switch y := y.(type) {
	case *ast.NullNode:
		return scalar(Null, "")
	case *ast.BoolNode:
		return scalar(Bool, strconv.FormatBool(y.Value))
	case *ast.StringNode:
		return scalar(String, y.Value)
	case *ast.LiteralNode:
		if y.Value == nil {
			return scalar(String, "")
		}
		return scalar(String, y.Value.Value)
	case *ast.IntegerNode:
		lit := TokenText(y)
		if c.opts.ExactNumbers && JSONInteger(lit) {
			return scalar(Number, lit)
		}
		switch v := y.Value.(type) {
		case int64:
			return scalar(Number, strconv.FormatInt(v, 10))
		case uint64:
			return scalar(Number, strconv.FormatUint(v, 10))
		}
		return nil, c.fail(NumberTooLarge, line, col, lit)
	case *ast.FloatNode:
		lit := TokenText(y)
		if c.opts.ExactNumbers && JSONInteger(lit) {
			return scalar(Number, lit)
		}
		if math.IsInf(y.Value, 0) || math.IsNaN(y.Value) {
			return nil, c.fail(NumberNotJSON, line, col, lit)
		}
		if mant, _, _ := strings.Cut(strings.ToLower(lit), "e"); c.opts.ExactNumbers && y.Value == 0 && strings.ContainsAny(mant, "123456789") {
			return nil, c.fail(TooCloseToZero, line, col, lit)
		}
		return scalar(Number, strconv.FormatFloat(y.Value, 'g', -1, 64))
	case *ast.InfinityNode, *ast.NanNode:
		return nil, c.fail(NumberNotJSON, line, col, TokenText(y))
	}
	return nil, c.fail(UnsupportedNode, line, col, strings.ToLower(y.Type().String()))
}

// JSONInteger says whether s is an integer written the way JSON writes it
// (no sign but -, no leading zeros) that fits an int64.
func JSONInteger(s string) bool {
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

// lineIndex keeps positions inside a document: its lines end at "\n",
// their columns count characters.
type lineIndex struct {
	data   []byte
	starts []int       // the offset of each line
	runes  map[int]int // the characters of the lines clamp measured, by 0-based line
}

func newLineIndex(data []byte) *lineIndex {
	li := &lineIndex{data: data, starts: []int{0}}
	for i, c := range data {
		if c == '\n' {
			li.starts = append(li.starts, i+1)
		}
	}
	return li
}

// pos is the line and column of the byte at off.
func (li *lineIndex) pos(off int) (line, col int) {
	off = min(max(off, 0), len(li.data))
	line = 0
	for lo, hi := 0, len(li.starts); lo < hi; {
		m := (lo + hi) / 2
		if li.starts[m] <= off {
			line, lo = m, m+1
		} else {
			hi = m
		}
	}
	return line + 1, utf8.RuneCount(li.data[li.starts[line]:off]) + 1
}

// clamp keeps a position the parser reported inside the document: an
// implicit null after "key:" at the end of a line is placed just after
// the colon.
func (li *lineIndex) clamp(line, col int) (int, int) {
	line = min(max(line, 1), len(li.starts))
	return line, min(max(col, 1), li.lineRunes(line-1)+1)
}

// lineRunes returns the number of characters of a line (0-based), counted
// once: the values of a flow collection on one long line are many.
func (li *lineIndex) lineRunes(line int) int {
	if n, ok := li.runes[line]; ok {
		return n
	}
	end := len(li.data)
	if line+1 < len(li.starts) {
		end = li.starts[line+1] - 1
	}
	n := utf8.RuneCount(li.data[li.starts[line]:end])
	if li.runes == nil {
		li.runes = make(map[int]int)
	}
	li.runes[line] = n
	return n
}

// after returns the position of the first character after the one at
// line:col that is not a space or a line break.
func (li *lineIndex) after(line, col int) (int, int) {
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
