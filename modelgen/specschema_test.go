package modelgen

import (
	"bytes"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/spec"
)

var update = flag.Bool("update", false, "rewrite golden files, the committed spec schema and the sample decl/ package")

// specComments returns the doc comments of the spec types in
// internal/spec/spec.go, as
// invopop's LookupComment wants them.
func specComments(t *testing.T) func(reflect.Type, string) string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("internal", "spec", "spec.go"), nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := make(map[string]string)
	clean := func(g *ast.CommentGroup) string {
		return strings.Join(strings.Fields(g.Text()), " ")
	}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, sp := range gd.Specs {
			ts := sp.(*ast.TypeSpec)
			if gd.Doc != nil {
				docs[ts.Name.Name] = clean(gd.Doc)
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, field := range st.Fields.List {
				if field.Doc == nil {
					continue
				}
				for _, n := range field.Names {
					docs[ts.Name.Name+"."+n.Name] = clean(field.Doc)
				}
			}
		}
	}
	return func(t reflect.Type, field string) string {
		if t.PkgPath() != reflect.TypeFor[spec.Spec]().PkgPath() {
			return ""
		}
		if field == "" {
			return docs[t.Name()]
		}
		return docs[t.Name()+"."+field]
	}
}

// TestSpecSchemaIsCurrent keeps agent.schema.json equal to a fresh
// reflection of the spec types, and its copy in internal/spec (which
// package spec embeds) equal to it; -update rewrites both.
func TestSpecSchemaIsCurrent(t *testing.T) {
	fresh, err := spec.ReflectSchema(specComments(t))
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		for _, p := range []string{"agent.schema.json", filepath.Join("internal", "spec", "agent.schema.json")} {
			if err := os.WriteFile(p, fresh, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	committed, err := os.ReadFile("agent.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, fresh) {
		t.Errorf("agent.schema.json is stale; run go test ./modelgen -run TestSpecSchemaIsCurrent -update")
	}
	if !bytes.Equal(Schema(), committed) {
		t.Errorf("SpecSchema() differs from agent.schema.json: internal/spec/agent.schema.json is not a copy of it; run go test ./modelgen -run TestSpecSchemaIsCurrent -update")
	}
}
