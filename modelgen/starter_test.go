package modelgen

import (
	"bytes"
	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/gen/graph"
	"github.com/moora-go/moora/modelgen/internal/model"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rootSchemaRef is where the repository's own agent.yaml points its editors.
const rootSchemaRef = "modelgen/agent.schema.json"

// TestRootAgentIsStarter keeps the repository's own agent (agent.yaml, decl/
// and impl/ at the top level) equal to what agentgen init writes for the
// module's path, main.go aside: the starter is the agent the repository
// ships, and a test drives it (impl/agent). -update rewrites it.
func TestRootAgentIsStarter(t *testing.T) {
	out, err := starter(starterOptions{Package: "github.com/moora-go/moora", SchemaRef: rootSchemaRef})
	if err != nil {
		t.Fatal(err)
	}
	root := ".."
	var files []gen.File
	for _, f := range out.Files {
		if f.Path == "main.go" {
			continue
		}
		files = append(files, f)
		p := filepath.Join(root, filepath.FromSlash(f.Path))
		old, err := os.ReadFile(p)
		if err != nil || bytes.Equal(old, f.Data) {
			continue
		}
		if !*update {
			t.Errorf("%s differs from the starter agentgen init writes (go test ./modelgen -run TestRootAgentIsStarter -update rewrites it)", p)
			continue
		}
		if err := os.Remove(p); err != nil { // writeFiles never replaces hand-written files
			t.Fatal(err)
		}
	}
	out.Files = files
	if *update {
		if _, err := writeFiles(root, out); err != nil {
			t.Fatal(err)
		}
	}
	drift, err := compareFiles(root, out)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range drift {
		t.Errorf("../%s: %s\n%s", d.Path, d.Kind, d.Diff)
	}
}

// TestStarter checks the files of a new agent: the spec has no package key,
// points at the schema written beside it, and the hand-written files hold
// code, not stubs.
func TestStarter(t *testing.T) {
	out, err := starter(starterOptions{Package: "example.com/hello"})
	if err != nil {
		t.Fatal(err)
	}
	files := make(map[string]gen.File)
	for _, f := range out.Files {
		files[f.Path] = f
	}
	spec := string(files[DefaultSpecFile].Data)
	if !strings.HasPrefix(spec, "# yaml-language-server: $schema=./agent.schema.json\n") {
		t.Errorf("agent.yaml starts with %q", spec[:strings.Index(spec, "\n")])
	}
	if strings.Contains(spec, "\npackage:") {
		t.Error("agent.yaml has a package key; the path comes from go.mod")
	}
	if !bytes.Equal(files[starterSchemaFile].Data, Schema()) {
		t.Error("agent.schema.json is not the spec schema")
	}
	main := string(files["main.go"].Data)
	for _, want := range []string{"//go:generate agentgen generate\n", `"example.com/hello/impl/agent"`, "agent.Create(decl.EffectFns{", "agent.WithJobs(decl.JobFns{", "// Command hello runs"} {
		if !strings.Contains(main, want) {
			t.Errorf("main.go lacks %q", want)
		}
	}
	m, err := loadBytes(DefaultSpecFile, files[DefaultSpecFile].Data)
	if err != nil {
		t.Fatal(err)
	}
	m.Package = "example.com/hello"
	for _, fn := range model.ImplFuncs(m) {
		f, ok := files[fn.Path]
		if !ok {
			t.Errorf("no %s", fn.Path)
			continue
		}
		if f.Owned || bytes.Contains(f.Data, []byte("not implemented")) || bytes.Contains(f.Data, []byte("DO NOT EDIT")) {
			t.Errorf("%s is a stub or generated, not the starter's code:\n%s", fn.Path, f.Data)
		}
	}
	if _, err := starter(starterOptions{Package: "example.com/a b"}); err == nil {
		t.Error("Starter accepted a package path with a space")
	}
}

// TestReadmeGraph keeps the picture of the starter in README.md equal to
// what agentgen graph draws for agent.yaml. -update rewrites it.
func TestReadmeGraph(t *testing.T) {
	m := mustLoad(t, filepath.Join("..", DefaultSpecFile))
	var drawn strings.Builder
	if err := graph.Write(&drawn, m, "mermaid"); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join("..", "README.md")
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	const open, indent = "```mermaid\n", "   "
	start := strings.Index(text, indent+open)
	if start < 0 {
		t.Fatalf("README.md has no indented mermaid block")
	}
	start += len(indent + open)
	end := strings.Index(text[start:], indent+"```\n")
	if end < 0 {
		t.Fatal("README.md: the mermaid block does not end")
	}
	var want strings.Builder
	for line := range strings.Lines(drawn.String()) {
		want.WriteString(indent + line)
	}
	if got := text[start : start+end]; got != want.String() {
		if !*update {
			t.Fatalf("README.md's graph differs from agentgen graph (go test ./modelgen -run TestReadmeGraph -update rewrites it):\n%s\nwant:\n%s", got, want.String())
		}
		text = text[:start] + want.String() + text[start+end:]
		if err := os.WriteFile(readme, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
