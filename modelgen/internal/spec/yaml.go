package spec

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"

	"github.com/moora-go/moora/internal/yamlpos"
)

// parseYAML parses a YAML spec with github.com/goccy/go-yaml, which keeps the
// line and column of every token, syntax errors included, and converts its
// syntax tree into the spec's tree: aliases expanded (within maxNodes),
// tags resolved, and everything JSON cannot hold rejected at its position.
func parseYAML(file string, data []byte) (*Node, error) {
	// The parser's time and memory grow much faster than the input on some
	// documents (100,000 nested [ took over 20 s and 7 GB, 100,000 nested
	// block sequences on one line, "- - - ...", 40 s and 15 GB, a block
	// mapping of 100,000 entries 17 s), so the limits are checked on the
	// lexer's tokens first, as the parser will see them, and in time linear
	// in the input.
	tokens := lexer.Tokenize(string(data))
	if err := checkTokens(file, tokens); err != nil {
		return nil, err
	}
	bodies, err := yamlpos.Parse(tokens)
	if err != nil {
		return nil, yamlSyntaxError(file, data, err)
	}
	switch len(bodies) {
	case 0:
		return nil, &Diagnostic{Pos: Pos{File: file, Line: 1, Col: 1}, Message: "empty spec"}
	case 1:
	default:
		return nil, &Diagnostic{Pos: newLineIndex(file, data).clamp(yamlPos(file, bodies[1])), Message: "more than one YAML document; a spec is a single document"}
	}
	c := &yamlConverter{file: file, li: newLineIndex(file, data), anchors: make(map[string]ast.Node)}
	return c.convert(bodies[0], 0)
}

// MaxBlockEntries is the most entries a block mapping of a YAML spec may
// have: the YAML parser's time and memory grow with the square of a block
// mapping's entries (100,000 took 17 s and 390 MB; 1,000 take 7 ms). A flow
// mapping ({...}) and JSON have no such limit.
const MaxBlockEntries = 1000

// checkTokens checks the limits on a YAML document's tokens, before the
// parser sees them (yamlpos.CheckTokens): the nesting of its collections,
// flow and block, at most MaxDepth; a lower bound on its values (each
// ":", each "-", each "," in a flow sequence is one), at most MaxNodes;
// the entries of a block mapping, at most MaxBlockEntries. Each error is
// at the token that crosses the limit. The conversion of the parsed
// document checks the values and the nesting exactly.
func checkTokens(file string, tokens token.Tokens) error {
	tk, crossed := yamlpos.CheckTokens(tokens, yamlpos.Limits{Depth: MaxDepth, Values: MaxNodes, BlockEntries: MaxBlockEntries})
	if tk == nil {
		return nil
	}
	d := &Diagnostic{Pos: Pos{File: file, Line: tk.Position.Line, Col: tk.Position.Column}}
	switch crossed {
	case yamlpos.TooDeep:
		d.Message = fmt.Sprintf("values nested deeper than %d levels", MaxDepth)
	case yamlpos.TooManyEntries:
		d.Message = fmt.Sprintf("a block mapping of more than %d entries", MaxBlockEntries)
		d.Hint = "write it as a flow mapping, {key: value, ...}, or the spec in JSON"
	default:
		d.Message = fmt.Sprintf("spec has more than %d values (after expanding YAML aliases)", MaxNodes)
	}
	return d
}

// yamlPos is the position of a node: for a block mapping the position of
// its first key, for everything else that of its first token.
func yamlPos(file string, n ast.Node) Pos {
	line, col, ok := yamlpos.Position(n)
	if !ok {
		return Pos{File: file, Line: 1, Col: 1}
	}
	return Pos{File: file, Line: line, Col: col}
}

type yamlConverter struct {
	file    string
	li      *lineIndex
	nodes   int
	anchors map[string]ast.Node
}

func (c *yamlConverter) convert(y ast.Node, depth int) (*Node, error) {
	pos := c.li.clamp(yamlPos(c.file, y))
	if c.nodes++; c.nodes > MaxNodes {
		return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("spec has more than %d values (after expanding YAML aliases)", MaxNodes)}
	}
	if depth > MaxDepth {
		return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("values nested deeper than %d levels", MaxDepth)}
	}
	switch y := y.(type) {
	case *ast.AnchorNode:
		c.anchors[y.Name.GetToken().Value] = y.Value
		return c.convert(y.Value, depth)
	case *ast.AliasNode:
		name := y.Value.GetToken().Value
		target, ok := c.anchors[name]
		if !ok {
			return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("unknown YAML alias *%s", name), Hint: "an alias refers to an anchor (&" + name + ") defined before it"}
		}
		return c.convert(target, depth+1)
	case *ast.SequenceNode:
		n := &Node{kind: ArrayNode, pos: pos, items: make([]*Node, 0, len(y.Values))}
		for i, it := range y.Values {
			v, err := c.convert(it, depth+1)
			if err != nil {
				return nil, err
			}
			if v.kind == StringNode && !y.IsFlowStyle && i < len(y.Entries) && y.Entries[i].Start != nil {
				// The parser places a plain scalar that continues on the
				// next lines, as an item of a block sequence, at its last
				// line: it starts after its "-".
				if start := c.li.after(y.Entries[i].Start.Position.Line, y.Entries[i].Start.Position.Column); start.Line < v.pos.Line {
					v.pos = start
				}
			}
			n.items = append(n.items, v)
		}
		return n, nil
	case *ast.MappingNode:
		return c.mapping(y, pos, depth)
	case *ast.MappingValueNode:
		// A mapping of one entry, in a sequence: "- key: value".
		return c.mapping(&ast.MappingNode{Values: []*ast.MappingValueNode{y}}, pos, depth)
	case *ast.TagNode:
		return c.tagged(y, pos, depth)
	}
	return c.scalar(y, pos)
}

func (c *yamlConverter) mapping(y *ast.MappingNode, pos Pos, depth int) (*Node, error) {
	n := &Node{kind: ObjectNode, pos: pos,
		keys:   make([]string, 0, len(y.Values)),
		keyPos: make([]Pos, 0, len(y.Values)),
		vals:   make([]*Node, 0, len(y.Values)),
	}
	// Duplicate keys: a scan of the keys so far in a small mapping (most
	// are), a map in a large one.
	var seen map[string]int
	if len(y.Values) > 16 {
		seen = make(map[string]int, len(y.Values))
	}
	for i, mv := range y.Values {
		var k ast.Node = mv.Key
		kpos := c.li.clamp(yamlPos(c.file, k))
		if mk, ok := k.(*ast.MappingKeyNode); ok {
			k = mk.Value
		}
		for {
			if a, ok := k.(*ast.AnchorNode); ok {
				c.anchors[a.Name.GetToken().Value] = a.Value
				k = a.Value
				continue
			}
			if a, ok := k.(*ast.AliasNode); ok {
				target, found := c.anchors[a.Value.GetToken().Value]
				if !found {
					return nil, &Diagnostic{Pos: kpos, Message: fmt.Sprintf("unknown YAML alias *%s", a.Value.GetToken().Value)}
				}
				k = target
				continue
			}
			break
		}
		if k.Type() == ast.MergeKeyType {
			return nil, &Diagnostic{Pos: kpos, Message: "YAML merge keys (<<) are not supported; repeat the keys or use $defs and $ref"}
		}
		key, ok := yamlpos.ScalarText(k)
		if !ok {
			return nil, &Diagnostic{Pos: kpos, Message: "mapping keys must be strings"}
		}
		if mv.Start == nil || mv.Start.Type != token.MappingValueType {
			return nil, c.keyWithoutValue(y, i, key, kpos)
		}
		first, dup := -1, false
		if seen != nil {
			first, dup = seen[key]
			seen[key] = len(n.keys)
		} else {
			first = slices.Index(n.keys, key)
			dup = first >= 0
		}
		if dup {
			at := n.keyPos[first]
			return nil, &Diagnostic{Pos: kpos, Message: fmt.Sprintf("duplicate key %q (first at %d:%d)", key, at.Line, at.Col)}
		}
		val, err := c.convert(mv.Value, depth+1)
		if err != nil {
			return nil, err
		}
		n.keys = append(n.keys, key)
		n.keyPos = append(n.keyPos, kpos)
		n.vals = append(n.vals, val)
	}
	return n, nil
}

// keyWithoutValue reports the i-th entry of a flow mapping, written without
// a colon. YAML reads {a, b: 1} as {a: null, b: 1}, but no key of a spec is
// null, and the usual cause is a comma in an unquoted value: {description:
// Hello, world} is {description: Hello, world: null}.
func (c *yamlConverter) keyWithoutValue(y *ast.MappingNode, i int, key string, kpos Pos) error {
	d := &Diagnostic{Pos: kpos, Message: fmt.Sprintf("%q has no value: a key in {…} is followed by a colon", key)}
	if i > 0 {
		prev := y.Values[i-1]
		if text, ok := prev.Value.(*ast.StringNode); ok && prev.Value.GetToken().Type == token.StringType {
			if pk, ok := yamlpos.ScalarText(prev.Key); ok {
				d.Hint = fmt.Sprintf("a comma inside {…} ends a value, so %s: %s, %s was read as two entries; quote the value: %s: %q",
					pk, text.Value, key, pk, text.Value+", "+key)
			}
		}
	}
	if d.Hint == "" {
		d.Hint = "write " + key + ": value, or quote the text if the comma before it is part of a value"
	}
	return d
}

func (c *yamlConverter) scalar(y ast.Node, pos Pos) (*Node, error) {
	switch y := y.(type) {
	case nil:
		return &Node{kind: NullNode, pos: pos}, nil
	case *ast.NullNode:
		return &Node{kind: NullNode, pos: pos}, nil
	case *ast.BoolNode:
		return &Node{kind: BoolNode, pos: pos, str: strconv.FormatBool(y.Value)}, nil
	case *ast.StringNode:
		return &Node{kind: StringNode, pos: pos, str: y.Value}, nil
	case *ast.LiteralNode:
		return &Node{kind: StringNode, pos: pos, str: y.Value.Value}, nil
	case *ast.IntegerNode:
		lit := y.Token.Value
		if JSONInteger(lit) {
			return &Node{kind: NumberNode, pos: pos, str: lit}, nil
		}
		switch v := y.Value.(type) {
		case int64:
			return &Node{kind: NumberNode, pos: pos, str: strconv.FormatInt(v, 10)}, nil
		case uint64:
			return &Node{kind: NumberNode, pos: pos, str: strconv.FormatUint(v, 10)}, nil
		}
		return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("invalid number %q", lit)}
	case *ast.FloatNode:
		if JSONInteger(y.Token.Value) {
			return &Node{kind: NumberNode, pos: pos, str: y.Token.Value}, nil
		}
		if math.IsInf(y.Value, 0) || math.IsNaN(y.Value) {
			return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("number %s cannot be represented in JSON", y.Token.Value)}
		}
		if mant, _, _ := strings.Cut(strings.ToLower(y.Token.Value), "e"); y.Value == 0 && strings.ContainsAny(mant, "123456789") {
			return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("number %s is too close to 0 for a float64, which reads it as 0", y.Token.Value)}
		}
		return &Node{kind: NumberNode, pos: pos, str: strconv.FormatFloat(y.Value, 'g', -1, 64)}, nil
	case *ast.InfinityNode, *ast.NanNode:
		return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("number %s cannot be represented in JSON", y.GetToken().Value)}
	}
	return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("unsupported YAML %s", strings.ToLower(y.Type().String()))}
}

// tagged resolves the standard tags; any other tag is an error.
func (c *yamlConverter) tagged(y *ast.TagNode, pos Pos, depth int) (*Node, error) {
	tag := y.Start.Value
	switch tag {
	case "!!str", "!!timestamp":
		if text, ok := yamlpos.ScalarText(y.Value); ok {
			if _, null := y.Value.(*ast.NullNode); null && y.Value.GetToken().Value == "" {
				text = ""
			}
			return &Node{kind: StringNode, pos: pos, str: text}, nil
		}
		return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("%s on a value that is not a scalar", tag)}
	}
	n, err := c.convert(y.Value, depth)
	if err != nil {
		return nil, err
	}
	want := map[string]NodeKind{"!!int": NumberNode, "!!float": NumberNode, "!!bool": BoolNode, "!!null": NullNode, "!!map": ObjectNode, "!!seq": ArrayNode}
	kind, ok := want[tag]
	if !ok {
		return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("unsupported YAML tag %s", tag)}
	}
	if n.kind != kind {
		return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("value tagged %s is a %s", tag, n.kind)}
	}
	return n, nil
}

// yamlSyntaxError turns a syntax error of the YAML parser into a
// diagnostic at its token, with a hint for the usual slips.
func yamlSyntaxError(file string, data []byte, err error) error {
	tk, msg, ok := yamlpos.SyntaxError(err)
	if !ok {
		return &Diagnostic{Pos: Pos{File: file, Line: 1, Col: 1}, Message: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	lines := strings.Split(string(data), "\n")
	line := func(n int) string {
		if n < 1 || n > len(lines) {
			return ""
		}
		return strings.TrimSuffix(lines[n-1], "\r")
	}
	// The position of the token, kept inside the document.
	pos := Pos{File: file, Line: min(max(tk.Position.Line, 1), len(lines))}
	pos.Col = min(max(tk.Position.Column, 1), len([]rune(line(pos.Line)))+1)
	d := &Diagnostic{Pos: pos, Message: msg}
	before := []rune(line(pos.Line))[:pos.Col-1] // the text of the line before the token
	switch msg := d.Message; {
	case strings.Contains(msg, "'\t'"):
		// The scanner reports a tab at the start of the line or token that
		// holds it: point at the tab.
		for n := d.Pos.Line; n <= d.Pos.Line+1; n++ {
			if i := strings.IndexByte(line(n), '\t'); i >= 0 {
				d.Pos.Line, d.Pos.Col = n, len([]rune(line(n)[:i]))+1
				break
			}
		}
		d.Message = "a tab in the indentation"
		d.Hint = "YAML indents with spaces only; replace the tab with spaces"
	case tk.Value == "]" || tk.Value == "}":
		d.Message = fmt.Sprintf("this %s closes nothing", tk.Value)
		d.Hint = "remove it, or open what it closes"
	case strings.Contains(msg, "flow map content"), strings.Contains(msg, "flow sequence content"), tk.Value == ",":
		d.Message = "an empty entry between two commas"
		d.Hint = "remove one of the commas"
	case len(before) > 0 && before[len(before)-1] == '\'':
		d.Message = "text after a single-quoted string"
		d.Hint = "a ' inside a single-quoted string is written ''"
	case strings.Contains(msg, "mapping value is not allowed") && strings.Contains(string(before), ": "):
		d.Message = "a second key: value on one line"
		d.Hint = `a value holding ": " must be quoted: key: "a: b"`
	case strings.Contains(msg, "non-map value"):
		d.Message = "a sequence item (-) where the mapping above expects a key"
		d.Hint = indentationHint(line, d.Pos.Line)
	case strings.Contains(msg, "not allowed in this context"):
		d.Message = "a key where none is expected"
		d.Hint = indentationHint(line, d.Pos.Line)
	case strings.Contains(msg, "',' or ']' must be specified"), strings.Contains(msg, "',' or '}' must be specified"):
		// A flow collection left open runs into the next line: point at
		// the bracket that was never closed.
		open := byte('[')
		if strings.Contains(msg, "'}'") {
			open = '{'
		}
		if l, col, ok := yamlpos.Unclosed(lines, d.Pos.Line, d.Pos.Col, open); ok && l < d.Pos.Line {
			d.Message = fmt.Sprintf("this %c is not closed before line %d", open, d.Pos.Line)
			d.Pos.Line, d.Pos.Col = l, col
			d.Hint = fmt.Sprintf("close it with %c, or separate the items with ,", map[byte]byte{'[': ']', '{': '}'}[open])
		}
	case strings.Contains(msg, "']' not found"):
		d.Message = "this [ is never closed"
		d.Hint = "end the sequence with ]"
	case strings.Contains(msg, "'}'"):
		d.Message = "this { is never closed"
		d.Hint = "end the mapping with }"
	case strings.Contains(msg, "end character of double-quoted"):
		d.Message = "this double-quoted string is never closed"
		d.Hint = `end it with "`
	case strings.Contains(msg, "end character of single-quoted"):
		d.Message = "this single-quoted string is never closed"
		d.Hint = "end it with '; a ' inside is written ''"
	}
	return d
}

// indentationHint compares the indentation of a line the parser rejected
// with the lines above it: a key indented one space off, or a value where
// a key belongs, is the usual cause.
func indentationHint(line func(int) string, n int) string {
	indent := func(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
	cur := line(n)
	if strings.TrimSpace(cur) == "" {
		return ""
	}
	for p := n - 1; p >= 1; p-- {
		prev := line(p)
		t := strings.TrimSpace(prev)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		ci, pi := indent(cur), indent(prev)
		if ci == pi && strings.HasPrefix(t, "- ") && !strings.HasPrefix(strings.TrimSpace(cur), "-") {
			return fmt.Sprintf("line %d is a key among the items of the sequence above; start it with - for a new item, or indent it under the item", n)
		}
		if ci == pi {
			return fmt.Sprintf("line %d is indented as line %d; if it continues the value above, quote that value or indent this line further", n, p)
		}
		// The keys of one mapping line up: find the closest indentation
		// above that this line nearly matches.
		for q := p; q >= 1; q-- {
			above := line(q)
			if strings.TrimSpace(above) == "" || strings.HasPrefix(strings.TrimSpace(above), "#") {
				continue
			}
			if ai := indent(above); ai != ci && (ai-ci == 1 || ci-ai == 1) {
				return fmt.Sprintf("line %d is indented %s, line %d %s: the keys of one mapping line up; indent it by %s", n, spaces(ci), q, spaces(ai), spaces(ai))
			}
			if indent(above) < ci-1 {
				break
			}
		}
		if ci > pi {
			return fmt.Sprintf("line %d is indented more than line %d, whose value is already given; indent it as a key of the mapping it belongs to", n, p)
		}
		return fmt.Sprintf("check the indentation: line %d is indented %s, line %d %s", n, spaces(ci), p, spaces(pi))
	}
	return ""
}

// spaces says how many spaces n is: "1 space", "4 spaces".
func spaces(n int) string {
	if n == 1 {
		return "1 space"
	}
	return fmt.Sprintf("%d spaces", n)
}
