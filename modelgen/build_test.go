package modelgen

import (
	"strings"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/spec"
)

// buildOnly runs the model checks on a spec without validating it against
// the spec schema first, to reach the checks that stand behind it.
func buildOnly(t *testing.T, name, src string) (*model.Model, error) {
	t.Helper()
	root, err := spec.Parse(name, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Decode(root)
	if err != nil {
		t.Fatal(err)
	}
	return model.Build(spec.NewSource(name, root), s)
}

// TestBuildCompilesInputSchemas checks that the model checks compile the
// input schemas the way generated code does, so that a schema the run-time
// validator rejects is a diagnostic at its place in the spec and never a
// DecodeInput that fails on every input. The spec schema rejects these
// keywords first; build alone must catch them too.
func TestBuildCompilesInputSchemas(t *testing.T) {
	const spec = `version: 1
package: example.com/agent
actors: [user]
$defs:
  Step: {type: number, multipleOf: 0}
  Shape:
    oneOf:
      - {type: object, properties: {kind: {const: a}, size: {type: number, multipleOf: -1}}, required: [kind]}
observations:
  user:
    user: {n: {type: number}}
inputs:
  user:
    set:
      type: object
      properties:
        zero: {type: number, multipleOf: 0}
        merged: {allOf: []}
        step: {$ref: "#/$defs/Step"}
        shape: {$ref: "#/$defs/Shape"}
`
	_, err := buildOnly(t, "agent.yaml", spec)
	const rejects = "the run-time validator of inputs rejects this schema: "
	const hint = "; fix or remove the keyword; DecodeInput could not validate any input"
	want := []string{
		"agent.yaml:5:36: $defs.Step.multipleOf: " + rejects + "must be > 0 but found 0" + hint,
		"agent.yaml:8:88: $defs.Shape.oneOf[0].properties.size.multipleOf: " + rejects + "must be > 0 but found -1" + hint,
		"agent.yaml:17:42: inputs.user.set.properties.zero.multipleOf: " + rejects + "must be > 0 but found 0" + hint,
		"agent.yaml:18:25: inputs.user.set.properties.merged.allOf: " + rejects + "minimum 1 items required, but found 0 items" + hint,
	}
	if err == nil {
		t.Fatal("build accepted schemas that do not compile")
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Errorf("diagnostics\ngot:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// TestGenerateByteOrderMarkInValues checks that a byte order mark in an
// enum value, a const, a pattern or a default, which are data and not
// rejected, does not break the generated Go source: Go cannot hold U+FEFF
// but at its start, so the input schema and the doc comments escape it.
func TestGenerateByteOrderMarkInValues(t *testing.T) {
	const spec = `{"version": 1, "package": "example.com/agent", "actors": ["user"],
 "observations": {"user": {"user": {"mood": {"type": "string", "enum": ["\ufeffa", "b"], "default": "\ufeffa"}}}},
 "inputs": {"user": {"feel": {"type": "object",
   "properties": {
     "mood": {"type": "string", "enum": ["\ufeffa", "b"], "default": "\ufeffa"},
     "text": {"type": "string", "pattern": "^\ufeff"},
     "kind": {"const": "\ufeff"}},
   "required": ["kind"]}}}}`
	m, err := loadBytes("agent.json", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	out, err := generateModel(m, declGen, implGen(nil))
	if err != nil {
		t.Fatalf("generating: %v", err)
	}
	for _, f := range out.Files {
		if strings.ContainsRune(string(f.Data), '\uFEFF') {
			t.Errorf("%s holds a byte order mark", f.Path)
		}
	}
}
