package main

import (
	"fmt"
	"slices"

	"github.com/moora-go/moora/modelgen"
	"github.com/spf13/cobra"
)

func newGraphCommand() *cobra.Command {
	var f specFlags
	var format string
	cmd := &cobra.Command{
		Use:   "graph [-f spec] [--format mermaid|dot]",
		Short: "Print the actor graph with each actor's state and context",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, err := f.spec(cmd, cmd.ErrOrStderr())
			if err != nil {
				return fail(exitFailed, err)
			}
			if !slices.Contains(modelgen.GraphFormats, format) {
				return fail(exitBroken, fmt.Errorf("unknown graph format %q (want mermaid or dot)", format))
			}
			r, err := modelgen.Graph(file, modelgen.Options{Format: format})
			printDiagnostics(cmd.ErrOrStderr(), r.Diagnostics)
			if err != nil {
				return fail(exitFailed, err)
			}
			_, err = cmd.OutOrStdout().Write(r.Graph)
			return err
		},
	}
	f.add(cmd, "")
	cmd.Flags().StringVar(&format, "format", "mermaid", "mermaid or dot")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(modelgen.GraphFormats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
