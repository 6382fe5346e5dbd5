package versions_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moora-go/moora/modelgen/internal/evolve"
	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/spec"
	"github.com/moora-go/moora/modelgen/internal/spectest"
	"github.com/moora-go/moora/modelgen/internal/versions"
)

// plan plans the spec text over history h.
func plan(t testing.TB, h *versions.History, text string, amend bool) *versions.Plan {
	t.Helper()
	p, err := versions.NewPlan(h, spectest.Build(t, "agent.yaml", text), amend)
	if err != nil {
		t.Fatalf("NewPlan: %v", err)
	}
	return p
}

// reparse encodes the plan's history and parses it back, as the next run
// of generate reads it.
func reparse(t testing.TB, p *versions.Plan) *versions.History {
	t.Helper()
	data := p.History.Encode("agent.yaml")
	h, err := versions.Parse("agent.history.json", data)
	if err != nil {
		t.Fatalf("parsing the encoded history: %v\n%s", err, data)
	}
	return h
}

// historyOf returns the history that generate writes for the specs, one
// run each, oldest first.
func historyOf(t testing.TB, texts ...string) *versions.History {
	t.Helper()
	h := &versions.History{File: "agent.history.json"}
	for _, text := range texts {
		h = reparse(t, plan(t, h, text, false))
	}
	return h
}

func TestFile(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"agent.yaml", "agent.history.json"},
		{"agent.json", "agent.history.json"},
		{filepath.Join("dir", "my.agent.yml"), filepath.Join("dir", "my.agent.history.json")},
		{"agent", "agent.history.json"},
	}
	for _, tt := range tests {
		if got := versions.File(tt.spec); got != tt.want {
			t.Errorf("File(%q) = %q, want %q", tt.spec, got, tt.want)
		}
	}
}

// validSpec is a minimal valid spec, as JSON.
const validSpec = `{"version": 1, "actors": ["user"], "observations": {"user": {"user": {"n": {"type": "integer"}}}}, "inputs": {"user": {"inc": {"type": "object"}}}}`

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name string
		data string
		// line and col are where the diagnostic is; want is a part of its
		// message.
		line, col int
		want      string
	}{
		{
			name: "not an object",
			data: "[1, 2]\n",
			line: 1, col: 1,
			want: "the history is not a JSON object",
		},
		{
			name: "a string",
			data: `"versions"`,
			line: 1, col: 1,
			want: "the history is not a JSON object",
		},
		{
			name: "unknown top-level key",
			data: "{\n  \"versions\": [],\n  \"extra\": 1\n}\n",
			line: 3, col: 12, // at its value
			want: `unknown key "extra" in the history (want "versions")`,
		},
		{
			name: "missing versions",
			data: "{\n  \"//\": \"header\"\n}\n",
			line: 1, col: 1,
			want: `the history has no "versions" array`,
		},
		{
			name: "versions not an array",
			data: "{\n  \"versions\": {}\n}\n",
			line: 1, col: 1,
			want: `the history has no "versions" array`,
		},
		{
			name: "a version that is not an object",
			data: "{\n  \"versions\": [\n    {\"version\": 1, \"spec\": " + validSpec + "},\n    [2]\n  ]\n}\n",
			line: 4, col: 5,
			want: "a version is not an object",
		},
		{
			name: "unknown key in a version",
			data: "{\n  \"versions\": [\n    {\"version\": 1, \"spec\": {}, \"date\": \"today\"}\n  ]\n}\n",
			line: 3, col: 40, // at its value
			want: `unknown key "date" in a version`,
		},
		{
			name: "versions out of order",
			data: "{\n  \"versions\": [\n    {\"version\": 1, \"spec\": " + validSpec + "},\n    {\"version\": 3, \"spec\": " + validSpec + "}\n  ]\n}\n",
			line: 4, col: 5,
			want: `version 2 has no "version": 2`,
		},
		{
			name: "version numbered from 0",
			data: "{\n  \"versions\": [\n    {\"version\": 0, \"spec\": {}}\n  ]\n}\n",
			line: 3, col: 5,
			want: `version 1 has no "version": 1`,
		},
		{
			name: "version a string",
			data: "{\n  \"versions\": [\n    {\"version\": \"1\", \"spec\": {}}\n  ]\n}\n",
			line: 3, col: 5,
			want: `version 1 has no "version": 1`,
		},
		{
			name: "version missing",
			data: "{\n  \"versions\": [\n    {\"spec\": {}}\n  ]\n}\n",
			line: 3, col: 5,
			want: `version 1 has no "version": 1`,
		},
		{
			name: "missing spec",
			data: "{\n  \"versions\": [\n    {\"version\": 1}\n  ]\n}\n",
			line: 3, col: 5,
			want: `version 1 has no "spec" object`,
		},
		{
			name: "spec not an object",
			data: "{\n  \"versions\": [\n    {\"version\": 1, \"spec\": \"agent.yaml\"}\n  ]\n}\n",
			line: 3, col: 5,
			want: `version 1 has no "spec" object`,
		},
		{
			name: "invalid JSON",
			data: "{\n  \"versions\": [\n    {\"version\": 1,, \"spec\": {}}\n  ]\n}\n",
			line: 3, col: 19,
			want: "invalid character ','",
		},
		{
			name: "truncated JSON",
			data: "{\n  \"versions\": [\n",
			line: 3, col: 1,
			want: "unexpected end of JSON input",
		},
		{
			name: "empty file",
			data: "",
			line: 1, col: 1,
			want: "empty",
		},
		{
			name: "duplicate keys",
			data: "{\n  \"versions\": [],\n  \"versions\": []\n}\n",
			line: 3, col: 3,
			want: `duplicate key "versions" (first at 2:3)`,
		},
		{
			name: "duplicate keys in a version",
			data: "{\n  \"versions\": [\n    {\"version\": 1, \"spec\": {}, \"version\": 1}\n  ]\n}\n",
			line: 3, col: 32,
			want: `duplicate key "version" (first at 3:6)`,
		},
		{
			name: "YAML is not read as YAML",
			data: "versions: []\n",
			line: 1, col: 1,
			want: "invalid character 'v'",
		},
		{
			name: "invalid value in an array",
			data: `{"versions": [1, x]}`,
			line: 1, col: 18,
			want: "invalid character 'x'",
		},
		{
			name: "invalid value on a later line",
			data: "{\n  \"versions\": x\n}",
			line: 2, col: 15,
			want: "invalid character 'x'",
		},
		{
			name: "misspelt literal",
			data: "{\n  \"versions\": [\n    {\"version\": tru}\n  ]\n}",
			line: 3, col: 20,
			want: "invalid character '}' in literal true",
		},
		{
			name: "missing colon",
			data: "{\n  \"versions\" []\n}",
			line: 2, col: 14,
			want: "invalid character '[' after object key",
		},
		{
			name: "data after the object",
			data: "{\"versions\": []}\n{}",
			line: 2, col: 1,
			want: "unexpected data after the top-level JSON value",
		},
		{
			name: "invalid UTF-8",
			data: "{\n  \"//\": \"\xff\", \"versions\": []}",
			line: 2, col: 10,
			want: "UTF-8",
		},
		{
			name: "empty key",
			data: "{\n  \"versions\": [],\n  \"\": 1}",
			line: 3, col: 3,
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := versions.Parse("agent.history.json", []byte(tt.data))
			if err == nil {
				t.Fatalf("Parse accepted it: %d versions", len(h.Versions))
			}
			if h != nil {
				t.Errorf("Parse returned a history with its error")
			}
			ds := spec.AsDiagnostics(err)
			if len(ds) != 1 {
				t.Fatalf("got %T %v, want one Diagnostic", err, err)
			}
			d := ds[0]
			if d.Pos.File != "agent.history.json" || d.Pos.Line != tt.line || d.Pos.Col != tt.col {
				t.Errorf("at %v, want agent.history.json:%d:%d (%v)", d.Pos, tt.line, tt.col, d)
			}
			if !strings.Contains(d.Message, tt.want) {
				t.Errorf("message %q, want it to contain %q", d.Message, tt.want)
			}
			if d.Severity != spec.Error {
				t.Errorf("severity %v, want an error", d.Severity)
			}
			if !strings.HasPrefix(err.Error(), "agent.history.json:") {
				t.Errorf("the error %q does not start with the file", err)
			}
		})
	}
}

// TestParseStructureHint checks that the structural diagnostics say what
// to do.
func TestParseStructureHint(t *testing.T) {
	_, err := versions.Parse("h.json", []byte(`{"versions": 1}`))
	ds := spec.AsDiagnostics(err)
	if len(ds) != 1 || !strings.Contains(ds[0].Hint, "version control") {
		t.Fatalf("got %v, want one diagnostic with a hint to restore the file", err)
	}
}

// TestParseFileName checks that a history file is read as JSON whatever
// its name, and that positions name it as given.
func TestParseFileName(t *testing.T) {
	h, err := versions.Parse("history", []byte(`{"versions": []}`))
	if err != nil {
		t.Fatalf("Parse of JSON named history: %v", err)
	}
	if h.File != "history" || len(h.Versions) != 0 || h.Newest() != nil {
		t.Errorf("got File %q, %d versions, newest %v; want history, none", h.File, len(h.Versions), h.Newest())
	}
	_, err = versions.Parse("history", []byte("{\n \"versions\": 1}"))
	ds := spec.AsDiagnostics(err)
	if len(ds) != 1 || ds[0].Pos.File != "history" {
		t.Fatalf("got %v, want a diagnostic in file history", err)
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name string
		data string
		want int
	}{
		{"empty versions", `{"versions": []}`, 0},
		{"with header", `{"//": "anything", "versions": []}`, 0},
		{"two versions", `{"versions": [{"version": 1, "spec": ` + validSpec + `}, {"spec": ` + validSpec + `, "version": 2}]}`, 2},
		{"version written 1.0", `{"versions": [{"version": 1.0, "spec": {}}]}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := versions.Parse("agent.history.json", []byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Versions) != tt.want {
				t.Fatalf("%d versions, want %d", len(h.Versions), tt.want)
			}
			for i, v := range h.Versions {
				if v.Number != i+1 {
					t.Errorf("version %d numbered %d", i+1, v.Number)
				}
				if v.Src == nil || v.Src.File() != "agent.history.json" {
					t.Errorf("version %d has no source in the history file", i+1)
				}
			}
			if tt.want > 0 && h.Newest() != h.Versions[tt.want-1] {
				t.Errorf("Newest is not the last version")
			}
		})
	}
}

// TestVersionSpecInvalid checks that a version whose spec is not a valid
// spec is reported by Version.Spec (not Parse), at positions in the
// history file.
func TestVersionSpecInvalid(t *testing.T) {
	tests := []struct {
		name      string
		spec      string // the spec of version 2, on line 4 from column 28
		line, col int
		want      string
	}{
		{
			name: "unknown key",
			spec: `{"version": 1, "actors": ["user"], "colour": "red"}`,
			line: 4, col: 63,
			want: `unknown key "colour"`,
		},
		{
			name: "actors not an array",
			spec: `{"version": 1, "actors": "user"}`,
			line: 4, col: 53,
			want: "",
		},
		{
			name: "wrong spec version",
			spec: `{"version": 2, "actors": ["user"]}`,
			line: 4, col: 40,
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := "{\n  \"versions\": [\n    {\"version\": 1, \"spec\": " + validSpec + "},\n    {\"version\": 2, \"spec\": " + tt.spec + "}\n  ]\n}\n"
			h, err := versions.Parse("agent.history.json", []byte(data))
			if err != nil {
				t.Fatalf("Parse checks only the structure, but: %v", err)
			}
			if _, err := h.Versions[0].Spec(); err != nil {
				t.Fatalf("version 1: %v", err)
			}
			sp, err := h.Versions[1].Spec()
			if err == nil {
				t.Fatalf("version 2 is not a valid spec, but Spec returned %+v", sp)
			}
			if sp != nil {
				t.Errorf("Spec returned a spec with its error")
			}
			if !strings.Contains(err.Error(), "version 2 of the spec in the history is not a valid spec") {
				t.Errorf("error %q does not say which version", err)
			}
			ds := spec.AsDiagnostics(err)
			if len(ds) == 0 {
				t.Fatalf("error %v carries no diagnostics", err)
			}
			found := false
			for _, d := range ds {
				if d.Pos.File != "agent.history.json" {
					t.Errorf("diagnostic %v is not in the history file", d)
				}
				if d.Pos.Line != 4 {
					t.Errorf("diagnostic %v is not on line 4, where version 2's spec is", d)
				}
				if d.Pos.Line == tt.line && d.Pos.Col == tt.col && strings.Contains(d.Message, tt.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("no diagnostic at %d:%d containing %q in:\n%v", tt.line, tt.col, tt.want, ds)
			}
			// The error is kept.
			if _, again := h.Versions[1].Spec(); again == nil || again.Error() != err.Error() {
				t.Errorf("a second Spec returned %v, want the same error", again)
			}
			if m, err := h.Versions[1].Model(spectest.Package); err == nil || m != nil {
				t.Errorf("Model of an invalid version: %v, %v; want an error", m, err)
			}
		})
	}
}

// TestVersionModelInvalid checks that a version that passes the spec
// schema but not the model's checks is an error of Spec and of Model,
// naming the version.
func TestVersionModelInvalid(t *testing.T) {
	// The observation names an actor that is not in actors.
	bad := `{"version": 1, "actors": ["user"], "observations": {"user": {"llm": {"n": {"type": "integer"}}}}}`
	h, err := versions.Parse("agent.history.json", []byte(`{"versions": [{"version": 1, "spec": `+bad+`}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if sp, err := h.Versions[0].Spec(); err == nil || !strings.Contains(err.Error(), "version 1 of the spec in the history") {
		t.Fatalf("Spec of an invalid model = %v, %v; want an error naming the version", sp, err)
	}
	m, err := h.Versions[0].Model(spectest.Package)
	if err == nil {
		t.Fatalf("Model accepted an invalid model: %+v", m)
	}
	if !strings.Contains(err.Error(), "version 1 of the spec in the history") {
		t.Errorf("error %q does not name the version", err)
	}
}

func TestVersionModel(t *testing.T) {
	h := historyOf(t, spectest.Base)
	v := h.Versions[0]
	m, err := v.Model(spectest.Package)
	if err != nil {
		t.Fatal(err)
	}
	if m.Package != spectest.Package {
		t.Errorf("Package %q, want %q", m.Package, spectest.Package)
	}
	var names []string
	for _, in := range m.Inputs {
		names = append(names, in.Name)
	}
	if got := strings.Join(names, " "); got != "send-user-message send-assi-message think" {
		t.Errorf("inputs %s", got)
	}
	if again, _ := v.Model(spectest.Package); again != m {
		t.Errorf("a second Model built another model")
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	t.Run("missing file", func(t *testing.T) {
		file := filepath.Join(dir, "agent.history.json")
		h, err := versions.Read(file)
		if err != nil {
			t.Fatal(err)
		}
		if h == nil || h.File != file || len(h.Versions) != 0 || h.Newest() != nil {
			t.Fatalf("got %+v, want an empty history of %s", h, file)
		}
	})
	t.Run("missing directory", func(t *testing.T) {
		h, err := versions.Read(filepath.Join(dir, "nowhere", "agent.history.json"))
		if err != nil || len(h.Versions) != 0 {
			t.Fatalf("got %+v, %v; want an empty history", h, err)
		}
	})
	t.Run("a file", func(t *testing.T) {
		file := filepath.Join(dir, "written.history.json")
		data := plan(t, &versions.History{File: file}, spectest.Base, false).History.Encode("agent.yaml")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		h, err := versions.Read(file)
		if err != nil {
			t.Fatal(err)
		}
		if h.File != file || len(h.Versions) != 1 {
			t.Fatalf("got File %q, %d versions", h.File, len(h.Versions))
		}
	})
	t.Run("an invalid file", func(t *testing.T) {
		file := filepath.Join(dir, "bad.history.json")
		if err := os.WriteFile(file, []byte("{\n  \"versions\": 3\n}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := versions.Read(file)
		if ds := spec.AsDiagnostics(err); len(ds) != 1 || ds[0].Pos.File != file {
			t.Fatalf("got %v, want one diagnostic in %s", err, file)
		}
	})
	t.Run("a directory", func(t *testing.T) {
		h, err := versions.Read(dir)
		if err == nil {
			t.Fatalf("Read of a directory: %+v", h)
		}
		if errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "reading the spec's history") {
			t.Errorf("error %v", err)
		}
	})
}

// specs are specs of the round trip tests: each a valid spec, each
// planned after the previous one.
var roundTripSpecs = []struct{ name, text string }{
	{"base", spectest.Base},
	{"new optional property", strings.Replace(spectest.Base, "properties: {id: {type: string}, content: {type: string}}\n      required: [id, content]\n  llm:", "properties: {id: {type: string}, content: {type: string}, channel: {type: string}}\n      required: [id, content]\n  llm:", 1)},
	{"breaking", strings.Replace(spectest.Base, "properties: {thought: {type: string}}", "properties: {thought: {type: integer}}", 1)},
	{"odd text", spectest.Base + `$defs:
  Odd:
    type: object
    description: "Quotes \", backslashes \\, tabs \t, newlines \n, unicode é 😀 and <html> &amp;"
    properties:
      a_b-c: {type: number, minimum: 1.5, maximum: 1000.25, default: 1.0}
      big: {type: integer, maximum: 12345678901234567890}
      empty: {type: array, items: {type: string}, default: []}
      obj: {type: object, additionalProperties: {type: boolean}, default: {}}
      n: {type: ["string", "null"], enum: ["a", "b\\\"c", "é"]}
`},
}

func TestEncodeRoundTrip(t *testing.T) {
	for _, tt := range roundTripSpecs {
		t.Run(tt.name, func(t *testing.T) {
			m := spectest.Build(t, "agent.yaml", tt.text)
			want, err := spec.Decode(m.Src.Root())
			if err != nil {
				t.Fatal(err)
			}
			h := &versions.History{File: "agent.history.json"}
			// Two runs: the second plans over the first's file.
			for run := 1; run <= 2; run++ {
				p, err := versions.NewPlan(h, m, false)
				if err != nil {
					t.Fatal(err)
				}
				data := p.History.Encode("agent.yaml")
				if !bytes.HasPrefix(data, []byte("{\n")) {
					t.Errorf("run %d: the file does not start with {\\n:\n%s", run, data)
				}
				lines := strings.SplitN(string(data), "\n", 3)
				if len(lines) < 3 || !strings.HasPrefix(lines[1], gen.JSONHeader) {
					t.Errorf("run %d: the second line does not start with the JSON header: %q", run, lines[1])
				}
				if !strings.Contains(lines[1], "agent.yaml") {
					t.Errorf("run %d: the header does not name the spec: %q", run, lines[1])
				}
				if !gen.IsOwned(data) {
					t.Errorf("run %d: gen.IsOwned is false", run)
				}
				if !bytes.HasSuffix(data, []byte("}\n")) {
					t.Errorf("run %d: the file does not end with }\\n", run)
				}
				if strings.Contains(string(data), `"package"`) {
					t.Errorf("run %d: the history records the package:\n%s", run, data)
				}
				parsed, err := versions.Parse("agent.history.json", data)
				if err != nil {
					t.Fatalf("run %d: parsing the encoded history: %v\n%s", run, err, data)
				}
				if len(parsed.Versions) != 1 {
					t.Fatalf("run %d: %d versions, want 1", run, len(parsed.Versions))
				}
				got, err := parsed.Versions[0].Spec()
				if err != nil {
					t.Fatalf("run %d: the recorded spec: %v", run, err)
				}
				if cs := evolve.Compare(want, got); len(cs) > 0 {
					t.Errorf("run %d: the recorded spec differs from the spec: %+v", run, cs)
				}
				if cs := evolve.Compare(got, want); len(cs) > 0 {
					t.Errorf("run %d: the spec differs from the recorded spec: %+v", run, cs)
				}
				if _, err := parsed.Versions[0].Model(spectest.Package); err != nil {
					t.Errorf("run %d: the recorded spec's model: %v", run, err)
				}
				again := parsed.Encode("agent.yaml")
				if !bytes.Equal(again, data) {
					t.Errorf("run %d: Encode(Parse(Encode)) differs:\n%s\nwant\n%s", run, again, data)
				}
				if twice := p.History.Encode("agent.yaml"); !bytes.Equal(twice, data) {
					t.Errorf("run %d: Encode is not deterministic", run)
				}
				h = parsed
			}
		})
	}
}

// TestEncodeHistory checks Encode of a history of several versions and of
// an empty one.
func TestEncodeHistory(t *testing.T) {
	h := historyOf(t, spectest.Base, roundTripSpecs[2].text, roundTripSpecs[3].text)
	if len(h.Versions) != 3 {
		t.Fatalf("%d versions, want 3", len(h.Versions))
	}
	data := h.Encode("agent.yaml")
	again, err := versions.Parse("agent.history.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Versions) != 3 {
		t.Fatalf("%d versions after a round trip", len(again.Versions))
	}
	if !bytes.Equal(again.Encode("agent.yaml"), data) {
		t.Errorf("the round trip of three versions is not byte-identical")
	}
	for i := 0; i < 3; i++ {
		a, err := h.Versions[i].Spec()
		if err != nil {
			t.Fatal(err)
		}
		b, err := again.Versions[i].Spec()
		if err != nil {
			t.Fatal(err)
		}
		if cs := evolve.Compare(a, b); len(cs) > 0 {
			t.Errorf("version %d changed in the round trip: %+v", i+1, cs)
		}
	}
	// A new version is a diff of added lines: the file of two versions is
	// a prefix of the file of three, but for the closing lines.
	two := (&versions.History{Versions: h.Versions[:2]}).Encode("agent.yaml")
	head := strings.TrimSuffix(string(two), "\n  ]\n}\n")
	if !strings.HasPrefix(string(data), head+",\n") {
		t.Errorf("a third version is not only added lines")
	}

	empty := (&versions.History{}).Encode("agent.yaml")
	if !gen.IsOwned(empty) {
		t.Errorf("the empty history is not owned:\n%s", empty)
	}
	e, err := versions.Parse("agent.history.json", empty)
	if err != nil || len(e.Versions) != 0 {
		t.Fatalf("the empty history: %v, %v\n%s", e, err, empty)
	}
}

// TestEncodeSpecName checks that Encode writes a valid file whatever the
// spec's name.
func TestEncodeSpecName(t *testing.T) {
	h := historyOf(t, spectest.Base)
	for _, name := range []string{"agent.yaml", "my agent.json", "agent-é.yaml", `a"b.yaml`, `dir\agent.yaml`} {
		t.Run(name, func(t *testing.T) {
			data := h.Encode(name)
			if _, err := versions.Parse("agent.history.json", data); err != nil {
				t.Fatalf("Encode(%q) wrote a history that does not parse: %v", name, err)
			}
		})
	}
}

// inputChange is what NewPlan's step should say about one input.
type inputChange struct {
	name    string
	removed bool // StepInput.New is nil
}

func TestNewPlan(t *testing.T) {
	tests := []struct {
		name  string
		specs []string // the specs generated before, oldest first
		spec  string   // the spec
		amend bool

		current      int
		new, amended bool
		pending      int // the number of pending changes; -1 for some
		// The last step, when there is one.
		steps        int
		inputs       []inputChange
		state        bool
		stateChanged bool
		needsCode    bool
		// contains is a text the encoded history contains.
		contains string
	}{
		{
			name:    "empty history",
			spec:    spectest.Base,
			current: 1, new: true,
		},
		{
			name:    "same spec again",
			specs:   []string{spectest.Base},
			spec:    spectest.Base,
			current: 1,
		},
		{
			name:     "description only",
			specs:    []string{spectest.Base},
			spec:     spectest.Edit(t, spectest.Base, "description: Sends a message.", "description: Sends a message to the model."),
			current:  1,
			contains: "Sends a message to the model.",
		},
		{
			name:     "$defs renamed with the same shapes",
			specs:    []string{spectest.Base + "$defs:\n  Note: {type: object, properties: {a: {type: string}}}\n"},
			spec:     spectest.Base + "$defs:\n  Memo: {type: object, properties: {a: {type: string}}}\n",
			current:  1,
			contains: `"Memo"`,
		},
		{
			// The journal's records are the same: readOnly changes only
			// what a client may leave out.
			name:     "readOnly added to an input property",
			specs:    []string{spectest.Base},
			spec:     spectest.Edit(t, spectest.Base, "properties: {thought: {type: string}}", "properties: {thought: {type: string, readOnly: true}}"),
			current:  1,
			contains: `"readOnly": true`,
		},
		{
			name:    "new optional input property",
			specs:   []string{spectest.Base},
			spec:    spectest.Edit(t, spectest.Base, "properties: {thought: {type: string}}", "properties: {thought: {type: string}, mood: {type: string}}"),
			current: 2, new: true, pending: 1,
			steps: 1,
		},
		{
			name:    "new input type",
			specs:   []string{spectest.Base},
			spec:    spectest.Base + "    stop: {type: object}\n",
			current: 2, new: true, pending: 1,
			steps: 1,
		},
		{
			name:    "breaking input change",
			specs:   []string{spectest.Base},
			spec:    spectest.Edit(t, spectest.Base, "properties: {thought: {type: string}}", "properties: {thought: {type: integer}}"),
			current: 2, new: true, pending: 1,
			steps: 1, inputs: []inputChange{{name: "think"}}, needsCode: true,
		},
		{
			name:    "new required input property",
			specs:   []string{spectest.Base},
			spec:    spectest.Edit(t, spectest.Base, "properties: {thought: {type: string}}\n      required: [thought]", "properties: {thought: {type: string}, mood: {type: string}}\n      required: [thought, mood]"),
			current: 2, new: true, pending: 1,
			steps: 1, inputs: []inputChange{{name: "think"}}, needsCode: true,
		},
		{
			name:    "two breaking inputs",
			specs:   []string{spectest.Base},
			spec:    spectest.Edit(t, spectest.Base, "properties: {thought: {type: string}}", "properties: {thought: {type: integer}}", "content: {type: string}}\n      required: [id, content]\n  llm:", "content: {type: integer}}\n      required: [id, content]\n  llm:"),
			current: 2, new: true, pending: -1,
			steps: 1, inputs: []inputChange{{name: "send-user-message"}, {name: "think"}}, needsCode: true,
		},
		{
			name:    "removed input type",
			specs:   []string{spectest.Base},
			spec:    spectest.Edit(t, spectest.Base, "    think:\n      type: object\n      properties: {thought: {type: string}}\n      required: [thought]\n", ""),
			current: 2, new: true, pending: 1,
			steps: 1, inputs: []inputChange{{name: "think", removed: true}}, needsCode: true,
		},
		{
			name:    "renamed state property",
			specs:   []string{spectest.Base},
			spec:    strings.ReplaceAll(spectest.Base, "{draft: {type: string}}", "{text: {type: string}}"),
			current: 2, new: true, pending: 2,
			steps: 1, state: true, stateChanged: true, needsCode: true,
		},
		{
			name:    "new observation",
			specs:   []string{spectest.Base},
			spec:    spectest.Edit(t, spectest.Base, "  llm:\n    user: {draft: {type: string}}\n", "  llm:\n    user: {draft: {type: string}}\n    llm: {notes: {type: string}}\n"),
			current: 2, new: true, pending: 1,
			steps: 1, stateChanged: true,
		},
		{
			name:    "amend with a breaking change",
			specs:   []string{spectest.Base},
			spec:    spectest.Edit(t, spectest.Base, "properties: {thought: {type: string}}", "properties: {thought: {type: integer}}"),
			amend:   true,
			current: 1, amended: true, pending: 1,
			contains: `"integer"`,
		},
		{
			name:    "amend without a change",
			specs:   []string{spectest.Base},
			spec:    spectest.Base,
			amend:   true,
			current: 1,
		},
		{
			name:  "amend the second version",
			specs: []string{spectest.Base, spectest.Edit(t, spectest.Base, "properties: {thought: {type: string}}", "properties: {thought: {type: integer}}")},
			spec:  spectest.Edit(t, spectest.Base, "properties: {thought: {type: string}}", "properties: {thought: {type: boolean}}"),
			amend: true, current: 2, amended: true, pending: 1,
			steps: 1, inputs: []inputChange{{name: "think"}}, needsCode: true,
			contains: `"boolean"`,
		},
		{
			name:    "third version",
			specs:   []string{spectest.Base, spectest.Edit(t, spectest.Base, "properties: {thought: {type: string}}", "properties: {thought: {type: integer}}")},
			spec:    spectest.Edit(t, spectest.Base, "properties: {thought: {type: string}}", "properties: {thought: {type: integer}}", "content: {type: string}}\n      required: [id, content]\n  llm:", "content: {type: integer}}\n      required: [id, content]\n  llm:"),
			current: 3, new: true, pending: 1,
			steps: 2, inputs: []inputChange{{name: "send-user-message"}}, needsCode: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := historyOf(t, tt.specs...)
			before := len(h.Versions)
			m := spectest.Build(t, "agent.yaml", tt.spec)
			p, err := versions.NewPlan(h, m, tt.amend)
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Versions) != before {
				t.Errorf("NewPlan changed the history it read")
			}
			if p.Model != m {
				t.Errorf("Plan.Model is not the spec's model")
			}
			if p.Current != tt.current || p.New != tt.new || p.Amended != tt.amended {
				t.Errorf("Current %d, New %v, Amended %v; want %d, %v, %v", p.Current, p.New, p.Amended, tt.current, tt.new, tt.amended)
			}
			if len(p.History.Versions) != tt.current {
				t.Errorf("%d versions, want %d", len(p.History.Versions), tt.current)
			}
			for i, v := range p.History.Versions {
				if v.Number != i+1 {
					t.Errorf("version %d numbered %d", i+1, v.Number)
				}
			}
			if n := p.History.Newest(); n == nil || n.Src != m.Src {
				t.Errorf("the newest version is not the spec")
			}
			switch {
			case tt.pending == -1 && len(p.Pending) == 0:
				t.Errorf("no pending changes")
			case tt.pending >= 0 && len(p.Pending) != tt.pending:
				t.Errorf("%d pending changes, want %d: %+v", len(p.Pending), tt.pending, p.Pending)
			}
			if len(p.Steps) != tt.steps {
				t.Fatalf("%d steps, want %d", len(p.Steps), tt.steps)
			}
			for i, s := range p.Steps {
				if s.From != i+1 {
					t.Errorf("step %d is from %d", i, s.From)
				}
				if len(s.Changes) == 0 {
					t.Errorf("step %d has no changes", s.From)
				}
			}
			data := p.History.Encode("agent.yaml")
			if tt.contains != "" && !bytes.Contains(data, []byte(tt.contains)) {
				t.Errorf("the history does not contain %s:\n%s", tt.contains, data)
			}
			if h2, err := versions.Parse("agent.history.json", data); err != nil || len(h2.Versions) != tt.current {
				t.Errorf("the planned history does not parse back to %d versions: %v", tt.current, err)
			}
			if tt.steps == 0 {
				return
			}
			s := p.Steps[len(p.Steps)-1]
			if s.State != tt.state || s.StateChanged != tt.stateChanged || s.NeedsCode() != tt.needsCode {
				t.Errorf("State %v, StateChanged %v, NeedsCode %v; want %v, %v, %v (changes %+v)", s.State, s.StateChanged, s.NeedsCode(), tt.state, tt.stateChanged, tt.needsCode, s.Changes)
			}
			if s.Src != m.Src {
				t.Errorf("the last step's Src is not the spec's")
			}
			if len(s.Inputs) != len(tt.inputs) {
				t.Fatalf("inputs %+v, want %+v", s.Inputs, tt.inputs)
			}
			for i, want := range tt.inputs {
				in := s.Inputs[i]
				if in.Name != want.name {
					t.Errorf("input %d is %s, want %s", i, in.Name, want.name)
				}
				if in.Old == nil || in.Old.Name != want.name {
					t.Errorf("input %s: Old %+v", want.name, in.Old)
				}
				if want.removed != (in.New == nil) {
					t.Errorf("input %s: New %+v, want removed %v", want.name, in.New, want.removed)
				}
				if in.New != nil && in.New.Name != want.name {
					t.Errorf("input %s: New is %s", want.name, in.New.Name)
				}
				// New is the spec's own input.
				if in.New != nil && !containsInput(m, in.New) {
					t.Errorf("input %s: New is not an input of the spec's model", want.name)
				}
			}
			if tt.needsCode || tt.stateChanged {
				if s.Old == nil || s.New == nil {
					t.Errorf("the step has no models: Old %v, New %v", s.Old, s.New)
				} else {
					if s.New != m {
						t.Errorf("the last step's New is not the spec's model")
					}
					if s.Old.Package != spectest.Package {
						t.Errorf("Old's package %q, want %q", s.Old.Package, spectest.Package)
					}
				}
			}
			for _, c := range s.Changes {
				pos := p.Pos(s, c)
				if pos.File != "agent.yaml" || pos.Line < 1 {
					t.Errorf("change %+v at %v, want a line of agent.yaml", c, pos)
				}
			}
		})
	}
}

func containsInput(m *model.Model, in *model.Input) bool {
	for _, x := range m.Inputs {
		if x == in {
			return true
		}
	}
	return false
}

// TestNewPlanCompatible checks a compatible step in detail: no input to
// migrate, no state migration, and no models built.
func TestNewPlanCompatible(t *testing.T) {
	h := historyOf(t, spectest.Base)
	p := plan(t, h, spectest.Edit(t, spectest.Base, "properties: {thought: {type: string}}", "properties: {thought: {type: string}, mood: {type: string}}"), false)
	if len(p.Steps) != 1 {
		t.Fatalf("%d steps", len(p.Steps))
	}
	s := p.Steps[0]
	if len(s.Inputs) != 0 || s.State || s.StateChanged || s.NeedsCode() {
		t.Errorf("a compatible step needs code: %+v", s)
	}
	if len(s.Changes) != 1 || s.Changes[0].Breaking || s.Changes[0].Input != "think" || s.Changes[0].Path != "/mood" {
		t.Errorf("changes %+v, want one compatible change of think at /mood", s.Changes)
	}
	if evolve.Breaking(p.Pending) {
		t.Errorf("pending changes are breaking: %+v", p.Pending)
	}
	// The pending change is at the new property, in the spec.
	pos := p.Pos(nil, p.Pending[0])
	if want := lineOf(spectest.Base, "properties: {thought: {type: string}}"); pos.File != "agent.yaml" || pos.Line != want {
		t.Errorf("pending change at %v, want agent.yaml:%d", pos, want)
	}
}

// lineOf returns the 1-based line of the first occurrence of sub in text.
func lineOf(text, sub string) int {
	i := strings.Index(text, sub)
	if i < 0 {
		return 0
	}
	return strings.Count(text[:i], "\n") + 1
}

// TestNewPlanDoesNotReplaceOlderVersions checks that a description change
// replaces only the newest version's text.
func TestNewPlanDoesNotReplaceOlderVersions(t *testing.T) {
	v2 := spectest.Edit(t, spectest.Base, "properties: {thought: {type: string}}", "properties: {thought: {type: integer}}")
	h := historyOf(t, spectest.Base, v2)
	desc := strings.Replace(v2, "description: Sends a message.", "description: Sends a new message.", 1)
	p := plan(t, h, desc, false)
	if p.Current != 2 || p.New || p.Amended || len(p.Pending) != 0 {
		t.Fatalf("Current %d, New %v, Amended %v, Pending %v", p.Current, p.New, p.Amended, p.Pending)
	}
	data := string(p.History.Encode("agent.yaml"))
	if strings.Count(data, "Sends a new message.") != 1 || strings.Count(data, "Sends a message.") != 1 {
		t.Errorf("want version 1 with the old description and version 2 with the new one:\n%s", data)
	}
	if p.History.Versions[0] != h.Versions[0] {
		t.Errorf("version 1 was replaced")
	}
	if len(p.Steps) != 1 || len(p.Steps[0].Inputs) != 1 {
		t.Errorf("steps %+v, want the step of version 1 to 2 migrating think", p.Steps)
	}
}

// TestNewPlanInvalidHistory checks that a history whose newest version is
// not a valid spec fails NewPlan with the version's diagnostics.
func TestNewPlanInvalidHistory(t *testing.T) {
	h, err := versions.Parse("agent.history.json", []byte("{\n  \"versions\": [\n    {\"version\": 1, \"spec\": {\"version\": 1, \"actors\": 7}}\n  ]\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = versions.NewPlan(h, spectest.Build(t, "agent.yaml", spectest.Base), false)
	if err == nil {
		t.Fatal("NewPlan accepted a history with an invalid spec")
	}
	ds := spec.AsDiagnostics(err)
	if len(ds) == 0 || ds[0].Pos.File != "agent.history.json" || ds[0].Pos.Line != 3 {
		t.Errorf("got %v, want diagnostics on line 3 of the history", err)
	}
	// An invalid older version fails too: its step is planned.
	h, err = versions.Parse("agent.history.json", []byte(`{"versions": [{"version": 1, "spec": {"actors": 7}}, {"version": 2, "spec": `+validSpec+`}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := spectest.Build(t, "agent.yaml", "version: 1\nactors: [user]\nobservations: {user: {user: {n: {type: integer}}}}\ninputs: {user: {inc: {type: object}}}\n")
	if _, err := versions.NewPlan(h, m, false); err == nil {
		t.Fatal("NewPlan accepted a history with an invalid older version")
	}
}

// TestParseByteOrderMark: a history file that an editor saved with a UTF-8
// byte order mark is read, as a spec file is (spec.Parse skips it).
func TestParseByteOrderMark(t *testing.T) {
	data := append([]byte("\ufeff"), historyOf(t, spectest.Base).Encode("agent.yaml")...)
	h, err := versions.Parse("agent.history.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Versions) != 1 {
		t.Fatalf("%d versions, want 1", len(h.Versions))
	}
	if _, err := h.Versions[0].Spec(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkParseLongLine parses a history of 50,000 values written a value
// a line and on one line (a minified file): the columns of one long line
// cost their distance from the previous value, not from the line's start.
func BenchmarkParseLongLine(b *testing.B) {
	const n = 50_000
	history := func(sep string) []byte {
		var buf bytes.Buffer
		buf.WriteString(`{"versions": [`)
		for i := range n {
			if i > 0 {
				buf.WriteString(sep)
			}
			buf.WriteString(`{"version": 1}`)
		}
		buf.WriteString("]}")
		return buf.Bytes()
	}
	for _, c := range []struct{ name, sep string }{{"lines", ",\n"}, {"one-line", ","}} {
		data := history(c.sep)
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if _, err := versions.Parse("agent.history.json", data); err == nil {
					b.Fatal("Parse accepted a history of bad versions")
				}
			}
		})
	}
}

// FuzzParseHistory: Parse never panics, and a history it accepts encodes
// to a file it accepts again, with as many versions, whose encoding is
// the same bytes.
func FuzzParseHistory(f *testing.F) {
	f.Add(historyOf(f, spectest.Base, roundTripSpecs[2].text, roundTripSpecs[3].text).Encode("agent.yaml"))
	f.Add(historyOf(f, spectest.Base).Encode("agent.yaml"))
	f.Add((&versions.History{}).Encode("agent.yaml"))
	f.Add([]byte(`{"versions": [{"version": 1, "spec": ` + validSpec + `}]}`))
	f.Add([]byte(`{"//": 1, "versions": [{"spec": {"package": "x", "a": [1.0, 1e400, -0, "\ud800"]}, "version": 1.0}]}`))
	f.Add([]byte(`{"versions": [{"version": 1, "spec": {}}, {"version": 3, "spec": {}}]}`))
	f.Add([]byte("[]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := versions.Parse("agent.history.json", data)
		if err != nil {
			if h != nil {
				t.Fatalf("Parse returned a history with its error %v", err)
			}
			if spec.AsDiagnostics(err) == nil {
				t.Fatalf("Parse failed without a diagnostic: %v", err)
			}
			return
		}
		// A version's spec is checked when used: it must not panic.
		for _, v := range h.Versions {
			if _, err := v.Spec(); err == nil {
				_, _ = v.Model(spectest.Package)
			}
		}
		enc := h.Encode("agent.yaml")
		again, err := versions.Parse("agent.history.json", enc)
		if err != nil {
			t.Fatalf("Parse of the encoded history: %v\n%s\nfrom\n%q", err, enc, data)
		}
		if len(again.Versions) != len(h.Versions) {
			t.Fatalf("%d versions after the round trip, want %d", len(again.Versions), len(h.Versions))
		}
		if enc2 := again.Encode("agent.yaml"); !bytes.Equal(enc2, enc) {
			t.Fatalf("Encode is not stable:\n%s\nthen\n%s", enc, enc2)
		}
	})
}
