package main

import (
	"fmt"

	"github.com/moora-go/moora/modelgen"
	"github.com/spf13/cobra"
)

func newValidateCommand() *cobra.Command {
	var f specFlags
	cmd := &cobra.Command{
		Use:   "validate [-f spec] [--strict]",
		Short: "Check a spec; print its problems",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, err := f.spec(cmd, cmd.ErrOrStderr())
			if err != nil {
				return fail(exitFailed, err)
			}
			r, err := modelgen.Load(file, modelgen.Options{Strict: f.strict})
			printDiagnostics(cmd.ErrOrStderr(), r.Diagnostics)
			if err != nil {
				return fail(exitFailed, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s is valid: %s, %s, %s, %s\n", file, plural(r.Actors, "actor"),
				plural(r.Observations, "observation"), plural(r.Inputs, "input"), plural(r.DataTypes, "data type"))
			return nil
		},
	}
	f.add(cmd, strictWarnings)
	return cmd
}
