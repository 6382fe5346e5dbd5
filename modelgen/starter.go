package modelgen

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/model"
	"github.com/moora-go/moora/modelgen/internal/versions"
)

// starterSchemaFile is the copy of the spec schema starter writes beside the
// spec when starterOptions.SchemaRef is empty.
const starterSchemaFile = "agent.schema.json"

// starterOptions configure starter.
type starterOptions struct {
	// Package is the Go import path of the new agent's directory.
	Package string
	// SchemaRef is where the spec's "# yaml-language-server: $schema=" line
	// points. When empty, starter writes the spec schema to
	// agent.schema.json beside the spec and points there, which works
	// offline.
	SchemaRef string
}

// starterData is what the starter templates (templates/starter/...)
// receive.
type starterData struct {
	Package   string // import path of the agent's directory
	Command   string // the last element of Package, naming the command main.go builds
	SchemaRef string // the target of the spec's $schema line
}

// starter returns the files of a new, ready-to-run agent, as agentgen init
// writes them: the starter spec (a user and an llm that chat), its decl/
// and impl/ glue as Generate makes them, the starter's initial states and
// transitions written out (not stubs), and a main.go that runs the agent as
// a terminal chat. No file is owned but the generated ones. It needs no
// go.mod: the files are in memory.
func starter(opts starterOptions) (*gen.Output, error) {
	if msg := model.CheckImportPath(opts.Package); msg != "" {
		return nil, errors.New(msg)
	}
	data := starterData{Package: opts.Package, Command: path.Base(opts.Package), SchemaRef: opts.SchemaRef}
	if data.SchemaRef == "" {
		data.SchemaRef = "./" + starterSchemaFile
	}
	spec, err := gen.RenderTemplate("starter/agent.yaml.tmpl", DefaultSpecFile, data)
	if err != nil {
		return nil, err
	}
	m, err := loadBytes(DefaultSpecFile, spec)
	if err != nil {
		return nil, fmt.Errorf("the starter spec: %w", err)
	}
	out, err := generateNew(m, opts.Package)
	if err != nil {
		return nil, err
	}
	// The stubs become the starter's code; those of impl/invariants, which
	// accept everything, are its code as they are.
	for i, f := range out.Files {
		if f.Owned || path.Dir(f.Path) == model.InvariantsDir {
			continue
		}
		body, err := gen.RenderTemplate("starter/"+f.Path+".tmpl", f.Path, data)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("the starter has no code for %s", f.Path)
		}
		if err != nil {
			return nil, err
		}
		out.Files[i].Data = body
	}
	main, err := gen.RenderTemplate("starter/main.go.tmpl", "main.go", data)
	if err != nil {
		return nil, err
	}
	out.Files = append(out.Files, gen.File{Path: DefaultSpecFile, Data: spec}, gen.File{Path: "main.go", Data: main})
	if opts.SchemaRef == "" {
		out.Files = append(out.Files, gen.File{Path: starterSchemaFile, Data: Schema()})
	}
	gen.SortFiles(out.Files)
	return out, nil
}

// fromSpecOptions configure fromSpec.
type fromSpecOptions struct {
	// Package is the Go import path of the new agent's directory; a
	// package key in the spec must agree with it.
	Package string
	// SpecFile names the spec in diagnostics; Spec is its contents.
	SpecFile string
	Spec     []byte
}

// newAgentData is what the template of a new agent's main.go
// (templates/new/main.go.tmpl) receives.
type newAgentData struct {
	Package     string // import path of the agent's directory
	Command     string // the last element of Package, naming the command main.go builds
	FirstInput  string // the type of the spec's first input, for the examples in main.go's doc
	Timestamped bool   // whether decl declares Timestamped: some input has a timestamp the server stamps
	// FirstActor is the spec name of the spec's first actor: the one whose
	// inputs the bridge lets clients POST, unless -client-actors says
	// otherwise.
	FirstActor string
}

// fromSpec returns the files of a new agent made from a spec of one's own,
// as agentgen init --spec writes them: the spec as agent.yaml, its decl/
// and impl/ glue as Generate makes them, a stub for the initial state of
// every actor and the transition of every input (each panics "not
// implemented" until its body is written), the history of the spec at
// version 1, and a main.go that runs the agent durable, on a journal in a
// directory, and serves it over HTTP (automata/httpbridge, its clients
// allowed the inputs of the spec's first actor unless -client-actors names
// others; a bearer token required on any address but loopback), stamping
// the time of arrival on the inputs that have a timestamp. No file is owned but
// the generated ones. An invalid spec is a Diagnostics error.
func fromSpec(opts fromSpecOptions) (*gen.Output, error) {
	if msg := model.CheckImportPath(opts.Package); msg != "" {
		return nil, errors.New(msg)
	}
	// Diagnostics name the file as given; the generated code, the spec's
	// new name.
	if _, err := loadBytes(opts.SpecFile, opts.Spec); err != nil {
		return nil, err
	}
	m, err := loadBytes(DefaultSpecFile, opts.Spec)
	if err != nil {
		return nil, err
	}
	if m.Package != "" && m.Package != opts.Package {
		return nil, fmt.Errorf("%s: its package key is %s, but the agent's directory is the package %s: remove the key, or init the agent where that package is", opts.SpecFile, m.Package, opts.Package)
	}
	out, err := generateNew(m, opts.Package)
	if err != nil {
		return nil, err
	}
	data := newAgentData{Package: opts.Package, Command: path.Base(opts.Package)}
	data.FirstActor = m.Actors[0].Name
	for _, in := range m.Inputs {
		if data.FirstInput == "" {
			data.FirstInput = in.Name
		}
		data.Timestamped = data.Timestamped || in.Timestamp != nil
	}
	main, err := gen.RenderTemplate("new/main.go.tmpl", "main.go", data)
	if err != nil {
		return nil, err
	}
	out.Files = append(out.Files, gen.File{Path: DefaultSpecFile, Data: opts.Spec}, gen.File{Path: "main.go", Data: main})
	gen.SortFiles(out.Files)
	return out, nil
}

// generateNew generates the files of a new agent of model m in package pkg:
// decl/, impl/ with a stub for every hand-written function, and the history
// of its spec at version 1.
func generateNew(m *model.Model, pkg string) (*gen.Output, error) {
	m.Package = pkg
	plan, err := planVersions(&versions.History{}, m, false)
	if err != nil {
		return nil, err
	}
	return generateModel(m, declGen, implGen(nil), versionsGen(plan, historyFile(DefaultSpecFile), nil))
}
