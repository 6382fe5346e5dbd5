package modelgen

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"

	"github.com/moora-go/moora/modelgen/internal/gen/graph"
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/spec"
	"golang.org/x/mod/modfile"
)

// DefaultSpecFile is the spec file agentgen reads when given none.
const DefaultSpecFile = "agent.yaml"

// GraphFormats are the formats of Graph: mermaid (a flowchart) and dot
// (Graphviz).
var GraphFormats = slices.Clone(graph.Formats)

// Schema returns the JSON Schema of the spec format, for editors
// ("# yaml-language-server: $schema=...") and for agentgen schema. The
// committed copy is modelgen/agent.schema.json in the repository.
func Schema() []byte { return spec.FormatSchema() }

// Load reads and validates the spec file and derives its model; the report
// counts its actors, observations, inputs and data types, and carries its
// warnings. An invalid spec (with Options.Strict, one with warnings) fails
// with StatusInvalid and its Diagnostics.
func Load(file string, opts Options) (*Report, error) {
	r := &Report{Spec: file}
	m, err := load(r, file, opts.Strict)
	if err != nil {
		return r, err
	}
	for _, t := range m.Types {
		if t.Input == nil {
			r.DataTypes++
		}
	}
	r.Actors, r.Observations, r.Inputs = len(m.Actors), len(m.Observations), len(m.Inputs)
	r.Status = StatusUpToDate
	return r, nil
}

// Graph is Load, and then the actor graph of the model in the report: one
// node per actor, labelled with its state and context, and one edge per
// observation, labelled with the observed properties, in Options.Format
// (mermaid or dot).
func Graph(file string, opts Options) (*Report, error) {
	r := &Report{Spec: file}
	if !slices.Contains(graph.Formats, opts.Format) {
		r.Status = StatusInvalid
		return r, fmt.Errorf("unknown graph format %q (want mermaid or dot)", opts.Format)
	}
	m, err := load(r, file, false)
	if err != nil {
		return r, err
	}
	var b bytes.Buffer
	if err := graph.Write(&b, m, opts.Format); err != nil {
		r.Status = StatusError
		return r, err
	}
	r.Graph, r.Status = b.Bytes(), StatusUpToDate
	return r, nil
}

// load is the first stage of every command: it loads the spec file and
// puts its diagnostics (or, when it is valid, its warnings) into r. It
// fails when the spec is invalid, or has warnings and strict is set; the
// status is then StatusInvalid, or StatusError when the file could not be
// read.
func load(r *Report, file string, strict bool) (*model.Model, error) {
	m, err := loadFile(file)
	if err != nil {
		ds := asDiagnostics(err)
		if ds == nil {
			r.Status = StatusError
			return nil, err
		}
		r.Status, r.Diagnostics = StatusInvalid, diagnostics(ds, false)
		return nil, fmt.Errorf("%s is invalid: %s", file, count(ds))
	}
	if strict && len(m.Warnings) > 0 {
		r.Status, r.Diagnostics = StatusInvalid, diagnostics(m.Warnings, true)
		return nil, fmt.Errorf("%s is invalid with --strict: %s", file, count(asErrors(m.Warnings)))
	}
	r.Diagnostics = diagnostics(m.Warnings, false)
	return m, nil
}

// asErrors returns the warnings as errors, which Strict makes them.
func asErrors(ds spec.Diagnostics) spec.Diagnostics {
	out := make(spec.Diagnostics, len(ds))
	for i, d := range ds {
		e := *d
		e.Severity = spec.Error
		out[i] = &e
	}
	return out
}

// loadFile reads, validates and derives the model of the spec file at path. When
// the spec has no package key, Load derives the package path from the
// nearest enclosing go.mod; if there is none, Model.Package stays empty and
// Model.PackageNote says why.
//
// An invalid spec yields Diagnostics: every problem found, each with its
// position. Other failures (the file cannot be read) are plain errors.
func loadFile(file string) (*model.Model, error) {
	data, err := readSpec(file)
	if err != nil {
		return nil, err
	}
	m, err := loadBytes(file, data)
	if err != nil {
		return nil, err
	}
	if m.Package == "" {
		m.Package, m.PackageNote = packageFromGoMod(filepath.Dir(file))
		if m.Package != "" {
			if reason := model.ImportPathError(m.Package); reason != "" {
				return nil, spec.Diagnostics{{Pos: spec.Pos{File: file, Line: 1, Col: 1},
					Message: fmt.Sprintf("the import path of the spec's directory, %s (%s), is not a valid Go import path: %s", m.Package, m.PackageNote, reason),
					Hint:    "rename the directory, as the go command cannot build a package there"}}
			}
		}
	}
	return m, nil
}

// readSpec reads a spec file, or no more of it than shows that it has more
// than spec.MaxBytes, which loadBytes then reports.
func readSpec(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading spec: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, spec.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading spec: %w", err)
	}
	return data, nil
}

// loadBytes is loadFile on the contents of a spec file; name is used in
// positions and picks the syntax (JSON for *.json, YAML otherwise). It never
// looks at the file system, so Model.Package is only what the spec says.
func loadBytes(name string, data []byte) (*model.Model, error) {
	root, err := spec.Parse(name, data)
	if err != nil {
		return nil, diagnosticsError(err)
	}
	src := spec.NewSource(name, root)
	// Validation and the model checks both only read the document, so the
	// checks run beside validation; their result is used only when the
	// document is valid. (On an invalid document they may fail in any way;
	// a panic on a valid one is a bug and is raised here.)
	type result struct {
		m     *model.Model
		err   error
		panic string // the panic value and its stack
	}
	built := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if v := recover(); v != nil {
				r.panic = fmt.Sprintf("%v\n\n%s", v, debug.Stack())
			}
			built <- r
		}()
		sp, err := spec.Decode(root)
		if err != nil {
			r.err = spec.Diagnostics{{Pos: spec.Pos{File: name, Line: 1, Col: 1}, Message: fmt.Sprintf("cannot decode the spec: %v", err)}}
			return
		}
		r.m, r.err = model.Build(src, sp)
	}()
	ds, err := spec.Validate(src)
	r := <-built
	if err != nil {
		return nil, err
	}
	if len(ds) > 0 {
		return nil, ds
	}
	if r.panic != "" {
		panic("modelgen: checking a valid spec: " + r.panic)
	}
	return r.m, r.err
}

// diagnosticsError returns the diagnostics err carries, or else err.
func diagnosticsError(err error) error {
	if ds := asDiagnostics(err); ds != nil {
		return ds
	}
	return err
}

// asDiagnostics returns the diagnostics carried by err: a Diagnostics list
// or a single *Diagnostic, possibly wrapped. It returns nil for other
// errors.
func asDiagnostics(err error) spec.Diagnostics { return spec.AsDiagnostics(err) }

// packageFromGoMod derives the import path of dir from the nearest enclosing
// go.mod. It returns "" and the reason when there is none.
func packageFromGoMod(dir string) (pkg, note string) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Sprintf("cannot resolve %s: %v", dir, err)
	}
	for d := abs; ; {
		gomod := filepath.Join(d, "go.mod")
		data, err := os.ReadFile(gomod)
		if err == nil {
			mod := modulePath(data)
			if mod == "" {
				return "", gomod + " has no module directive"
			}
			rel, err := filepath.Rel(d, abs)
			if err != nil {
				return "", err.Error()
			}
			return path.Join(mod, filepath.ToSlash(rel)), "derived from " + gomod
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", "the spec has no package key and there is no go.mod in " + abs + " or above"
		}
		d = parent
	}
}

// modulePath returns the module path of a go.mod file, or "".
func modulePath(gomod []byte) string {
	return modfile.ModulePath(gomod)
}
