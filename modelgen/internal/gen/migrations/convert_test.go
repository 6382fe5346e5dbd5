package migrations_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/gen/migrations"
	"github.com/moora-go/moora/modelgen/internal/spectest"
)

// convertV1 is a spec whose state holds every shape a conversion walks: a
// struct in a slice, a map, a field and a oneOf variant; enums; a $defs
// array; a number; a string.
const convertV1 = `version: 1
actors: [user]
$defs:
  Item:
    type: object
    properties: {name: {type: string}, qty: {type: integer}}
    required: [name, qty]
  Level: {type: string, enum: [low, high]}
  Mood: {type: string, enum: [calm, busy]}
  Tags: {type: array, items: {type: string}}
  Circle:
    type: object
    properties: {kind: {const: circle}, item: {$ref: "#/$defs/Item"}}
    required: [kind, item]
  Square:
    type: object
    properties: {kind: {const: square}, side: {type: integer}}
    required: [kind, side]
  Shape:
    oneOf: [{$ref: "#/$defs/Circle"}, {$ref: "#/$defs/Square"}]
observations:
  user:
    user:
      items: {type: array, items: {$ref: "#/$defs/Item"}}
      byName: {type: object, additionalProperties: {$ref: "#/$defs/Item"}}
      best: {$ref: "#/$defs/Item"}
      level: {$ref: "#/$defs/Level"}
      mood: {$ref: "#/$defs/Mood"}
      tags: {$ref: "#/$defs/Tags"}
      score: {type: integer}
      shapes: {type: array, items: {$ref: "#/$defs/Shape"}}
      note: {type: string}
      empty: {type: array, items: {type: string}}
inputs:
  user:
    noop: {type: object, properties: {x: {type: string}}}
`

// TestConversionsRun generates the conversion of a state from version 1
// to 2, where Item gains a required unit (the one function to write), a
// value is added to Level, score becomes a number and note nullable; Mood
// and Tags do not change. It then builds the code and runs a conversion of
// a state holding every shape, in a temporary module that requires this
// repository.
func TestConversionsRun(t *testing.T) {
	v2 := spectest.Edit(t, convertV1,
		"properties: {name: {type: string}, qty: {type: integer}}\n    required: [name, qty]",
		"properties: {name: {type: string}, qty: {type: integer}, unit: {type: string}}\n    required: [name, qty, unit]",
		"enum: [low, high]", "enum: [low, mid, high]",
		"score: {type: integer}", "score: {type: number}",
		"note: {type: string}", "note: {type: [string, \"null\"]}",
	)
	p := planOf(t, convertV1, v2)
	files := generate(t, p, nil)

	var funcs []string
	for _, fn := range migrations.Funcs(p, nil) {
		funcs = append(funcs, fn.Name)
	}
	if want := []string{"ItemUnitFromV1"}; !slices.Equal(funcs, want) {
		t.Fatalf("Funcs = %v, want %v: only the new required property is written by hand", funcs, want)
	}
	// The types that did not change are version 2's.
	contains(t, "decl/v1/types.go", files["decl/v1/types.go"].Data,
		"type Mood = v2.Mood", "re:MoodBusy += v2.MoodBusy", "type Tags = v2.Tags")
	lacks(t, "decl/v1/types.go", files["decl/v1/types.go"].Data, "type Level =", "type Item =", "type Circle =")

	stub := string(files["impl/migrations/v1_to_v2.go"].Data)
	const panicLine = `panic("not implemented: migration of property unit of Item from version 1 to 2")`
	if !strings.Contains(stub, panicLine) {
		t.Fatalf("the stub lacks %s:\n%s", panicLine, stub)
	}
	files["impl/migrations/v1_to_v2.go"] = gen.File{Data: []byte(strings.Replace(stub, panicLine, `return "pcs"`, 1))}
	files["impl/migrations/run_test.go"] = gen.File{Data: []byte(`package migrations

import (
	"encoding/json"
	"testing"

	v1 "example.com/agent/decl/v1"
	v2 "example.com/agent/decl/v2"
)

func TestConvert(t *testing.T) {
	// Mood is one type across the versions: this compiles only so.
	var mood v1.Mood = v2.MoodBusy
	item := func(name string, qty int64) v1.Item { return v1.Item{Name: name, Qty: qty} }
	old := v1.AgentState{
		Items:  []v1.Item{item("a", 1), item("b", 2)},
		ByName: map[string]v1.Item{"c": item("c", 3)},
		Best:   item("d", 4),
		Level:  v1.LevelHigh,
		Mood:   mood,
		Tags:   v1.Tags{"x", "y"},
		Score:  7,
		Shapes: []v1.Shape{v1.Circle{Item: item("e", 5)}, v1.Square{Side: 6}, nil},
		Note:   "n",
	}
	got, err := json.Marshal(ConvertAgentStateFromV1(old))
	if err != nil {
		t.Fatal(err)
	}
	const want = ` + "`" + `{"best":{"name":"d","qty":4,"unit":"pcs"},"byName":{"c":{"name":"c","qty":3,"unit":"pcs"}},"empty":[],"items":[{"name":"a","qty":1,"unit":"pcs"},{"name":"b","qty":2,"unit":"pcs"}],"level":"high","mood":"busy","note":"n","score":7,"shapes":[{"kind":"circle","item":{"name":"e","qty":5,"unit":"pcs"}},{"kind":"square","side":6},null],"tags":["x","y"]}` + "`" + `
	if string(got) != want {
		t.Errorf("converted:\n%s\nwant\n%s", got, want)
	}
	// A nil list and map stay nil: empty, as the JSON writes them.
	if s := ConvertAgentStateFromV1(v1.AgentState{}); s.Items != nil || s.ByName != nil {
		t.Errorf("nil converted to %v, %v", s.Items, s.ByName)
	}
}
`)}
	inModule(t, p, files, "vet", "test")
}

const edgeV1 = `version: 1
actors: [user]
$defs:
  Name: {type: string}
  Line: {type: object, properties: {a: {type: integer}}, required: [a]}
  LineItem: {type: object, properties: {a: {type: integer}}, required: [a]}
  Dot: {type: object, properties: {kind: {const: dot}}, required: [kind]}
  Square: {type: object, properties: {kind: {const: square}, side: {type: integer}}, required: [kind, side]}
  Shape: {oneOf: [{$ref: "#/$defs/Dot"}, {$ref: "#/$defs/Square"}]}
  Claim:
    type: object
    properties: {tags: {type: array, items: {type: string}}, meta: {type: object, additionalProperties: {type: string}}, old: {type: array, items: {type: string}}}
    required: [tags, meta, old]
observations:
  user:
    user:
      name: {$ref: "#/$defs/Name"}
      line: {$ref: "#/$defs/Line"}
      lineItem: {$ref: "#/$defs/LineItem"}
      shapes: {type: array, items: {$ref: "#/$defs/Shape"}}
      claim: {$ref: "#/$defs/Claim"}
inputs:
  user:
    noop: {type: object, properties: {x: {type: string}}}
`

// TestConversionsEdgeCases: a $defs string that the state now holds as a
// plain string; two new properties whose functions' names would be the same
// (Line's itemCount, LineItem's count); a oneOf variant removed, which is
// the only one a person converts; lists and maps required before and
// optional or nullable now, which stay empty, not absent or null; a rename
// into a nullable list; a new state property in a breaking step, which a
// person fills.
func TestConversionsEdgeCases(t *testing.T) {
	v2 := spectest.Edit(t, edgeV1,
		"Line: {type: object, properties: {a: {type: integer}}, required: [a]}",
		"Line: {type: object, properties: {a: {type: integer}, itemCount: {type: integer}}, required: [a, itemCount]}",
		"LineItem: {type: object, properties: {a: {type: integer}}, required: [a]}",
		"LineItem: {type: object, properties: {a: {type: integer}, count: {type: string}}, required: [a, count]}",
		`Shape: {oneOf: [{$ref: "#/$defs/Dot"}, {$ref: "#/$defs/Square"}]}`, `Shape: {oneOf: [{$ref: "#/$defs/Square"}]}`,
		"  Dot: {type: object, properties: {kind: {const: dot}}, required: [kind]}\n", "",
		"old: {type: array, items: {type: string}}}\n    required: [tags, meta, old]",
		"labels: {type: [array, \"null\"], items: {type: string}}}\n    required: [labels]",
		"name: {$ref: \"#/$defs/Name\"}", "name: {type: string}\n      limit: {type: integer}",
	)
	p := planOf(t, edgeV1, v2)
	var funcs []string
	for _, fn := range migrations.Funcs(p, nil) {
		funcs = append(funcs, fn.Name)
	}
	want := []string{"ClaimLabelsFromV1", "AgentStateLimitFromV1", "LineItemCountFromV1", "LineItemPropertyCountFromV1", "ShapeDotFromV1"}
	if !slices.Equal(funcs, want) {
		t.Fatalf("Funcs = %v, want %v", funcs, want)
	}
	files := generate(t, p, nil)
	stub := string(files["impl/migrations/v1_to_v2.go"].Data)
	conv := string(files[migrations.ConversionsPath].Data)
	contains(t, "v1_to_v2.go", []byte(stub),
		"func ClaimLabelsFromV1(old v1.Claim) []string {\n\treturn emptySlice(old.Old)\n}",
		"return what the initial state has",
		"func ShapeDotFromV1(old v1.Dot) v2.Shape {",
		"/shapes/[]: oneOf variant removed: dot (breaking)",
	)
	contains(t, "conversions.go", []byte(conv),
		"re:Name: +string\\(old.Name\\),", "re:Tags: +emptySlice\\(old.Tags\\),", "re:Meta: +emptyMap\\(old.Meta\\),",
		"return ShapeDotFromV1(v)", "return convertSquareFromV1(v)")
	for fn, body := range map[string]string{
		"AgentStateLimitFromV1":       "return 10",
		"LineItemCountFromV1":         "return 2",
		"LineItemPropertyCountFromV1": `return "n"`,
		"ShapeDotFromV1":              "return v2.Square{Side: 0}",
	} {
		i := strings.Index(stub, "func "+fn+"(")
		j := i + strings.Index(stub[i:], "\tpanic(")
		k := j + strings.Index(stub[j:], "\n")
		if i < 0 || j < i {
			t.Fatalf("no stub of %s", fn)
		}
		stub = stub[:j] + "\t" + body + stub[k:]
	}
	if !strings.Contains(stub, `v2 "example.com/agent/decl/v2"`) && !strings.Contains(stub, `"example.com/agent/decl/v2"`) {
		stub = strings.Replace(stub, `import "example.com/agent/decl/v1"`, "import (\n\t\"example.com/agent/decl/v1\"\n\t\"example.com/agent/decl/v2\"\n)", 1)
	}
	files["impl/migrations/v1_to_v2.go"] = gen.File{Data: []byte(stub)}
	files["impl/migrations/run_test.go"] = gen.File{Data: []byte(`package migrations

import (
	"encoding/json"
	"testing"

	v1 "example.com/agent/decl/v1"
)

func TestConvert(t *testing.T) {
	// As gob restores a state whose lists and maps were empty: nil.
	old := v1.AgentState{
		Name:     "n",
		Line:     v1.Line{A: 1},
		LineItem: v1.LineItem{A: 2},
		Shapes:   []v1.Shape{v1.Dot{}, v1.Square{Side: 3}},
	}
	got, err := json.Marshal(ConvertAgentStateFromV1(old))
	if err != nil {
		t.Fatal(err)
	}
	const want = ` + "`" + `{"claim":{"tags":[],"meta":{},"labels":[]},"limit":10,"line":{"a":1,"itemCount":2},"lineItem":{"a":2,"count":"n"},"name":"n","shapes":[{"kind":"square","side":0},{"kind":"square","side":3}]}` + "`" + `
	if string(got) != want {
		t.Errorf("converted:\n%s\nwant\n%s", got, want)
	}
}
`)}
	inModule(t, p, files, "vet", "test")
}
