package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/moora-go/moora/modelgen"
	"github.com/spf13/cobra"
)

func newCheckCommand() *cobra.Command {
	var f specFlags
	var asJSON bool
	opts := modelgen.Options{}
	cmd := &cobra.Command{
		Use:   "check [-f spec] [--strict] [--json] [--against file|revision] [--typecheck=false]",
		Short: "Report generated files that are not up to date and code of decl/ and impl/ that does not build (exit 1), or an invalid spec (exit 2)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// With --json, stdout says which spec was used, and stderr
			// stays empty.
			say := cmd.ErrOrStderr()
			if asJSON {
				say = io.Discard
			}
			file, err := f.spec(cmd, say)
			r := &modelgen.Report{Spec: file, Status: modelgen.StatusError}
			if err == nil {
				opts.Strict = f.strict
				r, err = modelgen.Check(file, opts)
			}
			if asJSON {
				return printCheckJSON(cmd.OutOrStdout(), r, err)
			}
			printCheck(cmd.OutOrStdout(), cmd.ErrOrStderr(), r, opts)
			if code := checkExit(r.Status); code != exitOK {
				return fail(code, err)
			}
			return nil
		},
	}
	f.add(cmd, `treat the modelling warnings, stubs that still panic "not implemented" and a type check that could not run as errors`)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON report on stdout")
	cmd.Flags().BoolVar(&opts.TypeCheck, "typecheck", true, "type-check decl/ and impl/ with the go command; =false for a spec whose packages are built elsewhere (test fixtures)")
	cmd.Flags().StringVar(&opts.Against, "against", "", "also list the changes of data shapes since this spec: a file, or a git revision of the spec (main, HEAD~1); a breaking one fails unless the history records that spec")
	return cmd
}

// checkExit is check's exit status for a report's status.
func checkExit(status string) int {
	switch status {
	case modelgen.StatusUpToDate:
		return exitOK
	case modelgen.StatusDrift:
		return exitFailed
	}
	return exitBroken
}

// printCheck prints what check found: the problems of the spec on stderr;
// on stdout the changes of data shapes, the migrations to write, the
// differing files, what impl/ and its type check hold (warnings on
// stderr), and, when all is well, that it is.
func printCheck(stdout, stderr io.Writer, r *modelgen.Report, opts modelgen.Options) {
	printDiagnostics(stderr, r.Diagnostics)
	printDiagnostics(stderr, r.History)
	printChanges(stdout, r.Changes)
	for _, f := range r.Migrations {
		fmt.Fprintf(stdout, "%s:%d:%d: %s\n", f.Path, f.Line, f.Col, f.Message)
	}
	for _, d := range r.Files {
		switch {
		case d.History:
			// Its diff is a whole version of the spec: the changes of
			// shapes above say what it is.
			fmt.Fprintf(stdout, "modified %s\n", d.Path)
		case d.Kind == "modified":
			stdout.Write(d.Diff)
		default:
			fmt.Fprintf(stdout, "%s %s\n", d.Kind, d.Path)
		}
	}
	printFindings(stdout, stderr, r.Findings)
	if r.MoreBuildErrors > 0 {
		fmt.Fprintf(stdout, "and %d more build errors\n", r.MoreBuildErrors)
	}
	skipped := strings.HasPrefix(r.TypeCheck, "skipped: ")
	if skipped && len(r.Files) == 0 && opts.TypeCheck {
		fmt.Fprintf(stderr, "agentgen: warning: decl/ and impl/ not type-checked: %s\n", strings.TrimPrefix(r.TypeCheck, "skipped: "))
	}
	switch {
	case r.Status != modelgen.StatusUpToDate:
	case skipped:
		fmt.Fprintf(stdout, "%s: generated files are up to date\n", r.Spec)
	default:
		fmt.Fprintf(stdout, "%s: generated files are up to date; %s type-check\n", r.Spec, modelgen.TypeCheckedCode(r.TypeChecked))
	}
}
