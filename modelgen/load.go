package modelgen

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"

	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/spec"
	"golang.org/x/mod/modfile"
)

// DefaultSpecFile is the spec file agentgen reads when given none.
const DefaultSpecFile = "agent.yaml"

// Load reads, validates and derives the model of the spec file at path. When
// the spec has no package key, Load derives the package path from the
// nearest enclosing go.mod; if there is none, Model.Package stays empty and
// Model.PackageNote says why.
//
// An invalid spec yields Diagnostics: every problem found, each with its
// position. Other failures (the file cannot be read) are plain errors.
func Load(file string) (*Model, error) {
	data, err := ReadSpec(file)
	if err != nil {
		return nil, err
	}
	m, err := LoadBytes(file, data)
	if err != nil {
		return nil, err
	}
	if m.Package == "" {
		m.Package, m.PackageNote = packageFromGoMod(filepath.Dir(file))
		if m.Package != "" {
			if reason := model.ImportPathError(m.Package); reason != "" {
				return nil, Diagnostics{{Pos: Pos{File: file, Line: 1, Col: 1},
					Message: fmt.Sprintf("the import path of the spec's directory, %s (%s), is not a valid Go import path: %s", m.Package, m.PackageNote, reason),
					Hint:    "rename the directory, as the go command cannot build a package there"}}
			}
		}
	}
	return m, nil
}

// MaxSpecBytes is the most bytes a spec file may have: a larger one is an
// error before it is parsed.
const MaxSpecBytes = spec.MaxBytes

// MaxDiagnostics is how many diagnostics a spec gets at most: one with
// more problems gets the first MaxDiagnostics and a last one saying there
// are more.
const MaxDiagnostics = spec.MaxDiagnostics

// ReadSpec reads a spec file, or no more of it than shows that it has more
// than MaxSpecBytes, which LoadBytes then reports.
func ReadSpec(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading spec: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading spec: %w", err)
	}
	return data, nil
}

// LoadBytes is Load on the contents of a spec file; name is used in
// positions and picks the syntax (JSON for *.json, YAML otherwise). It never
// looks at the file system, so Model.Package is only what the spec says.
func LoadBytes(name string, data []byte) (*Model, error) {
	root, err := spec.Parse(name, data)
	if err != nil {
		return nil, asDiagnostics(err)
	}
	src := spec.NewSource(name, root)
	// Validation and the model checks both only read the document, so the
	// checks run beside validation; their result is used only when the
	// document is valid. (On an invalid document they may fail in any way;
	// a panic on a valid one is a bug and is raised here.)
	type result struct {
		m     *Model
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
			r.err = Diagnostics{{Pos: Pos{File: name, Line: 1, Col: 1}, Message: fmt.Sprintf("cannot decode the spec: %v", err)}}
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

func asDiagnostics(err error) error {
	if ds := AsDiagnostics(err); ds != nil {
		return ds
	}
	return err
}

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
