package modelgen

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/versions"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// goldenCases lists the directories under testdata that hold a valid spec
// (agent.yaml or agent.json) and its expected decl/ package.
func goldenCases(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	cases := make(map[string]string)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		for _, name := range []string{"agent.yaml", "agent.json"} {
			spec := filepath.Join("testdata", e.Name(), name)
			if _, err := os.Stat(spec); err == nil {
				cases[e.Name()] = spec
			}
		}
	}
	if len(cases) < 6 {
		t.Fatalf("found %d golden cases, want at least 6", len(cases))
	}
	return cases
}

// firstVersion generates the history of a spec that has one version.
func firstVersion(t testing.TB, m *model.Model) gen.Generator {
	t.Helper()
	plan, err := planVersions(&versions.History{}, m, false)
	if err != nil {
		t.Fatal(err)
	}
	return versionsGen(plan, historyFile(filepath.Base(m.File)), nil)
}

// TestGolden generates each golden case and compares the output with the
// committed decl/ and impl/ files, the stubs of impl/ included; go test
// ./modelgen -update rewrites them.
func TestGolden(t *testing.T) {
	for name, spec := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			m, err := loadFile(spec)
			if err != nil {
				t.Fatalf("loading: %v", err)
			}
			out, err := generateModel(m, declGen, implGen(nil), firstVersion(t, m), tsGen(&versions.Plan{Current: 1}))
			if err != nil {
				t.Fatalf("generating: %v", err)
			}
			again, err := generateModel(mustLoad(t, spec), declGen, implGen(nil), firstVersion(t, mustLoad(t, spec)), tsGen(&versions.Plan{Current: 1}))
			if err != nil {
				t.Fatal(err)
			}
			for i := range out.Files {
				if !bytes.Equal(out.Files[i].Data, again.Files[i].Data) {
					t.Errorf("%s differs between two runs", out.Files[i].Path)
				}
			}
			dir := filepath.Dir(spec)
			if *update {
				// Stubs are never rewritten by Write: remove the stale ones.
				for _, f := range out.Files {
					p := filepath.Join(dir, filepath.FromSlash(f.Path))
					if old, err := os.ReadFile(p); err == nil && !f.Owned && !bytes.Equal(old, f.Data) {
						if err := os.Remove(p); err != nil {
							t.Fatal(err)
						}
					}
				}
				if _, err := writeFiles(dir, out); err != nil {
					t.Fatal(err)
				}
			}
			drift, err := compareFiles(dir, out)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range drift {
				t.Errorf("%s: %s\n%s", d.Path, d.Kind, d.Diff)
			}
			for _, f := range out.Files {
				if old, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path))); err == nil && !f.Owned && !bytes.Equal(old, f.Data) {
					t.Errorf("%s: the stub differs from its template's output", f.Path)
				}
			}
			if t.Failed() {
				t.Log("run go test ./modelgen -run TestGolden -update to accept the new output")
			}
			// The runtime input schema must compile.
			c := jsonschema.NewCompiler()
			c.Draft = jsonschema.Draft2020
			if err := c.AddResource("agentgen:inputs.schema.json", bytes.NewReader(m.InputSchema)); err != nil {
				t.Fatal(err)
			}
			for _, in := range m.Inputs {
				if _, err := c.Compile("agentgen:inputs.schema.json#/inputs/" + in.Name); err != nil {
					t.Errorf("input schema of %s: %v", in.Name, err)
				}
			}
		})
	}
}

func mustLoad(t *testing.T, spec string) *model.Model {
	t.Helper()
	m, err := loadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGoldenCompiles builds, vets and tests every golden decl/ and impl/ package,
// stubs included, in one temporary module that requires this repository
// through a replace directive, together with a package per case that uses
// them as impl/agent's package doc says (see usesSource).
func TestGoldenCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds with the go command")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	var names []string
	for name, spec := range goldenCases(t) {
		names = append(names, name)
		for _, sub := range []string{"decl", "impl"} {
			src := filepath.Join(filepath.Dir(spec), sub)
			dst := filepath.Join(tmp, name, sub)
			if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
		}
		uses := filepath.Join(tmp, name, "uses")
		if err := os.MkdirAll(uses, 0o755); err != nil {
			t.Fatal(err)
		}
		m := mustLoad(t, spec)
		if err := os.WriteFile(filepath.Join(uses, "uses.go"), usesSource(m), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(uses, "roundtrip_test.go"), usesRoundTripSource(m, inputInstances(t, m)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(names)
	gomod := fmt.Sprintf("module example.com/golden\n\ngo 1.26\n\nrequire github.com/moora-go/moora v0.0.0\n\nreplace github.com/moora-go/moora => %s\n", root)
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	// Then every input of every case makes the round trip JSON -> DecodeInput
	// -> json.Marshal -> DecodeInput.
	for _, args := range [][]string{{"build", "./..."}, {"vet", "./..."}, {"test", "./..."}} {
		cmd := exec.Command(goTool, args...)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the golden module (%s): %v\n%s", strings.Join(args, " "), strings.Join(names, ", "), err, out)
		}
	}
}

// usesSource is a package that uses the generated API of m as a person
// does: a jobs function of each actor's type (decl.JobsFnOfX, on its
// context only) in decl.JobFns, handed to agent.Create with agent.WithJobs,
// and a durable agent built from agent.WithEffects and agent.WithJobs, as
// impl/agent's package doc shows.
func usesSource(m *model.Model) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `package uses

import (
	"context"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/journal"

	"%[1]s/decl"
	"%[1]s/impl/agent"
)

// Jobs has a jobs function for every actor.
var Jobs = decl.JobFns{
`, m.Package)
	for _, a := range m.Actors {
		fmt.Fprintf(&b, "\t%s: %sJobs,\n", a.GoName, a.VarName)
	}
	b.WriteString("}\n")
	for _, a := range m.Actors {
		fmt.Fprintf(&b, `
var %[1]sJobs decl.JobsFnOf%[2]s = func(view decl.ContextOf%[2]s) map[string]automata.Job[decl.AgentInput] {
	_ = view
	return map[string]automata.Job[decl.AgentInput]{"work": func(ctx context.Context, dispatch automata.Dispatch[decl.AgentInput]) error {
		_ = automata.JobKey(ctx) // %[3]q + "work"
		return nil
	}}
}
`, a.VarName, a.GoName, a.Name+"/")
	}
	b.WriteString(`
// Create starts the agent with its jobs.
func Create() *agent.Machine {
	return agent.Create(decl.EffectFns{}, agent.WithJobs(Jobs))
}

// Open opens the durable agent.
func Open(store journal.Store) (*journal.Machine[decl.AgentState, decl.AgentInput], error) {
	return journal.Open(store, agent.Definition(), journal.Options[decl.AgentState, decl.AgentInput]{
		Codec: journal.JSON[decl.AgentState](decl.DecodeInput),
	}, agent.WithEffects(decl.EffectFns{}), agent.WithJobs(Jobs))
}
`)
	return []byte(b.String())
}
