package modelgen

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/moora-go/moora/modelgen/internal/gen"
	"github.com/moora-go/moora/modelgen/internal/model"
)

// StarterSchemaFile is the copy of the spec schema Starter writes beside the
// spec when StarterOptions.SchemaRef is empty.
const StarterSchemaFile = "agent.schema.json"

// StarterOptions configure Starter.
type StarterOptions struct {
	// Package is the Go import path of the new agent's directory.
	Package string
	// SchemaRef is where the spec's "# yaml-language-server: $schema=" line
	// points. When empty, Starter writes the spec schema to
	// agent.schema.json beside the spec and points there, which works
	// offline.
	SchemaRef string
}

// StarterData is what the starter templates (templates/starter/...)
// receive.
type StarterData struct {
	Package   string // import path of the agent's directory
	Command   string // the last element of Package, naming the command main.go builds
	SchemaRef string // the target of the spec's $schema line
}

// Starter returns the files of a new, ready-to-run agent, as agentgen init
// writes them: the starter spec (a user and an llm that chat), its decl/
// and impl/ glue as Generate makes them, the starter's initial states and
// transitions written out (not stubs), and a main.go that runs the agent as
// a terminal chat. No file is owned but the generated ones. It needs no
// go.mod: the files are in memory.
func Starter(opts StarterOptions) (*Output, error) {
	if msg := model.CheckImportPath(opts.Package); msg != "" {
		return nil, errors.New(msg)
	}
	data := StarterData{Package: opts.Package, Command: path.Base(opts.Package), SchemaRef: opts.SchemaRef}
	if data.SchemaRef == "" {
		data.SchemaRef = "./" + StarterSchemaFile
	}
	spec, err := gen.RenderTemplate("starter/agent.yaml.tmpl", DefaultSpecFile, data)
	if err != nil {
		return nil, err
	}
	m, err := LoadBytes(DefaultSpecFile, spec)
	if err != nil {
		return nil, fmt.Errorf("the starter spec: %w", err)
	}
	m.Package = opts.Package
	plan, err := PlanVersions(&History{}, m, false)
	if err != nil {
		return nil, err
	}
	out, err := Generate(m, Decl, Impl(nil), Versions(plan, HistoryFile(DefaultSpecFile), nil))
	if err != nil {
		return nil, err
	}
	// The stubs become the starter's code.
	for i, f := range out.Files {
		if f.Owned {
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
	out.Files = append(out.Files, File{Path: DefaultSpecFile, Data: spec}, File{Path: "main.go", Data: main})
	if opts.SchemaRef == "" {
		out.Files = append(out.Files, File{Path: StarterSchemaFile, Data: SpecSchema()})
	}
	gen.SortFiles(out.Files)
	return out, nil
}
