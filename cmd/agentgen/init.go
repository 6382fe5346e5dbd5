package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/moora-go/moora/modelgen"
	"github.com/spf13/cobra"
)

// toolkitModule is the module agentgen and the runtime belong to.
const toolkitModule = "github.com/moora-go/moora"

func newInitCommand() *cobra.Command {
	var opts modelgen.InitOptions
	cmd := &cobra.Command{
		Use:   "init [DIR] [--spec FILE] [--module PATH] [--toolkit DIR]",
		Short: "Create a ready-to-run agent in DIR (default: the current directory): the starter, or one of your own spec (--spec)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			r, err := modelgen.Init(dir, opts)
			printDiagnostics(stderr, r.Diagnostics)
			printWritten(stdout, r.Written)
			switch {
			case r.ToolkitSource != "":
				fmt.Fprintf(stdout, "%s: %s is not published; a replace directive builds against its source in %s\n",
					filepath.Join(dir, "go.mod"), toolkitModule, r.ToolkitSource)
			case r.NoRequire != "":
				fmt.Fprintf(stderr, "agentgen: note: %s does not require %s; add it (go get %s, or a replace directive to a clone of it) and run go mod tidy\n",
					r.NoRequire, toolkitModule, toolkitModule)
			}
			switch {
			case r.Status == modelgen.StatusInvalid:
				return fail(exitBroken, err)
			case err != nil:
				return fail(exitFailed, err)
			}
			cd := ""
			if filepath.Clean(dir) != "." {
				cd = "cd " + shellQuote(dir) + " && "
			}
			if r.Stubs > 0 {
				fmt.Fprintf(stdout, "write the bodies of the %d stubs in impl/initials and impl/transitions (agentgen check lists them), then run it: %sgo run .\n", r.Stubs, cd)
			} else {
				fmt.Fprintf(stdout, "run it: %sgo run .\n", cd)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.Spec, "spec", "", "make the agent of this spec (it becomes DIR/agent.yaml) instead of the starter: stubs for every initial state and transition, and a main.go that serves it, durable, over HTTP")
	_ = cmd.MarkFlagFilename("spec", "yaml", "yml", "json")
	cmd.Flags().StringVar(&opts.Module, "module", "", "the module path of the go.mod init writes when DIR is in no module (default: DIR's name)")
	cmd.Flags().StringVar(&opts.Toolkit, "toolkit", "", "the source directory of "+toolkitModule+" to build against (default: the one agentgen was built from)")
	_ = cmd.MarkFlagDirname("toolkit")
	return cmd
}

// shellQuote quotes s for a POSIX shell when it holds anything but the
// characters a path usually has.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+,:@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
