package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/moora-go/moora/modelgen"
	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1 // invalid spec; for check: drift
	exitBroken  = 2 // usage error; for check: invalid spec or other error
	usageFooter = "run agentgen --help for usage"
)

// exitError carries the exit code of a failed command. A nil err means the
// command already said everything it had to say.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func fail(code int, err error) error { return &exitError{code: code, err: err} }

// Main runs agentgen with the process's arguments and returns its exit code.
func Main() int { return run(os.Args[1:], os.Stdout, os.Stderr) }

func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "agentgen: %v\n", ee.err)
		}
		return ee.code
	}
	// Anything else comes from cobra: an unknown command or flag, or
	// arguments a command does not take.
	footer := usageFooter
	if cmd != nil && cmd != root {
		footer = fmt.Sprintf("run %s --help for usage", cmd.CommandPath())
	}
	fmt.Fprintf(stderr, "agentgen: %v\n%s\n", err, footer)
	return exitBroken
}

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

const strictWarnings = "treat the modelling warnings as errors"

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
			return validate(cmd.OutOrStdout(), cmd.ErrOrStderr(), file, f.strict)
		},
	}
	f.add(cmd, strictWarnings)
	return cmd
}

func newGenerateCommand() *cobra.Command {
	var f specFlags
	var prune, amend bool
	cmd := &cobra.Command{
		Use:   "generate [-f spec] [--strict] [--prune] [--amend]",
		Short: "Write the generated files and missing stubs beside the spec; print what changed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, err := f.spec(cmd, cmd.ErrOrStderr())
			if err != nil {
				return fail(exitFailed, err)
			}
			return generate(cmd.OutOrStdout(), cmd.ErrOrStderr(), file, f.strict, prune, amend)
		},
	}
	f.add(cmd, strictWarnings)
	cmd.Flags().BoolVar(&prune, "prune", false, "move orphan files out of impl/ into "+modelgen.PrunedDir)
	cmd.Flags().BoolVar(&amend, "amend", false, "when the spec's data shapes changed, replace the newest version of its history instead of adding one: only for a version that no agent ran, as no migration reads its journals")
	return cmd
}

func newCheckCommand() *cobra.Command {
	var f specFlags
	var asJSON, typeCheck bool
	var against string
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
			return check(cmd.OutOrStdout(), cmd.ErrOrStderr(), file, err, f.strict, asJSON, against, typeCheck)
		},
	}
	f.add(cmd, `treat the modelling warnings, stubs that still panic "not implemented" and a type check that could not run as errors`)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON report on stdout")
	cmd.Flags().BoolVar(&typeCheck, "typecheck", true, "type-check decl/ and impl/ with the go command; =false for a spec whose packages are built elsewhere (test fixtures)")
	cmd.Flags().StringVar(&against, "against", "", "also list the changes of data shapes since this spec: a file, or a git revision of the spec (main, HEAD~1); a breaking one fails unless the history records that spec")
	return cmd
}

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
			return graph(cmd.OutOrStdout(), cmd.ErrOrStderr(), file, format)
		},
	}
	f.add(cmd, "")
	cmd.Flags().StringVar(&format, "format", "mermaid", "mermaid or dot")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(modelgen.GraphFormats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func newSchemaCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the spec format",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(modelgen.SpecSchema())
			return err
		},
	}
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of agentgen",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "agentgen %s %s\n", version(), runtime.Version())
			return err
		},
	}
}

// version is the module version agentgen was built from, or (devel).
func version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// load loads a spec and prints its diagnostics to stderr. It fails with
// code when the spec is invalid, or has warnings and strict is set.
func load(stderr io.Writer, file string, strict bool, code int) (*modelgen.Model, error) {
	m, err := modelgen.Load(file)
	if err != nil {
		ds := modelgen.AsDiagnostics(err)
		if ds == nil {
			return nil, fail(code, err)
		}
		printDiagnostics(stderr, ds)
		return nil, fail(code, fmt.Errorf("%s is invalid: %s", file, count(ds)))
	}
	if strict && len(m.Warnings) > 0 {
		ds := asErrors(m.Warnings)
		printDiagnostics(stderr, ds)
		return nil, fail(code, fmt.Errorf("%s is invalid with --strict: %s", file, count(ds)))
	}
	printDiagnostics(stderr, m.Warnings)
	return m, nil
}

// asErrors returns the warnings as errors, which --strict makes them.
func asErrors(ds modelgen.Diagnostics) modelgen.Diagnostics {
	out := make(modelgen.Diagnostics, len(ds))
	for i, d := range ds {
		e := *d
		e.Severity = modelgen.Error
		out[i] = &e
	}
	return out
}

// printDiagnostics prints the diagnostics, one a line. On a terminal each
// is followed by its line of the spec with a caret under its column, as
// go vet and the Rust compiler show them.
func printDiagnostics(w io.Writer, ds modelgen.Diagnostics) {
	show := isTerminal(w)
	files := make(map[string][]byte)
	for _, d := range ds {
		fmt.Fprintln(w, d)
		if !show || d.Pos.Line == 0 {
			continue
		}
		data, ok := files[d.Pos.File]
		if !ok {
			data, _ = os.ReadFile(d.Pos.File)
			files[d.Pos.File] = data
		}
		io.WriteString(w, excerpt(data, d.Pos.Line, d.Pos.Col))
	}
}

// isTerminal says whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// excerpt shows line of data with a caret under column col (in characters;
// 0 for none), or "" when data has no such line:
//
//	7 |      b: {type: string}
//	  |      ^
func excerpt(data []byte, line, col int) string {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	lines := strings.Split(string(data), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	text := strings.TrimRight(lines[line-1], "\r")
	num := strconv.Itoa(line)
	gutter := strings.Repeat(" ", len(num))
	var b strings.Builder
	fmt.Fprintf(&b, " %s | %s\n", num, text)
	if col > 0 {
		var pad strings.Builder
		for i, r := range []rune(text) {
			if i >= col-1 {
				break
			}
			if r == '\t' {
				pad.WriteByte('\t')
			} else {
				pad.WriteByte(' ')
			}
		}
		fmt.Fprintf(&b, " %s | %s^\n", gutter, pad.String())
	}
	return b.String()
}

// count says how many errors and warnings there are.
func count(ds modelgen.Diagnostics) string {
	if len(ds) > modelgen.MaxDiagnostics {
		return fmt.Sprintf("more than %d problems", modelgen.MaxDiagnostics)
	}
	var errs, warns int
	for _, d := range ds {
		if d.Severity == modelgen.Warning {
			warns++
		} else {
			errs++
		}
	}
	switch {
	case errs > 0 && warns > 0:
		return plural(errs, "error") + " and " + plural(warns, "warning")
	case warns > 0:
		return plural(warns, "warning")
	}
	return plural(errs, "error")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func validate(stdout, stderr io.Writer, file string, strict bool) error {
	m, err := load(stderr, file, strict, exitFailed)
	if err != nil {
		return err
	}
	types := 0
	for _, t := range m.Types {
		if t.Input == nil {
			types++
		}
	}
	fmt.Fprintf(stdout, "%s is valid: %s, %s, %s, %s\n", file, plural(len(m.Actors), "actor"),
		plural(len(m.Observations), "observation"), plural(len(m.Inputs), "input"), plural(types, "data type"))
	return nil
}

// generated is what generate writes and check compares: the files in
// memory, and what they were made from.
type generated struct {
	out  *modelgen.Output
	scan *modelgen.ImplScan
	plan *modelgen.VersionPlan
}

// generateAll reads the spec's history, scans impl/, and generates decl/,
// impl/ and the history in memory.
func generateAll(m *modelgen.Model, file string, amend bool) (*generated, error) {
	dir := filepath.Dir(file)
	hist, err := modelgen.ReadHistory(modelgen.HistoryFile(file))
	if err != nil {
		return nil, err
	}
	if len(hist.Versions) == 0 {
		if err := lostHistory(file); err != nil {
			return nil, err
		}
	}
	plan, err := modelgen.PlanVersions(hist, m, amend)
	if err != nil {
		return nil, err
	}
	scan, err := modelgen.ScanImpl(dir, m)
	if err != nil {
		return nil, err
	}
	declared, err := modelgen.DeclaredMigrations(dir)
	if err != nil {
		return nil, err
	}
	out, err := modelgen.Generate(m, modelgen.Decl, modelgen.Impl(scan), modelgen.Versions(plan, filepath.Base(modelgen.HistoryFile(file)), declared))
	if err != nil {
		return nil, err
	}
	return &generated{out: out, scan: scan, plan: plan}, nil
}

// lostHistory says why a spec without a history file is not a new spec,
// when it can tell: another spec's history beside it (the spec was
// renamed), or a decl/ generated from a later version than 1 (the history
// was deleted). Starting again at version 1 would read the journals of
// those versions as version 1.
func lostHistory(file string) error {
	dir := filepath.Dir(file)
	others, _ := filepath.Glob(filepath.Join(dir, "*.history.json"))
	if len(others) > 0 {
		return fmt.Errorf("%s has no history %s, but %s is here: if the spec was renamed, rename its history too, or its journals will be read as version 1 of a new history", file, filepath.Base(modelgen.HistoryFile(file)), others[0])
	}
	data, err := os.ReadFile(filepath.Join(dir, "decl", "version.go"))
	if err != nil {
		return nil
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "const SpecVersion = "); ok && v != "1" {
			return fmt.Errorf("%s has no history %s, but decl/ was generated from version %s of the spec: restore the history (from version control), or the journals of versions 1 to %s will be read as version 1 of a new history", file, filepath.Base(modelgen.HistoryFile(file)), v, v)
		}
	}
	return nil
}

// printChanges prints the changes of data shapes since the history's
// newest version, one a line with its position in the spec, breaking or
// compatible, with the old and new shape.
func printChanges(w io.Writer, plan *modelgen.VersionPlan) {
	for _, c := range plan.Pending {
		fmt.Fprintln(w, changeLine(plan.Pos(nil, c), c))
	}
}

func changeLine(pos modelgen.Pos, c modelgen.ShapeChange) string {
	kind := "compatible"
	if c.Breaking {
		kind = "breaking"
	}
	what := "state"
	if c.Input != "" {
		what = "input " + c.Input
	}
	if c.Path != "" {
		what += " " + c.Path
	}
	old, new := c.Old, c.New
	if old == "" {
		old = "absent"
	}
	if new == "" {
		new = "absent"
	}
	return fmt.Sprintf("%s: %s: %s: %s (old: %s; new: %s)", pos, kind, what, c.What, old, new)
}

func countBreaking(cs []modelgen.ShapeChange) int {
	n := 0
	for _, c := range cs {
		if c.Breaking {
			n++
		}
	}
	return n
}

// printFindings prints the findings of an impl/ scan, with paths relative
// to the working directory: errors to errs and warnings to warns. It leaves
// out the orphans in skip.
func printFindings(errs, warns io.Writer, dir string, scan *modelgen.ImplScan, skip map[string]bool, strict bool) {
	for _, f := range scan.Findings {
		if skip[f.Path] {
			continue
		}
		path := filepath.Join(dir, filepath.FromSlash(f.Path))
		if warning(f, strict) {
			fmt.Fprintf(warns, "%s:%d:%d: warning: %s\n", path, f.Line, f.Col, f.Message)
		} else {
			fmt.Fprintf(errs, "%s:%d:%d: %s\n", path, f.Line, f.Col, f.Message)
		}
	}
}

// warning says whether a finding is a warning; with check --strict, a stub
// that still panics "not implemented" is an error.
func warning(f *modelgen.Finding, strict bool) bool {
	return f.Warning() && !(strict && f.Kind == modelgen.NotImplemented)
}

func generate(stdout, stderr io.Writer, file string, strict, prune, amend bool) error {
	m, err := load(stderr, file, strict, exitFailed)
	if err != nil {
		return err
	}
	dir := filepath.Dir(file)
	g, err := generateAll(m, file, amend)
	if err != nil {
		if ds := modelgen.AsDiagnostics(err); ds != nil {
			printDiagnostics(stderr, ds)
		}
		return fail(exitFailed, err)
	}
	out, scan, plan := g.out, g.scan, g.plan
	changes, err := modelgen.Write(dir, out)
	if err != nil {
		return fail(exitFailed, fmt.Errorf("writing the generated files (nothing was changed): %w", err))
	}
	for _, c := range changes {
		fmt.Fprintf(stdout, "%s %s\n", c.Kind, filepath.Join(dir, filepath.FromSlash(c.Path)))
	}
	pruned := make(map[string]bool)
	if prune {
		moves, err := modelgen.Prune(dir, scan)
		if err != nil {
			return fail(exitFailed, fmt.Errorf("moving the orphans (the generated files were written, no orphan was moved): %w", err))
		}
		for _, mv := range moves {
			pruned[mv.From] = true
			fmt.Fprintf(stdout, "moved %s to %s\n", filepath.Join(dir, filepath.FromSlash(mv.From)), filepath.Join(dir, filepath.FromSlash(mv.To)))
		}
		if len(scan.Kept) > 0 {
			for _, from := range slices.Sorted(maps.Keys(scan.Kept)) {
				pruned[from] = true
				fmt.Fprintf(stderr, "agentgen: %s was not moved: %s; move the orphan out of it by hand\n", filepath.Join(dir, filepath.FromSlash(from)), scan.Kept[from])
			}
			printFindings(stderr, stderr, dir, scan, pruned, false)
			return fail(exitFailed, nil)
		}
	}
	if plan.Amended {
		fmt.Fprintf(stdout, "%s: version %d of the spec amended (--amend), %s (%d breaking):\n", file, plan.Current, plural(len(plan.Pending), "change"), countBreaking(plan.Pending))
		printChanges(stdout, plan)
	}
	if plan.New && len(plan.Pending) > 0 {
		fmt.Fprintf(stdout, "%s: version %d of the spec, %s since version %d (%d breaking):\n", file, plan.Current, plural(len(plan.Pending), "change"), plan.Current-1, countBreaking(plan.Pending))
		printChanges(stdout, plan)
		step := plan.Steps[len(plan.Steps)-1]
		if step.NeedsCode() {
			fmt.Fprintf(stdout, "write the migrations of version %d to %d in %s\n", plan.Current-1, plan.Current, filepath.Join(dir, filepath.FromSlash(modelgen.MigrationsDir), fmt.Sprintf("v%d_to_v%d.go", plan.Current-1, plan.Current)))
		}
		if step.StateChanged && !step.State {
			fmt.Fprintf(stdout, "note: the state changed compatibly: a snapshot of version %d is replayed over, which a compacted journal (journal.Options.Compact) cannot do; for one, write func AgentStateFromV%d in %s\n", plan.Current-1, plan.Current-1, filepath.Join(dir, filepath.FromSlash(modelgen.MigrationsDir)))
		}
	}
	if len(changes) == 0 && len(pruned) == 0 {
		fmt.Fprintf(stdout, "%s: generated files are up to date\n", file)
	}
	printFindings(stderr, stderr, dir, scan, pruned, false)
	migrs, err := modelgen.ScanMigrations(dir, plan)
	if err != nil {
		return fail(exitFailed, err)
	}
	for _, f := range migrs {
		fmt.Fprintf(stderr, "%s:%d:%d: warning: %s\n", filepath.Join(dir, filepath.FromSlash(f.Path)), f.Line, f.Col, f.Message)
	}
	// The files are written; code of impl/ the build will fail on is the
	// command's failure all the same, so that go generate stops there.
	problems := 0
	for _, f := range scan.Findings {
		if !pruned[f.Path] && !warning(f, false) {
			problems++
		}
	}
	if problems > 0 {
		hint := "fix them"
		if slices.ContainsFunc(scan.Findings, func(f *modelgen.Finding) bool { return !pruned[f.Path] && f.Kind == modelgen.Orphan }) {
			hint = "fix them, or move the orphans with agentgen generate --prune"
		}
		return fail(exitFailed, fmt.Errorf("the generated files are written, but %s in impl/ will stop the build: %s", plural(problems, "problem"), hint))
	}
	return nil
}

// checkReport is the check --json report; cmd/agentgen's package doc
// documents it.
type checkReport struct {
	Spec        string           `json:"spec"`
	Status      string           `json:"status"`
	Files       []checkFile      `json:"files"`
	Impl        []implFinding    `json:"impl"`
	Changes     []jsonShape      `json:"changes"`
	Migrations  []implFinding    `json:"migrations"`
	TypeCheck   string           `json:"typeCheck,omitempty"`
	Diagnostics []jsonDiagnostic `json:"diagnostics"`
	Error       string           `json:"error,omitempty"`
}

// jsonShape is a change of data shapes in the check --json report.
type jsonShape struct {
	Since    string `json:"since,omitempty"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Breaking bool   `json:"breaking"`
	Input    string `json:"input,omitempty"`
	Path     string `json:"path"`
	What     string `json:"what"`
	Old      string `json:"old,omitempty"`
	New      string `json:"new,omitempty"`
}

func jsonChange(pos modelgen.Pos, c modelgen.ShapeChange) jsonShape {
	return jsonShape{File: pos.File, Line: pos.Line, Column: pos.Col, Breaking: c.Breaking, Input: c.Input, Path: c.Path, What: c.What, Old: c.Old, New: c.New}
}

type implFinding struct {
	Path     string `json:"path"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Kind     string `json:"kind"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

type checkFile struct {
	Path   string `json:"path"`
	Status string `json:"status"`
	Diff   string `json:"diff,omitempty"`
}

type jsonDiagnostic struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Severity string `json:"severity"`
	Element  string `json:"element,omitempty"`
	Message  string `json:"message"`
	Hint     string `json:"hint,omitempty"`
}

func jsonDiagnostics(ds modelgen.Diagnostics) []jsonDiagnostic {
	out := make([]jsonDiagnostic, 0, len(ds))
	for _, d := range ds {
		sev := "error"
		if d.Severity == modelgen.Warning {
			sev = "warning"
		}
		out = append(out, jsonDiagnostic{
			File: d.Pos.File, Line: d.Pos.Line, Column: d.Pos.Col, Severity: sev,
			Element: d.Element, Message: d.Message, Hint: d.Hint,
		})
	}
	return out
}

// check checks the spec file; specErr, when not nil, says why there is
// none.
func check(stdout, stderr io.Writer, file string, specErr error, strict, asJSON bool, against string, typeCheck bool) error {
	report := checkReport{Spec: file, Files: []checkFile{}, Impl: []implFinding{}, Changes: []jsonShape{}, Migrations: []implFinding{}, Diagnostics: []jsonDiagnostic{}}
	emit := func(status string, code int, err error) error {
		if !asJSON {
			if code == exitOK {
				return nil
			}
			return fail(code, err)
		}
		report.Status = status
		if err != nil {
			report.Error = err.Error()
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if encErr := enc.Encode(report); encErr != nil {
			return fail(exitBroken, encErr)
		}
		if code == exitOK {
			return nil
		}
		return fail(code, nil)
	}
	if specErr != nil {
		return emit("error", exitBroken, specErr)
	}
	diagOut := stderr
	if asJSON {
		diagOut = io.Discard
	}
	m, err := modelgen.Load(file)
	if err != nil {
		ds := modelgen.AsDiagnostics(err)
		if ds == nil {
			return emit("error", exitBroken, err)
		}
		printDiagnostics(diagOut, ds)
		report.Diagnostics = jsonDiagnostics(ds)
		return emit("invalid", exitBroken, fmt.Errorf("%s is invalid: %s", file, count(ds)))
	}
	if strict && len(m.Warnings) > 0 {
		ds := asErrors(m.Warnings)
		printDiagnostics(diagOut, ds)
		report.Diagnostics = jsonDiagnostics(ds)
		return emit("invalid", exitBroken, fmt.Errorf("%s is invalid with --strict: %s", file, count(ds)))
	}
	printDiagnostics(diagOut, m.Warnings)
	report.Diagnostics = jsonDiagnostics(m.Warnings)
	dir := filepath.Dir(file)
	g, err := generateAll(m, file, false)
	if err != nil {
		if ds := modelgen.AsDiagnostics(err); ds != nil {
			printDiagnostics(diagOut, ds)
			report.Diagnostics = jsonDiagnostics(ds)
			return emit("invalid", exitBroken, fmt.Errorf("%s is invalid: %s", modelgen.HistoryFile(file), count(ds)))
		}
		return emit("error", exitBroken, err)
	}
	out, scan, plan := g.out, g.scan, g.plan
	// The changes of data shapes: since the history's newest version, and
	// since the spec given with --against.
	shapes := make([]string, 0, len(plan.Pending))
	for _, c := range plan.Pending {
		line := changeLine(plan.Pos(nil, c), c)
		shapes = append(shapes, line)
		report.Changes = append(report.Changes, jsonChange(plan.Pos(nil, c), c))
	}
	var unrecorded []modelgen.ShapeChange
	if against != "" {
		old, name, err := readAgainst(dir, file, against)
		if err != nil {
			return emit("error", exitBroken, err)
		}
		since := modelgen.CompareShapes(old, mustSpec(m))
		for _, c := range since {
			shapes = append(shapes, changeLine(plan.Pos(nil, c), c)+" [since "+name+"]")
			jc := jsonChange(plan.Pos(nil, c), c)
			jc.Since = name
			report.Changes = append(report.Changes, jc)
		}
		if !recorded(plan, old) {
			unrecorded = since
		}
	}
	if !asJSON {
		for _, line := range shapes {
			fmt.Fprintln(stdout, line)
		}
	}
	migrs, err := modelgen.ScanMigrations(dir, plan)
	if err != nil {
		return emit("error", exitBroken, err)
	}
	for _, f := range migrs {
		report.Migrations = append(report.Migrations, implFinding{Path: filepath.ToSlash(filepath.Join(dir, filepath.FromSlash(f.Path))), Line: f.Line, Column: f.Col, Kind: "migration", Severity: "error", Message: f.Message})
		if !asJSON {
			fmt.Fprintf(stdout, "%s:%d:%d: %s\n", filepath.Join(dir, filepath.FromSlash(f.Path)), f.Line, f.Col, f.Message)
		}
	}
	drift, err := modelgen.Compare(dir, out)
	if err != nil {
		return emit("error", exitBroken, err)
	}
	for _, d := range drift {
		path := filepath.Join(dir, filepath.FromSlash(d.Path))
		report.Files = append(report.Files, checkFile{Path: filepath.ToSlash(path), Status: d.Kind.String(), Diff: string(d.Diff)})
		if asJSON {
			continue
		}
		switch {
		case d.Kind == modelgen.Modified && d.Path == filepath.Base(modelgen.HistoryFile(file)):
			// Its diff is a whole version of the spec: the changes of
			// shapes above say what it is.
			fmt.Fprintf(stdout, "modified %s\n", path)
		case d.Kind == modelgen.Modified:
			stdout.Write(d.Diff)
		case d.Kind == modelgen.Missing:
			fmt.Fprintf(stdout, "missing %s\n", path)
		case d.Kind == modelgen.Extra:
			fmt.Fprintf(stdout, "extra %s\n", path)
		}
	}
	kinds := make(map[modelgen.FindingKind]int)
	for _, f := range scan.Findings {
		kinds[f.Kind]++
		sev := "error"
		if warning(f, strict) {
			sev = "warning"
		}
		report.Impl = append(report.Impl, implFinding{
			Path: filepath.ToSlash(filepath.Join(dir, filepath.FromSlash(f.Path))), Line: f.Line, Column: f.Col,
			Kind: f.Kind.String(), Severity: sev, Message: f.Message,
		})
	}
	if !asJSON {
		printFindings(stdout, stderr, dir, scan, nil, strict)
	}
	// The type check of decl/ and impl/ as they are on disk: only when the
	// generated files are up to date, as the errors against a stale decl/
	// are not the ones the next go build meets.
	types := &modelgen.TypeCheck{Skipped: "the generated files are not up to date; run agentgen generate"}
	switch {
	case !typeCheck:
		types.Skipped = "--typecheck=false"
	case len(drift) == 0:
		if types, err = modelgen.TypeCheckImpl(context.Background(), dir, scan, plan); err != nil {
			return emit("error", exitBroken, err)
		}
	}
	report.TypeCheck = "done"
	if types.Skipped != "" {
		report.TypeCheck = "skipped: " + types.Skipped
	}
	for _, f := range types.Findings {
		path := ""
		if f.Path != "" {
			path = filepath.ToSlash(filepath.Join(dir, filepath.FromSlash(f.Path)))
		}
		report.Impl = append(report.Impl, implFinding{
			Path: path, Line: f.Line, Column: f.Col,
			Kind: f.Kind.String(), Severity: "error", Message: f.Message,
		})
		if !asJSON {
			fmt.Fprintln(stdout, located(dir, f))
		}
	}
	if types.More > 0 && !asJSON {
		fmt.Fprintf(stdout, "and %d more build errors\n", types.More)
	}
	if types.Skipped != "" && len(drift) == 0 && typeCheck && !asJSON {
		fmt.Fprintf(stderr, "agentgen: warning: decl/ and impl/ not type-checked: %s\n", types.Skipped)
	}
	var problems []string
	if n := countBreaking(plan.Pending); n > 0 {
		problems = append(problems, fmt.Sprintf("%s since version %d of the spec, which journals may hold, %s no migration; run agentgen generate, which records version %d and writes the stubs of its migrations", plural(n, "breaking change"), plan.Current-1, map[bool]string{true: "has", false: "have"}[n == 1], plan.Current))
	}
	if n := countBreaking(unrecorded); n > 0 {
		problems = append(problems, fmt.Sprintf("%s since %s, which the history (%s) does not record; no migration can read its journals", plural(n, "breaking change"), against, filepath.Base(modelgen.HistoryFile(file))))
	}
	if n := len(migrs); n > 0 {
		problems = append(problems, plural(n, "migration")+" to write in "+filepath.Join(dir, filepath.FromSlash(modelgen.MigrationsDir))+": until then, a journal that must replay a record of an earlier version stops at it")
	}
	owned := make(map[string]bool, len(out.Files))
	for _, f := range out.Files {
		owned[f.Path] = f.Owned
	}
	generated, stubs := 0, 0
	for _, d := range drift {
		if d.Kind == modelgen.Missing && !owned[d.Path] {
			stubs++
		} else {
			generated++
		}
	}
	switch {
	case generated > 0 && stubs > 0:
		problems = append(problems, plural(generated, "generated file")+" not up to date and "+plural(stubs, "hand-written file")+" missing; run agentgen generate, which creates stubs for them")
	case generated > 0:
		problems = append(problems, plural(generated, "generated file")+" not up to date; run agentgen generate")
	case stubs > 0:
		problems = append(problems, plural(stubs, "hand-written file")+" missing; run agentgen generate, which creates stubs for them")
	}
	if n := kinds[modelgen.WrongSignature]; n > 0 {
		problems = append(problems, plural(n, "hand-written function")+" not declared as the spec requires")
	}
	if n := kinds[modelgen.Orphan]; n > 0 {
		problems = append(problems, plural(n, "orphan")+" in impl/; move or delete them, or run agentgen generate --prune")
	}
	if n := kinds[modelgen.NotImplemented]; n > 0 && strict {
		if n == 1 {
			problems = append(problems, `1 stub still panics "not implemented"; write its body (--strict)`)
		} else {
			problems = append(problems, fmt.Sprintf(`%d stubs still panic "not implemented"; write their bodies (--strict)`, n))
		}
	}
	if n := kinds[modelgen.Unparsable]; n > 0 {
		problems = append(problems, plural(n, "file")+" in impl/ that "+map[bool]string{true: "does", false: "do"}[n == 1]+" not parse")
	}
	if n := len(types.Findings) + types.More; n > 0 {
		problems = append(problems, plural(n, "build error")+" in decl/ and impl/")
	}
	if types.Skipped != "" && len(drift) == 0 && typeCheck && strict {
		problems = append(problems, "decl/ and impl/ not type-checked (--strict): "+types.Skipped)
	}
	if len(problems) > 0 {
		return emit("drift", exitFailed, fmt.Errorf("%s: %s", file, strings.Join(problems, "; ")))
	}
	if !asJSON {
		if types.Skipped == "" {
			fmt.Fprintf(stdout, "%s: generated files are up to date; decl/ and impl/ type-check\n", file)
		} else {
			if types.Skipped == "" {
				fmt.Fprintf(stdout, "%s: generated files are up to date; decl/ and impl/ type-check\n", file)
			} else {
				fmt.Fprintf(stdout, "%s: generated files are up to date\n", file)
			}
		}
	}
	return emit("up-to-date", exitOK, nil)
}

// located formats a type error as "path:line:col: message", with the path
// relative to the working directory and as much of the position as it has.
func located(dir string, f *modelgen.Finding) string {
	switch {
	case f.Path == "":
		return f.Message
	case f.Line == 0:
		return fmt.Sprintf("%s: %s", filepath.Join(dir, filepath.FromSlash(f.Path)), f.Message)
	case f.Col == 0:
		return fmt.Sprintf("%s:%d: %s", filepath.Join(dir, filepath.FromSlash(f.Path)), f.Line, f.Message)
	}
	return fmt.Sprintf("%s:%d:%d: %s", filepath.Join(dir, filepath.FromSlash(f.Path)), f.Line, f.Col, f.Message)
}

func graph(stdout, stderr io.Writer, file, format string) error {
	if !slices.Contains(modelgen.GraphFormats, format) {
		return fail(exitBroken, fmt.Errorf("unknown graph format %q (want mermaid or dot)", format))
	}
	m, err := load(stderr, file, false, exitFailed)
	if err != nil {
		return err
	}
	if err := modelgen.WriteGraph(stdout, m, format); err != nil {
		return fail(exitBroken, err)
	}
	return nil
}

// readAgainst reads the spec check --against names: a file, or else the
// spec at a git revision. It returns the spec and how to name it.
func readAgainst(dir, file, against string) (*modelgen.Spec, string, error) {
	data, err := modelgen.ReadSpec(against)
	name := against
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("--against: %w", err)
		}
		cmd := exec.Command("git", "show", against+":./"+filepath.Base(file))
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if data, err = cmd.Output(); err != nil {
			return nil, "", fmt.Errorf("--against %s: not a file, and git show %s:./%s failed: %v: %s", against, against, filepath.Base(file), err, strings.TrimSpace(stderr.String()))
		}
		name = against + ":" + filepath.Base(file)
	}
	m, err := modelgen.LoadBytes(name, data)
	if err != nil {
		return nil, "", fmt.Errorf("--against %s: %w", against, err)
	}
	sp, err := m.Spec()
	if err != nil {
		return nil, "", err
	}
	return sp, name, nil
}

// recorded says whether the history of plan has a version with the data
// shapes of spec sp.
func recorded(plan *modelgen.VersionPlan, sp *modelgen.Spec) bool {
	for _, v := range plan.History.Versions {
		vs, err := v.Spec()
		if err == nil && len(modelgen.CompareShapes(vs, sp)) == 0 {
			return true
		}
	}
	return false
}

// mustSpec is the spec of a model that was loaded from it.
func mustSpec(m *modelgen.Model) *modelgen.Spec {
	sp, err := m.Spec()
	if err != nil {
		panic(fmt.Sprintf("agentgen: decoding a spec that loaded: %v", err))
	}
	return sp
}
