package yamlpos

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"
)

// The two readers' policies, with small limits.
var (
	looseOptions = ConvertOptions{
		MaxValues: 20, MaxDepth: 4, MaxKeyHops: 4,
		AliasAtAlias: true, RefuseAliasInAnchor: true, NullAtKey: true,
	}
	checkedOptions = ConvertOptions{
		MaxValues: 20, MaxDepth: 4,
		ItemAfterDash: true, ExactNumbers: true, Tags: CheckedTags, RefuseKeyWithoutValue: true,
	}
)

// convertDoc parses doc, of one document, and converts it with opts (with
// doc as Text for checked ones).
func convertDoc(t *testing.T, doc string, opts ConvertOptions) (*Node, *ConvertError) {
	t.Helper()
	bodies, err := Parse(lexer.Tokenize(doc))
	if err != nil || len(bodies) != 1 {
		t.Fatalf("Parse(%q) = %d bodies, %v", doc, len(bodies), err)
	}
	if opts.Tags == CheckedTags {
		opts.Text = []byte(doc)
	}
	return Convert(bodies[0], opts)
}

func TestConvert(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		checked   bool
		want      string // dump of the tree
	}{
		{name: "values", doc: "a: 1\nb: [x, true, ~]\nc: {d: 1.50}\n",
			want: "object@1:1{a@1:1=number@1:4(1) b@2:1=array@2:4[string@2:5(x) boolean@2:8(true) null@2:14] c@3:1=object@3:4{d@3:5=number@3:8(1.5)}}"},
		{name: "alias at the alias", doc: "a: &x 1\nb: *x\n",
			want: "object@1:1{a@1:1=number@1:7(1) b@2:1=number@2:4(1)}"},
		{name: "alias at the anchored value", doc: "a: &x 1\nb: *x\n", checked: true,
			want: "object@1:1{a@1:1=number@1:7(1) b@2:1=number@1:7(1)}"},
		{name: "null at its key", doc: "a:\nb: null\n",
			want: "object@1:1{a@1:1=null@1:1 b@2:1=null@2:1}"},
		{name: "null after the colon", doc: "a:\nb: null\n", checked: true,
			want: "object@1:1{a@1:1=null@1:3 b@2:1=null@2:4}"},
		{name: "numbers formatted", doc: "[-0, 1.0, 1.5e3, 0x10]",
			want: "array@1:1[number@1:2(0) number@1:6(1) number@1:11(1500) number@1:18(16)]"},
		{name: "numbers as written", doc: "[-0, 1.0, 1.5e3, 0x10]", checked: true,
			want: "array@1:1[number@1:2(-0) number@1:6(1) number@1:11(1500) number@1:18(16)]"},
		{name: "loose tags", doc: "[!!str, !!str null, !!int x, !!str 1]",
			want: "array@1:1[string@1:2() string@1:8() string@1:24(x) string@1:27(1)]"},
		{name: "checked tags", doc: "[!!str 1, !!timestamp 2001-12-14, !!int 2]", checked: true,
			want: "array@1:1[string@1:2(1) string@1:10(2001-12-14) number@1:38(2)]"},
		{name: "key without value read as null", doc: "{a, b: 1}",
			want: "object@1:1{a@1:2=null@1:2 b@1:5=number@1:8(1)}"},
		{name: "one-entry mappings in a sequence", doc: "- a: 1\n- b: 2\n",
			want: "array@1:1[object@1:3{a@1:3=number@1:6(1)} object@2:3{b@2:3=number@2:6(2)}]"},
		{name: "anchored and aliased keys", doc: "&k a: 1\nb: {*k : 2}\n",
			want: "object@1:1{a@1:1=number@1:7(1) b@2:1=object@2:4{a@2:5=number@2:10(2)}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := looseOptions
			if tc.checked {
				opts = checkedOptions
			}
			n, e := convertDoc(t, tc.doc, opts)
			if e != nil {
				t.Fatalf("Convert: %+v", *e)
			}
			if got := dump(n); got != tc.want {
				t.Errorf("Convert =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// tk is a token of value at line:col.
func tk(value string, line, col int) *token.Token {
	return &token.Token{Value: value, Position: &token.Position{Line: line, Column: col}}
}

// entry is a mapping of one entry, key: 1 at 1:1.
func entry(key ast.MapKeyNode) ast.Node {
	return &ast.MappingNode{Values: []*ast.MappingValueNode{{Start: &token.Token{Type: token.MappingValueType}, Key: key, Value: &ast.IntegerNode{Token: tk("1", 1, 4), Value: int64(1)}}}}
}

func TestConvertFaults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		doc     string   // or
		node    ast.Node // a tree the parser does not make of any text
		checked bool
		opts    func(*ConvertOptions)
		want    ConvertError // Fault, Line, Col, Name, and a path of keys or [indices] joined by "/"
		path    string
	}{
		{name: "too many values", doc: "[1, 2, 3]", opts: func(o *ConvertOptions) { o.MaxValues = 3 },
			want: ConvertError{Fault: Crossed, Limit: TooManyValues, Line: 1, Col: 8}, path: "[2]"},
		{name: "too deep", doc: "a: [[1]]", opts: func(o *ConvertOptions) { o.MaxDepth = 2 },
			want: ConvertError{Fault: Crossed, Limit: TooDeep, Line: 1, Col: 6}, path: "a/[0]/[0]"},
		{name: "alias too deep", doc: "a: &x [1]\nb: [*x]\n", opts: func(o *ConvertOptions) { o.MaxDepth = 2 },
			want: ConvertError{Fault: Crossed, Limit: TooDeep, Line: 1, Col: 7}, path: "b/[0]"},
		{name: "unknown alias", doc: "a: *x\n",
			want: ConvertError{Fault: UnknownAlias, Line: 1, Col: 4, Name: "x"}, path: "a"},
		{name: "unknown alias in a key", doc: "a:\n  ? *x\n  : 1\n",
			want: ConvertError{Fault: UnknownAlias, Line: 2, Col: 3, Name: "x", InKey: true}, path: "a"},
		{name: "alias in its anchor", doc: "a: &x [1, *x]\n",
			want: ConvertError{Fault: AliasInAnchor, Line: 1, Col: 11, Name: "x"}, path: "a/[1]"},
		{name: "alias in its anchor expanded", doc: "a: &x [1, *x]\n", checked: true, opts: func(o *ConvertOptions) { o.MaxDepth = 8 },
			want: ConvertError{Fault: Crossed, Limit: TooDeep, Line: 1, Col: 7}, path: "a/[1]/[1]/[1]/[1]"},
		{name: "merge key", doc: "a: &x {b: 1}\nc:\n  <<: *x\n",
			want: ConvertError{Fault: MergeKey, Line: 3, Col: 3}, path: "c"},
		{name: "key not scalar", node: entry(&ast.MappingKeyNode{Start: tk("?", 1, 1), Value: &ast.SequenceNode{BaseNode: &ast.BaseNode{}, Start: tk("[", 1, 3)}}),
			want: ConvertError{Fault: KeyNotScalar, Line: 1, Col: 1}},
		{name: "key without text", node: entry(&ast.MappingKeyNode{Start: tk("?", 1, 1)}),
			want: ConvertError{Fault: KeyWithoutText, Line: 1, Col: 1}},
		{name: "key of aliases in a loop", node: entry(&ast.AnchorNode{Start: tk("&", 1, 1), Name: &ast.StringNode{Token: tk("k", 1, 2), Value: "k"}, Value: &ast.AliasNode{Start: tk("*", 1, 4), Value: &ast.StringNode{Token: tk("k", 1, 5), Value: "k"}}}),
			want: ConvertError{Fault: KeyAliasLoop, Line: 1, Col: 1}},
		{name: "key without value", doc: "{a: b, c}", checked: true,
			want: ConvertError{Fault: KeyWithoutValue, Line: 1, Col: 8, Name: "c", HasPrev: true, PrevKey: "a", PrevText: "b"}},
		{name: "first key without value", doc: "{a, b: 1}", checked: true,
			want: ConvertError{Fault: KeyWithoutValue, Line: 1, Col: 2, Name: "a"}},
		{name: "duplicate key", doc: "a:\n  b: 1\n  b: 2\n",
			want: ConvertError{Fault: DuplicateKey, Line: 3, Col: 3, Name: "b", FirstLine: 2, FirstCol: 3}, path: "a"},
		{name: "unsupported tag", doc: "a: !foo 1\n",
			want: ConvertError{Fault: UnsupportedTag, Line: 1, Col: 4, Name: "!foo"}, path: "a"},
		{name: "unsupported tag after its value", doc: "a: !foo *x\n", checked: true,
			want: ConvertError{Fault: UnknownAlias, Line: 1, Col: 8, Name: "x"}, path: "a"},
		{name: "tag mismatch", doc: "a: !!int x\n", checked: true,
			want: ConvertError{Fault: TagMismatch, Line: 1, Col: 4, Name: "!!int", Got: String}, path: "a"},
		{name: "tag on a collection", node: &ast.TagNode{Start: tk("!!str", 1, 1), Value: &ast.SequenceNode{BaseNode: &ast.BaseNode{}, Start: tk("[", 1, 7)}},
			want: ConvertError{Fault: TagOnNonScalar, Line: 1, Col: 1, Name: "!!str"}},
		{name: "number too large", node: &ast.IntegerNode{Token: tk("0x1ffffffffffffffff", 1, 1), Value: "0x1ffffffffffffffff"},
			want: ConvertError{Fault: NumberTooLarge, Line: 1, Col: 1, Name: "0x1ffffffffffffffff"}},
		{name: "infinity", doc: "a: [.inf]\n",
			want: ConvertError{Fault: NumberNotJSON, Line: 1, Col: 5, Name: ".inf"}, path: "a/[0]"},
		{name: "too close to 0", doc: "a: 1.5e-400\n", checked: true,
			want: ConvertError{Fault: TooCloseToZero, Line: 1, Col: 4, Name: "1.5e-400"}, path: "a"},
		{name: "unsupported node", node: &ast.CommentGroupNode{Comments: []*ast.CommentNode{{Token: tk("# x", 2, 1)}}},
			want: ConvertError{Fault: UnsupportedNode, Line: 2, Col: 1, Name: "comment"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := looseOptions
			if tc.checked {
				opts = checkedOptions
			}
			if tc.opts != nil {
				tc.opts(&opts)
			}
			var n *Node
			var e *ConvertError
			if tc.node != nil {
				n, e = Convert(tc.node, opts)
			} else {
				n, e = convertDoc(t, tc.doc, opts)
			}
			if e == nil {
				t.Fatalf("Convert = %s, want fault %d", dump(n), tc.want.Fault)
			}
			var path []string
			for _, s := range e.Path {
				if s.Item {
					path = append(path, "["+strconv.Itoa(s.Index)+"]")
				} else {
					path = append(path, s.Key)
				}
			}
			if got := strings.Join(path, "/"); got != tc.path {
				t.Errorf("path %q, want %q", got, tc.path)
			}
			got := *e
			got.Path = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Convert fault\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// FuzzConvert converts any document within small limits with both
// readers' policies: nothing panics, and each gives a tree whose
// positions are in the document (inside its lines with Text, from 1
// without) or a fault at such a position.
func FuzzConvert(f *testing.F) {
	for _, s := range []string{
		"a: 1\nb: [1, 2]\n", "a: &x [1]\nb: *x\n", "{a, b: 1}", "a: !!int x", "- a\n  b\n", "a:\n", "? [a]\n: 1\n",
		"a: &x [*x]", "&k a: 1\n*k : 2\n", "a: 1e-400", "a: !!str\nb: !!timestamp 2001-01-01", "<<: {a: 1}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		tokens := lexer.Tokenize(doc)
		if _, crossed := CheckTokens(tokens, Limits{Depth: 8, Values: 200, BlockEntries: 20}); crossed != 0 {
			return
		}
		bodies, err := Parse(tokens)
		if err != nil {
			return
		}
		lines := strings.Split(doc, "\n")
		for _, b := range bodies {
			for _, opts := range []ConvertOptions{looseOptions, checkedOptions} {
				inText := opts.Tags == CheckedTags
				if inText {
					opts.Text = []byte(doc)
				}
				check := func(what string, line, col int) {
					if line < 1 || col < 1 || inText && (line > len(lines) || col > utf8.RuneCountInString(lines[line-1])+1) {
						t.Fatalf("%s at %d:%d, outside the document (Text %v)", what, line, col, inText)
					}
				}
				n, e := Convert(b, opts)
				if e != nil {
					if e.Fault == 0 {
						t.Fatalf("a ConvertError without a fault: %+v", *e)
					}
					check("fault", e.Line, e.Col)
					continue
				}
				var walk func(n *Node)
				walk = func(n *Node) {
					check("value", n.Line, n.Col)
					for _, it := range n.Items {
						walk(it)
					}
					for i, v := range n.Vals {
						check("key "+n.Keys[i], v.KeyLine, v.KeyCol)
						walk(v)
					}
				}
				walk(n)
			}
		}
	})
}

// dump writes n on one line: each value as kind@line:col, a key as
// key@line:col=, a scalar's text after it.
func dump(n *Node) string {
	var b strings.Builder
	var walk func(n *Node)
	walk = func(n *Node) {
		fmt.Fprintf(&b, "%v@%d:%d", n.Kind, n.Line, n.Col)
		switch n.Kind {
		case Array:
			b.WriteString("[")
			for i, it := range n.Items {
				if i > 0 {
					b.WriteString(" ")
				}
				walk(it)
			}
			b.WriteString("]")
		case Object:
			b.WriteString("{")
			for i, k := range n.Keys {
				if i > 0 {
					b.WriteString(" ")
				}
				fmt.Fprintf(&b, "%s@%d:%d=", k, n.Vals[i].KeyLine, n.Vals[i].KeyCol)
				walk(n.Vals[i])
			}
			b.WriteString("}")
		case Null:
		default:
			fmt.Fprintf(&b, "(%s)", n.Text)
		}
	}
	walk(n)
	return b.String()
}
