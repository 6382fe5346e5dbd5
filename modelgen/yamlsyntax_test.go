package modelgen

import (
	"fmt"
	"strings"
	"testing"
)

// TestYAMLSyntaxErrors loads specs with the usual YAML slips and checks that
// each is reported at the line and column of the mistake, with a message
// (and, where one helps, a hint) that says what is wrong.
func TestYAMLSyntaxErrors(t *testing.T) {
	tests := []struct {
		name, spec string
		want       string // line:col: message
		hint       string // a part of the hint; "" when none is checked
	}{
		{
			name: "a tab in the indentation",
			spec: "version: 1\nactors: [user]\nobservations:\n\tuser: {}\n",
			want: "4:1: a tab in the indentation",
			hint: "indents with spaces only",
		},
		{
			name: "a key indented one space less than its siblings",
			spec: "version: 1\nactors: [user]\nobservations:\n  user:\n    user:\n      a: {type: string}\n     b: {type: string}\n",
			want: "7:6: a key where none is expected",
			hint: "indent it by 6",
		},
		{
			name: "a key indented one space more than its siblings",
			spec: "version: 1\nactors: [user]\nobservations:\n  user:\n    user:\n      a: {type: string}\n       b: {type: string}\n",
			want: "7:8: a key where none is expected",
			hint: "indent it by 6",
		},
		{
			name: "a comma in an unquoted value inside {…}",
			spec: "version: 1\nactors: [user]\n$defs:\n  A: {type: string, description: Hello, world}\n",
			want: "4:41: \"world\" has no value: a key in {…} is followed by a colon",
			hint: "quote the value: description: \"Hello, world\"",
		},
		{
			name: "an unclosed [ at the end of the file",
			spec: "version: 1\nactors: [user, llm\n",
			want: "2:9: this [ is never closed",
			hint: "end the sequence with ]",
		},
		{
			name: "an unclosed { at the end of the file",
			spec: "version: 1\nactors: [user]\n$defs:\n  A: {type: string\n",
			want: "4:6: this { is never closed",
			hint: "end the mapping with }",
		},
		{
			name: "a duplicate key",
			spec: "version: 1\nactors: [user]\nversion: 2\n",
			want: "3:1: duplicate key \"version\" (first at 1:1)",
			hint: "",
		},
		{
			name: "a duplicate key inside {…}",
			spec: "version: 1\nactors: [user]\n$defs:\n  A: {type: string, type: integer}\n",
			want: "4:21: duplicate key \"type\" (first at 4:7)",
			hint: "",
		},
		{
			name: "an unclosed double quote",
			spec: "version: 1\nactors: [user]\n$defs:\n  A: {type: \"string}\n",
			want: "4:13: this double-quoted string is never closed",
			hint: "",
		},
		{
			name: "an unquoted value holding a colon and a space",
			spec: "version: 1\nactors: [user]\n$defs:\n  A:\n    description: a: b\n",
			want: "5:18: a second key: value on one line",
			hint: "must be quoted",
		},
		{
			name: "a sequence item among the keys of a mapping",
			spec: "version: 1\nactors: [user]\n$defs:\n  A:\n    type: string\n  - B\n",
			want: "6:3: a sequence item (-) where the mapping above expects a key",
			hint: "",
		},
		{
			name: "a key among the items of a sequence",
			spec: "version: 1\nactors:\n  - user\n  llm: 1\n",
			want: "4:3: a key where none is expected",
			hint: "start it with - for a new item",
		},
		{
			name: "an alias without its anchor",
			spec: "version: 1\nactors: [user]\n$defs: *missing\n",
			want: "3:8: unknown YAML alias *missing",
			hint: "",
		},
		{
			name: "a } that closes nothing",
			spec: "version: 1\nactors: [user]\n$defs:\n  A: {type: string}}\n",
			want: "4:20: this } closes nothing",
			hint: "",
		},
		{
			name: "a ] that closes nothing",
			spec: "version: 1\nactors: [user]]\n",
			want: "2:15: this ] closes nothing",
			hint: "",
		},
		{
			name: "two commas in a row inside {…}",
			spec: "version: 1\nactors: [user]\n$defs:\n  A: {type: string,, description: x}\n",
			want: "4:20: an empty entry between two commas",
			hint: "remove one of the commas",
		},
		{
			name: "a key without a colon inside {…}",
			spec: "version: 1\nactors: [user]\n$defs:\n  A: {type string}\n",
			want: "4:7: \"type string\" has no value: a key in {…} is followed by a colon",
			hint: "",
		},
		{
			name: "a key of a nested mapping dedented by one",
			spec: "version: 1\nactors: [user]\n$defs:\n  A:\n    type: string\n   description: x\n",
			want: "6:4: a key where none is expected",
			hint: "indent it by 4",
		},
		{
			name: "a quote inside a single-quoted string",
			spec: "version: 1\nactors: [user]\n$defs:\n  A: 'it's'\n",
			want: "4:10: text after a single-quoted string",
			hint: "written ''",
		},
		{
			name: "a top-level key indented under the previous one",
			spec: "version: 1\nactors: [user]\n  package: x\n",
			want: "3:3: a key where none is expected",
			hint: "indented more than line 2",
		},
		{
			name: "a tab in a nested indentation",
			spec: "version: 1\nactors: [user]\n$defs:\n  A:\n    type: string\n\tdescription: x\n",
			want: "6:1: a tab in the indentation",
			hint: "",
		},
		{
			name: "two documents",
			spec: "version: 1\nactors: [user]\n---\nversion: 1\n",
			want: "4:1: more than one YAML document; a spec is a single document",
			hint: "",
		},
		{
			name: "two commas in a row inside […]",
			spec: "version: 1\nactors: [user]\nobservations:\n  user:\n    user: {a: {type: string}, }\n    b: [x, , y]\n",
			want: "6:12: an empty entry between two commas",
			hint: "remove one of the commas",
		},
		{
			name: "a $defs key dedented by one",
			spec: "version: 1\nactors: [user]\n$defs:\n  A: {type: string}\n B: {type: string}\n",
			want: "5:2: a key where none is expected",
			hint: "indent it by 2",
		},
	}
	if len(tests) < 15 {
		t.Fatalf("%d cases, want at least 15", len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadBytes("agent.yaml", []byte(tc.spec))
			ds := asDiagnostics(err)
			if len(ds) != 1 {
				t.Fatalf("want one diagnostic, got %v", err)
			}
			d := ds[0]
			if got := fmt.Sprintf("%d:%d: %s", d.Pos.Line, d.Pos.Col, d.Message); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if !strings.Contains(d.Hint, tc.hint) {
				t.Errorf("hint %q does not say %q", d.Hint, tc.hint)
			}
		})
	}
}
