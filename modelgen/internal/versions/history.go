// Package versions keeps the version history of a spec — the file beside
// the spec (agent.history.json beside agent.yaml) that agentgen generate
// writes and check compares — and plans what each step from one version to
// the next needs: which input types and whether the state need a migration.
//
// A version is the spec as it was (its actors, $defs, observations and
// inputs; not its package nor its typescript path). The history holds
// every version, oldest first, numbered from 1; the spec's own shape is
// always the newest. A spec whose data shapes differ from the newest
// version's (package evolve says how) is a new version; one that differs
// only in descriptions, in the names of its $defs or in which input
// properties are readOnly (the journal's records are the same) replaces
// the newest version's text, keeping its number.
package versions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/spec"
)

// File returns the history file of a spec file: agent.yaml's is
// agent.history.json, in the same directory.
func File(specFile string) string {
	return strings.TrimSuffix(specFile, filepath.Ext(specFile)) + ".history.json"
}

// History is the versions of a spec, oldest first.
type History struct {
	File     string // the history file, as named
	Versions []*Version
}

// Version is one version of a spec.
type Version struct {
	Number int
	// Src is the version's spec document: a spec file's, for the spec
	// being generated, or the part of the history file that holds it.
	Src *spec.Source

	sp    *spec.Spec
	model *model.Model
	err   error
}

// Newest returns the newest version, or nil.
func (h *History) Newest() *Version {
	if len(h.Versions) == 0 {
		return nil
	}
	return h.Versions[len(h.Versions)-1]
}

// Limits of a history file, which holds every version of a spec (a spec
// may hold spec.MaxNodes values): a hundred versions of a large spec.
const (
	MaxValues = 2_000_000
	MaxBytes  = 256 << 20
)

// Read reads the history file; a file that does not exist is an empty
// history.
func Read(file string) (*History, error) {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return &History{File: file}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the spec's history: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the spec's history: %w", err)
	}
	return Parse(file, data)
}

// Parse reads a history file's contents. It checks the file's structure
// (an object with "versions", each {"version": n, "spec": {...}}, numbered
// 1, 2, ...), and reports what is wrong as Diagnostics at their position;
// each version's spec is checked when it is first used (Version.Spec).
func Parse(file string, data []byte) (*History, error) {
	if len(data) > MaxBytes {
		return nil, spec.Diagnostics{{Pos: spec.Pos{File: file}, Message: fmt.Sprintf("the history is %d bytes, more than the %d a history may be", len(data), MaxBytes)}}
	}
	root, err := spec.ParseJSON(file, data, MaxValues)
	if err != nil {
		return nil, err
	}
	h := &History{File: file}
	src := spec.NewSource(file, root)
	d := &spec.Diags{Src: src}
	fail := func(ptr, msg string) (*History, error) {
		d.At(ptr, msg, "the history is written by agentgen generate; restore it from version control")
		return nil, spec.Diagnostics(d.List)
	}
	if root.Kind() != spec.ObjectNode {
		return fail("", "the history is not a JSON object")
	}
	for _, k := range root.Keys() {
		if k != "//" && k != "versions" {
			return fail("/"+spec.EscapePointer(k), fmt.Sprintf("unknown key %q in the history (want \"versions\")", k))
		}
	}
	versions := root.Get("versions")
	if versions == nil || versions.Kind() != spec.ArrayNode {
		return fail("", `the history has no "versions" array`)
	}
	for i, v := range versions.Items() {
		ptr := "/versions/" + strconv.Itoa(i)
		if v.Kind() != spec.ObjectNode {
			return fail(ptr, "a version is not an object")
		}
		for _, k := range v.Keys() {
			if k != "version" && k != "spec" {
				return fail(ptr+"/"+spec.EscapePointer(k), fmt.Sprintf("unknown key %q in a version (want \"version\" and \"spec\")", k))
			}
		}
		num := v.Get("version")
		if num == nil || num.Kind() != spec.NumberNode || num.Str() != strconv.Itoa(i+1) {
			return fail(ptr, fmt.Sprintf(`version %d has no "version": %d (versions are numbered from 1, oldest first)`, i+1, i+1))
		}
		sp := v.Get("spec")
		if sp == nil || sp.Kind() != spec.ObjectNode {
			return fail(ptr, fmt.Sprintf(`version %d has no "spec" object`, i+1))
		}
		h.Versions = append(h.Versions, &Version{Number: i + 1, Src: spec.NewSource(file, sp)})
	}
	return h, nil
}

// Spec returns the version's spec, checked against the spec schema: an
// error is Diagnostics at positions in the history file.
func (v *Version) Spec() (*spec.Spec, error) {
	if v.sp != nil || v.err != nil {
		return v.sp, v.err
	}
	ds, err := spec.Validate(v.Src)
	switch {
	case err != nil:
		v.err = err
	case len(ds) > 0:
		v.err = fmt.Errorf("version %d of the spec in the history is not a valid spec: %w", v.Number, ds)
	default:
		v.sp, v.err = spec.Decode(v.Src.Root())
	}
	if v.err == nil {
		// The model's checks too ($refs resolve, names are Go names):
		// a version the classifier compares must be a spec that built.
		if v.model, v.err = model.Build(v.Src, v.sp); v.err != nil {
			v.sp, v.err = nil, fmt.Errorf("version %d of the spec in the history: %w", v.Number, v.err)
		}
	}
	return v.sp, v.err
}

// Model returns the version's model, as generate made it then; pkg is the
// import path of the spec's directory.
func (v *Version) Model(pkg string) (*model.Model, error) {
	if _, err := v.Spec(); err != nil {
		return nil, err
	}
	v.model.Package = pkg
	return v.model, nil
}

// Encode returns the history file's contents: deterministic, and one line
// per value of each version's spec, so that a new version is a diff of
// added lines.
func (h *History) Encode(specName string) []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	text, _ := json.Marshal(fmt.Sprintf(" The versions of %s that the agent's journals were written under, oldest first; agentgen check compares the spec with the newest. Commit it with the code.", specName))
	fmt.Fprintf(&b, "%s%s,\n", gen.JSONHeader, text[1:]) // JSONHeader opens the string
	b.WriteString("  \"versions\": [")
	for i, v := range h.Versions {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n    {\n      \"version\": %d,\n      \"spec\": ", v.Number)
		b.Write(v.Src.Root().AppendIndentedJSON(nil, "      ", "package", "typescript"))
		b.WriteString("\n    }")
	}
	if len(h.Versions) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]\n}\n")
	return b.Bytes()
}
