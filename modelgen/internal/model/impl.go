package model

import (
	"fmt"
	"path"
)

// The directories of impl/, relative to the spec's directory.
const (
	InitialsDir    = "impl/initials"    // hand-written initial states, package initials
	TransitionsDir = "impl/transitions" // hand-written transitions and the generated dispatch, package transitions
	AgentDir       = "impl/agent"       // the generated glue, package agent
	InvariantsDir  = "impl/invariants"  // hand-written invariants and admission of the fuzz target, package invariants
	PrunedDir      = "impl/_pruned"     // where generate --prune moves orphans; the go command ignores it
)

// ImplFunc is a function a person writes in impl/ and the generated glue
// calls: the initial state of an actor, in package initials, or the
// transition of one input, in package transitions.
type ImplFunc struct {
	Actor *Actor
	Input *Input // nil for the initial state of Actor
	// Name is the Go name: the actor's (User) for an initial state, the
	// input's (SendUserMessage) for a transition.
	Name string
	// Path is the file agentgen creates the stub in, slash-separated and
	// relative to the spec's directory: impl/initials/user.go,
	// impl/transitions/user_send-user-message.go.
	Path string
}

// Dir is the directory of the function's package: InitialsDir or
// TransitionsDir.
func (f *ImplFunc) Dir() string { return path.Dir(f.Path) }

// Package is the name of the function's package: initials or transitions.
func (f *ImplFunc) Package() string { return path.Base(f.Dir()) }

// Element names the spec element the function implements, as the stub's
// panic does: "initial state of user" or "user/send-user-message".
func (f *ImplFunc) Element() string {
	if f.Input == nil {
		return "initial state of " + f.Actor.Name
	}
	return f.Actor.Name + "/" + f.Input.Name
}

// Signature is the declaration the function must have, with decl the name
// of the decl package:
//
//	func User() decl.StateOfUser
//	func SendUserMessage(state decl.StateOfUser, input decl.SendUserMessage) decl.StateOfUser
func (f *ImplFunc) Signature() string {
	state := "decl." + f.Actor.Idents.State
	if f.Input == nil {
		return "func " + f.Name + "() " + state
	}
	return fmt.Sprintf("func %s(state %s, input decl.%s) %s", f.Name, state, f.Input.Decl.GoName, state)
}

// ImplFuncs lists the hand-written functions of a model: for each actor in
// order, its initial state, then the transitions of its inputs by name.
func ImplFuncs(m *Model) []*ImplFunc {
	var fs []*ImplFunc
	for _, a := range m.Actors {
		fs = append(fs, &ImplFunc{Actor: a, Name: a.GoName, Path: InitialsDir + "/" + a.Name + ".go"})
		for _, in := range a.Inputs {
			fs = append(fs, &ImplFunc{Actor: a, Input: in, Name: in.Decl.GoName, Path: TransitionsDir + "/" + TransitionFile(a.Name, in.Name)})
		}
	}
	return fs
}

// TransitionFile names the file of an input's transition: the spec names as
// written, actor_input.go. Spec names are kebab-case, so the underscore
// separates them unambiguously. When the input's name would make the go
// command read the file as a test (_test.go) or as built for one system or
// architecture only (_linux.go, _amd64.go), _input is added before .go.
func TransitionFile(actor, input string) string {
	if input == "test" || knownOS[input] || knownArch[input] {
		return actor + "_" + input + "_input.go"
	}
	return actor + "_" + input + ".go"
}

// The GOOS and GOARCH values go/build recognizes in file names
// (go/build/syslist.go).
var (
	knownOS = setOf("aix", "android", "darwin", "dragonfly", "freebsd", "hurd", "illumos", "ios", "js",
		"linux", "nacl", "netbsd", "openbsd", "plan9", "solaris", "wasip1", "windows", "zos")
	knownArch = setOf("386", "amd64", "amd64p32", "arm", "armbe", "arm64", "arm64be", "loong64",
		"mips", "mipsle", "mips64", "mips64le", "mips64p32", "mips64p32le", "ppc", "ppc64", "ppc64le",
		"riscv", "riscv64", "s390", "s390x", "sparc", "sparc64", "wasm")
)

func setOf(names ...string) map[string]bool {
	s := make(map[string]bool, len(names))
	for _, n := range names {
		s[n] = true
	}
	return s
}

// DeclPath is the import path of package decl.
func (m *Model) DeclPath() string { return m.Package + "/decl" }

// InitialsPath is the import path of package initials.
func (m *Model) InitialsPath() string { return m.Package + "/" + InitialsDir }

// TransitionsPath is the import path of package transitions.
func (m *Model) TransitionsPath() string { return m.Package + "/" + TransitionsDir }

// AgentPath is the import path of package agent, the generated glue.
func (m *Model) AgentPath() string { return m.Package + "/" + AgentDir }

// InvariantsPath is the import path of package invariants.
func (m *Model) InvariantsPath() string { return m.Package + "/" + InvariantsDir }

// FuzzFile is the generated fuzz target of the agent, FuzzTransitions, in
// package agent_test beside the glue.
const FuzzFile = AgentDir + "/fuzz.gen_test.go"

// InvariantFunc is a function a person writes in package invariants, which
// the fuzz target calls: Check, the invariants of the state, and Admit,
// the admission step the target runs before each transition. Each is
// created once, as a stub that accepts everything, in its own file.
type InvariantFunc struct {
	Name string // Check, Admit
	Path string // impl/invariants/check.go, impl/invariants/admit.go
	// Signature is the declaration the fuzz target needs.
	Signature string
}

// InvariantFuncs lists the functions of package invariants.
func InvariantFuncs() []InvariantFunc {
	return []InvariantFunc{
		{Name: "Admit", Path: InvariantsDir + "/admit.go", Signature: "func Admit(state decl.AgentState, input decl.AgentInput) (decl.AgentInput, error)"},
		{Name: "Check", Path: InvariantsDir + "/check.go", Signature: "func Check(state decl.AgentState) error"},
	}
}
