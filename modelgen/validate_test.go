package modelgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/spec"
	"github.com/rogpeppe/go-internal/txtar"
)

// checkValidateInPieces compares spec.Validate with spec.ValidateWhole on
// a document.
func checkValidateInPieces(t testing.TB, name string, data []byte) {
	root, err := spec.Parse(name, data)
	if err != nil {
		return
	}
	src := spec.NewSource(name, root)
	got, err := spec.Validate(src)
	if err != nil {
		t.Fatal(err)
	}
	want, err := spec.ValidateWhole(src)
	if err != nil {
		t.Fatal(err)
	}
	if got.Error() != want.Error() {
		t.Errorf("%s: piecewise validation differs from whole validation\npieces:\n%s\nwhole:\n%s", name, got.Error(), want.Error())
	}
}

func TestValidateInPieces(t *testing.T) {
	specs, _ := filepath.Glob(filepath.Join("testdata", "*", "agent.*"))
	for _, p := range specs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checkValidateInPieces(t, p, data)
	}
	archives, _ := filepath.Glob(filepath.Join("testdata", "invalid", "*.txtar"))
	for _, p := range archives {
		ar, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			if strings.HasPrefix(f.Name, "agent.") {
				checkValidateInPieces(t, p+"/"+f.Name, f.Data)
			}
		}
	}
	checkValidateInPieces(t, "large.yaml", largeSpec())
	// Repeated invalid schemas are reported at each place.
	checkValidateInPieces(t, "repeated.yaml", []byte(`version: 1
actors: [a]
observations:
  a:
    a:
      x: {type: strin, items: {tpye: x}}
      y: {type: strin, items: {tpye: x}}
      z: {type: object, properties: {p: {type: strin}, q: 7, r: {oneOf: [{tpye: 1}, 3]}}}
inputs:
  a:
    i: {type: object, properties: {p: {type: strin}}, additionalProperties: {minLength: -1}}
`))
}
