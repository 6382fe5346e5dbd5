package migrations_test

import (
	"bytes"
	"fmt"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/gen/decl"
	"github.com/moora-go/moora/modelgen/internal/gen/migrations"
	"github.com/moora-go/moora/modelgen/internal/spectest"
	"github.com/moora-go/moora/modelgen/internal/versions"
)

// historyFile is the history file's path relative to the spec's directory.
const historyFile = "agent.history.json"

// Edits of spectest.Base.
var (
	// userContentInteger breaks send-user-message: content was a string.
	userContentInteger = []string{"content: {type: string}}\n      required: [id, content]\n  llm:", "content: {type: integer}}\n      required: [id, content]\n  llm:"}
	// draftRenamed breaks the state: draft is text now.
	draftRenamed = []string{"user:\n    user: {draft: {type: string}}\n  llm:\n    user: {draft: {type: string}}", "user:\n    user: {text: {type: string}}\n  llm:\n    user: {text: {type: string}}"}
	// draftInteger changes the type of the state's draft.
	draftInteger = []string{"user:\n    user: {draft: {type: string}}\n  llm:\n    user: {draft: {type: string}}", "user:\n    user: {draft: {type: integer}}\n  llm:\n    user: {draft: {type: integer}}"}
	// newObservation changes the state compatibly: llm observes its notes.
	newObservation = []string{"  llm:\n    user: {draft: {type: string}}\n", "  llm:\n    user: {draft: {type: string}}\n    llm: {notes: {type: string}}\n"}
)

// thinkAs returns spectest.Base with think's thought of type typ.
func thinkAs(t testing.TB, typ string) string {
	return spectest.Edit(t, spectest.Base, "properties: {thought: {type: string}}", "properties: {thought: {type: "+typ+"}}")
}

// planOf plans the last spec over the history that generate writes for
// the others, one run each, oldest first, as each run reads the file the
// previous one wrote.
func planOf(t testing.TB, texts ...string) *versions.Plan {
	t.Helper()
	h := &versions.History{File: historyFile}
	var p *versions.Plan
	for i, text := range texts {
		var err error
		p, err = versions.NewPlan(h, spectest.Build(t, "agent.yaml", text), false)
		if err != nil {
			t.Fatalf("planning spec %d: %v", i+1, err)
		}
		if i == len(texts)-1 {
			break
		}
		h, err = versions.Parse(historyFile, p.History.Encode("agent.yaml"))
		if err != nil {
			t.Fatalf("parsing the history of spec %d: %v", i+1, err)
		}
	}
	return p
}

// generate runs the generator of the plan on its model and returns the
// files by path, checking what holds of every file.
func generate(t testing.TB, p *versions.Plan, declared map[string]bool) map[string]gen.File {
	t.Helper()
	g := migrations.New(p, historyFile, declared)
	out, err := g.Generate(p.Model)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if !slices.IsSortedFunc(out, func(a, b gen.File) int { return strings.Compare(a.Path, b.Path) }) {
		t.Errorf("the files are not sorted by path")
	}
	files := make(map[string]gen.File)
	for _, f := range out {
		if _, dup := files[f.Path]; dup {
			t.Errorf("%s is generated twice", f.Path)
		}
		files[f.Path] = f
		checkFile(t, f)
	}
	// Generating again gives the same bytes.
	again, err := migrations.New(p, historyFile, declared).Generate(p.Model)
	if err != nil {
		t.Fatalf("Generate again: %v", err)
	}
	if len(again) != len(out) {
		t.Fatalf("a second Generate made %d files, the first %d", len(again), len(out))
	}
	for i := range out {
		if again[i].Path != out[i].Path || !bytes.Equal(again[i].Data, out[i].Data) || again[i].Owned != out[i].Owned {
			t.Errorf("%s differs between two runs", out[i].Path)
		}
	}
	// Every version package that is generated is in a directory of Dirs.
	dirs := g.Dirs()
	for path := range files {
		if versionPackage.MatchString(path) && !slices.Contains(dirs, filepath.ToSlash(filepath.Dir(path))) {
			t.Errorf("%s is not in a directory of Dirs %v", path, dirs)
		}
	}
	return files
}

// versionPackage matches the path of a file of a version's package.
var versionPackage = regexp.MustCompile(`^decl/v[0-9]+/`)

// checkFile checks what holds of every generated file: a Go file parses,
// is gofmt'ed and, owned, starts with the header; the history file is
// owned JSON.
func checkFile(t testing.TB, f gen.File) {
	t.Helper()
	switch {
	case f.Path == historyFile:
		if !f.Owned || !gen.IsOwned(f.Data) {
			t.Errorf("%s: not owned", f.Path)
		}
		if _, err := versions.Parse(historyFile, f.Data); err != nil {
			t.Errorf("%s does not parse: %v", f.Path, err)
		}
	case strings.HasSuffix(f.Path, ".go"):
		if _, err := parser.ParseFile(token.NewFileSet(), f.Path, f.Data, parser.ParseComments); err != nil {
			t.Errorf("%s does not parse: %v\n%s", f.Path, err, f.Data)
		}
		formatted, err := format.Source(f.Data)
		if err != nil || !bytes.Equal(formatted, f.Data) {
			t.Errorf("%s is not gofmt'ed (%v)", f.Path, err)
		}
		if f.Owned != gen.IsOwned(f.Data) {
			t.Errorf("%s: Owned %v, but its first line is %q", f.Path, f.Owned, firstLine(f.Data))
		}
	default:
		t.Errorf("unexpected file %s", f.Path)
	}
}

func firstLine(data []byte) string {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	return string(line)
}

// packageName returns the package clause's name of a Go file.
func packageName(t testing.TB, f gen.File) string {
	t.Helper()
	af, err := parser.ParseFile(token.NewFileSet(), f.Path, f.Data, parser.PackageClauseOnly)
	if err != nil {
		t.Fatalf("%s: %v", f.Path, err)
	}
	return af.Name.Name
}

// under returns the paths of the files directly in dir, sorted.
func under(files map[string]gen.File, dir string) []string {
	var paths []string
	for p := range files {
		if filepath.ToSlash(filepath.Dir(p)) == dir {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return paths
}

// contains fails the test for each text that data lacks: a text is a
// regular expression when it starts with "re:".
func contains(t testing.TB, name string, data []byte, texts ...string) {
	t.Helper()
	for _, text := range texts {
		if re, ok := strings.CutPrefix(text, "re:"); ok {
			if !regexp.MustCompile(re).Match(data) {
				t.Errorf("%s does not match %s:\n%s", name, re, data)
			}
			continue
		}
		if !bytes.Contains(data, []byte(text)) {
			t.Errorf("%s does not contain %q:\n%s", name, text, data)
		}
	}
}

// lacks fails the test for each text that data holds.
func lacks(t testing.TB, name string, data []byte, texts ...string) {
	t.Helper()
	for _, text := range texts {
		if bytes.Contains(data, []byte(text)) {
			t.Errorf("%s contains %q:\n%s", name, text, data)
		}
	}
}

// alias matches the line of a type (or const) alias of decl in a
// current.go: "\tName = decl.Name", aligned by gofmt.
func alias(name string) string {
	return `re:(?m)^\t` + regexp.QuoteMeta(name) + ` += decl\.` + regexp.QuoteMeta(name) + `$`
}

// TestGenerateTwoVersions: a breaking change of an input and of the state
// from version 1 to 2.
func TestGenerateTwoVersions(t *testing.T) {
	p := planOf(t, spectest.Base, spectest.Edit(t, spectest.Base, append(slices.Clone(userContentInteger), draftRenamed...)...))
	if p.Current != 2 || len(p.Steps) != 1 || !p.Steps[0].State || len(p.Steps[0].Inputs) != 1 {
		t.Fatalf("the plan is not the one tested: Current %d, steps %+v", p.Current, p.Steps)
	}
	files := generate(t, p, nil)

	t.Run("history", func(t *testing.T) {
		f, ok := files[historyFile]
		if !ok {
			t.Fatal("no history file")
		}
		if !bytes.HasPrefix(f.Data, []byte("{\n"+gen.JSONHeader)) {
			t.Errorf("the history file does not start with the header:\n%s", f.Data)
		}
		if !bytes.Equal(f.Data, p.History.Encode("agent.yaml")) {
			t.Errorf("the history file is not the plan's history")
		}
		h, err := versions.Parse(historyFile, f.Data)
		if err != nil || len(h.Versions) != 2 {
			t.Fatalf("the history file: %v, want 2 versions", err)
		}
	})

	t.Run("decl/v1", func(t *testing.T) {
		v1 := under(files, "decl/v1")
		for _, want := range []string{"decl/v1/inputs.go", "decl/v1/agent.go", "decl/v1/states.go"} {
			if !slices.Contains(v1, want) {
				t.Errorf("no %s in %v", want, v1)
			}
		}
		if slices.Contains(v1, "decl/v1/current.go") {
			t.Errorf("version 1 is not the spec's, but has a current.go")
		}
		for _, path := range v1 {
			f := files[path]
			if name := packageName(t, f); name != "v1" {
				t.Errorf("%s is package %s, want v1", path, name)
			}
			if !f.Owned || !bytes.HasPrefix(f.Data, []byte(gen.Header+"\n")) {
				t.Errorf("%s does not start with the header", path)
			}
		}
		// Version 1's declarations: content a string, the state's draft.
		contains(t, "decl/v1/inputs.go", files["decl/v1/inputs.go"].Data, "type SendUserMessage struct", "re:Content +string")
		contains(t, "decl/v1/states.go", files["decl/v1/states.go"].Data, "Draft")
		lacks(t, "decl/v1/inputs.go", files["decl/v1/inputs.go"].Data, "Content int")
		contains(t, "decl/v1", allOf(files, v1), "func DecodeInput(", "type AgentState struct")
	})

	t.Run("decl/v2", func(t *testing.T) {
		if got := under(files, "decl/v2"); !slices.Contains(got, "decl/v2/current.go") || slices.Contains(got, "decl/v2/inputs.go") {
			t.Fatalf("decl/v2 has %v, want current.go and no declarations", got)
		}
		f := files["decl/v2/current.go"]
		if name := packageName(t, f); name != "v2" || !f.Owned {
			t.Errorf("current.go is package %s, owned %v; want v2, owned", name, f.Owned)
		}
		var want []string
		for _, in := range p.Model.Inputs {
			want = append(want, alias(in.Decl.GoName))
		}
		want = append(want, alias("AgentState"), alias("AgentInput"), alias("StateOfUser"), alias("ContextOfLlm"), alias("InputFromUser"),
			`"example.com/agent/decl"`)
		contains(t, "decl/v2/current.go", f.Data, want...)
		contains(t, "decl/v2/current.go", f.Data, "re:(?m)^type \\($")
	})

	t.Run("versions.go", func(t *testing.T) {
		f, ok := files["impl/agent/versions.go"]
		if !ok {
			t.Fatal("no impl/agent/versions.go")
		}
		if name := packageName(t, f); name != "agent" || !f.Owned {
			t.Errorf("package %s, owned %v", name, f.Owned)
		}
		contains(t, "versions.go", f.Data,
			"re:Current: +2,",
			`"send-user-message": {`,
			// The generated conversions, which call the functions of the
			// stub for what changed.
			"migrations.ConvertSendUserMessageFromV1(in.(v1.SendUserMessage))",
			"migrations.ConvertAgentStateFromV1(*old.(*v1.AgentState))",
			"return new(v1.AgentState)",
			"re:StateChanged: +true",
			"re:Decode: +migrate.Unmarshal\\[v1.SendUserMessage\\],",
			`"example.com/agent/decl/v1"`,
			`"example.com/agent/impl/migrations"`,
			`"github.com/moora-go/moora/automata/migrate"`,
			"func Versions() *migrate.History",
		)
		// Only the input that changed is migrated.
		lacks(t, "versions.go", f.Data, `"think"`, `"send-assi-message"`, "ThinkFromV1", "decl/v2")
	})

	t.Run("stub", func(t *testing.T) {
		f, ok := files["impl/migrations/v1_to_v2.go"]
		if !ok {
			t.Fatal("no impl/migrations/v1_to_v2.go")
		}
		if f.Owned || gen.IsOwned(f.Data) {
			t.Errorf("the stub is owned")
		}
		if name := packageName(t, f); name != "migrations" {
			t.Errorf("package %s", name)
		}
		contains(t, "v1_to_v2.go", f.Data,
			// content changed type: its value is a person's to say.
			"func SendUserMessageContentFromV1(old v1.SendUserMessage) int64 {",
			`panic("not implemented: migration of property content of SendUserMessage from version 1 to 2")`,
			// draft removed and text added, both strings: a rename,
			// written and marked for review.
			"func AgentStateTextFromV1(old v1.AgentState) string {\n\treturn old.Draft\n}",
			"// Review: draft is gone and text is new",
			`"example.com/agent/decl/v1"`,
			"// Package migrations ",
			// The doc lists the changes of each property.
			"/content: type changed (breaking)",
			"/draft: removed state property (breaking)",
		)
		// Only what changed is left to a person: the whole input and state
		// are converted in conversions.go.
		lacks(t, "v1_to_v2.go", f.Data, "ThinkFromV1", "SendUserMessageFromV1(", "AgentStateFromV1(", "IDFromV1")
	})

	t.Run("conversions.go", func(t *testing.T) {
		f, ok := files[migrations.ConversionsPath]
		if !ok {
			t.Fatal("no " + migrations.ConversionsPath)
		}
		if !f.Owned || !gen.IsOwned(f.Data) {
			t.Errorf("%s is not owned", migrations.ConversionsPath)
		}
		contains(t, "conversions.go", f.Data,
			"func ConvertSendUserMessageFromV1(old v1.SendUserMessage) v2.SendUserMessage {",
			"re:Content: +SendUserMessageContentFromV1\\(old\\),",
			"re:ID: +old.ID,",
			"func ConvertAgentStateFromV1(old v1.AgentState) v2.AgentState {",
			"re:Text: +AgentStateTextFromV1\\(old\\),",
		)
	})

	t.Run("Funcs", func(t *testing.T) {
		var got []string
		for _, fn := range migrations.Funcs(p, nil) {
			got = append(got, fmt.Sprintf("%s %s %d %s %q %s", fn.Name, fn.Path, fn.From, fn.What, fn.Input, fn.JSONPath))
		}
		want := []string{
			`SendUserMessageContentFromV1 impl/migrations/v1_to_v2.go 1 property content of SendUserMessage "send-user-message" /content`,
			`AgentStateTextFromV1 impl/migrations/v1_to_v2.go 1 property text of AgentState "" /text`,
		}
		if !slices.Equal(got, want) {
			t.Errorf("Funcs =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("Dirs", func(t *testing.T) {
		dirs := migrations.New(p, historyFile, nil).Dirs()
		slices.Sort(dirs)
		if !slices.Equal(dirs, []string{"decl/v1", "decl/v2", "impl/migrations"}) {
			t.Errorf("Dirs = %v, want decl/v1 decl/v2 impl/migrations", dirs)
		}
	})

	// Migrations written whole, by hand, are used instead of the
	// conversions, which are not generated; the stub is not needed.
	t.Run("whole", func(t *testing.T) {
		declared := map[string]bool{"SendUserMessageFromV1": true, "AgentStateFromV1": true}
		files := generate(t, p, declared)
		contains(t, "versions.go", files["impl/agent/versions.go"].Data,
			"migrations.SendUserMessageFromV1(in.(v1.SendUserMessage))",
			"migrations.AgentStateFromV1(*old.(*v1.AgentState))",
		)
		for _, path := range []string{migrations.ConversionsPath, "impl/migrations/v1_to_v2.go"} {
			if _, ok := files[path]; ok {
				t.Errorf("%s is generated", path)
			}
		}
		var got []string
		for _, fn := range migrations.Funcs(p, declared) {
			got = append(got, fn.Name)
		}
		if want := []string{"SendUserMessageFromV1", "AgentStateFromV1"}; !slices.Equal(got, want) {
			t.Errorf("Funcs = %v, want %v", got, want)
		}
	})
}

// allOf returns the contents of the files at paths, concatenated.
func allOf(files map[string]gen.File, paths []string) []byte {
	var b []byte
	for _, p := range paths {
		b = append(b, files[p].Data...)
	}
	return b
}

// TestGenerateThreeVersions: the same input breaks from 1 to 2 and from 2
// to 3, so that version 2 is a package of its own.
func TestGenerateThreeVersions(t *testing.T) {
	p := planOf(t, spectest.Base, thinkAs(t, "integer"), thinkAs(t, "boolean"))
	if p.Current != 3 || len(p.Steps) != 2 {
		t.Fatalf("Current %d, %d steps", p.Current, len(p.Steps))
	}
	files := generate(t, p, nil)
	for _, v := range []string{"v1", "v2"} {
		dir := "decl/" + v
		paths := under(files, dir)
		if !slices.Contains(paths, dir+"/inputs.go") || slices.Contains(paths, dir+"/current.go") {
			t.Errorf("%s has %v, want the full package", dir, paths)
		}
		for _, path := range paths {
			if name := packageName(t, files[path]); name != v {
				t.Errorf("%s is package %s, want %s", path, name, v)
			}
		}
	}
	contains(t, "decl/v1/inputs.go", files["decl/v1/inputs.go"].Data, "re:Thought +string")
	contains(t, "decl/v2/inputs.go", files["decl/v2/inputs.go"].Data, "re:Thought +int64")
	if got := under(files, "decl/v3"); !slices.Equal(got, []string{"decl/v3/current.go"}) && !slices.Contains(got, "decl/v3/current.go") {
		t.Errorf("decl/v3 has %v, want current.go", got)
	}
	contains(t, "decl/v3/current.go", files["decl/v3/current.go"].Data, alias("Think"), "package v3")

	stub1, stub2 := files["impl/migrations/v1_to_v2.go"], files["impl/migrations/v2_to_v3.go"]
	contains(t, "v1_to_v2.go", stub1.Data, "func ThinkThoughtFromV1(old v1.Think) int64 {", `"example.com/agent/decl/v1"`, "// Package migrations ")
	contains(t, "v2_to_v3.go", stub2.Data,
		"func ThinkThoughtFromV2(old v2.Think) bool {",
		`panic("not implemented: migration of property thought of Think from version 2 to 3")`,
		`"example.com/agent/decl/v2"`,
		"(v3 is decl while 3 is the spec's version.)",
	)
	// Only the first file of package migrations has its doc.
	lacks(t, "v2_to_v3.go", stub2.Data, "// Package migrations ")
	lacks(t, "v1_to_v2.go", stub1.Data, "decl while")
	for _, s := range []gen.File{stub1, stub2} {
		if s.Owned {
			t.Errorf("%s is owned", s.Path)
		}
	}

	glue := files["impl/agent/versions.go"].Data
	contains(t, "versions.go", glue,
		"re:Current: +3,",
		"migrations.ConvertThinkFromV1(in.(v1.Think))",
		"migrations.ConvertThinkFromV2(in.(v2.Think))",
		"migrate.Unmarshal[v1.Think]",
		"migrate.Unmarshal[v2.Think]",
		"// 1 to 2", "// 2 to 3",
	)
	lacks(t, "versions.go", glue, "AgentStateFromV", "StateChanged")
	if n := strings.Count(string(glue), `"think": {`); n != 2 {
		t.Errorf("versions.go migrates think in %d steps, want 2:\n%s", n, glue)
	}
}

// TestGenerateCompatibleStateChange: a new observation changes the state
// compatibly; its migration is optional, used when declared.
func TestGenerateCompatibleStateChange(t *testing.T) {
	p := planOf(t, spectest.Base, spectest.Edit(t, spectest.Base, newObservation...))
	if p.Current != 2 || len(p.Steps) != 1 {
		t.Fatalf("Current %d, %d steps", p.Current, len(p.Steps))
	}
	s := p.Steps[0]
	if s.State || !s.StateChanged || s.NeedsCode() {
		t.Fatalf("the step is not the one tested: %+v", s)
	}
	if fs := migrations.Funcs(p, nil); len(fs) != 0 {
		t.Errorf("Funcs = %+v, want none", fs)
	}
	tests := []struct {
		name     string
		declared map[string]bool
		migrates bool
	}{
		{"not declared", nil, false},
		{"another function declared", map[string]bool{"AgentStateFromV2": true, "ThinkFromV1": true}, false},
		{"declared", map[string]bool{"AgentStateFromV1": true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := generate(t, p, tt.declared)
			glue := files["impl/agent/versions.go"].Data
			contains(t, "versions.go", glue, "re:Current: +2,", "re:StateChanged: +true")
			if _, ok := files["impl/migrations/v1_to_v2.go"]; ok {
				t.Errorf("a stub is generated for an optional migration")
			}
			dirs := migrations.New(p, historyFile, tt.declared).Dirs()
			if !tt.migrates {
				lacks(t, "versions.go", glue, "AgentStateFromV1", "State: &migrate.State", "decl/v1", "Inputs")
				if got := under(files, "decl/v1"); len(got) > 0 {
					t.Errorf("decl/v1 is generated: %v", got)
				}
				if _, ok := files["decl/v2/current.go"]; ok {
					t.Errorf("decl/v2/current.go is generated")
				}
				// Every version's directory is the generator's, so that a
				// package no longer needed is deleted.
				if !slices.Equal(dirs, []string{"decl/v1", "decl/v2", "impl/migrations"}) {
					t.Errorf("Dirs = %v, want decl/v1 decl/v2 impl/migrations", dirs)
				}
				return
			}
			contains(t, "versions.go", glue,
				"migrations.AgentStateFromV1(*old.(*v1.AgentState))",
				"return new(v1.AgentState)",
				`"example.com/agent/decl/v1"`,
			)
			lacks(t, "versions.go", glue, "Inputs", "migrate.Unmarshal")
			if got := under(files, "decl/v1"); !slices.Contains(got, "decl/v1/states.go") {
				t.Errorf("decl/v1 has %v, want the full package", got)
			}
			contains(t, "decl/v1", allOf(files, under(files, "decl/v1")), "type AgentState struct")
			lacks(t, "decl/v1", allOf(files, under(files, "decl/v1")), "Notes")
			if _, ok := files["decl/v2/current.go"]; !ok {
				t.Errorf("no decl/v2/current.go")
			}
			slices.Sort(dirs)
			if !slices.Equal(dirs, []string{"decl/v1", "decl/v2", "impl/migrations"}) {
				t.Errorf("Dirs = %v, want decl/v1 decl/v2 impl/migrations", dirs)
			}
		})
	}
}

// TestGenerateOneVersion: a spec with one version has the history and a
// Versions() without steps, and nothing else.
func TestGenerateOneVersion(t *testing.T) {
	p := planOf(t, spectest.Base)
	files := generate(t, p, nil)
	glue := files["impl/agent/versions.go"].Data
	contains(t, "versions.go", glue, "re:Current: +1,", "the spec has one version, 1")
	lacks(t, "versions.go", glue, "migrations.", "decl/v")
	for path := range files {
		if versionPackage.MatchString(path) || strings.HasPrefix(path, "impl/migrations/") {
			t.Errorf("%s is generated for one version", path)
		}
	}
	if _, ok := files[historyFile]; !ok {
		t.Errorf("no history file")
	}
}

// TestGenerateRemovedInput: an input type removed from version 1 to 2 is
// migrated to an AgentInput of version 2, or dropped.
func TestGenerateRemovedInput(t *testing.T) {
	p := planOf(t, spectest.Base, spectest.Edit(t, spectest.Base, "    think:\n      type: object\n      properties: {thought: {type: string}}\n      required: [thought]\n", ""))
	files := generate(t, p, nil)
	contains(t, "v1_to_v2.go", files["impl/migrations/v1_to_v2.go"].Data,
		"func ThinkFromV1(old v1.Think) v2.AgentInput {",
		"or nil to drop it",
		`panic("not implemented: migration of think from version 1 to 2")`)
	contains(t, "versions.go", files["impl/agent/versions.go"].Data, `"think": {`, "migrations.ThinkFromV1(in.(v1.Think))")
	current := files["decl/v2/current.go"].Data
	contains(t, "decl/v2/current.go", current, alias("AgentInput"))
	lacks(t, "decl/v2/current.go", current, "Think")
}

// TestGenerateCompatibleStep: a step that changed compatibly needs no
// package of its versions and no stub.
func TestGenerateCompatibleStep(t *testing.T) {
	p := planOf(t, spectest.Base, spectest.Edit(t, spectest.Base, "properties: {thought: {type: string}}", "properties: {thought: {type: string}, mood: {type: string}}"))
	files := generate(t, p, nil)
	for path := range files {
		if versionPackage.MatchString(path) || strings.HasPrefix(path, "impl/migrations/") {
			t.Errorf("%s is generated for a compatible step", path)
		}
	}
	glue := files["impl/agent/versions.go"].Data
	contains(t, "versions.go", glue, "re:Current: +2,", "// 1 to 2")
	lacks(t, "versions.go", glue, "Inputs", "State")
}

// TestGenerateHistorySpecName: the history file names the spec, and is
// JSON whatever the spec file is called.
func TestGenerateHistorySpecName(t *testing.T) {
	for _, file := range []string{"agent.yaml", "dir/agent.yaml", `dir\agent.yaml`, `my "agent".yaml`} {
		t.Run(file, func(t *testing.T) {
			p := planOf(t, spectest.Base)
			p.Model.File = file
			out, err := migrations.New(p, historyFile, nil).Generate(p.Model)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(out, func(f gen.File) bool { return f.Path == historyFile })
			if i < 0 {
				t.Fatal("no history file")
			}
			f := out[i]
			if _, err := versions.Parse(historyFile, f.Data); err != nil {
				t.Fatalf("the history file of a spec named %q does not parse: %v", file, err)
			}
			if !strings.Contains(firstLines(f.Data, 2), "agent") {
				t.Errorf("the header does not name the spec: %s", firstLines(f.Data, 2))
			}
		})
	}
}

func firstLines(data []byte, n int) string {
	return strings.Join(strings.SplitN(string(data), "\n", n+1)[:n], "\n")
}

// stubDir writes the stub of step 1 to 2 of the plan of TestScan (edited)
// into a temporary spec directory and returns it.
func stubDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for path, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// lineOfText returns the 1-based line of the first occurrence of sub.
func lineOfText(t testing.TB, text, sub string) int {
	t.Helper()
	i := strings.Index(text, sub)
	if i < 0 {
		t.Fatalf("%q is not in:\n%s", sub, text)
	}
	return strings.Count(text[:i], "\n") + 1
}

func TestScan(t *testing.T) {
	p := planOf(t, spectest.Base, spectest.Edit(t, spectest.Base, append(slices.Clone(userContentInteger), draftInteger...)...))
	stub := string(generate(t, p, nil)["impl/migrations/v1_to_v2.go"].Data)
	const path = "impl/migrations/v1_to_v2.go"
	inputLine := lineOfText(t, stub, "func SendUserMessageContentFromV1(")
	stateLine := lineOfText(t, stub, "func AgentStateDraftFromV1(")

	// writtenIn replaces the panic of a function of src with a body.
	writtenIn := func(t *testing.T, src, fn, body string) string {
		t.Helper()
		i := strings.Index(src, "func "+fn+"(")
		if i < 0 {
			t.Fatalf("no %s in the stub", fn)
		}
		j := i + strings.Index(src[i:], "\tpanic(")
		k := j + strings.Index(src[j:], "\n")
		return src[:j] + body + src[k:]
	}
	written := func(t *testing.T, fn, body string) string { return writtenIn(t, stub, fn, body) }
	// without removes a function and its doc comment.
	without := func(t *testing.T, fn string) string {
		t.Helper()
		i := strings.Index(stub, "func "+fn+"(")
		start := strings.LastIndex(stub[:i], "\n}\n") + 3
		end := i + strings.Index(stub[i:], "\n}\n") + 3
		return stub[:start] + stub[end:]
	}

	type finding struct {
		path      string
		line, col int
		msg       []string // parts of the message
	}
	tests := []struct {
		name  string
		files map[string]string
		want  []finding
	}{
		{
			name:  "the generated stub",
			files: map[string]string{path: stub},
			want: []finding{
				{path, inputLine, 1, []string{"func SendUserMessageContentFromV1 is still a stub", `"not implemented: migration of property content of SendUserMessage from version 1 to 2"`, "property content of SendUserMessage from version 1 to 2", "a record of version 1 that the journal reads"}},
				{path, stateLine, 1, []string{"func AgentStateDraftFromV1 is still a stub", "property draft of AgentState from version 1 to 2"}},
			},
		},
		{
			name:  "the input's migration written",
			files: map[string]string{path: written(t, "SendUserMessageContentFromV1", "\treturn 0")},
			want:  []finding{{path, stateLine, 1, []string{"func AgentStateDraftFromV1 is still a stub"}}},
		},
		{
			name:  "a panic of another message is written",
			files: map[string]string{path: written(t, "AgentStateDraftFromV1", "\tpanic(\"unreachable: no snapshots were taken\")")},
			want:  []finding{{path, inputLine, 1, []string{"func SendUserMessageContentFromV1 is still a stub"}}},
		},
		{
			name:  "both written",
			files: map[string]string{path: writtenIn(t, written(t, "AgentStateDraftFromV1", "\treturn 0"), "SendUserMessageContentFromV1", "\treturn 0")},
		},
		{
			name:  "a function missing",
			files: map[string]string{path: without(t, "AgentStateDraftFromV1")},
			want: []finding{
				{path, 1, 1, []string{"func AgentStateDraftFromV1 is missing", "property draft of AgentState from version 1 to 2"}},
				{path, inputLine, 1, []string{"func SendUserMessageContentFromV1 is still a stub"}},
			},
		},
		{
			name: "a function in another file",
			files: map[string]string{
				path:                            without(t, "AgentStateDraftFromV1"),
				"impl/migrations/state.go":      "package migrations\n\nfunc AgentStateDraftFromV1(old v1.AgentState) int64 {\n\treturn 0\n}\n",
				"impl/migrations/state_test.go": "package migrations\n\nfunc SendUserMessageContentFromV1() {}\n",
			},
			want: []finding{{path, inputLine, 1, []string{"func SendUserMessageContentFromV1 is still a stub"}}},
		},
		{
			name: "a stub in another file",
			files: map[string]string{
				path:                       without(t, "AgentStateDraftFromV1"),
				"impl/migrations/state.go": "package migrations\n\n// AgentStateDraftFromV1 ...\nfunc AgentStateDraftFromV1(old v1.AgentState) int64 {\n\tpanic(\"not implemented\")\n}\n",
			},
			want: []finding{
				{"impl/migrations/state.go", 4, 1, []string{"func AgentStateDraftFromV1 is still a stub", `"not implemented"`}},
				{path, inputLine, 1, []string{"func SendUserMessageContentFromV1 is still a stub"}},
			},
		},
		{
			name:  "a method of the same name is not the function",
			files: map[string]string{path: strings.Replace(written(t, "SendUserMessageContentFromV1", "\treturn 0"), "func AgentStateDraftFromV1(", "func (x T) AgentStateDraftFromV1(", 1)},
			want:  []finding{{path, 1, 1, []string{"func AgentStateDraftFromV1 is missing"}}},
		},
		{
			name:  "the file missing",
			files: map[string]string{"impl/migrations/other.go": "package migrations\n"},
		},
		{
			name:  "the directory missing",
			files: map[string]string{"decl/x.go": "package decl\n"},
		},
		{
			name:  "a file that does not parse",
			files: map[string]string{"impl/migrations/broken.go": "package migrations\n\nfunc X( {\n}\n", path: written(t, "SendUserMessageContentFromV1", "\treturn 0")},
			want: []finding{
				{"impl/migrations/broken.go", 3, 9, []string{"does not parse"}},
				{path, stateLine, 1, []string{"func AgentStateDraftFromV1 is still a stub"}},
			},
		},
		{
			name:  "the stub's file does not parse",
			files: map[string]string{path: strings.Replace(stub, "func AgentStateDraftFromV1(old", "func AgentStateDraftFromV1(old old", 1)},
			want: []finding{
				{path, stateLine, 36, []string{"does not parse", "missing ','"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := stubDir(t, tt.files)
			got, err := migrations.Scan(dir, p)
			if err != nil {
				t.Fatal(err)
			}
			var gotS []string
			for _, f := range got {
				gotS = append(gotS, fmt.Sprintf("%s:%d:%d: %s", f.Path, f.Line, f.Col, f.Message))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d findings, want %d:\n%s", len(got), len(tt.want), strings.Join(gotS, "\n"))
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Path != w.path || g.Line != w.line || g.Col != w.col {
					t.Errorf("finding %d at %s:%d:%d, want %s:%d:%d", i, g.Path, g.Line, g.Col, w.path, w.line, w.col)
				}
				for _, m := range w.msg {
					if !strings.Contains(g.Message, m) {
						t.Errorf("finding %d %q does not contain %q", i, g.Message, m)
					}
				}
			}
		})
	}
}

// TestScanNoMigrations: a plan that needs no migration has no findings for
// what impl/migrations holds, but for an optional migration it declares
// (of a state that changed compatibly), which the journal runs, and which
// may be no stub either.
func TestScanNoMigrations(t *testing.T) {
	p := planOf(t, spectest.Base, spectest.Edit(t, spectest.Base, newObservation...))
	for _, tt := range []struct {
		name, file string
		findings   int
	}{
		{"an unrelated stub", "package migrations\n\nfunc Other() { panic(\"not implemented\") }\n", 0},
		{"the optional migration, written", "package migrations\n\nfunc AgentStateFromV1() {}\n", 0},
		{"the optional migration, a stub", "package migrations\n\nfunc AgentStateFromV1() { panic(\"not implemented\") }\n", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := stubDir(t, map[string]string{"impl/migrations/mine.go": tt.file})
			got, err := migrations.Scan(dir, p)
			if err != nil || len(got) != tt.findings {
				t.Fatalf("Scan = %+v, %v; want %d findings", got, err, tt.findings)
			}
			if tt.findings > 0 && (got[0].Path != "impl/migrations/mine.go" || !strings.Contains(got[0].Message, "func AgentStateFromV1 is still a stub")) {
				t.Errorf("finding %+v, want the stub of AgentStateFromV1 in mine.go", got[0])
			}
		})
	}
}

// TestStubNotWrittenWhenMoved: migrations moved to a file of the user's
// choosing get no stub again (it would declare them twice).
func TestStubNotWrittenWhenMoved(t *testing.T) {
	p := planOf(t, spectest.Base, spectest.Edit(t, spectest.Base, userContentInteger...))
	fns := migrations.Funcs(p, nil)
	declared := make(map[string]bool)
	for _, fn := range fns {
		declared[fn.Name] = true
	}
	if _, ok := generate(t, p, declared)[migrations.StubPath(1)]; ok {
		t.Errorf("a stub is written for migrations declared elsewhere: %v", fns)
	}
	delete(declared, fns[0].Name)
	if _, ok := generate(t, p, declared)[migrations.StubPath(1)]; !ok {
		t.Errorf("no stub is written while %s is nowhere", fns[0].Name)
	}
}

// TestScanNotADirectory: impl/migrations that is a file is an error.
func TestScanNotADirectory(t *testing.T) {
	p := planOf(t, spectest.Base, thinkAs(t, "integer"))
	dir := stubDir(t, map[string]string{"impl/migrations": "not a directory"})
	if _, err := migrations.Scan(dir, p); err == nil {
		t.Errorf("Scan of a file impl/migrations did not fail")
	}
	if _, err := migrations.Declared(dir); err == nil {
		t.Errorf("Declared of a file impl/migrations did not fail")
	}
}

func TestDeclared(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"no directory", nil, nil},
		{"functions and methods", map[string]string{
			"impl/migrations/a.go":      "package migrations\n\nfunc AgentStateFromV1() {}\nfunc (T) ThinkFromV1() {}\nfunc helper() {}\n",
			"impl/migrations/b.go":      "package migrations\n\nfunc ThinkFromV2() {}\n",
			"impl/migrations/a_test.go": "package migrations\n\nfunc TestX() {}\n",
			"impl/migrations/c.txt":     "func NotGo() {}\n",
			"impl/migrations/sub/d.go":  "package sub\n\nfunc InSub() {}\n",
		}, []string{"AgentStateFromV1", "ThinkFromV2", "helper"}},
		{"a file that does not parse declares none", map[string]string{
			"impl/migrations/a.go": "package migrations\n\nfunc AgentStateFromV1() {}\nfunc (\n",
			"impl/migrations/b.go": "package migrations\n\nfunc ThinkFromV1() {}\n",
		}, []string{"ThinkFromV1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := stubDir(t, tt.files)
			got, err := migrations.Declared(dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for n, ok := range got {
				if ok {
					names = append(names, n)
				}
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.want) {
				t.Errorf("Declared = %v, want %v", names, tt.want)
			}
		})
	}
}

// TestGeneratedCodeCompiles builds and vets what Generate writes for a
// plan of three versions (a state migration, an input changed, an input
// removed), with decl of the spec's version, in a temporary module that
// requires this repository.
func TestGeneratedCodeCompiles(t *testing.T) {
	v2 := spectest.Edit(t, thinkAs(t, "integer"), draftRenamed...)
	v3 := spectest.Edit(t, v2, "    think:\n      type: object\n      properties: {thought: {type: integer}}\n      required: [thought]\n", "", "llm:\n    user: {text: {type: string}}\n", "llm:\n    user: {text: {type: string}}\n    llm: {notes: {type: string}}\n")
	p := planOf(t, spectest.Base, v2, v3)
	if p.Current != 3 {
		t.Fatalf("Current %d", p.Current)
	}
	files := generate(t, p, map[string]bool{"AgentStateFromV2": true})
	// The optional migration of the state of version 2, declared.
	files["impl/migrations/v2_state.go"] = gen.File{Data: []byte("package migrations\n\nimport (\n\tv2 \"example.com/agent/decl/v2\"\n\tv3 \"example.com/agent/decl/v3\"\n)\n\nfunc AgentStateFromV2(old v2.AgentState) v3.AgentState { return v3.AgentState{} }\n")}
	inModule(t, p, files, "build", "vet")
}

// inModule writes files (by path), with decl of the plan's spec, into a
// temporary module that requires this repository, and runs each go command
// given ("build", "vet", "test") on ./... there. It skips with -short or
// without the go command.
func inModule(t *testing.T, p *versions.Plan, files map[string]gen.File, commands ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds with the go command")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	root, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Skipf("no repository root at %s: %v", root, err)
	}
	declFiles, err := decl.Package("decl", "decl").Generate(p.Model)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	write := func(path string, data []byte) {
		full := filepath.Join(tmp, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range declFiles {
		write(f.Path, f.Data)
	}
	for path, f := range files {
		write(path, f.Data)
	}
	write("go.mod", fmt.Appendf(nil, "module %s\n\ngo 1.26\n\nrequire github.com/moora-go/moora v0.0.0\n\nreplace github.com/moora-go/moora => %s\n", spectest.Package, root))
	write("go.sum", sum)
	for _, command := range commands {
		cmd := exec.Command(goTool, command, "./...")
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", command, err, out)
		}
	}
}

// TestFuncsOrder: Funcs lists a step's input migrations in the order of the
// old version's inputs, by actor, then name, as its doc says, then the
// state's.
func TestFuncsOrder(t *testing.T) {
	userAndAssi := spectest.Edit(t, spectest.Base, userContentInteger[0], userContentInteger[1],
		"properties: {id: {type: string}, content: {type: string}}\n      required: [id, content]\n    think",
		"properties: {id: {type: integer}, content: {type: string}}\n      required: [id, content]\n    think")
	p := planOf(t, spectest.Base, spectest.Edit(t, userAndAssi, draftRenamed...))
	var got []string
	for _, f := range migrations.Funcs(p, nil) {
		got = append(got, f.Name)
	}
	want := []string{"SendUserMessageContentFromV1", "SendAssiMessageIDFromV1", "AgentStateTextFromV1"} // user is the first actor
	if !slices.Equal(got, want) {
		t.Errorf("Funcs = %v, want %v", got, want)
	}
}

// TestGenerateStateDecodes: a new optional property inside a state property
// is a compatible change that an old snapshot decodes through as it is: no
// stub, no package of version 1, and the glue decodes a snapshot of version
// 1 into version 2's state, with no migration to write and no replay; a
// written migration is used instead.
func TestGenerateStateDecodes(t *testing.T) {
	v1 := spectest.Edit(t, spectest.Base,
		"  user:\n    user: {draft: {type: string}}\n  llm:", "  user:\n    user: {draft: {type: string}, notes: {type: array, items: {type: object, properties: {text: {type: string}}, required: [text]}}}\n  llm:")
	v2 := spectest.Edit(t, v1, "properties: {text: {type: string}}, required: [text]", "properties: {text: {type: string}, pinned: {type: boolean}}, required: [text]")
	p := planOf(t, v1, v2)
	if p.Current != 2 || len(p.Steps) != 1 {
		t.Fatalf("Current %d, %d steps", p.Current, len(p.Steps))
	}
	s := p.Steps[0]
	if s.State || !s.StateChanged || !s.StateDecodes || s.NeedsCode() {
		t.Fatalf("the step is not the one tested: %+v", s)
	}
	if fs := migrations.Funcs(p, nil); len(fs) != 0 {
		t.Errorf("Funcs = %+v, want none", fs)
	}
	files := generate(t, p, nil)
	glue := files["impl/agent/versions.go"].Data
	contains(t, "versions.go", glue, "re:Current: +2,", "re:StateChanged: +true",
		"return new(v2.AgentState)", "return *old.(*v2.AgentState)")
	lacks(t, "versions.go", glue, "AgentStateFromV1", "decl/v1\"")
	if _, ok := files["impl/migrations/v1_to_v2.go"]; ok {
		t.Error("a stub is generated for a state that decodes as it is")
	}
	if got := under(files, "decl/v1"); len(got) > 0 {
		t.Errorf("decl/v1 is generated: %v", got)
	}
	if _, ok := files["decl/v2/current.go"]; !ok {
		t.Error("decl/v2/current.go, which the glue decodes into, is not generated")
	}
	// Written anyway, the migration is the one used.
	glue = generate(t, p, map[string]bool{"AgentStateFromV1": true})["impl/agent/versions.go"].Data
	contains(t, "versions.go", glue, "migrations.AgentStateFromV1(")
	lacks(t, "versions.go", glue, "return new(v2.AgentState)")
}

// TestGenerateStateConverts: a state value that is nullable or optional
// now, an integer now a number, an enum now a string: compatible changes
// that an old snapshot does not decode through as it is (gob drops a zero
// value, which the new pointer would then lose), so the generated
// conversion brings the state up, with nothing to write and no replay.
func TestGenerateStateConverts(t *testing.T) {
	v1 := spectest.Edit(t, spectest.Base,
		"  user:\n    user: {draft: {type: string}}\n  llm:",
		"  user:\n    user: {draft: {type: string}, count: {type: integer}, mood: {type: string, enum: [calm, busy]}, note: {type: object, properties: {text: {type: string}}, required: [text]}}\n  llm:")
	for _, tt := range []struct {
		name, old, new, want string
	}{
		{"nullable now", "count: {type: integer}", "count: {type: [integer, \"null\"]}", "re:Count: +pointerTo\\(old.Count\\),"},
		{"no longer required", "required: [text]", "required: []", "re:Text: +pointerTo\\(old.Text\\),"},
		{"integer now a number", "count: {type: integer}", "count: {type: number}", "re:Count: +float64\\(old.Count\\),"},
		{"enum removed", "mood: {type: string, enum: [calm, busy]}", "mood: {type: string}", "re:Mood: +string\\(old.Mood\\),"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := planOf(t, v1, spectest.Edit(t, v1, tt.old, tt.new))
			if len(p.Steps) != 1 {
				t.Fatalf("%d steps", len(p.Steps))
			}
			s := p.Steps[0]
			if s.State || !s.StateChanged || s.StateDecodes || !s.StateConverts || s.NeedsCode() {
				t.Fatalf("the step is not the one tested: %+v", s)
			}
			if fs := migrations.Funcs(p, nil); len(fs) != 0 {
				t.Errorf("Funcs = %+v, want none", fs)
			}
			files := generate(t, p, nil)
			contains(t, "versions.go", files["impl/agent/versions.go"].Data,
				"migrations.ConvertAgentStateFromV1(*old.(*v1.AgentState))", "return new(v1.AgentState)")
			contains(t, "conversions.go", files[migrations.ConversionsPath].Data, tt.want)
			if _, ok := files["impl/migrations/v1_to_v2.go"]; ok {
				t.Error("a stub is generated for a state converted without one")
			}
		})
	}
	// A new state property too: its value is a replay's to compute.
	p := planOf(t, v1, spectest.Edit(t, v1, "count: {type: integer}", "count: {type: number}", "  llm:\n    user: {draft: {type: string}}\n", "  llm:\n    user: {draft: {type: string}}\n    llm: {notes: {type: string}}\n"))
	if s := p.Steps[0]; s.StateConverts || s.StateDecodes || s.State {
		t.Errorf("a step with a new state property: %+v, want it replayed over", s)
	}
}
