package main

import (
	"fmt"
	"io"

	"github.com/moora-go/moora/modelgen"
	"github.com/spf13/cobra"
)

func newGenerateCommand() *cobra.Command {
	var f specFlags
	var opts modelgen.Options
	cmd := &cobra.Command{
		Use:   "generate [-f spec] [--strict] [--prune] [--amend]",
		Short: "Write the generated files and missing stubs beside the spec; print what changed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, err := f.spec(cmd, cmd.ErrOrStderr())
			if err != nil {
				return fail(exitFailed, err)
			}
			opts.Strict = f.strict
			r, err := modelgen.Generate(file, opts)
			printGenerated(cmd.OutOrStdout(), cmd.ErrOrStderr(), r)
			if err != nil || r.Status != modelgen.StatusUpToDate {
				return fail(exitFailed, err)
			}
			return nil
		},
	}
	f.add(cmd, strictWarnings)
	cmd.Flags().BoolVar(&opts.Prune, "prune", false, "move orphan files out of impl/ into "+modelgen.PrunedDir)
	cmd.Flags().BoolVar(&opts.Amend, "amend", false, "when the spec's data shapes changed, replace the newest version of its history instead of adding one: only for a version that no agent ran, as no migration reads its journals")
	return cmd
}

// printGenerated prints what generate did: the files written and the
// orphans moved, the new version of the spec, then, on stderr, the
// problems of the spec, its history and impl/, and the migrations to
// write.
func printGenerated(stdout, stderr io.Writer, r *modelgen.Report) {
	printDiagnostics(stderr, r.Diagnostics)
	if len(r.History) > 0 {
		printDiagnostics(stderr, r.History)
	}
	printWritten(stdout, r.Written)
	kept := false
	for _, mv := range r.Moved {
		if mv.To != "" {
			fmt.Fprintf(stdout, "moved %s to %s\n", mv.From, mv.To)
		} else {
			kept = true
			fmt.Fprintf(stderr, "agentgen: %s was not moved: %s; move the orphan out of it by hand\n", mv.From, mv.Reason)
		}
	}
	if kept {
		printFindings(stderr, stderr, r.Findings)
		return
	}
	if r.Amended {
		fmt.Fprintf(stdout, "%s: version %d of the spec amended (--amend), %s (%d breaking):\n", r.Spec, r.Version, plural(len(r.Changes), "change"), countBreaking(r.Changes))
		printChanges(stdout, r.Changes)
	}
	if r.NewVersion {
		fmt.Fprintf(stdout, "%s: version %d of the spec, %s since version %d (%d breaking):\n", r.Spec, r.Version, plural(len(r.Changes), "change"), r.Version-1, countBreaking(r.Changes))
		printChanges(stdout, r.Changes)
		if r.MigrationsFile != "" {
			fmt.Fprintf(stdout, "write the migrations of version %d to %d in %s\n", r.Version-1, r.Version, r.MigrationsFile)
		}
		if r.SnapshotNote {
			fmt.Fprintf(stdout, "note: the state changed compatibly: a snapshot of version %d is replayed over, which a compacted journal (journal.Options.Compact) cannot do; for one, write func AgentStateFromV%d in %s\n", r.Version-1, r.Version-1, r.MigrationsDir)
		}
	}
	// A report with a version got as far as writing the files.
	if r.Version > 0 && len(r.Written) == 0 && len(r.Moved) == 0 {
		fmt.Fprintf(stdout, "%s: generated files are up to date\n", r.Spec)
	}
	printFindings(stderr, stderr, r.Findings)
	for _, f := range r.Migrations {
		fmt.Fprintf(stderr, "%s:%d:%d: warning: %s\n", f.Path, f.Line, f.Col, f.Message)
	}
}

// printChanges prints changes of data shapes, one a line with its position
// in the spec, breaking or compatible, with the old and new shape.
func printChanges(w io.Writer, cs []modelgen.ShapeChange) {
	for _, c := range cs {
		fmt.Fprintln(w, c)
	}
}
