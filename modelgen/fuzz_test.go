package modelgen

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/moora-go/moora/modelgen/internal/spec"
	"github.com/rogpeppe/go-internal/txtar"
)

// fuzzGenerateLimit is the size up to which FuzzLoadSpec also generates
// the Go code of a valid spec. Generating and formatting costs
// milliseconds, and the fuzzer minimizes every new input by running it over
// and over (for up to a minute by default): generating every valid input,
// the fuzzer spent its time minimizing mutations of the golden specs and
// ran about a hundred inputs a minute. Small valid specs still generate,
// and the seeds include small ones of every feature for the fuzzer to
// mutate.
const fuzzGenerateLimit = 1024

// smallSpecs are seeds under fuzzGenerateLimit: one feature of the spec
// format each, so that their mutations are generated too.
var smallSpecs = []string{
	"version: 1\nactors: [a]\n",
	`{"version":1,"actors":["a"],"observations":{"a":{"a":{"x":{"type":"integer"}}}}}`,
	"version: 1\npackage: example.com/x\nactors: [user, llm]\nobservations:\n  user: {llm: {reply: {type: string, description: \"the\\treply\"}}}\n  llm: {user: {prompt: {type: [string, \"null\"]}}}\ninputs:\n  user: {ask: {type: object, properties: {prompt: {type: string, minLength: 1}}, required: [prompt]}}\n  llm: {answer: {type: object, properties: {reply: {type: string}}}}\n",
	"version: 1\nactors: [a]\n$defs:\n  Mood: {enum: [happy, sad], default: happy}\n  Tags: {type: object, additionalProperties: {type: array, items: {type: string}}}\nobservations:\n  a: {a: {mood: {$ref: \"#/$defs/Mood\"}, tags: {$ref: \"#/$defs/Tags\"}}}\ninputs:\n  a: {feel: {type: object, properties: {mood: {$ref: \"#/$defs/Mood\"}, n: {type: number, multipleOf: 0.5, maximum: 9}}, required: [mood]}}\n",
	"version: 1\nactors: [a]\n$defs:\n  Shape:\n    oneOf:\n      - {type: object, properties: {kind: {const: circle}, r: {type: number}}, required: [kind]}\n      - {type: object, properties: {kind: {const: square}, side: {type: integer}}, required: [kind, side]}\nobservations:\n  a: {a: {shapes: {type: array, items: {$ref: \"#/$defs/Shape\"}}}}\ninputs:\n  a: {draw: {type: object, properties: {shape: {$ref: \"#/$defs/Shape\"}}, required: [shape]}}\n",
	"version: 1\nactors: [a]\n$defs:\n  Base: {type: object, properties: {id: {type: string, format: uuid}}, required: [id]}\n  Item: {allOf: [{$ref: \"#/$defs/Base\"}], properties: {n: {type: integer}}}\nobservations:\n  a: {a: {items: {type: object, additionalProperties: {$ref: \"#/$defs/Item\"}}}}\ninputs:\n  a: {add: {$ref: \"#/$defs/Item\"}, put: {type: object, properties: {n: {type: integer}}, additionalProperties: false}}\n",
}

// fuzzMinimizeTime is how long FuzzLoadSpec minimizes an input unless
// -fuzzminimizetime says otherwise. The fuzzer minimizes every input that
// finds new coverage, not only failing ones, and its minimizer tries to
// remove every range of bytes: for a spec of a kilobyte or two that is
// hundreds of thousands of runs, so each new input kept both workers busy
// for the default minute, and FuzzLoadSpec ran about a hundred inputs in a
// minute and a half.
const fuzzMinimizeTime = "2s"

// FuzzLoadSpec feeds arbitrary documents to the loader. It must never
// panic; a document it rejects yields diagnostics with positions in it;
// piecewise validation agrees with validating the whole document; and a
// document it accepts of at most fuzzGenerateLimit bytes generates Go code
// (decl/ and impl/) that formats. (Every accepted document's input schema
// compiles: Load checks that itself.) Run it with
//
//	go test -run '^$' -fuzz=FuzzLoadSpec -fuzztime=60s ./modelgen
//
// which minimizes each new input for fuzzMinimizeTime; pass
// -fuzzminimizetime to choose another limit. Failing inputs land in
// testdata/fuzz/FuzzLoadSpec; commit them, as the seeds they are from then
// on, with the fix.
func FuzzLoadSpec(f *testing.F) {
	setFlagDefault(f, "test.fuzzminimizetime", fuzzMinimizeTime)
	specs, _ := filepath.Glob(filepath.Join("testdata", "*", "agent.*"))
	for _, p := range specs {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data, strings.HasSuffix(p, ".json"))
		}
	}
	archives, _ := filepath.Glob(filepath.Join("testdata", "invalid", "*.txtar"))
	for _, p := range archives {
		ar, err := txtar.ParseFile(p)
		if err != nil {
			continue
		}
		for _, file := range ar.Files {
			if strings.HasPrefix(file.Name, "agent.") {
				f.Add(file.Data, strings.HasSuffix(file.Name, ".json"))
			}
		}
	}
	for _, s := range smallSpecs {
		f.Add([]byte(s), strings.HasPrefix(s, "{"))
	}
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		name := "agent.yaml"
		if isJSON {
			name = "agent.json"
		}
		checkValidateInPieces(t, name, data)
		m, err := loadBytes(name, data)
		if err != nil {
			ds := asDiagnostics(err)
			if len(ds) == 0 {
				t.Fatalf("error without diagnostics: %v", err)
			}
			lines := strings.Split(string(bytes.TrimPrefix(data, spec.UTF8BOM)), "\n")
			for _, d := range ds {
				if d.Pos.File != name || d.Pos.Line < 1 || d.Message == "" {
					t.Fatalf("diagnostic without a position or message: %#v", d)
				}
				if d.Pos.Line > len(lines) || d.Pos.Col > utf8.RuneCountInString(lines[d.Pos.Line-1])+1 {
					t.Fatalf("diagnostic outside the document: %s\n%q", d, data)
				}
			}
			return
		}
		if m == nil {
			t.Fatal("LoadBytes returned neither a model nor an error")
		}
		if len(data) > fuzzGenerateLimit {
			return
		}
		if m.Package == "" {
			m.Package = "example.com/fuzz"
		}
		if _, err := generateModel(m, declGen, implGen(nil)); err != nil {
			t.Fatalf("a valid spec failed to generate: %v\n%s", err, data)
		}
	})
}

// TestSmallSpecsAreValid keeps the small seeds of FuzzLoadSpec valid and
// small, so that the fuzzer generates their mutations.
func TestSmallSpecsAreValid(t *testing.T) {
	for _, s := range smallSpecs {
		name := "agent.yaml"
		if strings.HasPrefix(s, "{") {
			name = "agent.json"
		}
		if _, err := loadBytes(name, []byte(s)); err != nil {
			t.Errorf("%v\n%s", err, s)
		}
		if len(s) > fuzzGenerateLimit {
			t.Errorf("a seed of %d bytes is over fuzzGenerateLimit:\n%s", len(s), s)
		}
	}
}

// setFlagDefault sets a flag of the test binary unless the command line
// set it.
func setFlagDefault(tb testing.TB, name, value string) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	if f := flag.Lookup(name); f != nil && !set {
		if err := f.Value.Set(value); err != nil {
			tb.Fatal(err)
		}
	}
}
