package spec

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"

	"github.com/moora-go/moora/internal/yamlpos"
)

// parseYAML parses a YAML spec with github.com/goccy/go-yaml, which keeps
// the line and column of every token, syntax errors included, and converts
// its syntax tree into the spec's tree with yamlpos.Convert: aliases
// expanded (within MaxNodes values and MaxDepth levels), tags resolved, and
// everything JSON cannot hold rejected at its position (yamlDiagnostic
// says how).
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
		line, col := yamlpos.PositionIn(bodies[1], data)
		return nil, &Diagnostic{Pos: Pos{File: file, Line: line, Col: col}, Message: "more than one YAML document; a spec is a single document"}
	}
	root, cerr := yamlpos.Convert(bodies[0], yamlSpecOptions(data))
	if cerr != nil {
		return nil, yamlDiagnostic(file, cerr)
	}
	return specNode(file, root), nil
}

// yamlSpecOptions are the spec's policy for yamlpos.Convert: positions
// kept inside the document (an implicit null after "key:" at the end of
// a line just after the colon), an item of a block sequence continued on
// later lines starting after its "-", an alias's value where its anchor's
// is, a number written as a JSON integer kept as written and one too
// close to 0 for a float64 refused, tags checked against their values,
// and a key without a value in {…} refused (no key of a spec is null).
func yamlSpecOptions(data []byte) yamlpos.ConvertOptions {
	return yamlpos.ConvertOptions{
		MaxValues: MaxNodes, MaxDepth: MaxDepth, Text: data,
		ItemAfterDash: true, ExactNumbers: true, Tags: yamlpos.CheckedTags, RefuseKeyWithoutValue: true,
	}
}

// specNode is the spec's tree of the tree yamlpos.Convert made of file.
func specNode(file string, y *yamlpos.Node) *Node {
	n := &Node{kind: y.Kind, pos: Pos{File: file, Line: y.Line, Col: y.Col}, str: y.Text}
	switch y.Kind {
	case ArrayNode:
		n.items = make([]*Node, len(y.Items))
		for i, it := range y.Items {
			n.items[i] = specNode(file, it)
		}
	case ObjectNode:
		n.keys = y.Keys
		n.keyPos = make([]Pos, len(y.Vals))
		n.vals = make([]*Node, len(y.Vals))
		for i, v := range y.Vals {
			n.keyPos[i] = Pos{File: file, Line: v.KeyLine, Col: v.KeyCol}
			n.vals[i] = specNode(file, v)
		}
	}
	return n
}

// yamlDiagnostic is the diagnostic of what yamlpos.Convert refused.
func yamlDiagnostic(file string, e *yamlpos.ConvertError) *Diagnostic {
	d := &Diagnostic{Pos: Pos{File: file, Line: e.Line, Col: e.Col}}
	switch e.Fault {
	case yamlpos.Crossed:
		if e.Limit == yamlpos.TooDeep {
			d.Message = fmt.Sprintf("values nested deeper than %d levels", MaxDepth)
		} else {
			d.Message = fmt.Sprintf("spec has more than %d values (after expanding YAML aliases)", MaxNodes)
		}
	case yamlpos.UnknownAlias:
		d.Message = fmt.Sprintf("unknown YAML alias *%s", e.Name)
		if !e.InKey {
			d.Hint = "an alias refers to an anchor (&" + e.Name + ") defined before it"
		}
	case yamlpos.MergeKey:
		d.Message = "YAML merge keys (<<) are not supported; repeat the keys or use $defs and $ref"
	case yamlpos.KeyNotScalar, yamlpos.KeyWithoutText:
		d.Message = "mapping keys must be strings"
	case yamlpos.KeyWithoutValue:
		// YAML reads {a, b: 1} as {a: null, b: 1}, but no key of a spec
		// is null, and the usual cause is a comma in an unquoted value:
		// {description: Hello, world} is {description: Hello, world: null}.
		key := e.Name
		d.Message = fmt.Sprintf("%q has no value: a key in {…} is followed by a colon", key)
		if e.HasPrev {
			d.Hint = fmt.Sprintf("a comma inside {…} ends a value, so %s: %s, %s was read as two entries; quote the value: %s: %q",
				e.PrevKey, e.PrevText, key, e.PrevKey, e.PrevText+", "+key)
		} else {
			d.Hint = "write " + key + ": value, or quote the text if the comma before it is part of a value"
		}
	case yamlpos.DuplicateKey:
		d.Message = fmt.Sprintf("duplicate key %q (first at %d:%d)", e.Name, e.FirstLine, e.FirstCol)
	case yamlpos.TagOnNonScalar:
		d.Message = fmt.Sprintf("%s on a value that is not a scalar", e.Name)
	case yamlpos.UnsupportedTag:
		d.Message = fmt.Sprintf("unsupported YAML tag %s", e.Name)
	case yamlpos.TagMismatch:
		d.Message = fmt.Sprintf("value tagged %s is a %s", e.Name, e.Got)
	case yamlpos.NumberTooLarge:
		d.Message = fmt.Sprintf("invalid number %q", e.Name)
	case yamlpos.NumberNotJSON:
		d.Message = fmt.Sprintf("number %s cannot be represented in JSON", e.Name)
	case yamlpos.TooCloseToZero:
		d.Message = fmt.Sprintf("number %s is too close to 0 for a float64, which reads it as 0", e.Name)
	case yamlpos.UnsupportedNode:
		d.Message = fmt.Sprintf("unsupported YAML %s", e.Name)
	default: // KeyAliasLoop and AliasInAnchor, which the spec's options leave out
		d.Message = e.Error()
	}
	return d
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
