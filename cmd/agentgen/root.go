package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/moora-go/moora/modelgen"
	"github.com/spf13/cobra"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "agentgen",
		Short: "Validate an agent spec and generate its Go code",
		Long: `agentgen reads an agent spec (agent.yaml) - actors, what they observe of each
other, and the inputs they dispatch - checks it, derives each actor's state
and context, and generates beside the spec the Go package decl/ and the glue
of impl/, with stubs for the initial states and transitions you write by hand.
agentgen init creates a new agent that runs.

See the package documentation of github.com/moora-go/moora/cmd/agentgen for
the commands, exit codes and the check --json format, and of
github.com/moora-go/moora/modelgen for the spec format.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newInitCommand(),
		newValidateCommand(),
		newGenerateCommand(),
		newCheckCommand(),
		newGraphCommand(),
		newReplayCommand(),
		newSchemaCommand(),
		newVersionCommand(),
	)
	return root
}

// specFlags are the flags of the commands that read a spec.
type specFlags struct {
	file   string
	strict bool
}

// add adds the flags; strictHelp, when not empty, is the help of --strict.
func (f *specFlags) add(cmd *cobra.Command, strictHelp string) {
	cmd.Flags().StringVarP(&f.file, "file", "f", modelgen.DefaultSpecFile, "the spec file (YAML, or JSON when it ends in .json)")
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	if strictHelp != "" {
		cmd.Flags().BoolVar(&f.strict, "strict", false, strictHelp)
	}
}

const strictWarnings = "treat the modelling warnings as errors"

// spec returns the spec file to read: -f as given, or else the nearest
// agent.yaml in the working directory or above it (as go finds go.mod),
// which it names on w when it is not in the working directory.
func (f *specFlags) spec(cmd *cobra.Command, w io.Writer) (string, error) {
	if cmd.Flags().Changed("file") {
		return f.file, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding %s: %w", f.file, err)
	}
	file, err := findSpec(wd, f.file)
	if err != nil {
		return "", err
	}
	if file != f.file {
		fmt.Fprintf(w, "agentgen: using spec %s\n", file)
	}
	return file, nil
}

// findSpec looks for name in dir and then in each directory above it, and
// returns its path relative to dir.
func findSpec(dir, name string) (string, error) {
	rel := ""
	for d := dir; ; {
		if st, err := os.Stat(filepath.Join(d, name)); err == nil && !st.IsDir() {
			return filepath.Join(rel, name), nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no %s in %s or any directory above it; give the spec with -f", name, dir)
		}
		d, rel = parent, filepath.Join(rel, "..")
	}
}
