// Package yamlpos is what the readers of YAML files with positions share:
// the spec reader (modelgen/internal/spec) and the configuration reader of
// the ReAct example. Both read a document with github.com/goccy/go-yaml,
// which keeps the line and column of every token, syntax errors included,
// and turn its syntax tree into one tree of JSON's values with their
// positions, each reader with its own policy and its own messages; this
// package holds the steps that do it:
//
//   - CheckTokens checks a document's lexer tokens against Limits (the
//     nesting of its collections, a lower bound on its values, the
//     entries of a block mapping) before the parser sees them, in time
//     linear in the tokens: the parser's time and memory grow much faster
//     than its input on some documents;
//   - Parse parses the tokens and returns the bodies of the documents that
//     have one;
//   - SyntaxError finds the token and the message of a syntax error, and
//     Unclosed the bracket a flow collection left open started at;
//   - Convert turns a body into a tree of Node (Kind, position, the
//     position of its key, text, items, keys and values), with aliases
//     expanded, tags resolved and what JSON cannot hold refused, as its
//     ConvertOptions say (the readers' policies differ: where an alias's
//     value or a null is, how numbers are written, which tags and keys
//     are taken); what it refuses is a ConvertError, a Fault with its
//     position, the names it needs and the path to it, which each reader
//     words as it will;
//   - Position says where a node starts (PositionIn, kept inside the
//     document), ScalarText what a scalar key says, IsNone whether a node
//     the parser left out is there at all;
//   - InvalidUTF8 finds the first byte that is not UTF-8, JSONInteger says
//     whether a number is written as a JSON integer;
//   - Kind names the kinds of JSON's values the tree holds.
//
// Positions are the parser's: lines and columns from 1, columns in
// characters. The package says where and what; the words of a diagnostic
// are its caller's.
package yamlpos

import (
	"errors"
	"reflect"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Parse parses the lexer tokens of a YAML stream (duplicate keys are left
// to the caller, who says where the first one is) and returns the bodies
// of its documents, leaving out empty ones and those of comments only.
func Parse(tokens token.Tokens) ([]ast.Node, error) {
	f, err := parser.Parse(tokens, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		return nil, err
	}
	var bodies []ast.Node
	for _, doc := range f.Docs {
		if doc == nil || IsNone(doc.Body) {
			continue
		}
		if _, comment := doc.Body.(*ast.CommentGroupNode); comment {
			continue
		}
		bodies = append(bodies, doc.Body)
	}
	return bodies, nil
}

// SyntaxError returns the token at which the parser gave up and its
// message (without the token's position), or ok false for an error that
// names no token with a position.
func SyntaxError(err error) (tk *token.Token, msg string, ok bool) {
	var ye interface {
		GetToken() *token.Token
		GetMessage() string
	}
	if !errors.As(err, &ye) || ye.GetToken() == nil || ye.GetToken().Position == nil {
		return nil, "", false
	}
	return ye.GetToken(), ye.GetMessage(), true
}

// Position returns the line and column of the token a node starts with:
// for a block mapping that of its first key, for a mapping entry that of
// its key. ok is false for no node, or one without a positioned token.
func Position(n ast.Node) (line, col int, ok bool) {
	if m, isMap := n.(*ast.MappingNode); isMap && m != nil && !m.IsFlowStyle && len(m.Values) > 0 && m.Values[0] != nil {
		n = m.Values[0].Key
	}
	if mv, isEntry := n.(*ast.MappingValueNode); isEntry && mv != nil {
		n = mv.Key
	}
	if IsNone(n) {
		return 0, 0, false
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return 0, 0, false
	}
	return tk.Position.Line, tk.Position.Column, true
}

// IsNone says whether n is no node: nil, or a nil pointer (the parser
// leaves some out that way).
func IsNone(n ast.Node) bool {
	if n == nil {
		return true
	}
	v := reflect.ValueOf(n)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// ScalarText is the text of a scalar as a key: a string's value, the
// text of a number, a boolean or null as written, the text under a tag.
// ok is false for anything else.
func ScalarText(n ast.Node) (text string, ok bool) {
	switch n := n.(type) {
	case *ast.StringNode:
		return n.Value, true
	case *ast.LiteralNode:
		if n.Value == nil {
			return "", true
		}
		return n.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NullNode, *ast.InfinityNode, *ast.NanNode:
		if IsNone(n) {
			return "", false
		}
		if tk := n.GetToken(); tk != nil {
			return tk.Value, true
		}
	case *ast.TagNode:
		if n != nil && !IsNone(n.Value) {
			return ScalarText(n.Value)
		}
	}
	return "", false
}

// TokenText is the text of n's token, "" if it has none.
func TokenText(n ast.Node) string {
	if IsNone(n) {
		return ""
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return ""
}

// InvalidUTF8 returns the offset of the first byte of data that is not
// part of a UTF-8 encoded character, len(data) if there is none.
func InvalidUTF8(data []byte) int {
	for off := 0; off < len(data); {
		r, size := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && size <= 1 {
			return off
		}
		off += size
	}
	return len(data)
}

// Unclosed finds the innermost bracket open ('[' or '{') left open before
// line:col (from 1, col in characters) of lines, outside quoted text and
// comments (a # at the start of a line or after a space or a tab), and
// returns its line and column.
func Unclosed(lines []string, line, col int, open byte) (int, int, bool) {
	type at struct {
		c         rune
		line, col int
	}
	var stack []at
	for n := 1; n <= line && n <= len(lines); n++ {
		text := lines[n-1]
		var quote rune
		c := 0
	scan:
		for i, r := range text {
			c++
			if n == line && c >= col {
				break
			}
			switch {
			case quote != 0:
				if r == quote {
					quote = 0
				}
			case r == '"' || r == '\'':
				quote = r
			case r == '#' && (i == 0 || text[i-1] == ' ' || text[i-1] == '\t'):
				break scan
			case r == '[' || r == '{':
				stack = append(stack, at{r, n, c})
			case (r == ']' || r == '}') && len(stack) > 0:
				stack = stack[:len(stack)-1]
			}
		}
	}
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i].c == rune(open) {
			return stack[i].line, stack[i].col, true
		}
	}
	return 0, 0, false
}
