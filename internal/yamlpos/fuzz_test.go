package yamlpos

import (
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
)

// FuzzParse reads any text the way both readers do: the tokens checked
// against small limits, then parsed, then every node's position, every
// syntax error's token and the bracket left open looked up. Nothing
// panics, a limit is reported at a token with a position, and a document
// within the limits is parsed (or gets a syntax error) without the
// parser running away.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"a: 1\nb: [1, 2]\n", "- - - 1", "{a: [1, {b: c}]}", "a: &x [1]\nb: *x\n",
		"a: [1, 2\nb: 3\n", "? a\n: b\n", "!!str 1: x", "a: 1\n---\nb: 2\n", "\t- a", "'a'b: 1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		tokens := lexer.Tokenize(doc)
		if tk, crossed := CheckTokens(tokens, Limits{Depth: 8, Values: 200, BlockEntries: 20}); crossed != 0 {
			if tk == nil || tk.Position == nil {
				t.Fatalf("limit %v crossed at no token", crossed)
			}
			return
		}
		bodies, err := Parse(tokens)
		if err != nil {
			if tk, _, ok := SyntaxError(err); ok {
				Unclosed(strings.Split(doc, "\n"), tk.Position.Line, tk.Position.Column, '[')
			}
			return
		}
		for _, b := range bodies {
			ast.Walk(visitor(func(n ast.Node) {
				Position(n)
				ScalarText(n)
				TokenText(n)
			}), b)
		}
	})
}

type visitor func(ast.Node)

func (v visitor) Visit(n ast.Node) ast.Visitor {
	if !IsNone(n) {
		v(n)
	}
	return v
}
