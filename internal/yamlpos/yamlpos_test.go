package yamlpos

import (
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
)

func TestCheckTokens(t *testing.T) {
	for _, tc := range []struct {
		name      string
		doc       string
		limits    Limits
		want      Limit
		line, col int
	}{
		{name: "within", doc: "a: 1\nb: [1, 2]\nc:\n  - x\n", limits: Limits{Depth: 2, Values: 10, BlockEntries: 3}},
		{name: "flow too deep", doc: "[[[1]]]", limits: Limits{Depth: 1}, want: TooDeep, line: 1, col: 3},
		{name: "flow depth counts blocks", doc: "a:\n  b: [1]\n", limits: Limits{Depth: 1}, want: TooDeep, line: 2, col: 6},
		{name: "block too deep", doc: "a:\n  b:\n    c: 1\n", limits: Limits{Depth: 1}, want: TooDeep, line: 3, col: 5},
		{name: "block sequences on one line", doc: "- - - 1\n", limits: Limits{Depth: 1}, want: TooDeep, line: 1, col: 5},
		{name: "sequence at its key's column is one level", doc: "a:\n- 1\n- 2\nb: 1\n", limits: Limits{Depth: 1}},
		{name: "too many values", doc: "[1, 2, 3, 4]", limits: Limits{Values: 3}, want: TooManyValues, line: 1, col: 9},
		{name: "commas of a flow mapping are not values", doc: "{a: 1, b: 2}", limits: Limits{Values: 3}},
		{name: "commas of a flow mapping as values", doc: "{a: 1, b: 2}", limits: Limits{Values: 3, CommaIsValue: true}, want: TooManyValues, line: 1, col: 9},
		{name: "too many block entries", doc: "a: 1\nb: 2\nc: 3\n", limits: Limits{BlockEntries: 2}, want: TooManyEntries, line: 3, col: 1},
		{name: "entries of a flow mapping are not bounded", doc: "{a: 1, b: 2, c: 3}", limits: Limits{BlockEntries: 2}},
		{name: "anchored key", doc: "a: 1\n&k b: 2\n", limits: Limits{BlockEntries: 1}, want: TooManyEntries, line: 2, col: 1},
		{name: "documents are counted apart", doc: "a: 1\nb: 2\n---\nc: 3\n", limits: Limits{BlockEntries: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk, got := CheckTokens(lexer.Tokenize(tc.doc), tc.limits)
			if got != tc.want {
				t.Fatalf("CheckTokens = %v, want %v", got, tc.want)
			}
			if got == 0 {
				if tk != nil {
					t.Fatalf("CheckTokens returned token %q with no limit", tk.Value)
				}
				return
			}
			if tk.Position.Line != tc.line || tk.Position.Column != tc.col {
				t.Errorf("CheckTokens at %d:%d (%q), want %d:%d", tk.Position.Line, tk.Position.Column, tk.Value, tc.line, tc.col)
			}
		})
	}
}

// TestCheckTokensHostile checks the documents that made the parser take
// seconds and gigabytes are stopped before it, with the default limits.
func TestCheckTokensHostile(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want Limit
	}{
		{"nested flow sequences", strings.Repeat("[", 100_000), TooDeep},
		{"nested flow mappings", strings.Repeat("{a: ", 100_000), TooDeep},
		{"nested block sequences", strings.Repeat("- ", 100_000) + "1", TooDeep},
		{"large block mapping", strings.Repeat("k: 1\n", 100_000), TooManyEntries},
		{"many values", "[" + strings.Repeat("1,", 100_000) + "1]", TooManyValues},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := CheckTokens(lexer.Tokenize(tc.doc), Limits{}); got != tc.want {
				t.Errorf("CheckTokens = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		doc    string
		bodies int
	}{
		{"empty", "", 0},
		{"comments only", "# a\n# b\n", 0},
		{"one", "a: 1\n", 1},
		{"two", "a: 1\n---\nb: 2\n", 2},
		{"empty second", "a: 1\n---\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bodies, err := Parse(lexer.Tokenize(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if len(bodies) != tc.bodies {
				t.Errorf("%d bodies, want %d", len(bodies), tc.bodies)
			}
		})
	}
}

func TestPosition(t *testing.T) {
	bodies, err := Parse(lexer.Tokenize("# head\n  key: [1, 2]\n  other: {x: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if l, c, ok := Position(bodies[0]); !ok || l != 2 || c != 3 {
		t.Errorf("Position(block mapping) = %d:%d %v, want its first key, 2:3", l, c, ok)
	}
	if _, _, ok := Position(nil); ok {
		t.Error("Position(nil) ok")
	}
}

func TestSyntaxError(t *testing.T) {
	_, err := Parse(lexer.Tokenize("a: [1, 2\nb: 3\n"))
	if err == nil {
		t.Fatal("no error")
	}
	tk, msg, ok := SyntaxError(err)
	if !ok || msg == "" || tk.Position == nil {
		t.Fatalf("SyntaxError = %v, %q, %v", tk, msg, ok)
	}
	if _, _, ok := SyntaxError(errTest{}); ok {
		t.Error("SyntaxError of an error of another kind: ok")
	}
}

type errTest struct{}

func (errTest) Error() string { return "test" }

func TestUnclosed(t *testing.T) {
	lines := []string{
		`a: ["]", '[' # [`,
		"b: {x: [1,",
		"\t# {",
		"c: 1",
	}
	for _, tc := range []struct {
		name      string
		open      byte
		line, col int
		ok        bool
	}{
		{"innermost [", '[', 2, 8, true},
		{"{", '{', 2, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line, col, ok := Unclosed(lines, 4, 1, tc.open)
			if ok != tc.ok || line != tc.line || col != tc.col {
				t.Errorf("Unclosed(%c) = %d:%d %v, want %d:%d %v", tc.open, line, col, ok, tc.line, tc.col, tc.ok)
			}
		})
	}
	if _, _, ok := Unclosed([]string{"a: [1]"}, 1, 7, '['); ok {
		t.Error("a closed bracket found unclosed")
	}
}

func TestScalarText(t *testing.T) {
	bodies, err := Parse(lexer.Tokenize("{s: 1, 2: 1, 1.5: 1, true: 1, null: 1, !!str 3: 1}"))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := bodies[0].(*ast.MappingNode)
	if !ok {
		t.Fatalf("body is a %T", bodies[0])
	}
	var got []string
	for _, mv := range m.Values {
		text, ok := ScalarText(mv.Key)
		if !ok {
			text = "(not a scalar)"
		}
		got = append(got, text)
	}
	want := []string{"s", "2", "1.5", "true", "null", "3"}
	if !slices.Equal(got, want) {
		t.Errorf("ScalarText of the keys = %q, want %q", got, want)
	}
	if text, ok := ScalarText(m); ok {
		t.Errorf("ScalarText of a mapping = %q, ok", text)
	}
}

func TestInvalidUTF8(t *testing.T) {
	for _, tc := range []struct {
		data string
		want int
	}{
		{"", 0}, {"abc", 3}, {"aé\xffb", 3}, {"\xc3", 0},
	} {
		if got := InvalidUTF8([]byte(tc.data)); got != tc.want {
			t.Errorf("InvalidUTF8(%q) = %d, want %d", tc.data, got, tc.want)
		}
	}
}

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
