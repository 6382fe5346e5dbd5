package modelgen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/moora-go/moora/modelgen/internal/gen"
	"golang.org/x/mod/modfile"
)

// toolkitModule is the module agentgen and the runtime belong to.
const toolkitModule = "github.com/moora-go/moora"

// InitOptions configure Init.
type InitOptions struct {
	// Spec is a spec file of one's own to make the agent of (it becomes
	// agent.yaml in the agent's directory): stubs for every initial state
	// and transition, the history of the spec at version 1, and a main.go
	// that serves the agent, durable, over HTTP. When empty, Init writes
	// the starter: a user and an llm that chat, with their code written
	// out, and a main.go that runs it as a terminal chat.
	Spec string
	// Module is the module path of the go.mod Init writes when the
	// directory is in no module (default: the directory's name).
	Module string
	// Toolkit is the source directory of github.com/moora-go/moora to
	// build against (default: the one agentgen was built from).
	Toolkit string
}

// Init writes a new, ready-to-run agent into dir, which must hold none of
// agent.yaml, main.go, decl and impl: the starter, or the agent of
// InitOptions.Spec. When dir is in no Go module, it also writes a go.mod
// that requires the toolkit (with a replace directive to its source when
// it is not published) and tidies it as if the agent imported every public
// package of the runtime: code that imports any of them later builds
// offline, with no go mod tidy. The report lists the files written
// and the stubs left to write.
//
// An invalid spec fails with StatusInvalid and its Diagnostics, and so
// does a Module given for a directory inside a module; nothing is written
// then.
func Init(dir string, opts InitOptions) (*Report, error) {
	r := &Report{Spec: opts.Spec, Status: StatusError}
	err := initAgent(r, dir, opts.Spec, opts.Module, opts.Toolkit)
	if err == nil {
		r.Status = StatusUpToDate
	}
	return r, err
}

// initAgent writes a new agent into dir: the starter, or the agent of
// specFile when it is not "".
func initAgent(r *Report, dir, specFile, module, toolkitDir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	var specData []byte
	if specFile != "" {
		if specData, err = readSpec(specFile); err != nil {
			return fmt.Errorf("--spec: %w", err)
		}
	}
	if err := checkEmpty(dir, specFile); err != nil {
		return err
	}
	modRoot, modPath, err := enclosingModule(abs)
	if err != nil {
		return err
	}
	var pkg string
	if modRoot == "" {
		if module == "" {
			module = defaultModule(abs)
		}
		pkg = module
	} else {
		if module != "" {
			r.Status = StatusInvalid
			return fmt.Errorf("--module: %s is inside the module %s (%s), which gives the agent its package path", dir, modPath, filepath.Join(modRoot, "go.mod"))
		}
		rel, err := filepath.Rel(modRoot, abs)
		if err != nil {
			return err
		}
		pkg = path.Join(modPath, filepath.ToSlash(rel))
	}
	out, err := newAgent(r, pkg, specFile, specData)
	if err != nil {
		return err
	}
	var tk *toolkit
	if modRoot == "" {
		if tk, err = findToolkit(toolkitDir); err != nil {
			return err
		}
		gomod, gosum := tk.goMod(module)
		out.Files = append(out.Files, gen.File{Path: "go.mod", Data: gomod}, gen.File{Path: "go.sum", Data: gosum})
	}
	changes, err := writeFiles(dir, out)
	if err != nil {
		return fmt.Errorf("writing the agent (nothing was changed): %w", err)
	}
	for _, c := range changes {
		r.Written = append(r.Written, FileChange{Path: filepath.Join(dir, filepath.FromSlash(c.Path)), Kind: c.Kind.String()})
	}
	for _, f := range out.Files {
		if !f.Owned && f.Path != "main.go" && f.Path != DefaultSpecFile && bytes.Contains(f.Data, []byte(`panic("not implemented`)) {
			r.Stubs++
		}
	}
	switch {
	case tk != nil && tk.dir != "":
		r.ToolkitSource = tk.dir
	case tk == nil && modPath != toolkitModule && !requires(filepath.Join(modRoot, "go.mod"), toolkitModule):
		r.NoRequire = filepath.Join(modRoot, "go.mod")
	}
	if tk != nil {
		if err := tidy(abs); err != nil {
			return fmt.Errorf("the agent is written, but go mod tidy failed in %s: %w", dir, err)
		}
		if err := keepSums(filepath.Join(abs, "go.sum"), tk.sum); err != nil {
			return err
		}
	}
	return nil
}

// checkEmpty fails when dir has a file of a new agent: Init overwrites
// nothing.
func checkEmpty(dir, specFile string) error {
	for _, name := range []string{DefaultSpecFile, "main.go", "decl", "impl"} {
		p := filepath.Join(dir, name)
		if info, err := os.Lstat(p); err == nil {
			if name == DefaultSpecFile && specFile != "" {
				if given, err := os.Stat(specFile); err == nil && os.SameFile(info, given) {
					continue // the spec is already where it goes
				}
			}
			if name == DefaultSpecFile {
				return fmt.Errorf("%s exists: init never overwrites a spec; edit it and run agentgen generate", p)
			}
			return fmt.Errorf("%s exists: init creates a new agent and overwrites nothing; use an empty directory", p)
		}
	}
	return nil
}

// newAgent returns the files of the starter in package pkg, or of the agent
// of specFile when it is not "".
func newAgent(r *Report, pkg, specFile string, specData []byte) (*gen.Output, error) {
	if specFile == "" {
		out, err := starter(starterOptions{Package: pkg})
		if err != nil {
			return nil, fmt.Errorf("--module: %w", err)
		}
		return out, nil
	}
	out, err := fromSpec(fromSpecOptions{Package: pkg, SpecFile: specFile, Spec: specData})
	if ds := asDiagnostics(err); ds != nil {
		r.Status, r.Diagnostics = StatusInvalid, diagnostics(ds, false)
		return nil, fmt.Errorf("%s is invalid: %s; nothing was written", specFile, count(ds))
	}
	return out, err
}

// enclosingModule returns the root directory and module path of the go.mod
// nearest above dir, or "" when there is none.
func enclosingModule(dir string) (root, module string, err error) {
	for d := dir; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			mod := modulePath(data)
			if mod == "" {
				return "", "", fmt.Errorf("%s has no module directive", filepath.Join(d, "go.mod"))
			}
			return d, mod, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
		if filepath.Dir(d) == d {
			return "", "", nil
		}
	}
}

// requires says whether a go.mod mentions a module in a require or replace.
func requires(gomod, module string) bool {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return false
	}
	f, err := modfile.ParseLax(gomod, data, nil)
	if err != nil {
		return false
	}
	for _, r := range f.Require {
		if r.Mod.Path == module {
			return true
		}
	}
	for _, r := range f.Replace {
		if r.Old.Path == module {
			return true
		}
	}
	return false
}

// defaultModule derives a module path from a directory name: the name with
// every character a module path cannot hold replaced by a dash.
func defaultModule(dir string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~", r) {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return '-'
	}, filepath.Base(dir))
	name = strings.Trim(name, "-.")
	if name == "" {
		return "agent"
	}
	return name
}

// toolkit is where a new module gets github.com/moora-go/moora from.
type toolkit struct {
	dir     string // its source, for a replace directive; "" when version is published
	version string // the version to require
	goLine  string // the go directive of its go.mod
	sum     []byte // its go.sum
}

// findToolkit locates the moora-go source to build a new agent against:
// dir when given, else the source agentgen was built from (the paths the
// compiler recorded, unless it was built with -trimpath), else the module
// of the working directory if that is moora-go. Without one, an agentgen
// built as a published release requires that release.
func findToolkit(dir string) (*toolkit, error) {
	if dir != "" {
		tk, err := toolkitAt(dir)
		if err != nil {
			return nil, fmt.Errorf("--toolkit: %w", err)
		}
		return tk, nil
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if tk, err := toolkitAt(filepath.Join(filepath.Dir(file), "..")); err == nil {
			return tk, nil
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if root, mod, err := enclosingModule(wd); err == nil && mod == toolkitModule {
			if tk, err := toolkitAt(root); err == nil {
				return tk, nil
			}
		}
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Path == toolkitModule && isRelease(info.Main.Version) {
		return &toolkit{version: info.Main.Version, goLine: "go " + goVersion()}, nil
	}
	return nil, fmt.Errorf("cannot find the source of %s, which the new agent builds against: it is not published, and this agentgen was built without the paths of its source (-trimpath?); pass --toolkit with the directory of a clone of it", toolkitModule)
}

// toolkitAt reads the moora-go module at dir.
func toolkitAt(dir string) (*toolkit, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	gomod, err := os.ReadFile(filepath.Join(abs, "go.mod"))
	if err != nil {
		return nil, fmt.Errorf("%s is not the source of %s: %w", dir, toolkitModule, err)
	}
	if mod := modulePath(gomod); mod != toolkitModule {
		return nil, fmt.Errorf("%s is the module %q, not %s", dir, mod, toolkitModule)
	}
	sum, err := os.ReadFile(filepath.Join(abs, "go.sum"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	tk := &toolkit{dir: abs, version: "v0.0.0-00010101000000-000000000000", goLine: "go " + goVersion(), sum: sum}
	for line := range strings.Lines(string(gomod)) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "go" {
			tk.goLine = "go " + f[1]
		}
	}
	return tk, nil
}

// goMod returns the go.mod and go.sum of a new module that requires the
// toolkit. The go.sum is the toolkit's, so that go mod tidy finds every
// checksum it needs without asking the checksum database.
func (tk *toolkit) goMod(module string) (gomod, gosum []byte) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "module %s\n\n%s\n\nrequire %s %s\n", module, tk.goLine, toolkitModule, tk.version)
	if tk.dir != "" {
		fmt.Fprintf(&b, "\n// %s is not published: build against its source.\nreplace %s => %s\n", toolkitModule, toolkitModule, tk.dir)
	}
	return b.Bytes(), tk.sum
}

// buildsWith are the packages of the toolkit a new agent's go.mod is ready
// for, whether its code imports them yet or not: every public package of
// the runtime but the agents under automata/agents, which need nothing
// more (TestInitBuildsWithEveryPublicPackage keeps the list whole). Code
// that imports any of them then builds without a go mod tidy, and without
// the network.
var buildsWith = []string{
	toolkitModule + "/automata",
	toolkitModule + "/automata/delegate",
	toolkitModule + "/automata/devpanel",
	toolkitModule + "/automata/httpbridge",
	toolkitModule + "/automata/httpbridge/a2aserve",
	toolkitModule + "/automata/httpbridge/mcpserve",
	toolkitModule + "/automata/inputjson",
	toolkitModule + "/automata/journal",
	toolkitModule + "/automata/journal/bolt",
	toolkitModule + "/automata/journal/jetstream",
	toolkitModule + "/automata/journal/jetstream/embedded",
	toolkitModule + "/automata/journal/pebble",
	toolkitModule + "/automata/journal/replay",
	toolkitModule + "/automata/llm",
	toolkitModule + "/automata/llm/anthropic",
	toolkitModule + "/automata/llm/gemini",
	toolkitModule + "/automata/llm/llmenv",
	toolkitModule + "/automata/llm/openai",
	toolkitModule + "/automata/llm/record",
	toolkitModule + "/automata/llm/structured",
	toolkitModule + "/automata/migrate",
	toolkitModule + "/automata/modeltest",
	toolkitModule + "/automata/registry",
	toolkitModule + "/automata/toolkit",
	toolkitModule + "/automata/toolkit/a2a",
	toolkitModule + "/automata/toolkit/mcp",
}

// tidy runs go mod tidy in dir, as if its package main imported buildsWith
// too. First offline: GOPROXY=off, with -e, since go mod tidy also loads
// the tests of the packages it finds, and the modules that only the tests
// of a dependency import (go.uber.org/goleak, for OpenTelemetry's) are
// seldom in the module cache; the result stands if buildsWith then loads
// offline, which it does where the module cache has the toolkit's
// dependencies (on the machine agentgen was built on). Otherwise it runs
// go mod tidy again as the environment says.
func tidy(dir string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("no go command: %w", err)
	}
	imports, err := os.CreateTemp(dir, "agentgen-tidy-*.go")
	if err != nil {
		return err
	}
	defer os.Remove(imports.Name())
	src := "package modelgen\n\nimport (\n"
	for _, p := range buildsWith {
		src += "\t_ \"" + p + "\"\n"
	}
	if _, err := io.WriteString(imports, src+")\n"); err != nil {
		imports.Close()
		return err
	}
	if err := imports.Close(); err != nil {
		return err
	}
	goCmd := func(env []string, args ...string) ([]byte, error) {
		cmd := exec.Command(goTool, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		return cmd.CombinedOutput()
	}
	offline := []string{"GOPROXY=off", "GOFLAGS=-mod=mod"}
	if _, err := goCmd(offline, "mod", "tidy", "-e"); err == nil {
		if _, err := goCmd([]string{"GOPROXY=off", "GOFLAGS=-mod=readonly"}, append([]string{"list", "-deps", "-f", "{{if .Error}}{{.Error}}{{end}}"}, buildsWith...)...); err == nil {
			return nil
		}
	}
	out, err := goCmd(nil, "mod", "tidy")
	if err != nil {
		return fmt.Errorf("%w\n%s", err, bytes.TrimSpace(out))
	}
	return nil
}

// keepSums adds to the go.sum that go mod tidy left the toolkit's checksums
// it dropped, those of the packages the starter does not import (bbolt, for
// automata/journal/bolt): importing one later then needs a go mod tidy that
// works offline, not the checksum database.
func keepSums(file string, toolkit []byte) error {
	have, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	lines := strings.Split(strings.TrimSpace(string(have)), "\n")
	for l := range strings.Lines(string(toolkit)) {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	lines = slices.DeleteFunc(lines, func(l string) bool { return l == "" })
	slices.Sort(lines)
	return os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// isRelease says whether a module version is a tagged release, which the
// module proxy can serve: not (devel), a pseudo-version or a dirty build.
func isRelease(v string) bool {
	return strings.HasPrefix(v, "v") && !strings.ContainsAny(v, "-+")
}

// goVersion is the language version of the running Go toolchain: 1.26.
func goVersion() string {
	v := strings.TrimPrefix(runtime.Version(), "go")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) >= 2 {
		return parts[0] + "." + parts[1]
	}
	return v
}
